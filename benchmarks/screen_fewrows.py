"""Screens of the few-rows gap above 2,500 classes (issue 29): one fit, a plan patched.

One ``ConditionalNCEClassifier(random_state=seed, n_jobs=1)`` fit on the
``CountVectorizer(token_pattern=r"\\S+", lowercase=False)`` counts of ``article_k(K)``
(as ``bench_label_count.py``'s ``sknce defaults``), with the linear plan's rule or
constants patched in this process only (``sknce.conditional._plan`` is not edited):

- ``--margin M``: the plan's margin is ``M`` wherever the rule's exceeds 1 (an SGD
  update), else the rule's;
- ``--margin-scale S``: the rule's margin times ``S`` where it exceeds 1;
- ``--sgd-lr R``: ``LINEAR_SGD_LR``; ``--sgd-lr-many R``: ``LINEAR_SGD_LR_MANY_ROWS``;
  ``--max-weights W``: ``LINEAR_MAX_WEIGHTS`` (the
  linear table's cap); ``--examples N``: ``LINEAR_EXAMPLES`` (the epoch rule);
- ``--untempered``: early stopping on the raw held-out loss, as before the tempered
  check (``TemperedEarlyStopping``), for paired screens of that check;
- ``--task``: the task's data instead of ``article_k(K)`` (``article``, ``newsgroups``,
  ``wiki_stemmed``: ``bench_label_count.py``'s fixed tasks).

Appends one JSON line (accuracy, test log-likelihood, the plan's margin, rate, buckets,
epochs, the held-out loss of the prior start and of the first and best epochs of the fit
that chose them, CPU seconds, load) to ``results/screen_fewrows_<tag>.jsonl``.

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
    ):
        if value is not None:
            setattr(_plan, name, value)


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
    start_losses: list = []
    record_start_losses(start_losses)
    (X_train, y_train, X_test, y_test), pattern = load_task(args)
    options = {} if pattern is None else {"token_pattern": pattern, "lowercase": False}
    vectorizer = CountVectorizer(**options)
    Xtr, Xte = vectorizer.fit_transform(X_train), None
    Xte = vectorizer.transform(X_test)
    clf = ConditionalNCEClassifier(random_state=args.seed, n_jobs=1)
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
        # the held-out loss (untempered) of the selection fit: first and best epoch, and of
        # its start (the prior): the best must beat it or the fit keeps the prior
        "valid_first_best": [round(held_out[0], 3), round(min(held_out), 3)] if held_out else None,
        "valid_prior": round(start_losses[0], 3) if start_losses else None,
        "valid_tempered": [None if t is None else round(t, 4) for t in tempered],
        "valid_raw": [round(v, 4) for v in held_out],
        "temperature": round(clf.temperature_, 4),
        "cpu_s": round(cpu, 1),
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
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
    parser.add_argument("--untempered", action="store_true")
    parser.add_argument("--task", default=None)
    parser.add_argument("--tag", default="ben_s6_fewrows")
    args = parser.parse_args(argv)
    args.setting = (
        " ".join(
            f"{name}={value}"
            for name, value in vars(args).items()
            if name not in ("k", "seed", "tag", "task")
            and value is not None
            and value is not False
            and not (name == "margin_scale" and value == 1.0)
        )
        or "main"
    )
    row = screen(args)
    print(json.dumps(row), flush=True)
    with open(RESULTS / f"screen_fewrows_{args.tag}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
