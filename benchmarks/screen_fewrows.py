"""Screens of the few-rows gap (issue 29): one fit, its plan or its training patched.

One ``ConditionalNCEClassifier(random_state=seed, n_jobs=1)`` fit on the
``CountVectorizer(token_pattern=r"\\S+", lowercase=False)`` counts of ``article_k(K)``
(as ``bench_label_count.py``'s ``sknce defaults``), with the linear plan's rule or
constants, or a part of the fit, patched in this process only (``sknce`` is not
edited):

- ``--margin M``: the plan's margin is ``M`` wherever the rule's exceeds 1 (an SGD
  update), else the rule's;
- ``--margin-scale S``: the rule's margin times ``S`` where it exceeds 1;
- ``--sgd-lr R``: ``LINEAR_SGD_LR``; ``--sgd-lr-many R``: ``LINEAR_SGD_LR_MANY_ROWS``;
  ``--max-weights W``: ``LINEAR_MAX_WEIGHTS`` (the linear table's cap);
  ``--examples N``: ``LINEAR_EXAMPLES`` (the epoch rule); ``--margin-rows LO HI``:
  ``LINEAR_MARGIN_ROWS`` (the rows per class over which rate and margin move from a
  few rows' to many rows');
- ``--untempered``: early stopping on the raw held-out loss, as before the tempered
  check (``TemperedEarlyStopping``), for paired screens of that check;
- ``--task``: the task's data instead of ``article_k(K)`` (``article``, ``newsgroups``,
  ``wiki_stemmed``: ``bench_label_count.py``'s fixed tasks);
- ``--centroid C``: the linear model starts at ``C`` times each class's mean weighted
  input row (its training rows only: those of the held-out fit's training split, every
  row in the refit) instead of 0, the label biases at the log prior as on main;
- ``--average-selection W``: the refit's label tables are ``1 - W`` times its own plus
  ``W`` times those of the held-out fit that chose its epochs (both untempered; the
  held-out fit's temperature then scales them);
- ``--idf-power P``: the inverse document frequencies of ``bag="log1p-idf"`` raised to
  ``P``;
- ``--refit-epochs E``: the refit trains for ``round(E * chosen)`` epochs;
  ``--refit-schedule selection``: the refit's rate decays over the held-out fit's planned
  epochs (it stops where that fit's schedule was at the chosen epoch) instead of to
  ``END_LR`` over its own;
- ``--bias-rate B``: each example's update of the label biases times ``B`` (0: they stay
  at the log prior; one example per kernel call, so ``n_jobs=1`` only);
- ``--refits N``: the refit's label tables are the mean of ``N`` refits on other seeds
  (a linear ensemble; ``N`` times the refit's cost);
- ``--input-dropout Q``: in training, each weighted entry of a row is dropped with
  probability ``Q`` and the others scaled by ``1 / (1 - Q)`` (a fresh draw at each
  visit);
- ``--tail-average A``: the refit's label tables are the mean of their states at the
  ends of its last ``ceil(A * epochs)`` epochs (Polyak averaging of the epochs);
- ``--l2 A``: L2 weight decay of the linear model's weights (not its label biases), as
  ``SGDClassifier``'s ``alpha``: each example's update is preceded by a shrink of every
  weight by ``max(0, 1 - eta * A)``, ``eta`` the step's SGD rate (``lr / eps`` of the
  damped RowAdagrad, the rate one unit row's score moves by); sklearn keeps the shrink
  in one global factor (``wscale``), here it is folded into the table at the end of each
  kernel call (one batch at ``n_jobs=1``: the batch's shrinks applied together);
- ``--ova-kind {logistic,sqhinge,pair}``, ``--ova-weight B``, ``--ova-top C``: a
  one-vs-all term added to each example's margin softmax loss, ``B`` times, over its
  label and its ``C`` best other classes (``_fewrows_kernels.sgd_linear_softmax_ova``);
- ``--ova-offset T``: that term's logistic or hinge reads the scores less ``T`` (the
  threshold between label and rivals at ``T`` instead of 0);
- ``--validation-fraction F``, ``--patience P``, ``--class-weight balanced``: the
  estimator's parameters;
- ``--keep-classes``: the held-out fit's split leaves every class at least one training
  row (the random order of main's split, a row held out only while its class keeps
  another; with no class emptied the split is main's), so that no held-out row is of a
  class its fit never saw;
- ``--temper-seen``: the temperature is fitted on the held-out rows whose class has a
  row in the held-out fit's training split only (the split, the epochs and the early
  stopping are main's: the predictions are main's, only their scale changes).
- ``--epoch-tolerance T``: the refit trains for the latest epoch of the held-out fit
  whose raw held-out loss is within ``T`` (relative) of its best, instead of the best
  (the held-out fit, its restored weights and its temperature are main's).
- ``--continue-epochs N``: instead of a new network, the refit continues the held-out
  fit's restored weights on every row for ``N`` epochs, its rate decaying from where a
  schedule of ``chosen + N`` epochs is after ``chosen`` to ``END_LR`` (fresh RowAdagrad
  sums: with the linear plan's damping they barely move the step); it costs ``N``
  epochs instead of the refit's ``chosen``; with ``--continue-sums`` it starts from the
  held-out fit's RowAdagrad sums of its last epoch (not of the epoch restored).
- ``--refit-sweep E [E ...]``: a diagnostic, not a lever: before main's refit, refits of
  exactly each ``E`` epochs are scored on the test set at the fitted temperature
  (``sweep``: ``{E: [accuracy, log-likelihood]}``), what an epoch rule could reach with
  the held-out fit's temperature; the line's own figures stay main's. Costs the sum of
  the refits' epochs on top.

Appends one JSON line (accuracy, test log-likelihood, the plan's margin, rate, buckets,
epochs, the held-out loss of the prior start and of the first and best epochs of the fit
that chose them, CPU seconds, load; ``ll_oracle``: the scale of the scores that the test
set itself would choose and its log-likelihood, what no temperature fitted on held-out
rows can beat) to ``results/screen_fewrows_<tag>.jsonl``. The setting is named by the
flags that differ from their defaults (``main``: none).

Usage::

    nice -n 10 python benchmarks/screen_fewrows.py --k 3000 --seed 0 --margin 13
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import RESULTS  # noqa: E402
from _label_count_tasks import article_k  # noqa: E402


def patch_plan(args) -> None:
    """Patch the linear plan's rule and constants named by ``args`` (this process only)."""
    from sknce.conditional import _plan

    rule = _plan.linear_margin

    def margin(damping, rows_per_class=None):
        base = rule(damping, rows_per_class)
        if base <= _plan.LINEAR_MARGIN:
            return base
        if args.margin is not None:
            return float(args.margin)
        return base * args.margin_scale

    _plan.linear_margin = margin
    if args.untempered:
        from sknce._callbacks import ChanceAwareEarlyStopping
        from sknce.conditional import _classifier

        _classifier.TemperedEarlyStopping = ChanceAwareEarlyStopping
    for name, value in (
        ("LINEAR_SGD_LR", args.sgd_lr),
        ("LINEAR_SGD_LR_MANY_ROWS", args.sgd_lr_many),
        ("LINEAR_MAX_WEIGHTS", args.max_weights),
        ("LINEAR_EXAMPLES", args.examples),
        ("LINEAR_MARGIN_ROWS", args.margin_rows and tuple(args.margin_rows)),
    ):
        if value is not None:
            setattr(_plan, name, value)


def centroids(X, labels: np.ndarray, n_classes: int, idf: np.ndarray) -> np.ndarray:
    """Each class's mean ``log1p-idf`` row of the counts ``X``: (n_features, n_classes)."""
    import scipy.sparse as sp

    from sknce._bags import normalize_bags

    rows = normalize_bags(X, "log1p-idf", idf)
    counts = np.bincount(labels, minlength=n_classes).astype(np.float32)
    member = sp.csr_matrix(
        (1.0 / counts[labels], (labels, np.arange(len(labels)))), shape=(n_classes, len(labels))
    )
    return np.asarray((member @ rows).T.todense(), dtype=np.float32)


def patch_centroid_start(scale: float) -> None:
    """Start every new linear model at ``scale`` times its class centroids (this process)."""
    import torch

    from sknce import ConditionalNCEClassifier
    from sknce._engine import HoldOut

    pending: list = []
    make = ConditionalNCEClassifier._make_module
    split = HoldOut.__call__

    def start(estimator, module, X, labels) -> None:
        means = centroids(X, labels, len(estimator.classes_), estimator.idf_)
        with torch.no_grad():
            module.encoder.weight.copy_(torch.from_numpy(scale * means))

    def make_module(self, data, seeds):
        module = make(self, data, seeds)
        if self._classifier_plan.regime == "linear":
            start(self, module, data.X, np.searchsorted(self.classes_, data.labels)[data.codes])
            pending[:] = [(self, module)]  # the held-out fit's split restarts it
        return module

    def held_out(self, dataset, y=None, **fit_params):
        train, valid = split(self, dataset, y, **fit_params)
        if pending:
            estimator, module = pending.pop()
            sampler = train.sampler
            start(estimator, module, sampler.X[train.rows], sampler.y.numpy()[train.rows])
        return train, valid

    ConditionalNCEClassifier._make_module = make_module
    HoldOut.__call__ = held_out


def patch_average_selection(weight: float) -> None:
    """Average the refit's label tables with the held-out fit's (this process)."""
    import torch

    from sknce import ConditionalNCEClassifier

    refit = ConditionalNCEClassifier._refit

    def averaged(self, dataset, data, plan, epochs, starts=None):
        selection = [t.detach().clone() for t in self.net_.module_.label_tables()]
        refit(self, dataset, data, plan, epochs, starts)
        with torch.no_grad():
            for table, chosen in zip(self.net_.module_.label_tables(), selection):
                table.mul_(1.0 - weight).add_(chosen, alpha=weight)

    ConditionalNCEClassifier._refit = averaged


def patch_idf_power(power: float) -> None:
    """Raise the classifier's inverse document frequencies to ``power`` (this process)."""
    from sknce.conditional import _classifier

    idf = _classifier.smooth_idf
    _classifier.smooth_idf = lambda X: idf(X) ** power


def oracle_scale(log_proba: np.ndarray, index: np.ndarray) -> list:
    """The test set's own best scale of the scores and its log-likelihood (what any
    temperature could reach; for the screens, not a figure)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    def loss(a):
        return -float(np.mean(log_softmax(a * log_proba, axis=1)[np.arange(len(index)), index]))

    best = minimize_scalar(loss, bounds=(0.2, 5.0), method="bounded")
    return [round(float(best.x), 3), round(-float(best.fun), 4)]


def patch_refit(epochs_scale: float, schedule: str) -> None:
    """The refit's epochs scaled and its decay spanning the held-out fit's (this process)."""
    from sknce import ConditionalNCEClassifier

    refit = ConditionalNCEClassifier._refit
    decay = ConditionalNCEClassifier._decay_options

    def changed(self, dataset, data, plan, epochs, starts=None):
        planned = self.net_.max_epochs
        if schedule == "selection":
            self._decay_options = lambda per, skipped=0, total=None: decay(
                self, per, skipped, max(planned, epochs)
            )
        try:
            refit(self, dataset, data, plan, max(1, round(epochs_scale * epochs)), starts)
        finally:
            self.__dict__.pop("_decay_options", None)

    ConditionalNCEClassifier._refit = changed


def patch_bias_rate(factor: float) -> None:
    """Scale every update of the linear model's label biases by ``factor`` (this process)."""
    from sknce.conditional._kernel_step import LinearSoftmaxStep

    kernel = LinearSoftmaxStep.kernel

    def scaled(self, net, state, lo, hi, lr):
        bias = state[0][1]
        if not bias.shape[0]:
            return kernel(self, net, state, lo, hi, lr)
        total = 0.0
        for i in range(lo, hi):
            before = bias.copy()
            total += kernel(self, net, state, i, i + 1, lr)
            bias[:] = before + factor * (bias - before)
        return total

    LinearSoftmaxStep.kernel = scaled


def patch_refits(n: int) -> None:
    """The refit's label tables averaged over ``n`` refits of other seeds (this process)."""
    from dataclasses import replace

    import torch

    from sknce import ConditionalNCEClassifier
    from sknce._random import Seeds

    refit = ConditionalNCEClassifier._refit

    def ensemble(self, dataset, data, plan, epochs, starts=None):
        tables, selection = None, self.net_
        for i in range(n):
            seeds = Seeds(plan.seeds.seed + 7919 * i) if i else plan.seeds
            self.net_ = selection  # each refit starts from the held-out fit's net
            refit(self, dataset, data, replace(plan, seeds=seeds), epochs, starts)
            now = [t.detach().clone() for t in self.net_.module_.label_tables()]
            tables = now if tables is None else [a + b for a, b in zip(tables, now)]
        with torch.no_grad():
            for table, total in zip(self.net_.module_.label_tables(), tables):
                table.copy_(total / n)

    ConditionalNCEClassifier._refit = ensemble


def patch_input_dropout(q: float, seed: int) -> None:
    """Drop each training entry with probability ``q``, the rest scaled (this process)."""
    from sknce.conditional._kernel_step import LinearSoftmaxStep

    prepare = LinearSoftmaxStep.prepare
    rng = np.random.default_rng(seed)

    def dropped(self, net, inputs, targets):
        params, batch, eps = prepare(self, net, inputs, targets)
        data = np.array(batch[2], copy=True)
        data *= (rng.random(len(data)) >= q) / np.float32(1.0 - q)
        return params, (batch[0], batch[1], data.astype(batch[2].dtype), *batch[3:]), eps

    LinearSoftmaxStep.prepare = dropped


def patch_tail_average(share: float) -> None:
    """The refit's tables averaged over its last epochs' ends (this process)."""
    import math

    import torch
    from skorch.callbacks import Callback

    from sknce import ConditionalNCEClassifier

    class TailAverage(Callback):
        def __init__(self, epochs):
            self.epochs = epochs

        def on_train_begin(self, net, **kwargs):
            self.sums_, self.count_ = None, 0

        def on_epoch_end(self, net, **kwargs):
            if len(net.history) <= self.epochs - math.ceil(share * self.epochs):
                return
            now = [t.detach().clone() for t in net.module_.label_tables()]
            self.sums_ = now if self.sums_ is None else [a + b for a, b in zip(self.sums_, now)]
            self.count_ += 1

        def on_train_end(self, net, **kwargs):
            with torch.no_grad():
                for table, total in zip(net.module_.label_tables(), self.sums_):
                    table.copy_(total / self.count_)

    decay = ConditionalNCEClassifier._decay_options

    def options(self, per_epoch, skipped=0, total=None):
        found = decay(self, per_epoch, skipped, total)
        if total is not None:  # the refit's
            found.setdefault("extra_callbacks", []).append(("tail", TailAverage(total)))
        return found

    ConditionalNCEClassifier._decay_options = options


def patch_l2(alpha: float) -> None:
    """Shrink the linear weights by ``1 - eta * alpha`` per example (this process)."""
    from sknce.conditional._kernel_step import LinearSoftmaxStep

    kernel = LinearSoftmaxStep.kernel

    def decayed(self, net, state, lo, hi, lr):
        total = kernel(self, net, state, lo, hi, lr)
        eps = state[2]
        eta = lr / eps if eps > 0 else lr
        state[0][0][...] *= np.float32(max(0.0, 1.0 - eta * alpha) ** (hi - lo))
        return total

    LinearSoftmaxStep.kernel = decayed


def patch_ova(kind: str, weight: float, top: int, offset: float = 0.0) -> None:
    """Train the linear model with a one-vs-all term added (this process)."""
    from _fewrows_kernels import sgd_linear_softmax_ova

    from sknce.conditional._kernel_step import LinearSoftmaxStep

    code = ("logistic", "sqhinge", "pair").index(kind)

    def kernel(self, net, state, lo, hi, lr):
        params, batch, eps = state
        return sgd_linear_softmax_ova(
            *params, *batch, lo, hi, lr, self.margin, eps, code, weight, top, offset
        )

    LinearSoftmaxStep.kernel = kernel


def patch_keep_classes() -> None:
    """The held-out split keeps at least one training row of every class (this process):
    ``SampledDataset.split(..., keep_classes=True)`` wherever the sampler has one class
    per row, as the plan's ``keep_classes`` asks."""
    from sknce._data import SampledDataset

    split = SampledDataset.split

    def keep(self, fraction, rng, keep_classes=False):
        labels = getattr(self.sampler, "y", None)
        one_class = labels is not None and labels.dim() == 1
        return split(self, fraction, rng, keep_classes=keep_classes or one_class)

    SampledDataset.split = keep


def patch_temper_seen(apply: bool, found: dict) -> None:
    """Record in ``found["seen"]`` the temperature of the held-out rows of classes the
    held-out fit trained on (``found["all"]``: of every held-out row); with ``apply``
    the fit takes the former (this process)."""
    from sknce import ConditionalNCEClassifier
    from sknce._data import SampledDataset
    from sknce._engine import HoldOut

    class Parts(HoldOut):
        def __init__(self, parts):
            self.parts = parts

        def __call__(self, dataset, y=None, **fit_params):
            return self.parts

    temperature = ConditionalNCEClassifier._held_out_temperature

    def seen_temperature(self, dataset):
        split = self.net_.train_split
        labels = getattr(dataset, "sampler", None) and getattr(dataset.sampler, "y", None)
        if labels is None or labels.dim() != 1 or not isinstance(split, HoldOut):
            return temperature(self, dataset)
        train, valid = split(dataset)
        y = labels.cpu().numpy()
        seen = np.zeros(y.max() + 1, dtype=bool)
        seen[y[train.rows]] = True
        kept = SampledDataset(dataset.sampler, valid.rows[seen[y[valid.rows]]])
        found["all"] = temperature(self, dataset)
        self.net_.train_split = Parts((train, kept))
        try:
            found["seen"] = temperature(self, dataset)
        finally:
            self.net_.train_split = split
        return found["seen"] if apply else found["all"]

    ConditionalNCEClassifier._held_out_temperature = seen_temperature


def patch_epoch_tolerance(tolerance: float) -> None:
    """The refit's epochs: the latest held-out epoch within ``tolerance`` of the best
    held-out loss (this process)."""
    from sknce import ConditionalNCEClassifier

    refit = ConditionalNCEClassifier._refit

    def later(self, dataset, data, plan, epochs, starts=None):
        losses = [row["valid_loss"] for row in self.history_ if "valid_loss" in row]
        best = min(losses[:epochs])
        near = [i + 1 for i, loss in enumerate(losses) if loss <= best + tolerance * abs(best)]
        refit(self, dataset, data, plan, max(near), starts)

    ConditionalNCEClassifier._refit = later


def patch_continue(extra: int, sums: bool) -> None:
    """The refit continues the held-out fit's restored weights for ``extra`` epochs
    (this process)."""
    import copy

    from sknce import ConditionalNCEClassifier
    from sknce.conditional._multilabel import RefitStart

    refit = ConditionalNCEClassifier._refit

    def continued(self, dataset, data, plan, epochs, starts=None):
        state = copy.deepcopy(self.net_.module_.state_dict())
        optimizer = copy.deepcopy(self.net_.optimizer_.state_dict()) if sums else None
        start = RefitStart(epochs, epochs + extra, state, optimizer)
        refit(self, dataset, data, plan, epochs + extra, lambda total: start)

    ConditionalNCEClassifier._refit = continued


def patch_refit_sweep(sweep: list, X_test, y_test, found: dict) -> None:
    """Before the refit, refits of each of ``sweep`` epochs scored on ``(X_test,
    y_test)`` at the fitted temperature into ``found`` (this process)."""
    from scipy.special import log_softmax

    from sknce import ConditionalNCEClassifier

    refit = ConditionalNCEClassifier._refit
    temperature = ConditionalNCEClassifier._held_out_temperature

    def recorded(self, dataset):
        found["temperature"] = temperature(self, dataset)
        return found["temperature"]

    def swept(self, dataset, data, plan, epochs, starts=None):
        selection = self.net_
        index = np.searchsorted(self.classes_, y_test)
        for count in sweep:
            self.net_ = selection
            refit(self, dataset, data, plan, count, starts)
            z = log_softmax(self.predict_log_proba(X_test) / found["temperature"], axis=1)
            acc = float(np.mean(np.argmax(z, 1) == index))
            found[count] = [
                round(acc, 4),
                round(float(np.mean(z[np.arange(len(index)), index])), 4),
            ]
        self.net_ = selection
        refit(self, dataset, data, plan, epochs, starts)

    ConditionalNCEClassifier._held_out_temperature = recorded
    ConditionalNCEClassifier._refit = swept


def rescaled_ll(log_proba: np.ndarray, index: np.ndarray, temperatures: dict, other: str):
    """The mean test log-likelihood of ``log_proba`` (at the fit's temperature) at
    ``temperatures[other]`` instead, or None without it."""
    if other not in temperatures:
        return None
    taken = temperatures["all" if other == "seen" else "seen"]
    z = log_proba * (taken / temperatures[other])
    z = z - z.max(1, keepdims=True)
    z = z - np.log(np.exp(z).sum(1, keepdims=True))
    return round(float(np.mean(z[np.arange(len(index)), index])), 4)


def record_start_losses(losses: list) -> None:
    """Append each early stopping's held-out loss of the start (the prior) to ``losses``."""
    from sknce._callbacks import ChanceAwareEarlyStopping

    begin = ChanceAwareEarlyStopping.on_epoch_begin

    def on_epoch_begin(self, net, **kwargs):
        begin(self, net, **kwargs)
        if self.initial_loss_ is not None and not losses:
            losses.append(float(self.initial_loss_))

    ChanceAwareEarlyStopping.on_epoch_begin = on_epoch_begin


def load_task(args):
    """``((X_train, y_train, X_test, y_test), token pattern)`` of ``--task`` (its first
    split) or of ``article_k(--k)``."""
    if args.task is None:
        return article_k(args.k), r"\S+"
    from bench_label_count import task_splits

    splits, pattern = task_splits(args.task, False, {})
    return splits[0], pattern


def screen(args) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import ConditionalNCEClassifier

    patch_plan(args)
    if args.centroid:
        patch_centroid_start(args.centroid)
    if args.average_selection:
        patch_average_selection(args.average_selection)
    if args.idf_power != 1.0:
        patch_idf_power(args.idf_power)
    if args.refit_epochs != 1.0 or args.refit_schedule != "own":
        patch_refit(args.refit_epochs, args.refit_schedule)
    if args.bias_rate != 1.0:
        patch_bias_rate(args.bias_rate)
    if args.refits > 1:
        patch_refits(args.refits)
    if args.input_dropout:
        patch_input_dropout(args.input_dropout, args.seed)
    if args.tail_average:
        patch_tail_average(args.tail_average)
    if args.ova_kind:
        patch_ova(args.ova_kind, args.ova_weight, args.ova_top, args.ova_offset)
    if args.l2:
        patch_l2(args.l2)
    if args.keep_classes:
        patch_keep_classes()
    if args.epoch_tolerance:
        patch_epoch_tolerance(args.epoch_tolerance)
    if args.continue_epochs:
        patch_continue(args.continue_epochs, args.continue_sums)
    temperatures: dict = {}
    patch_temper_seen(args.temper_seen, temperatures)
    start_losses: list = []
    record_start_losses(start_losses)
    (X_train, y_train, X_test, y_test), pattern = load_task(args)
    options = {} if pattern is None else {"token_pattern": pattern, "lowercase": False}
    vectorizer = CountVectorizer(**options)
    Xtr, Xte = vectorizer.fit_transform(X_train), None
    Xte = vectorizer.transform(X_test)
    swept: dict = {}
    if args.refit_sweep:
        patch_refit_sweep(args.refit_sweep, Xte, y_test, swept)
    options = {
        name: getattr(args, name)
        for name in ("validation_fraction", "patience", "class_weight")
        if getattr(args, name) is not None
    }
    clf = ConditionalNCEClassifier(random_state=args.seed, n_jobs=1, **options)
    load, cpu = os.getloadavg()[0], time.process_time()
    clf.fit(Xtr, y_train)
    cpu = time.process_time() - cpu
    index = np.searchsorted(clf.classes_, y_test)
    log_proba = clf.predict_log_proba(Xte)
    plan = clf.plan_
    selection = getattr(clf, "selection_history_", clf.history_)
    held_out = [row["valid_loss"] for row in selection if "valid_loss" in row]
    tempered = [row.get("valid_tempered_loss") for row in selection if "valid_loss" in row]
    return {
        "k": args.k,
        "task": args.task,
        "n_classes": len(clf.classes_),
        "rows_per_class": round(len(y_train) / len(clf.classes_), 3),
        "seed": args.seed,
        "setting": args.setting,
        "margin": round(plan.margin, 4),
        "lr": round(plan.lr, 4),
        "n_buckets": plan.n_buckets,
        "epochs": clf.n_iter_,
        "acc": round(float(np.mean(clf.classes_[np.argmax(log_proba, 1)] == y_test)), 4),
        "ll": round(float(np.mean(log_proba[np.arange(len(y_test)), index])), 4),
        "ll_oracle": oracle_scale(log_proba, index),
        # the held-out loss (untempered) of the selection fit: first and best epoch, and of
        # its start (the prior): the best must beat it or the fit keeps the prior
        "valid_first_best": [round(held_out[0], 3), round(min(held_out), 3)] if held_out else None,
        "valid_prior": round(start_losses[0], 3) if start_losses else None,
        "valid_tempered": [None if t is None else round(t, 4) for t in tempered],
        "valid_raw": [round(v, 4) for v in held_out],
        "temperature": round(clf.temperature_, 4),
        # the test log-likelihood at the other temperature (of the held-out rows of
        # the classes the held-out fit trained on, or of every held-out row with
        # --temper-seen): the same predictions
        "temperatures_all_seen": [round(temperatures.get(k, np.nan), 4) for k in ("all", "seen")],
        "ll_other": rescaled_ll(
            log_proba, index, temperatures, "all" if args.temper_seen else "seen"
        ),
        "cpu_s": round(cpu, 1),
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
        **({"sweep": {c: swept[c] for c in args.refit_sweep}} if args.refit_sweep else {}),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--margin", type=float, default=None)
    parser.add_argument("--margin-scale", type=float, default=1.0)
    parser.add_argument("--sgd-lr", type=float, default=None)
    parser.add_argument("--sgd-lr-many", type=float, default=None)
    parser.add_argument("--max-weights", type=int, default=None)
    parser.add_argument("--examples", type=int, default=None)
    parser.add_argument("--margin-rows", type=float, nargs=2, default=None)
    parser.add_argument("--untempered", action="store_true")
    parser.add_argument("--task", default=None)
    parser.add_argument("--centroid", type=float, default=0.0)
    parser.add_argument("--average-selection", type=float, default=0.0)
    parser.add_argument("--idf-power", type=float, default=1.0)
    parser.add_argument("--refit-epochs", type=float, default=1.0)
    parser.add_argument("--refit-schedule", choices=("own", "selection"), default="own")
    parser.add_argument("--bias-rate", type=float, default=1.0)
    parser.add_argument("--refits", type=int, default=1)
    parser.add_argument("--input-dropout", type=float, default=0.0)
    parser.add_argument("--tail-average", type=float, default=0.0)
    parser.add_argument("--l2", type=float, default=0.0)
    parser.add_argument("--ova-kind", choices=("logistic", "sqhinge", "pair"), default=None)
    parser.add_argument("--ova-weight", type=float, default=0.1)
    parser.add_argument("--ova-top", type=int, default=1)
    parser.add_argument("--ova-offset", type=float, default=0.0)
    parser.add_argument("--validation-fraction", type=float, default=None)
    parser.add_argument("--patience", type=int, default=None)
    parser.add_argument("--class-weight", choices=("balanced",), default=None)
    parser.add_argument("--keep-classes", action="store_true")
    parser.add_argument("--temper-seen", action="store_true")
    parser.add_argument("--epoch-tolerance", type=float, default=0.0)
    parser.add_argument("--continue-epochs", type=int, default=0)
    parser.add_argument("--continue-sums", action="store_true")
    parser.add_argument("--refit-sweep", type=int, nargs="+", default=None)
    parser.add_argument("--tag", default="ben_s6_fewrows")
    args = parser.parse_args(argv)
    args.setting = (
        " ".join(
            f"{name}={value}"
            for name, value in vars(args).items()
            if name not in ("k", "seed", "tag", "task") and value != parser.get_default(name)
        )
        or "main"
    )
    row = screen(args)
    print(json.dumps(row), flush=True)
    with open(RESULTS / f"screen_fewrows_{args.tag}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
