"""The plan of a ConditionalNCEClassifier fit: every "auto" setting resolved once, from the data.

:func:`resolve_plan` turns the estimator's parameters and a few facts of the
training data (:class:`DataFacts`: the number of classes and features, the mean
stored entries per row of a sparse input) into a frozen :class:`ClassifierPlan`,
at the start of a new fit. The sampler, the step, the schedule, the network and
its options read the plan; nothing reads a fitted flag back. A fit that continues
the network (``warm_start``, ``partial_fit``) keeps the plan: :meth:`ClassifierPlan.continued`
applies the parameters it can honour and :meth:`ClassifierPlan.refusal` names those
it cannot.

Three regimes (the figures behind each constant are in ``benchmarks/README.md``,
"The best text classifier at every label count"):

* ``"linear"``: a sparse ``X`` with few enough classes that a full-rank linear
  model costs at most ``LINEAR_COST`` times a factored one per example, up to
  ``LINEAR_FEW_ROWS_SCALE`` times more with few training rows per class
  (:func:`linear_budget`, :func:`linear_fits`):
  :class:`~sknce.nn.LinearLabelScorer` over the weighted bag
  (``bag="log1p-idf"``; past the table's cap, the features folded into fewer rows,
  :func:`linear_buckets`), the exact softmax of every class with a training margin,
  row-wise AdaGrad in a compiled step (damped towards plain SGD as the classes
  grow, :func:`linear_damping`), the held-out log-likelihood choosing the
  epoch and a temperature;
* ``"bag"``: a sparse ``X`` otherwise: fastText's factored model (the mean of the
  features' rows, a label embedding) trained by ranking NCE, compiled SGD where the
  settings allow it, in fewer epochs where the label space is too large for the linear
  model (:func:`bag_epoch_range`; :func:`bag_holds_out`: whether it holds out examples);
* ``"network"``: a dense ``X``, an MLP or the user's encoder, trained by autograd.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from sknce._checks import _differs, check_n_jobs
from sknce.conditional._multilabel import EPOCH_RANGE, ROW_UPDATES, MultilabelPlan
from sknce.optim import LazyAdam, RowAdagrad

__all__ = [
    "ClassifierPlan",
    "DataFacts",
    "bag_epoch_range",
    "bag_holds_out",
    "linear_budget",
    "linear_buckets",
    "linear_damping",
    "linear_fewer_rows",
    "linear_fewest_rows",
    "linear_fits",
    "linear_idf_power",
    "linear_margin",
    "linear_refit",
    "linear_rival",
    "linear_rival_threshold",
    "linear_sgd_rate",
    "linear_threads",
    "resolve_plan",
]

#: ``sparse_embeddings="auto"``: sparse tables once they have this many times the rows a
#: training step reads (below, a lazy update of the rows touched costs more than a dense
#: update of all of them).
SPARSE_RATIO = 3

#: Optimizers that take sparse gradients as they are (the default Adam becomes LazyAdam).
SPARSE_OPTIMIZERS = (LazyAdam, RowAdagrad, torch.optim.SGD, torch.optim.Adagrad)

#: ``lr="auto"`` with an Adam-family optimizer; ``batch_size="auto"`` on the autograd step.
ADAM_LR = 1e-3
AUTOGRAD_BATCH = 256
#: ``n_negatives="auto"`` on the autograd step.
AUTOGRAD_NEGATIVES = 64

#: The factored bag trained by SGD (fastText's regime): width of h(x) and of the label
#: embeddings; the rate of ``lr="auto"``, this much per stored entry of an average row
#: within ``BAG_LR_RANGE``; ``max_epochs="auto"``: about ``BAG_EXAMPLES`` example
#: updates in ``BAG_EPOCH_RANGE`` epochs; the batch and the negatives drawn. With at most
#: ``BAG_NEGATIVES + 1`` classes, every other class is each example's noise instead.
BAG_DIM = 64
BAG_LR_PER_ENTRY = 0.02
BAG_LR_RANGE = (0.1, 1.0)
BAG_EXAMPLES = 800_000
BAG_EPOCH_RANGE = (3, 25)
#: A label space too large for the linear model (:func:`linear_fits` false: thousands of
#: classes) takes at most ``BAG_WIDE_EPOCHS`` epochs (:func:`bag_epoch_range`): there a
#: shorter fit (its rate decays to the end sooner) had the higher accuracy and
#: log-likelihood on every task measured, where a fit of fewer classes by the bag (a
#: user's ``embedding_dim``) may need all of ``BAG_EPOCH_RANGE``.
BAG_WIDE_EPOCHS = 4
BAG_BATCH = 2048
BAG_NEGATIVES = 16

#: Both compiled regimes decay ``lr="auto"`` linearly to this fraction of it over the fit.
END_LR = 1e-4

#: The full-rank linear model: chosen while its cost per example (``entries *
#: n_classes`` multiply-adds) is at most ``LINEAR_COST`` times the factored bag's
#: (``BAG_DIM * (entries + BAG_NEGATIVES + 1)``; more with few rows per class, see
#: ``LINEAR_FEW_ROWS``). Its table holds at most ``LINEAR_MAX_WEIGHTS`` numbers (512 MiB
#: of float32; 30,000 features reach it at about 4,400 classes): past that the features
#: share ``LINEAR_MAX_WEIGHTS // n_classes`` rows (the hashing trick), so that the
#: model degrades with the collisions instead of falling to the factored bag, which
#: learns nothing from a few rows per class. RowAdagrad's rate ``LINEAR_LR / sqrt(entries)`` within
#: ``LINEAR_LR_RANGE`` (a row's first update has norm ``lr``, and a unit row of
#: ``entries`` weights sums to about ``sqrt(entries)``: the scores of an example then
#: move by about ``LINEAR_LR`` whatever its length), the training margin
#: ``LINEAR_MARGIN``; ``max_epochs="auto"``: about ``LINEAR_EXAMPLES`` example updates
#: in ``LINEAR_EPOCH_RANGE`` epochs.
LINEAR_COST = 32
LINEAR_MAX_WEIGHTS = 2**27
#: The factored bag learns nothing from a few training rows per class (3-4 rows: never
#: better than the label frequencies it starts at) where the linear model still learns;
#: below ``LINEAR_FEW_ROWS`` rows per class the linear model's cost budget
#: ``LINEAR_COST`` grows as ``LINEAR_FEW_ROWS / rows_per_class``, at most
#: ``LINEAR_FEW_ROWS_SCALE`` times (:func:`linear_budget`). Few rows per class make few
#: examples, so the linear fit stays cheap where the budget grows.
LINEAR_FEW_ROWS = 10.0
LINEAR_FEW_ROWS_SCALE = 4.0
LINEAR_LR = 8.0
LINEAR_LR_RANGE = (0.25, 4.0)
LINEAR_MARGIN = 1.0
LINEAR_EXAMPLES = 200_000
LINEAR_EPOCH_RANGE = (3, 50)
#: With many classes row-wise AdaGrad stalls (one accumulator pools the gradients of
#: every class's weight of a feature) where plain SGD keeps learning: ``lr="auto"``
#: adds the damping ``(n_classes / LINEAR_DAMPING_CLASSES) ** LINEAR_DAMPING_POWER``
#: to the root of the accumulators (RowAdagrad's ``eps``) and the SGD rate
#: (:func:`linear_sgd_rate`: ``LINEAR_SGD_LR``, less past ``LINEAR_MARGIN_CLASSES``
#: classes with many rows per class) times it to the rate, so the update moves
#: continuously from AdaGrad (few classes) to SGD at that rate (many).
#: The linear kernel's threads: one per ``LINEAR_THREAD_WORK`` multiply-adds of an
#: example's scores (``entries * n_classes``), at most ``n_jobs``. Below, Hogwild's
#: threads contend for the same rows (the biases, the frequent features) more than they
#: share the work.
LINEAR_THREAD_WORK = 10_000
LINEAR_DAMPING_CLASSES = 350
LINEAR_DAMPING_POWER = 6
LINEAR_SGD_LR = 9.0
#: The training margin follows the update: one SGD step at rate ``r`` moves the score of
#: an example (a unit row) by about ``r``, so a margin of 1 is met after one visit and the
#: loss of a memorised example vanishes before classes of a few rows each are told apart
#: (the held-out scores stay flat, the fitted temperature about 0.65). Past the damping of
#: ``LINEAR_MARGIN_CLASSES`` classes (over about ``LINEAR_SGD_RAMP`` times that
#: damping with many rows per class, ``LINEAR_MARGIN_RAMP`` with few: the share ``s``
#: of :func:`linear_margin`) the margin moves from
#: ``LINEAR_MARGIN`` (AdaGrad's) to the SGD rate, and the rate itself from
#: ``LINEAR_SGD_LR`` down to ``LINEAR_SGD_LR_MANY_ROWS`` as the rows per class rise from
#: ``LINEAR_MARGIN_ROWS[0]`` to ``LINEAR_MARGIN_ROWS[1]`` (:func:`linear_sgd_rate`): with
#: a few rows per class (article from 1,387 classes, 6.5 rows or fewer) rate and margin 9
#: learned most; with more (article K600-K1000, 9-15 rows) margin 9 at rate 9, or any
#: margin well below the rate (3-5 at rate 9), lowered the held-out log-likelihood, where
#: margin 6 at rate 6 raised it and the accuracy (a rows ramp from 8.5 to 7.5 instead
#: lost 0.05 nats on 1,000 classes of 7.7 rows). With many rows per class the share
#: saturates within about 200 classes past ``LINEAR_MARGIN_CLASSES`` (``LINEAR_SGD_RAMP``;
#: the slower ramp of a few rows, ``LINEAR_MARGIN_RAMP``, left the margin well below the
#: rate at 800 classes of 10 rows, where the log-likelihood fell). Up to
#: ``LINEAR_MARGIN_CLASSES`` classes the plan is the one before these rules (margin 1,
#: rate 9).
LINEAR_SGD_LR_MANY_ROWS = 6.0
LINEAR_MARGIN_CLASSES = 500
LINEAR_MARGIN_ROWS = (6.5, 7.5)
LINEAR_MARGIN_RAMP = 4.0
LINEAR_SGD_RAMP = 1.0
#: Below ``LINEAR_FEWER_ROWS[1]`` rows per class past ``LINEAR_MARGIN_CLASSES`` classes
#: the SGD rate rises from ``LINEAR_SGD_LR`` towards ``LINEAR_SGD_LR_FEWER_ROWS`` (the
#: margin, which follows the rate, with it) and the inverse document frequencies of
#: ``bag="log1p-idf"`` are raised to a power that falls from 1 towards
#: ``LINEAR_IDF_POWER_FEWER_ROWS``, in full at ``LINEAR_FEWER_ROWS[0]`` rows per class or
#: fewer, back to the rate before through ``LINEAR_STEEP_CLASSES``, where the wide
#: margin (tuned at that rate) comes in (:func:`linear_fewer_rows`): on article chunks of
#: 1,749 classes (5.15 rows per class) rate 11 with the power 0.9 raised the accuracy and
#: the log-likelihood on the mean of 5 seeds, where rate 11 alone (or a larger rate or
#: margin) lost log-likelihood and the power alone accuracy. From
#: ``LINEAR_FEWER_ROWS[1]`` rows per class (article up to 1,500 classes) and from
#: ``LINEAR_STEEP_CLASSES[1]`` classes the plan is the one before.
LINEAR_FEWER_ROWS = (5.5, 6.0)
LINEAR_SGD_LR_FEWER_ROWS = 11.0
LINEAR_IDF_POWER_FEWER_ROWS = 0.9
#: With a few rows per class the margin's target widens from the SGD rate to twice it as
#: the classes go from ``LINEAR_WIDE_CLASSES[0]`` to ``LINEAR_WIDE_CLASSES[1]``, and on to
#: ``1 + LINEAR_WIDE`` times it from ``LINEAR_WIDER_CLASSES[0]`` to
#: ``LINEAR_WIDER_CLASSES[1]`` (:func:`linear_margin`): on article chunks of 3,000-6,000
#: classes (1.6-3 rows per class) 8/3 times the rate (24) learned more than twice it (18)
#: on every seed screened, and twice it more than the rate from 2,750 classes, where 8/3
#: times did not gain the log-likelihood. Down to 1.6 rows per class: early stopping's
#: check against the prior start reads the held-out loss at a fitted temperature
#: (``TemperedEarlyStopping``), which the wider margin's over-confident raw scores do not
#: raise (on the raw loss, margins of 22-27 kept the prior there).
LINEAR_WIDE_CLASSES = (2_500, 3_000)
LINEAR_WIDER_CLASSES = (2_750, 3_000)
LINEAR_WIDE = 5.0 / 3.0
#: With a few rows per class the widening is at least the share of the way through
#: ``LINEAR_STEEP_CLASSES`` (times ``1 - m``, :func:`linear_margin`): a steep ramp of the
#: target from the SGD rate to twice it (9 to 18, 0.13 a class), the larger of the two
#: widenings taken, so the plan is the one before up to ``LINEAR_STEEP_CLASSES[0]``
#: classes (article K2125, where 12.7 lost log-likelihood) and wherever the wider ramps
#: above already reach twice the rate (from about 2,860 classes). On article chunks of
#: 2,150-2,750 classes (3.3-4.2 rows per class) the steep ramp's margins (12.1, 15.3
#: and 18) learned more than the rate's (9-13.4) on the mean of 3 seeds, in accuracy and
#: log-likelihood, while 24 there lost at 2,950-3,000 classes, where the rule before
#: gives 21.5-23.8.
LINEAR_STEEP_CLASSES = (2_125, 2_194)
#: With a few rows per class the linear softmax adds ``LINEAR_RIVAL`` times a one-vs-all
#: logistic term of each example's label and its best rival class
#: (:class:`~sknce.losses.MarginSoftmaxLoss`'s ``rival``; :func:`linear_rival`): from
#: ``LINEAR_RIVAL_ROWS[1]`` rows per class down to ``LINEAR_RIVAL_ROWS[0]`` the weight
#: rises from 0 to ``LINEAR_RIVAL``, times the margin's share past
#: ``LINEAR_MARGIN_CLASSES`` classes. On article chunks of 1,250-2,000 classes (4.5-7.2
#: rows per class), where the errors are mostly the neighbouring run of the same article,
#: a weight of 0.03 raised the accuracy and the log-likelihood on every seed screened;
#: 0.1 and more, a squared hinge or a pairwise term lost log-likelihood. Wherever the
#: term applies its even odds are at the log prior of a uniform label,
#: ``-log(n_classes)`` (:func:`linear_rival_threshold`), where the scores start: at 0
#: the term pushes the label up but hardly its rival down (its slope there is
#: ``1 / n_classes``); at the log prior it pushes both. On article chunks of 1,250-6,000
#: classes (1.6-7.2 rows per class) this raised the log-likelihood on every seed
#: screened and the accuracy on the seed means.
LINEAR_RIVAL = 0.03
LINEAR_RIVAL_ROWS = (7.25, 7.5)
#: The fewest rows per class. With under 2 training rows per class many classes have
#: one, and a random hold-out empties them: on article chunks of 4,800-5,600 classes
#: (1.6-1.9 rows per class) a fifth to a third of the held-out rows are of a class the
#: held-out fit never trains on (the refit does: every test row's class has a training
#: row). Their loss only grows as the fit learns, so they pull the fitted temperature up
#: (the test set's own best scale of the scores was 1.2-1.3 times the fitted one) and,
#: past a margin of 24, hold the epochs back (margin 30 kept the second epoch). Below
#: ``LINEAR_FEWEST_ROWS[1]`` rows per class past ``LINEAR_WIDER_CLASSES[0]`` classes
#: the hold-out leaves every class a training row (the plan's ``keep_classes``) and the
#: margin's target widens on towards ``1 + LINEAR_FEWEST_WIDE`` times the SGD rate (30
#: at rate 9), in full at ``LINEAR_FEWEST_ROWS[0]`` rows per class or fewer from
#: ``LINEAR_WIDER_CLASSES[1]`` classes (:func:`linear_fewest_rows`): on article chunks
#: of 4,827-5,639 classes both learned more than main's margin 24 and split on the mean
#: of 3 seeds, in accuracy and log-likelihood, above ``LinearSVC``; at 3,946 classes
#: (2.3 rows per class) neither the kept classes nor margin 30 gained accuracy.
LINEAR_FEWEST_ROWS = (1.87, 2.0)
LINEAR_FEWEST_WIDE = 7.0 / 3.0
#: The refit below 6 training rows per class. The held-out loss chooses the epochs of
#: the best log-likelihood; the refit on every row, its rate decaying over those epochs,
#: gains accuracy and loses log-likelihood with every further epoch (article chunks of
#: 1,750 classes, 5.2 rows per class, refits of 6 to 14 epochs on 5 seeds). Two refits
#: on two seeds, their tables averaged (one linear model), gain the log-likelihood back
#: (+0.02 nats at the chosen epochs). So between ``LINEAR_REFIT_ROWS`` the refit trains
#: up to ``1 + LINEAR_REFIT_LONGER`` times the chosen epochs and its tables take up to
#: ``LINEAR_REFIT_MIX`` of a second refit's (:func:`linear_refit`): on article chunks of
#: 1,750 classes +0.003 accuracy and +0.006 nats on 5 seeds, at 2,000 classes (4.5
#: rows) +0.006 and +0.010 nats on 3, at about 1.6 times the fit's CPU; at 2,500 classes
#: (3.6 rows) +0.003 accuracy but 0.006 nats less (20 epochs against 13 on seed 0). So
#: it is off at 6 rows per class or more, at 3.65 or fewer (2,500 classes keep the plan
#: before), and up to ``LINEAR_REFIT_CLASSES[0]`` classes (in full from
#: ``LINEAR_REFIT_CLASSES[1]``).
LINEAR_REFIT_ROWS = ((3.65, 4.5), (5.25, 6.0))
LINEAR_REFIT_CLASSES = (500, 1_000)
LINEAR_REFIT_LONGER = 0.5
LINEAR_REFIT_MIX = 0.5

#: The classifier's parameters a plan is resolved from (its snapshot).
_PLAN_PARAMS = (
    "objective",
    "n_negatives",
    "noise",
    "noise_power",
    "self_normalization",
    "n_norm_samples",
    "input_bias",
    "input_bias_layer_sizes",
    "hidden_layer_sizes",
    "encoder",
    "embedding_dim",
    "label_bias",
    "init",
    "dropout",
    "sparse_embeddings",
    "shared_negatives",
    "remove_accidental_hits",
    "classes",
    "bag",
    "optimizer",
    "optimizer_kwargs",
    "lr",
    "batch_size",
    "n_jobs",
    "device",
    "accelerator",
    "early_stopping",
    "validation_fraction",
)

#: Parameters any continued fit honours (the others are fixed by the plan, except as
#: :meth:`ClassifierPlan.continued` says).
_ALWAYS_HONOURED = ("lr", "batch_size", "n_jobs")


@dataclass(frozen=True)
class DataFacts:
    """What a plan needs to know of the training data.

    Parameters
    ----------
    n_classes : int
        Labels (``classes_``).
    n_features : int
        Columns of ``X``.
    entries : float or None
        Mean stored entries per row of a sparse ``X``; None for a dense one.
    non_negative : bool
        Whether every stored value of ``X`` is at least 0 (counts).
    multilabel : bool
        Whether ``y`` is a label indicator.
    n_samples : int or None
        Training rows (of the first chunk of a ``partial_fit``); None: not known (read
        as many rows per class).
    """

    n_classes: int
    n_features: int
    entries: float | None
    non_negative: bool = True
    multilabel: bool = False
    n_samples: int | None = None


@dataclass(frozen=True)
class ClassifierPlan:
    """Every data-dependent decision of one ConditionalNCEClassifier fit.

    Attributes
    ----------
    regime : {"linear", "bag", "network"}
        The model and its training (see the module's docstring).
    bag : str or None
        The representation of a sparse ``X`` fed to the network
        (:func:`sknce._bags.normalize_bags`'s ``bag``; ``"counts"``: as given); None
        for a dense ``X``.
    width : int or None
        Width of :math:`h(x)` (``n_classes`` for the linear model); None: the user's
        encoder says.
    objective : {"softmax", "ranking", "binary", "mle", "ova"}
        The loss: the margin softmax of every class (``"softmax"``), or the
        estimator's ``objective`` (``"ova"`` for a label indicator).
    margin : float
        The training margin of ``"softmax"``.
    n_negatives : int
        Noise labels per example (0: none drawn, every class scored).
    exhaustive : bool
        Every class is each example's noise, once (the factored bag's exact softmax).
    shared : bool
        One set of negatives per batch.
    remove_hits : bool
        Negatives equal to the example's label are dropped.
    n_norm_samples : int
        Noise labels of the self-normalisation penalty (0: none).
    optimizer : type
        The optimizer class the network is built with.
    kernel : bool
        A compiled step trains the network (on the CPU).
    lr : float
        The learning rate.
    auto_lr : float
        The rate ``lr="auto"`` resolves to for this regime and data.
    lr_decay : bool
        ``lr`` decays linearly to ``END_LR`` times it over the fit.
    batch_size : int
    max_epochs : int or None
        The epochs of a fit; None: ``auto_epochs`` (:meth:`epochs`).
    epoch_rule : tuple of (int, int, int)
        ``(examples, low, high)``: ``max_epochs="auto"`` is about ``examples`` example
        updates, in ``[low, high]`` epochs; ``(0, 0, 0)``: the base's rule of steps.
    sparse_embeddings : bool
        The label tables have sparse gradients.
    sparse_input : bool
        The encoder's table of feature rows has sparse gradients.
    n_jobs : int
        Threads of the compiled step.
    calibrate : bool
        A temperature fitted on the held-out examples scales the scores after the fit.
    refit : bool
        After a fit that held out examples, a new network is trained on every example
        for the epochs the held-out examples chose (their log-likelihood in the linear
        regime, their rows' precision in the compiled multi-label regime).
    early_stopping : bool
        A new fit holds out ``validation_fraction`` of the examples and stops early on
        them (the estimator's ``early_stopping``, except where :func:`bag_holds_out`
        says the factored bag's fit holds out nothing); where the plan refits, their
        best epoch is then the refit's count.
    params : tuple of (str, object)
        The parameters the plan was resolved from.
    damping : float
        Added to the root of RowAdagrad's accumulators (its ``eps``) in the linear
        regime (:func:`linear_damping`); 0: RowAdagrad's own.
    max_threads : int
        The most threads that pay for the compiled step (:func:`linear_threads`);
        ``n_jobs`` is at most this; 0: no bound.
    n_buckets : int
        The rows of the linear model's table when the features are folded into fewer
        rows than features (:func:`linear_buckets`); 0: one row per feature.
    cooccurrence : float
        The weight of a multi-label fit's co-occurrence term (``cooccurrence_weight``,
        resolved after the held-out fit: :mod:`sknce.conditional._cooccurrence`); 0: no
        term.
    rival : float
        The weight of ``"softmax"``'s one-vs-all term of the label and its best rival
        (:func:`linear_rival`); 0: none.
    rival_threshold : float
        That term's score of even odds (:func:`linear_rival_threshold`).
    keep_classes : bool
        The examples held out leave every class at least one training example
        (:func:`linear_fewest_rows`).
    idf_power : float
        The power ``bag="log1p-idf"``'s inverse document frequencies are raised to
        (:func:`linear_idf_power`); 1: as they are.
    refit_epochs : float
        The refit trains ``round(refit_epochs * chosen)`` epochs, ``chosen`` the held-out
        fit's (:func:`linear_refit`); 1: the chosen.
    refit_mix : float
        The share of a second refit, on another seed, in the refit's label tables
        (:func:`linear_refit`); 0: one refit.
    """

    regime: str
    bag: str | None
    width: int | None
    objective: str
    margin: float
    n_negatives: int
    exhaustive: bool
    shared: bool
    remove_hits: bool
    n_norm_samples: int
    optimizer: type
    kernel: bool
    lr: float
    auto_lr: float
    lr_decay: bool
    batch_size: int
    max_epochs: int | None
    epoch_rule: tuple[int, int, int]
    sparse_embeddings: bool
    sparse_input: bool
    n_jobs: int
    calibrate: bool
    refit: bool
    early_stopping: bool
    params: tuple
    damping: float = 0.0
    max_threads: int = 0
    n_buckets: int = 0
    cooccurrence: float = 0.0
    rival: float = 0.0
    keep_classes: bool = False
    rival_threshold: float = 0.0
    idf_power: float = 1.0
    refit_epochs: float = 1.0
    refit_mix: float = 0.0

    def epochs(self, n_train: int, auto_epochs) -> int:
        """The epochs of a fit on ``n_train`` training examples.

        ``auto_epochs(n_train, batch_size)`` is the estimator's rule of steps, used
        without an ``epoch_rule``.
        """
        if self.max_epochs is not None:
            return self.max_epochs
        if not self.epoch_rule[0]:
            return auto_epochs(n_train, self.batch_size)
        return _rule_epochs(self.epoch_rule, n_train)

    @property
    def negatives_drawn(self) -> bool:
        """Whether the sampler draws negatives (not every class, not the full softmax)."""
        return self.n_negatives > 0 and not self.exhaustive

    def refusal(self, estimator) -> str | None:
        """Why a fit that continues this plan cannot honour the current parameters, or None.

        Parameters
        ----------
        estimator : ConditionalNCEClassifier
            Its current parameters.

        Returns
        -------
        str or None
            The changed parameters the fitted network cannot take and how to proceed.
        """
        before = dict(self.params)
        now = _snapshot(estimator)
        honoured = set(_ALWAYS_HONOURED)
        if self.negatives_drawn:
            honoured |= {"n_negatives", "shared_negatives", "remove_accidental_hits"}
            if self.n_norm_samples:
                honoured.add("n_norm_samples")
        if not self.kernel:
            honoured |= {"optimizer", "optimizer_kwargs"}
        changed = [n for n in _PLAN_PARAMS if n not in honoured and _differs(before[n], now[n])]
        if (
            self.kernel
            and _differs(before["optimizer"], now["optimizer"])
            and (
                now["optimizer"] in (torch.optim.Adam, self.optimizer)
                and not now["optimizer_kwargs"]
            )
        ):
            changed.remove("optimizer")  # the same compiled step
        if not changed:
            return None
        detail = ", ".join(f"{n}: {before[n]!r} -> {now[n]!r}" for n in changed)
        trained = {
            "linear": "the full-rank linear model of every class by the compiled AdaGrad step",
            "bag": "the factored bag "
            + (
                f"by the compiled {self.optimizer.__name__} step" if self.kernel else "by autograd"
            ),
            "network": "its network by autograd",
        }[self.regime]
        return (
            f"This fit continues a network whose plan was resolved at its first fit "
            f"({trained}), which cannot honour the changed parameter(s) {detail}. Set them "
            "back, or refit from scratch with them: fit with warm_start=False (or "
            "clone(estimator).fit); partial_fit continues with the settings of its first call."
        )

    def continued(self, estimator) -> ClassifierPlan:
        """The plan of a continued fit: this one, with the honoured parameters applied.

        Raises
        ------
        ValueError
            The :meth:`refusal`, when there is one.
        """
        message = self.refusal(estimator)
        if message is not None:
            raise ValueError(message)
        params = dict(self.params)
        now = _snapshot(estimator)
        n_jobs = check_n_jobs(now["n_jobs"])
        changes: dict = {
            "n_jobs": min(n_jobs, self.max_threads) if self.max_threads else n_jobs,
            "params": tuple(now.items()),
            "lr": self.auto_lr if now["lr"] == "auto" else float(now["lr"]),
            "max_epochs": None if estimator.max_epochs == "auto" else estimator.max_epochs,
        }
        if not isinstance(now["batch_size"], str):
            changes["batch_size"] = now["batch_size"]
        if self.negatives_drawn:
            if _differs(params["n_negatives"], now["n_negatives"]):
                auto = BAG_NEGATIVES if self.kernel else AUTOGRAD_NEGATIVES
                changes["n_negatives"] = (
                    auto if now["n_negatives"] == "auto" else now["n_negatives"]
                )
            changes["shared"] = bool(now["shared_negatives"])
            changes["remove_hits"] = bool(now["remove_accidental_hits"])
            if self.n_norm_samples:
                changes["n_norm_samples"] = now["n_norm_samples"]
        if not self.kernel and _differs(params["optimizer"], now["optimizer"]):
            changes["optimizer"] = now["optimizer"]
        return replace(self, **changes)


def _rule_epochs(epoch_rule: tuple[int, int, int], n_train: int) -> int:
    """The epochs of ``epoch_rule`` ``(examples, low, high)`` on ``n_train`` examples."""
    examples, low, high = epoch_rule
    return int(np.clip(round(examples / max(n_train, 1)), low, high))


def bag_epoch_range(n_classes: int, entries: float, n_samples: int | None) -> tuple[int, int]:
    """The range of the factored bag's epochs at ``max_epochs="auto"`` (by SGD).

    ``BAG_EPOCH_RANGE``, its high end at most ``BAG_WIDE_EPOCHS`` where the label space
    is too large for the linear model (:func:`linear_fits` false on ``n_samples`` rows).
    With an unknown number of rows (a stream of chunks): ``BAG_EPOCH_RANGE``.

    Parameters
    ----------
    n_classes : int
    entries : float
        Mean stored entries per row.
    n_samples : int or None
        Training rows; None: not known.

    Returns
    -------
    tuple of (int, int)
        The fewest and the most epochs.
    """
    low, high = BAG_EPOCH_RANGE
    if n_samples is None or linear_fits(n_classes, entries, n_samples):
        return low, high
    return low, min(high, BAG_WIDE_EPOCHS)


def bag_holds_out(n_samples: int | None, patience: int) -> bool:
    """Whether a new fit of the factored bag by SGD at ``max_epochs="auto"`` holds out
    examples for early stopping.

    Not when about ``BAG_EXAMPLES`` example updates take at most ``patience`` epochs
    (within ``BAG_EPOCH_RANGE``) on all ``n_samples`` examples: early stopping could
    then never stop the fit, and the held-out examples would only be lost to every
    epoch's training (``benchmarks/README.md``, issue 29's seventh session, measures
    the gain on the tasks of this regime). The decision reads those epochs before the
    cap of a large label space (:func:`bag_epoch_range`): a fit that the cap shortens to
    ``BAG_WIDE_EPOCHS`` keeps its held-out examples, which still check it against the
    prior start (the warning for a fit that learnt nothing) and choose its best epoch
    (the eighth session's section).

    Parameters
    ----------
    n_samples : int or None
        Training examples of the fit (None: unknown, a stream of chunks).
    patience : int
        The estimator's ``patience``.

    Returns
    -------
    bool
    """
    if n_samples is None:
        return True
    return _rule_epochs((BAG_EXAMPLES, *BAG_EPOCH_RANGE), n_samples) > patience


def _snapshot(estimator) -> dict:
    params = {name: getattr(estimator, name) for name in _PLAN_PARAMS}
    params["optimizer_kwargs"] = dict(params["optimizer_kwargs"] or {})
    return params


def linear_budget(n_classes: int, n_samples: int | None) -> float:
    """How many times the factored bag's cost per example the linear model may cost.

    ``LINEAR_COST`` times ``clip(LINEAR_FEW_ROWS / rows_per_class, 1,
    LINEAR_FEW_ROWS_SCALE)``, with ``rows_per_class = n_samples / n_classes``: more
    with few training rows per class (where the factored bag learns nothing),
    continuous in the rows per class.

    Parameters
    ----------
    n_classes : int
    n_samples : int or None
        Training rows; None: not known (``LINEAR_COST``).

    Returns
    -------
    float
    """
    if not n_samples:
        return float(LINEAR_COST)
    scale = np.clip(LINEAR_FEW_ROWS * n_classes / n_samples, 1.0, LINEAR_FEW_ROWS_SCALE)
    return float(LINEAR_COST * scale)


def linear_fits(n_classes: int, entries: float, n_samples: int | None = None) -> bool:
    """Whether the full-rank linear model is the plan for a sparse ``X``.

    Its cost per example (``entries * n_classes``) is at most :func:`linear_budget`
    times the factored bag's, ``BAG_DIM * (entries + BAG_NEGATIVES + 1)``. (Its table
    is bounded by folding the features, :func:`linear_buckets`.)

    Parameters
    ----------
    n_classes : int
    entries : float
        Mean stored entries per row.
    n_samples : int or None, default=None
        Training rows; None: not known.

    Returns
    -------
    bool
    """
    factored = BAG_DIM * (entries + BAG_NEGATIVES + 1)
    return entries * n_classes <= linear_budget(n_classes, n_samples) * factored


def linear_buckets(n_classes: int, n_features: int) -> int:
    """The rows the linear model's features are folded into, or 0 (one per feature).

    While ``n_features * n_classes`` is at most ``LINEAR_MAX_WEIGHTS``, 0; past it,
    ``LINEAR_MAX_WEIGHTS // n_classes`` (at least 1): feature ``j`` shares row
    ``j % n_buckets``, continuous in the number of classes (a few colliding features
    just past the cap).

    Parameters
    ----------
    n_classes, n_features : int

    Returns
    -------
    int
    """
    if n_features * n_classes <= LINEAR_MAX_WEIGHTS:
        return 0
    return max(1, LINEAR_MAX_WEIGHTS // n_classes)


def linear_damping(n_classes: int) -> float:
    """The damping of the linear regime's RowAdagrad with ``lr="auto"``.

    ``(n_classes / LINEAR_DAMPING_CLASSES) ** LINEAR_DAMPING_POWER``: about 0 with
    few classes (AdaGrad), large with many (the update becomes SGD at rate
    ``LINEAR_SGD_LR``), continuous in between.

    Parameters
    ----------
    n_classes : int

    Returns
    -------
    float
    """
    return float((n_classes / LINEAR_DAMPING_CLASSES) ** LINEAR_DAMPING_POWER)


def _past_margin_classes(damping: float, ramp: float = LINEAR_MARGIN_RAMP) -> float:
    """The share ``s = x / (1 + x)`` past the damping ``d0`` of ``LINEAR_MARGIN_CLASSES``
    classes: ``x = max(0, damping / d0 - 1) / ramp``; 0 up to them, near 1 well past."""
    d0 = linear_damping(LINEAR_MARGIN_CLASSES)
    excess = max(0.0, damping / d0 - 1.0) / ramp
    return excess / (1.0 + excess)


def _ramp(value: float, bounds: tuple[float, float]) -> float:
    """0 at ``bounds[0]`` or below, 1 at ``bounds[1]`` or above, linear in between."""
    lo, hi = bounds
    return float(np.clip((value - lo) / (hi - lo), 0.0, 1.0))


def _many_rows(rows_per_class: float | None) -> float:
    """0 at ``LINEAR_MARGIN_ROWS[0]`` rows per class or fewer, 1 at ``LINEAR_MARGIN_ROWS[1]``
    or more (or unknown), linear in between."""
    return _ramp(rows_per_class, LINEAR_MARGIN_ROWS) if rows_per_class else 1.0


def linear_sgd_rate(damping: float, rows_per_class: float | None = None) -> float:
    """The rate of the linear regime's damped update per unit of damping (its SGD rate).

    ``LINEAR_SGD_LR - (LINEAR_SGD_LR - LINEAR_SGD_LR_MANY_ROWS) * s * m``: ``s`` the
    share past the damping ``d0`` of ``LINEAR_MARGIN_CLASSES`` classes, ``x / (1 + x)``
    with ``x = max(0, damping / d0 - 1) / LINEAR_SGD_RAMP`` (0 up to them, near 1 well
    past them), ``m`` from 0 at ``LINEAR_MARGIN_ROWS[0]`` rows per class or fewer to 1
    at ``LINEAR_MARGIN_ROWS[1]`` or more (or unknown), linear in between; plus
    ``(LINEAR_SGD_LR_FEWER_ROWS - LINEAR_SGD_LR) * c`` below ``LINEAR_FEWER_ROWS[1]``
    rows per class, ``c`` :func:`linear_fewer_rows` (0 from there).

    Parameters
    ----------
    damping : float
        :func:`linear_damping`.
    rows_per_class : float or None, default=None
        Training rows per class; ``None`` (unknown): many.

    Returns
    -------
    float
    """
    share = _past_margin_classes(damping, LINEAR_SGD_RAMP) * _many_rows(rows_per_class)
    rate = LINEAR_SGD_LR - (LINEAR_SGD_LR - LINEAR_SGD_LR_MANY_ROWS) * share
    if fewer := linear_fewer_rows(damping, rows_per_class):
        rate += (LINEAR_SGD_LR_FEWER_ROWS - LINEAR_SGD_LR) * fewer
    return float(rate)


def linear_fewer_rows(damping: float, rows_per_class: float | None) -> float:
    """The share of fewer than ``LINEAR_FEWER_ROWS[1]`` rows per class in the linear plan.

    ``(1 - f) * (1 - w) * s``: ``f`` from 0 at ``LINEAR_FEWER_ROWS[0]`` rows per class or
    fewer to 1 at ``LINEAR_FEWER_ROWS[1]`` or more (or unknown), linear in between; ``w``
    the classes' share of the way through ``LINEAR_STEEP_CLASSES`` (where the wide margin
    comes in, measured at the rate before; the classes read from the damping); ``s`` the
    share past the damping of ``LINEAR_MARGIN_CLASSES`` classes (:func:`linear_sgd_rate`'s,
    0 up to them). It moves the SGD rate towards ``LINEAR_SGD_LR_FEWER_ROWS``
    (:func:`linear_sgd_rate`) and the power of the inverse document frequencies towards
    ``LINEAR_IDF_POWER_FEWER_ROWS`` (:func:`linear_idf_power`).

    Parameters
    ----------
    damping : float
        :func:`linear_damping`.
    rows_per_class : float or None
        Training rows per class; ``None`` (unknown): many.

    Returns
    -------
    float
        In ``[0, 1]``; exactly 0 up to ``LINEAR_MARGIN_CLASSES`` classes, from
        ``LINEAR_STEEP_CLASSES[1]`` classes and from ``LINEAR_FEWER_ROWS[1]`` rows per
        class.
    """
    if not rows_per_class:
        return 0.0
    few = 1.0 - _ramp(rows_per_class, LINEAR_FEWER_ROWS)
    if not few:
        return 0.0
    narrow = 1.0 - _ramp(_classes(damping), LINEAR_STEEP_CLASSES)
    return few * narrow * _past_margin_classes(damping, LINEAR_SGD_RAMP)


def linear_idf_power(damping: float, rows_per_class: float | None = None) -> float:
    """The power the linear plan raises ``bag="log1p-idf"``'s inverse document
    frequencies to.

    ``1 - (1 - LINEAR_IDF_POWER_FEWER_ROWS) * c``, ``c`` :func:`linear_fewer_rows`: 1
    (the frequencies as they are) up to ``LINEAR_MARGIN_CLASSES`` classes, from
    ``LINEAR_STEEP_CLASSES[1]`` classes and from ``LINEAR_FEWER_ROWS[1]`` rows per class,
    continuous in both arguments.

    Parameters
    ----------
    damping, rows_per_class : float
        As :func:`linear_fewer_rows` reads them (``rows_per_class`` ``None``: many).

    Returns
    -------
    float
        In ``[LINEAR_IDF_POWER_FEWER_ROWS, 1]``.
    """
    return float(
        1.0 - (1.0 - LINEAR_IDF_POWER_FEWER_ROWS) * linear_fewer_rows(damping, rows_per_class)
    )


def linear_fewest_rows(n_classes: float, rows_per_class: float | None) -> float:
    """The share of the fewest rows per class in the linear regime's plan.

    ``(1 - f) * c``: ``f`` from 0 at ``LINEAR_FEWEST_ROWS[0]`` rows per class or fewer to
    1 at ``LINEAR_FEWEST_ROWS[1]`` or more (or unknown), linear in between; ``c`` the
    classes' share of the way through ``LINEAR_WIDER_CLASSES``. Where it is above 0 the
    hold-out keeps every class a training example (the plan's ``keep_classes``), and it
    widens the margin's target on from ``1 + LINEAR_WIDE`` to ``1 + LINEAR_FEWEST_WIDE``
    times the SGD rate (:func:`linear_margin`).

    Parameters
    ----------
    n_classes : float
    rows_per_class : float or None
        Training rows per class; ``None`` (unknown): many.

    Returns
    -------
    float
        In ``[0, 1]``; exactly 0 below ``LINEAR_WIDER_CLASSES[0]`` classes or from
        ``LINEAR_FEWEST_ROWS[1]`` rows per class.
    """
    if not rows_per_class:
        return 0.0
    few = 1.0 - _ramp(rows_per_class, LINEAR_FEWEST_ROWS)
    return few * _ramp(n_classes, LINEAR_WIDER_CLASSES)


def _classes(damping: float) -> float:
    """The classes of the damping ``damping`` (:func:`linear_damping`'s inverse)."""
    lo = LINEAR_WIDE_CLASSES[0]
    return (damping / linear_damping(lo)) ** (1.0 / LINEAR_DAMPING_POWER) * lo


def _wide(damping: float, rows_per_class: float | None) -> float:
    """The widening ``w`` of the margin's target: the larger of the classes' share of the
    way through ``LINEAR_STEEP_CLASSES`` and their share through ``LINEAR_WIDE_CLASSES``
    plus ``LINEAR_WIDE - 1`` times their share through ``LINEAR_WIDER_CLASSES``, plus
    ``LINEAR_FEWEST_WIDE - LINEAR_WIDE`` times :func:`linear_fewest_rows` (the classes
    read from the damping, of which they are the ``LINEAR_DAMPING_POWER``-th root),
    times ``1 - m``; exactly 0 up to ``LINEAR_STEEP_CLASSES[0]``."""
    classes = _classes(damping)
    wide = _ramp(classes, LINEAR_WIDE_CLASSES)
    wide += (LINEAR_WIDE - 1.0) * _ramp(classes, LINEAR_WIDER_CLASSES)
    wide = max(wide, _ramp(classes, LINEAR_STEEP_CLASSES))
    if fewest := linear_fewest_rows(classes, rows_per_class):
        wide += (LINEAR_FEWEST_WIDE - LINEAR_WIDE) * fewest
    return wide * (1.0 - _many_rows(rows_per_class))


def linear_margin(damping: float, rows_per_class: float | None = None) -> float:
    """The linear regime's training margin for the update of ``damping``.

    ``LINEAR_MARGIN + (r * (1 + w) - LINEAR_MARGIN) * s``: ``r`` the SGD rate
    (:func:`linear_sgd_rate`, the scale of one SGD step's change of a score), ``s`` the
    share past the damping ``d0`` of ``LINEAR_MARGIN_CLASSES`` classes, ``x / (1 + x)``
    with ``x = max(0, damping / d0 - 1) / ramp``: ``ramp`` is ``LINEAR_MARGIN_RAMP``
    with a few rows per class and ``LINEAR_SGD_RAMP`` (the rate's) with many, linear in
    the rate's ``m`` between (:func:`linear_sgd_rate`). ``w`` widens the target to up
    to ``1 + LINEAR_WIDE`` times the rate with a few rows per class and many classes:
    the larger of the share of the way through ``LINEAR_STEEP_CLASSES`` and the share
    through ``LINEAR_WIDE_CLASSES`` plus ``LINEAR_WIDE - 1`` times the share through
    ``LINEAR_WIDER_CLASSES`` (linear in the classes ``n_classes``, read from the
    damping, ``LINEAR_DAMPING_CLASSES * damping ** (1 / LINEAR_DAMPING_POWER)``), times
    ``1 - m``: 0 up to ``LINEAR_STEEP_CLASSES[0]`` classes or from
    ``LINEAR_MARGIN_ROWS[1]`` rows per class. AdaGrad's margin up to ``d0``, the SGD
    rate well past it, twice it with a few rows per class from
    ``LINEAR_STEEP_CLASSES[1]`` classes, up to ``1 + LINEAR_WIDE`` times it past
    ``LINEAR_WIDE_CLASSES[1]``; continuous in both arguments.

    Parameters
    ----------
    damping : float
        :func:`linear_damping` (0: RowAdagrad's own update, an explicit ``lr``).
    rows_per_class : float or None, default=None
        Training rows per class; ``None`` (unknown): many.

    Returns
    -------
    float
    """
    many = _many_rows(rows_per_class)
    slow = _past_margin_classes(damping)
    share = slow + many * (_past_margin_classes(damping, LINEAR_SGD_RAMP) - slow)
    target = linear_sgd_rate(damping, rows_per_class) * (1.0 + _wide(damping, rows_per_class))
    return float(LINEAR_MARGIN + (target - LINEAR_MARGIN) * share)


def linear_rival(damping: float, rows_per_class: float | None = None) -> float:
    """The weight of the linear softmax's one-vs-all term of the label and its best rival.

    ``LINEAR_RIVAL * s * (1 - q)``: ``s`` the margin's share past the damping of
    ``LINEAR_MARGIN_CLASSES`` classes (:func:`linear_margin`'s with a few rows per
    class: 0 up to them), ``q`` from 0 at ``LINEAR_RIVAL_ROWS[0]`` rows per class or
    fewer to 1 at ``LINEAR_RIVAL_ROWS[1]`` or more (or unknown), linear in between: 0
    (the plain margin softmax) with many rows per class, continuous in both arguments.

    Parameters
    ----------
    damping : float
        The update's damping, as :func:`linear_margin` reads it.
    rows_per_class : float or None, default=None
        As :func:`linear_margin`'s (``None``: many, no term).

    Returns
    -------
    float
        The weight ``r`` of :class:`~sknce.losses.MarginSoftmaxLoss`'s ``rival``.
    """
    many = _ramp(rows_per_class, LINEAR_RIVAL_ROWS) if rows_per_class else 1.0
    return float(LINEAR_RIVAL * _past_margin_classes(damping) * (1.0 - many))


def linear_rival_threshold(n_classes: int) -> float:
    """The score of even odds of the linear softmax's one-vs-all term (:func:`linear_rival`).

    ``-log(n_classes)``: the log prior of a uniform label, where the scores start. The
    plan takes it wherever that term's weight is above 0 (0 elsewhere: the term is off).

    Parameters
    ----------
    n_classes : int
        The label count.

    Returns
    -------
    float
        :class:`~sknce.losses.MarginSoftmaxLoss`'s ``rival_threshold``; at most 0.
    """
    return float(-np.log(n_classes))


def linear_refit(n_classes: float, rows_per_class: float | None) -> float:
    """The share of the longer, two-seed refit of a few rows per class.

    ``c * r * (1 - q)``: ``c`` the classes' share of the way through
    ``LINEAR_REFIT_CLASSES``, ``r`` from 0 at ``LINEAR_REFIT_ROWS[0][0]`` rows per class
    or fewer to 1 at ``LINEAR_REFIT_ROWS[0][1]``, ``q`` from 0 at ``LINEAR_REFIT_ROWS[1][0]`` or
    fewer to 1 at ``LINEAR_REFIT_ROWS[1][1]`` or more (or unknown), linear in between.
    The refit then trains ``1 + LINEAR_REFIT_LONGER * share`` times the epochs the
    held-out fit chose (the plan's ``refit_epochs``), and its label tables take
    ``LINEAR_REFIT_MIX * share`` of those of a second refit on another seed (the plan's
    ``refit_mix``).

    Parameters
    ----------
    n_classes : float
        The label count.
    rows_per_class : float or None
        Training rows per class; ``None`` (unknown): many, the refit as before.

    Returns
    -------
    float
        In ``[0, 1]``; exactly 0 from ``LINEAR_REFIT_ROWS[1][1]`` rows per class, at
        ``LINEAR_REFIT_ROWS[0][0]`` or fewer and up to ``LINEAR_REFIT_CLASSES[0]``
        classes.
    """
    if not rows_per_class:
        return 0.0
    few, many = LINEAR_REFIT_ROWS
    rows = _ramp(rows_per_class, few) * (1.0 - _ramp(rows_per_class, many))
    return _ramp(n_classes, LINEAR_REFIT_CLASSES) * rows


def linear_threads(n_classes: int, entries: float) -> int:
    """The most threads that pay for the linear model's compiled step.

    One per ``LINEAR_THREAD_WORK`` multiply-adds of an example's scores
    (``entries * n_classes``), at least one.

    Parameters
    ----------
    n_classes : int
    entries : float
        Mean stored entries per row.

    Returns
    -------
    int
    """
    return max(1, int(entries * n_classes // LINEAR_THREAD_WORK))


def _sparse_optimizer(optimizer: type, kwargs: dict) -> type | None:
    """The optimizer ``sparse_embeddings="auto"`` trains sparse tables with, or None.

    The default Adam becomes :class:`~sknce.optim.LazyAdam` (when the options are
    LazyAdam's too); an optimizer that accepts sparse gradients is kept; any other
    keeps the tables dense.
    """
    if optimizer is torch.optim.Adam:
        taken = set(inspect.signature(LazyAdam.__init__).parameters) - {"self", "params"}
        return LazyAdam if set(kwargs) <= taken else None
    if isinstance(optimizer, type) and issubclass(optimizer, SPARSE_OPTIMIZERS):
        return optimizer
    return None


def _auto_lr(
    regime: str, kernel: bool, entries: float | None, damping: float = 0.0, sgd_rate: float = 0.0
) -> float:
    """The rate of ``lr="auto"`` for the regime and its step (and the linear regime's
    damping and SGD rate, :func:`linear_sgd_rate`)."""
    if regime == "linear" and kernel:
        adagrad = np.clip(LINEAR_LR / np.sqrt(max(entries, 1.0)), *LINEAR_LR_RANGE)
        return float(adagrad + sgd_rate * damping)
    if regime == "bag" and kernel:
        return float(np.clip(BAG_LR_PER_ENTRY * (entries or 0.0), *BAG_LR_RANGE))
    return ADAM_LR


def _regime(estimator, facts: DataFacts) -> str:
    builtin_bag = (
        estimator.encoder is None
        and estimator.hidden_layer_sizes == "auto"
        and facts.entries is not None
    )
    if not builtin_bag:
        return "network"
    plain = (
        not facts.multilabel
        and estimator.n_negatives == "auto"
        and estimator.objective in ("ranking", "mle")
        and estimator.embedding_dim is None
        and estimator.self_normalization == 0
        and not estimator.input_bias
        and estimator.dropout == 0
    )
    if plain and linear_fits(facts.n_classes, facts.entries, facts.n_samples):
        return "linear"
    return "bag"


def _kernel_optimizer(estimator, compiled: type) -> bool:
    """Whether the optimizer is the compiled step's (or the default Adam, which becomes it)."""
    return estimator.optimizer in (torch.optim.Adam, compiled) and not estimator.optimizer_kwargs


def resolve_plan(
    estimator,
    facts: DataFacts,
    accelerator_processes: int = 1,
    multilabel: MultilabelPlan | None = None,
) -> ClassifierPlan:
    """The plan of a new fit of ``estimator`` on data with ``facts``.

    Parameters
    ----------
    estimator : ConditionalNCEClassifier
        Its parameters.
    facts : DataFacts
        Of the training data.
    accelerator_processes : int, default=1
        Processes of a data-parallel fit (sparse gradients need one).
    multilabel : MultilabelPlan or None, default=None
        The settings of a label-indicator ``y``
        (:func:`sknce.conditional._multilabel.resolve_plan`), which the plan takes over.

    Returns
    -------
    ClassifierPlan
    """
    if multilabel is not None:
        plan = _multilabel_fields(estimator, facts, multilabel)
        return _with_sparse_tables(
            estimator, facts, plan, multilabel.optimizer, accelerator_processes
        )
    regime = _regime(estimator, facts)
    kwargs = dict(estimator.optimizer_kwargs or {})
    n_classes = facts.n_classes
    objective = "ova" if facts.multilabel else estimator.objective
    margin, exhaustive, n_negatives, damping, max_threads, n_buckets = 0.0, False, 0, 0.0, 0, 0
    sgd_rate, rival, rival_threshold, keep_classes = 0.0, 0.0, 0.0, False
    idf_power = 1.0
    refit_share = 0.0
    early_stopping = bool(estimator.early_stopping)
    bag = None
    if facts.entries is not None:
        bag = estimator.bag
        if bag == "auto":
            bag = "log1p-idf" if regime == "linear" and facts.non_negative else "counts"
    if regime == "linear":
        kernel = _kernel_optimizer(estimator, RowAdagrad) or (
            estimator.optimizer in (torch.optim.SGD,) and not kwargs
        )
        optimizer = (
            RowAdagrad
            if estimator.optimizer is torch.optim.Adam and not kwargs
            else (estimator.optimizer)
        )
        objective = "softmax"
        width = n_classes
        n_buckets = linear_buckets(n_classes, facts.n_features)
        rows_per_class = facts.n_samples and facts.n_samples / n_classes
        if kernel and optimizer is RowAdagrad and estimator.lr == "auto":
            damping = linear_damping(n_classes)
            sgd_rate = linear_sgd_rate(damping, rows_per_class)
            idf_power = linear_idf_power(damping, rows_per_class)
        if estimator.objective == "ranking":
            margin = linear_margin(damping, rows_per_class)
            rival = linear_rival(damping, rows_per_class)
            if rival:
                rival_threshold = linear_rival_threshold(n_classes)
            keep_classes = bool(damping) and linear_fewest_rows(n_classes, rows_per_class) > 0
            refit_share = linear_refit(n_classes, rows_per_class) if damping else 0.0
        if kernel:
            max_threads = linear_threads(n_classes, facts.entries)
        epoch_rule = (LINEAR_EXAMPLES, *LINEAR_EPOCH_RANGE)
    elif (
        regime == "bag"
        and _kernel_optimizer(estimator, torch.optim.SGD)
        and (
            objective == "ranking"
            and estimator.self_normalization == 0
            and not estimator.input_bias
            and estimator.dropout == 0
        )
    ):
        kernel, optimizer = True, torch.optim.SGD
        width = BAG_DIM if estimator.embedding_dim is None else estimator.embedding_dim
        epoch_rule = (BAG_EXAMPLES, *bag_epoch_range(n_classes, facts.entries, facts.n_samples))
        if estimator.n_negatives == "auto":
            exhaustive = n_classes - 1 <= BAG_NEGATIVES
            n_negatives = n_classes if exhaustive else BAG_NEGATIVES
        if estimator.max_epochs == "auto":
            early_stopping &= bag_holds_out(facts.n_samples, estimator.patience)
    else:
        kernel, optimizer = False, estimator.optimizer
        epoch_rule = (0, 0, 0)
        width = None
        if regime == "bag":
            width = BAG_DIM if estimator.embedding_dim is None else estimator.embedding_dim
    if not n_negatives and objective not in ("mle", "softmax"):
        n_negatives = (
            AUTOGRAD_NEGATIVES if estimator.n_negatives == "auto" else estimator.n_negatives
        )
    batch_size = estimator.batch_size
    if batch_size == "auto":
        batch_size = BAG_BATCH if kernel else AUTOGRAD_BATCH
    n_norm = estimator.n_norm_samples if estimator.self_normalization > 0 else 0
    auto_lr = _auto_lr(regime, kernel, facts.entries, damping, sgd_rate)
    shared = bool(estimator.shared_negatives) or exhaustive
    plan = dict(
        regime=regime,
        bag=bag,
        width=width,
        objective=objective,
        margin=margin,
        n_negatives=n_negatives,
        exhaustive=exhaustive,
        shared=shared,
        remove_hits=bool(estimator.remove_accidental_hits),
        n_norm_samples=n_norm,
        kernel=kernel,
        lr=auto_lr if estimator.lr == "auto" else float(estimator.lr),
        auto_lr=auto_lr,
        lr_decay=kernel and estimator.lr == "auto",
        batch_size=batch_size,
        max_epochs=None if estimator.max_epochs == "auto" else estimator.max_epochs,
        epoch_rule=epoch_rule,
        n_jobs=check_n_jobs(estimator.n_jobs),
        calibrate=regime == "linear",
        refit=regime == "linear",
        early_stopping=early_stopping,
        params=tuple(_snapshot(estimator).items()),
        damping=damping,
        max_threads=max_threads,
        n_buckets=n_buckets,
        rival=rival,
        keep_classes=keep_classes,
        rival_threshold=rival_threshold,
        idf_power=idf_power,
        refit_epochs=1.0 + LINEAR_REFIT_LONGER * refit_share,
        refit_mix=LINEAR_REFIT_MIX * refit_share,
    )
    if max_threads:
        plan["n_jobs"] = min(plan["n_jobs"], max_threads)
    return _with_sparse_tables(estimator, facts, plan, optimizer, accelerator_processes)


def _with_sparse_tables(estimator, facts, plan: dict, optimizer: type, processes: int):
    """The plan of the fields ``plan``, its tables' sparsity and optimizer resolved."""
    sparse_embeddings, sparse_input, optimizer = _sparse_tables(
        estimator, facts, plan["regime"], plan, optimizer, processes
    )
    return ClassifierPlan(
        optimizer=optimizer,
        sparse_embeddings=sparse_embeddings,
        sparse_input=sparse_input,
        **plan,
    )


def _multilabel_fields(estimator, facts: DataFacts, multilabel: MultilabelPlan) -> dict:
    """The plan's fields (but the tables') for a label indicator: the sampled one-vs-all
    loss over rows, with the multi-label plan's ``"auto"`` settings."""
    compiled = multilabel.compiled
    bag = None
    if facts.entries is not None:
        bag = estimator.bag
        if bag == "auto":
            bag = "log1p-idf" if multilabel.weigh_bags else "counts"
    width = None
    if multilabel.bag:
        width = estimator.embedding_dim or multilabel.dim or BAG_DIM
    auto_lr = multilabel.lr if compiled else ADAM_LR
    return dict(
        regime="bag" if multilabel.bag else "network",
        bag=bag,
        width=width,
        objective="ova",
        margin=0.0,
        n_negatives=(
            multilabel.n_negatives if estimator.n_negatives == "auto" else estimator.n_negatives
        ),
        exhaustive=False,
        shared=bool(estimator.shared_negatives),
        remove_hits=bool(estimator.remove_accidental_hits),
        n_norm_samples=0,
        kernel=compiled,
        lr=auto_lr if estimator.lr == "auto" else float(estimator.lr),
        auto_lr=auto_lr,
        lr_decay=compiled and estimator.lr == "auto",
        batch_size=(
            multilabel.batch_size if estimator.batch_size == "auto" else estimator.batch_size
        ),
        max_epochs=None if estimator.max_epochs == "auto" else estimator.max_epochs,
        epoch_rule=(ROW_UPDATES, *EPOCH_RANGE) if compiled else (0, 0, 0),
        n_jobs=check_n_jobs(estimator.n_jobs),
        calibrate=False,
        refit=multilabel.refit,
        early_stopping=bool(estimator.early_stopping),
        params=tuple(_snapshot(estimator).items()),
    )


def _sparse_tables(estimator, facts, regime, plan, optimizer, processes):
    """``sparse_embeddings`` resolved for the label and the feature tables, and the
    optimizer that trains them (the default Adam becomes LazyAdam for sparse ones)."""
    choice = estimator.sparse_embeddings
    kwargs = dict(estimator.optimizer_kwargs or {})

    def resolve(n_rows: int, touched: float) -> bool:
        if not isinstance(choice, str):
            return bool(choice)
        if n_rows < SPARSE_RATIO * touched or processes > 1:
            return False
        return _sparse_optimizer(optimizer, kwargs) is not None

    batch = plan["batch_size"]
    drawn = plan["n_negatives"] + plan["n_norm_samples"]
    shared = plan["shared"]
    rows_per_step = batch + (drawn if shared else batch * drawn)
    has_labels = regime != "linear" and plan["objective"] != "mle"
    sparse_embeddings = has_labels and resolve(facts.n_classes, rows_per_step)
    hidden = estimator.hidden_layer_sizes
    has_input_layer = estimator.encoder is None and (
        regime != "network"
        or hidden == "auto"
        or len(hidden) > 0
        or estimator.embedding_dim is not None
    )
    sparse_input = bool(has_input_layer and facts.entries is not None) and resolve(
        facts.n_features, batch * facts.entries
    )
    if not plan["kernel"] and isinstance(choice, str) and (sparse_embeddings or sparse_input):
        optimizer = _sparse_optimizer(optimizer, kwargs)
    return sparse_embeddings, sparse_input, optimizer


def plan_fields() -> tuple[str, ...]:
    """The names of a plan's fields (for tests and docs)."""
    return tuple(f.name for f in fields(ClassifierPlan))
