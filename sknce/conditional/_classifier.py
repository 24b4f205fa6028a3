"""ConditionalNCEClassifier: p(y | x) over huge label sets, learned by NCE (Ma & Collins, 2018)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import type_of_target

from sknce._bags import (
    BAGS,
    document_frequencies,
    idf_of_frequencies,
    smooth_idf,
)
from sknce._base import (
    APPLIED,
    ENCODER_CONSTRAINT,
    FIXED,
    BaseNCE,
    FitPlan,
    Fixed,
    auto_epochs,
    check_sortable_labels,
    common_params,
)
from sknce._callbacks import ChanceAwareEarlyStopping, LinearDecay
from sknce._checks import check_n_jobs, check_not_a_chunk_list, check_same_classes
from sknce._compat import Interval, StrOptions, check_is_fitted, validate_data
from sknce._data import (
    SampledDataset,
    as_csr_or_dense,
    rows_to_tensor,
)
from sknce._engine import HoldOut
from sknce._random import Seeds
from sknce._steps import KernelStep, TrainStep
from sknce._validation import all_strings, check_no_missing_labels, encode_labels
from sknce._warnings import warn_caller
from sknce._weights import UNTRAINED, score_weights
from sknce.conditional import _cooccurrence, _multilabel
from sknce.conditional._kernel_step import BagOneVsAllStep, BagRankingStep, LinearSoftmaxStep
from sknce.conditional._plan import (
    ADAM_LR,
    END_LR,
    ClassifierPlan,
    DataFacts,
    resolve_plan,
)
from sknce.conditional._sampler import LabelSampler, LabelSetSampler
from sknce.conditional._temperature import fit_temperature
from sknce.conditional._tempered_stopping import TemperedEarlyStopping
from sknce.losses import (
    BinaryNCELoss,
    MarginSoftmaxLoss,
    MultilabelOneVsAllLoss,
    RankingNCELoss,
    SelfNormalized,
    SoftmaxLoss,
)
from sknce.nn import MLP, BagEncoder, BagWeighting, DenseInput, LabelScorer, LinearLabelScorer
from sknce.nn._inference import InferenceModule, LabelProbabilities
from sknce.noise import CategoricalNoise, UniformNoise, UnigramNoise

__all__ = ["ConditionalNCEClassifier"]


class _Labelled(NamedTuple):
    """A fit's inputs and labels, the declared classes and (new fit) the log prior."""

    X: object
    y: np.ndarray | None
    declared: object
    log_prior: np.ndarray | None = None
    n_examples: int = 0
    #: Single-label y: its distinct labels and each sample's index among them.
    labels: np.ndarray | None = None
    codes: np.ndarray | None = None


#: Early stopping: an epoch improves on the best validation loss only if it lowers it by
#: more than this fraction of it (the slow drift of a plateau is not progress).
_PLATEAU = 1e-3

#: Added to the fit's seed for the seed of a second refit (``plan_.refit_mix``).
_SECOND_REFIT_SEED = 7919

#: ``max_epochs="auto"`` on the autograd step: about this many gradient steps, in this
#: range of epochs (early stopping ends most fits sooner).
_TARGET_STEPS = 3000
_EPOCH_RANGE = (10, 200)

#: Number of labels scored at once at inference: a (1024, 4096) float32 block is 16 MiB.
_CLASS_CHUNK = 4096


#: The role of the parameters of the labels and the noise in a continued fit.
_LABELS = Fixed("fixed the labels and the noise distribution")

_LABEL_SETS_FIX = (
    "Give a label-indicator matrix instead (scipy.sparse CSR or dense 0/1, one column "
    "per label): Y = sklearn.preprocessing.MultiLabelBinarizer(sparse_output=True)"
    ".fit_transform(label_sets)."
)


def _check_targets(y, multilabel: bool = False) -> str:
    """The type of ``y`` (sklearn's ``type_of_target``); a ValueError naming the fix
    unless it holds discrete labels, or (``multilabel``) is a 0/1 label indicator.

    sklearn's ``check_classification_targets`` also warns when the labels outnumber
    half of the samples ("y could represent a regression problem"): with huge label
    sets, where many labels occur once, that is this estimator's intended use.
    """
    if all_strings(y):
        # what type_of_target says of 1-D strings (or "binary"), without its sort of them
        return "multiclass"
    check_no_missing_labels(y)
    try:
        y_type = type_of_target(y, input_name="y")
    except ValueError as error:
        if "legacy multi-label" not in str(error):  # NaN or inf: sklearn's error names it
            raise
        # ragged lists of labels: sklearn's "legacy" format
        raise ValueError(
            f"y looks like lists of label sets ({error}). {_LABEL_SETS_FIX}"
        ) from None
    if y_type == "unknown" and len(y) and isinstance(y[0], (set, frozenset, list, tuple)):
        raise ValueError(f"y is a sequence of label sets. {_LABEL_SETS_FIX}")
    allowed = (
        ("binary", "multiclass", "multilabel-indicator")
        if multilabel
        else ("binary", "multiclass")
    )
    if y_type not in allowed:
        indicator = (
            "; a 2-D y must be a label indicator of 0/1 values (multi-label)"
            if multilabel and y_type.endswith("multioutput")
            else ""
        )
        raise ValueError(
            f"Unknown label type: {y_type}. ConditionalNCEClassifier needs discrete labels "
            "(ints, strings, any hashable), one per sample, or a 0/1 label-indicator matrix "
            f"(multi-label){indicator}; for a continuous target use ConditionalNCERegressor."
        )
    return y_type


def _entries_per_row(X) -> float | None:
    """Mean stored entries per row of a sparse ``X``; None for a dense one."""
    return X.nnz / max(X.shape[0], 1) if sp.issparse(X) else None


def _non_negative(X) -> bool:
    """Whether no stored value of ``X`` is negative (counts)."""
    values = X.data if sp.issparse(X) else X
    return bool(values.size == 0 or values.min() >= 0)


def _logsumexp(scores: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """``log sum exp`` of each row of a block of scores, as float64, given each row's
    maximum ``top`` (batch, 1): the exponentials (each at most 1) summed in the block's
    dtype by vectorised pairwise summation, whose relative error is about the dtype's
    epsilon times log2 of the block's width (a float64 copy of the block costs 5 times
    as much)."""
    total = (scores - top).exp_().sum(dim=1)
    return top[:, 0].double() + torch.log(total.double())


def _with_term(scores: torch.Tensor, shares, table, start: int) -> torch.Tensor:
    """``scores`` of a block of labels from ``start``, plus the co-occurrence term of
    rows of ``shares`` (:func:`~sknce.conditional._cooccurrence.add_term`): added in
    place to a block of its own on the CPU, else through a block moved to its device."""
    if scores.device.type == "cpu" and scores.dtype == torch.float32 and not scores._is_view():
        scores = scores.contiguous()
        _cooccurrence.add_term(scores.numpy(), shares, table, start)
        return scores
    block = np.zeros(tuple(scores.shape), dtype=np.float32)
    _cooccurrence.add_term(block, shares, table, start)
    return scores + torch.from_numpy(block).to(scores.device, scores.dtype)


def _label_noise(noise, counts: np.ndarray, noise_power: float) -> CategoricalNoise:
    """The noise distribution p_N over encoded labels ``0..n_classes-1``."""
    n_classes = counts.shape[0]
    if isinstance(noise, str):
        if noise == "uniform":
            return UniformNoise(n_classes)
        return UnigramNoise(counts, ns_exponent=noise_power)
    probs = np.asarray(noise, dtype=np.float64)
    if probs.shape != (n_classes,):
        raise ValueError(
            f"noise given as an array must have one probability per class, i.e. shape "
            f"({n_classes},) in the order of classes_; got shape {probs.shape}."
        )
    if not np.all(np.isfinite(probs)) or np.any(probs <= 0):
        raise ValueError(
            "noise probabilities must be finite and strictly positive: NCE corrects each "
            "score by log p_N(y), which a zero probability makes infinite."
        )
    return CategoricalNoise(probs)


class ConditionalNCEClassifier(ClassifierMixin, BaseNCE):
    r"""Classifier over large label sets trained by conditional NCE.

    Models :math:`p(y \mid x) = \exp s(x, y) / Z(x)` with
    :math:`s(x, y) = h(x)^\top e_y + b_y`, where :math:`h` is an MLP encoder of a dense
    input, or the mean of the rows of the features of a sparse one (fastText's model,
    trained by a compiled per-example SGD step, see :ref:`huge_label_spaces`),
    :math:`e_y` a label embedding and :math:`b_y` a label bias. Training never sums
    over all labels: each example is contrasted with ``n_negatives`` labels drawn from
    a noise distribution :math:`p_N` (Ma & Collins, 2018, Figure 1). On sparse input
    with few enough classes the defaults instead fit the full-rank linear model
    :math:`s(x, y) = \tilde x^\top v_y + b_y` of the tf-idf weighted input by the exact
    softmax of every class (see :ref:`label_count`). Prediction is exact:
    probabilities are normalised over all of ``classes_``, computed in chunks of
    labels so that memory stays bounded.

    A label-indicator ``y`` (multi-label) gives each label its own probability
    :math:`\sigma(s(x, y))`, trained by the sampled one-vs-all loss over rows; on a
    sparse ``X`` its ``"auto"`` settings are those of extreme multi-label
    classification (tf-idf-weighted bags, per-row Adagrad by a compiled step, early
    stopping on the held-out rows' precision), see :ref:`multilabel`.

    Read more in the :ref:`User Guide <conditional>`.

    Parameters
    ----------
    objective : {"ranking", "binary", "mle"}, default="ranking"
        ``"ranking"``: the ranking loss :math:`L_R` (consistent whenever the model
        family contains the truth, their Assumption 2.1 and Theorem 4.2).
        ``"binary"``: the binary loss :math:`L_B` with a learned log-normaliser
        :math:`\gamma` (consistent only if the model can self-normalise, their
        Assumption 2.2; see ``input_bias``). ``"mle"``: the full softmax, the
        reference, whose cost per example grows with the number of classes.
    n_negatives : int or "auto", default="auto"
        Number of noise labels K drawn per training example. ``"auto"``: 64; 16 for
        the bag encoder trained by SGD (fastText's regime, where a per-example
        update costs about ``K + 1`` label rows), where with at most 17 classes every
        other class is instead each example's noise, once: the ranking loss is then
        the exact softmax cross-entropy; none for the full-rank linear model, which
        scores every class (see ``hidden_layer_sizes``). A given K trains the bag
        encoder on sparse input.
    noise : {"unigram", "uniform"} or array-like of shape (n_classes,), default="unigram"
        The noise distribution :math:`p_N`: the training label marginal raised to
        ``noise_power`` (``"unigram"``), uniform over ``classes_``, or explicit
        positive probabilities in the order of ``classes_``.
    noise_power : float, default=1.0
        Exponent applied to the label counts for ``noise="unigram"`` (1.0: the
        empirical marginal; word2vec uses 0.75).
    self_normalization : float, default=0.0
        Weight :math:`\alpha` of the self-normalisation penalty of Ma & Collins,
        Section 5.2, :math:`\alpha(\log \frac1m \sum_j \exp \bar s(x, \tilde y_j))^2`.
    n_norm_samples : int, default=64
        Number m of noise labels per example in the penalty.
    input_bias : bool, default=False
        Add an input-dependent scalar :math:`b(x)` (an MLP head with
        ``input_bias_layer_sizes``) to the score: the :math:`b_x` of Ma & Collins,
        Section 5.1, which lets the binary objective absorb :math:`\log Z(x)`. It
        cancels in the ranking and softmax objectives and in ``predict_proba``.
    input_bias_layer_sizes : tuple of int, default=(32,)
        Hidden layers of the :math:`b(x)` head.
    hidden_layer_sizes : tuple of int or "auto", default="auto"
        Hidden layers of the encoder :math:`h`. With ``()`` (and
        ``embedding_dim=None``) the model is the log-linear
        :math:`s(x, y) = x^\top\theta_y + b_y` of Section 5.1. ``"auto"``: for a
        dense ``X``, ``(256,)``; for a sparse ``X``, a model of the bag of features
        (see :ref:`label_count`): with few enough classes, the full-rank linear
        model :class:`~sknce.nn.LinearLabelScorer` of the weighted input
        (``bag``), trained by the exact softmax with an additive margin of 1,
        growing with the update's damping (from 500 classes, half way at 5 times
        its damping there, 2 times with many rows per class) to the rate of its SGD
        update (``lr``: 9 up to 6.5 training rows per class, falling to 6 with no
        fewer than 7.5 rows per class, rising to 11 below 6 rows per class, in full
        from 5.5, and back to 9 from 2,125 to 2,194 classes;
        :class:`~sknce.losses.MarginSoftmaxLoss`,
        ``plan_.margin``) and, with a few rows per class, on to twice that rate
        from 2,125 to 2,194 classes and, where larger (from about 2,860 classes), on
        the ramps to twice that rate between 2,500 and 3,000 classes and to 8/3 times
        it between 2,750 and 3,000 classes, and past 2,750 classes on to 10/3 times it
        at 1.87 training rows per class or fewer (none from 2.0 rows), where early
        stopping holds out no example of a class it would leave without one
        (``plan_.keep_classes``); with 7.25 training rows per class or fewer (none
        from 7.5) the loss adds 0.03 times a one-vs-all logistic term of the label
        and its best rival class (``plan_.rival``, grown in with the margin past 500
        classes, with its even odds at the log prior of a uniform label,
        ``plan_.rival_threshold``); where a
        per-example update of its ``n_classes`` scores costs at most 32 times the
        factored model's ``64 * (entries + 17)``, with ``entries`` the mean stored
        entries of a row (up to 4 times more below 10 training rows per class, as
        ``10 / rows_per_class``: the factored model learns little from a few rows of
        a class); its table holds at most 2**27
        numbers, past which the features share ``2**27 // n_classes`` rows
        (feature ``j`` row ``j`` modulo that, ``plan_.n_buckets``); otherwise the
        factored :class:`~sknce.nn.BagEncoder`, the weighted mean of the rows of
        the features present (fastText's hidden layer; see :ref:`huge_label_spaces`).
        Both train by a compiled step on the CPU with the default optimizer; the
        choice is ``plan_.regime``.
    bag : {"auto", "log1p-idf", "tf", "log1p", "counts"}, default="auto"
        How the bag encoder reads a sparse ``X``, as
        :class:`~sknce.DirectNCEEmbedder`'s ``bag``: ``"log1p-idf"``, the
        sublinear counts times their smoothed inverse document frequencies
        (``idf_``), each row scaled to unit norm; ``"tf"``, each row divided by its
        sum; ``"log1p"``; ``"counts"``, as given. ``"auto"``: ``"log1p-idf"`` for
        the linear model of non-negative input, else ``"counts"`` (the factored
        encoder then takes the mean of the rows). Unused for a dense ``X``.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own encoder :math:`h` replacing the MLP: it maps a dense float32 batch
        of shape (batch, n_features) to (batch, d) (sparse input is densified one
        batch at a time); the label embeddings get width ``d``. A class is built
        with ``n_features``; an instance is copied at each fit.
        ``hidden_layer_sizes`` and ``embedding_dim`` are then unused.
    embedding_dim : int or None, default=None
        Width of :math:`h(x)` and :math:`e_y`. ``None``: ``n_features_in_`` when
        ``hidden_layer_sizes=()`` (the identity encoder, which densifies one batch
        of a sparse ``X`` at a time: give an ``embedding_dim`` for wide sparse
        input); ``n_classes`` for the full-rank linear model; 64 otherwise (the bag
        encoder included). A given width trains the bag encoder on sparse input.
    label_bias : bool, default=True
        Learn the label bias :math:`b_y`.
    init : {"prior", "random"}, default="prior"
        Where training starts. ``"prior"``: the label biases at the log of the
        training label frequencies (smoothed by one with ``classes``) and the label
        embeddings at zero, so the untrained model predicts the label frequencies
        for every input, and early stopping returns to it if no epoch beats it on
        held-out data. ``"random"``: biases at zero and embeddings drawn from
        :math:`\mathcal{N}(0, 1/d)`, as in Ma & Collins' experiments.
    dropout : float, default=0.0
        Share of the components of :math:`h(x)` zeroed at each training step
        (inverted dropout; none at inference).
    sparse_embeddings : bool or "auto", default="auto"
        Give the label embeddings and biases sparse gradients in the NCE objectives
        (only the rows of the true and sampled labels), so that a training step costs
        O(batch × K) whatever the number of labels, instead of a dense update of all
        of them; for a sparse ``X``, give the first layer of the built-in encoder
        sparse gradients too (only the rows of the features present in the batch).
        Needs an optimiser that accepts sparse gradients:
        :class:`sknce.optim.LazyAdam` (Adam on the rows present), ``torch.optim.SGD`` or
        ``torch.optim.Adagrad``; ``torch.optim.Adam`` does not. ``"auto"`` decides
        for each table: sparse when it has at least 3 times as many rows as a
        training step reads (where sparse updates start to pay, see
        :ref:`scaling`): for the labels ``batch_size * (1 + n_negatives)``
        (``batch_size + n_negatives`` with ``shared_negatives``; self-normalisation
        samples count as negatives), i.e. from 49,920 classes at the defaults, and
        never for ``objective="mle"``; for the features ``batch_size`` times the
        mean stored entries per row of a sparse ``X``. And only when the fit runs in
        one process, and the optimizer takes sparse gradients or is the default
        ``torch.optim.Adam`` with options LazyAdam has, which is then replaced by
        :class:`~sknce.optim.LazyAdam`. The choices are ``sparse_embeddings_`` and
        ``sparse_input_``.
    shared_negatives : bool, default=False
        Draw one set of ``n_negatives`` noise labels per batch, shared by all its
        examples and scored with one matrix product (TensorFlow's sampled softmax
        does so), instead of a set per example. Each example still meets K labels
        drawn independently from :math:`p_N`, so its objective and its
        :math:`\log p_N` correction are those of Figure 1; the examples of a batch
        are no longer independent, and a step updates fewer label rows. Faster
        per step, the more so with many labels and large K.
    remove_accidental_hits : bool, default=False
        Drop sampled negatives equal to the true label. Figure 1's objectives keep
        them, and the consistency results are proved for that form; removing them
        (TensorFlow's sampled-softmax practice) biases the estimate when the true
        label has a large noise probability, and makes no difference at 10^5 labels.
    classes : array-like of shape (n_classes,) or None, default=None
        The full label set, when some labels may be absent from the training ``y``
        (common with 10^5 labels). ``None``: the labels seen in ``y``. With
        ``noise="unigram"`` the counts are then smoothed by one, so that every label
        has a positive noise probability.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplying each example's loss (and its
        ``sample_weight``), as in scikit-learn's classifiers: ``{label: weight}``
        (labels absent weigh 1), or ``"balanced"``, ``n_samples / (n_classes *
        np.bincount(y))``. The weights are scaled to mean 1 over the training set.
        ``"balanced"`` needs every label at once: not with ``partial_fit``. Not for
        multi-label ``y``.
    multilabel_threshold : float, default=0.5
        Multi-label ``y`` only: :meth:`predict` returns the labels whose probability
        (:meth:`predict_proba`, per label) exceeds this threshold. For the ``k`` best
        labels of each row, use :meth:`predict_topk`.
    cooccurrence_weight : float or "auto", default="auto"
        Multi-label ``y`` on a sparse ``X`` of non-negative values with the built-in bag
        encoder only: the weight :math:`w` of the co-occurrence term added to every
        label's score, :math:`s(x, y) = h(x)^\top e_y + b_y + w \sum_j a_j(x)\,
        \mathrm{PPMI}[j, y]`, with :math:`a_j(x)` the shares of the row's features as
        the bag reads them and :math:`\mathrm{PPMI}[j, y]` the positive pointwise mutual
        information of feature ``j`` and label ``y`` over the training rows (the pairs
        found in at least two rows; ``cooccurrence_``). ``"auto"``: chosen from 0 to 32
        by the precision@1-5 of the rows held out for early stopping, scored by the
        network of the other rows at the epoch the fit chose and a table of those other
        rows: the smallest weight with 90% of the best weight's gain (0, no term, where
        none gains, and without held-out rows: ``early_stopping=False`` or
        ``partial_fit``); a number: that weight (0: no term). The table counts rows
        (not their ``sample_weight``). The table and the weight
        (``plan_.cooccurrence``) are fixed by the first fit: a continued fit keeps
        them. See :ref:`multilabel`.
    max_epochs : int or "auto", default="auto"
        Passes over the training data at most (early stopping ends most fits
        sooner). ``"auto"``: about 3,000 gradient steps,
        ``clip(round(3000 / steps_per_epoch), 10, 200)``, with
        ``steps_per_epoch = ceil(n_train / batch_size)`` over the training examples
        not held out for early stopping.
        With the bag encoder trained by SGD (see ``optimizer``): about 0.8 million
        example updates, ``clip(round(8e5 / n_train), 3, 25)``, at most 4 epochs
        where the label space is too large for the linear model (the bag's regime at
        the defaults; ``plan_.epoch_rule``). With the linear
        model trained by its compiled step: about 200,000 example updates,
        ``clip(round(2e5 / n_train), 3, 50)``.
    batch_size : int or "auto", default="auto"
        Examples per gradient step. ``"auto"``: 256; 2,048 for the models trained
        by a compiled step, whose update is per example (the batch sets how often
        the learning rate and the threads' shares change).
    lr : float or "auto", default="auto"
        Learning rate of the optimizer. ``"auto"``: for the bag encoder trained by
        SGD, 0.02 times the mean number of stored entries per row of ``X`` (a
        feature's row moves by the rate times its share of the bag, so longer bags
        take a larger rate), within [0.1, 1]; for the linear model trained by
        :class:`~sknce.optim.RowAdagrad` (or SGD), 8 over the square root of that
        mean, within [0.25, 4] (a row of the unit-norm weighted input sums to
        about that root, so each example's scores move alike), plus 9 times the
        damping ``(n_classes / 350) ** 6`` that RowAdagrad then adds to the root of
        its accumulators (its ``eps``): AdaGrad with few classes, moving
        continuously to SGD at that rate with many (past 500 classes, as the margin
        grows in ``hidden_layer_sizes``, the rate falls to 6 with many training rows
        per class and rises to 11 with fewer than 6, as the power of the inverse
        document frequencies of ``bag="log1p-idf"`` falls to 0.9,
        ``plan_.idf_power``); each decaying linearly to
        0.01% of it over ``max_epochs`` (fastText's and word2vec's schedule;
        ``partial_fit`` calls count as epochs; no decay with an ``LRScheduler``
        callback or a given ``lr``); else 1e-3.
    optimizer : torch optimizer class, default=torch.optim.Adam
        Any :class:`torch.optim.Optimizer` subclass, built on the network's parameters.
        With the bag encoder (``hidden_layer_sizes="auto"`` on a sparse ``X``), the
        ranking objective and no ``optimizer_kwargs``, the default Adam becomes plain
        SGD, fastText's regime; on the CPU a compiled kernel then does the update of
        each example in place (fastText's inner loop) over ``n_jobs`` threads, in
        about fastText's time (``benchmarks/README.md``). For the full-rank linear
        model it becomes :class:`sknce.optim.RowAdagrad`, again in a compiled step
        (``torch.optim.SGD`` is compiled too). To train either by Adam, pass
        :class:`sknce.optim.LazyAdam`. The choices are in ``plan_``.
    optimizer_kwargs : dict or None, default=None
        Further options of the optimizer, e.g. ``{"weight_decay": 1e-4}`` (not ``lr``);
        a keyword the optimizer does not take is a ``ValueError``.
    callbacks : list of skorch callbacks or None, default=None
        :mod:`skorch.callbacks` (or ``(name, callback)`` pairs) run after sknce's own
        (divergence guard, early stopping, progress bar): e.g. ``Checkpoint`` with
        ``LoadInitState`` to resume a fit, ``LRScheduler``, ``EpochScoring``. A
        callback receives the skorch net; ``net.estimator`` is this estimator, whose
        outputs reflect the current epoch. See :ref:`customising`.
    warm_start : bool, default=False
        When already fitted, ``fit`` continues training the fitted network, with its
        optimizer state, for ``max_epochs`` more epochs instead of starting over.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present. The
        compiled steps (``plan_.kernel``: the linear model's, fastText's bag regime's)
        run on the CPU only: on a GPU (``"cuda"``, or ``"auto"`` with a GPU present)
        the network trains by autograd with the same optimizer and objective, one
        step per batch. How the two compare is measured by
        ``benchmarks/gpu_check.py`` (:ref:`gpu-check`).
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, shuffling, negatives and the validation split. An int makes
        a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Stop when the validation loss (the training objective on
        ``validation_fraction`` of the data, with fixed negatives) has not improved
        by more than 0.1% for ``patience`` epochs, and restore the best weights. With
        ``init="prior"`` the untrained model counts as epoch 0 (a new fit that keeps
        it, predicting the most frequent class, warns); where the fit calibrates
        (``plan_.calibrate``), an epoch beats it when its held-out loss at a fitted
        temperature does (``valid_tempered_loss`` in the history). A stream of chunks
        holds out its last chunk; ``partial_fit`` holds out nothing; nor does a fit of
        the factored bag by SGD (``plan_.regime == "bag"``, ``plan_.kernel``) whose
        0.8 million example updates of ``max_epochs="auto"`` take no more epochs than
        ``patience`` on all of its examples (``plan_.early_stopping`` is then False):
        early stopping could not stop it, only take back its last epochs, and every
        example trains instead. (A fit that the cap of 4 epochs shortens keeps its
        held-out examples: they check it against the prior start.)
        In the linear regime (``plan_.refit``) a network is then trained again on every
        example for the epochs the held-out loss chose; with a few rows per class, from
        4.5 to 5.25 training rows per class (none at 3.65 or fewer or from 6.0, linear
        between) from 1,000 classes (none up to 500, linear between), it trains 1.5
        times those epochs and its label tables take 0.5 of those of a second refit on
        another seed (``plan_.refit_epochs``, ``plan_.refit_mix``; twice the refit's
        cost). Multi-label:
        rows are held out, and the monitor is their precision; in the compiled regime
        of a sparse ``X`` it chooses the epochs of a refit on every row, which may
        continue the held-out fit's network (see :ref:`multilabel`).
    validation_fraction : float, default=0.1
        Share of the training examples held out for early stopping.
    patience : int, default=5
        Epochs without improvement of the validation loss before training stops.
    n_jobs : int or None, default=None
        Threads of the fit: of the compiled steps (the bag encoder trained by SGD, or
        by Adagrad for a label-indicator ``y``, on the CPU), and of torch and the BLAS
        libraries on the other paths and in inference. ``None`` means one
        compiled-step thread, and one torch thread while a step is small (as at the
        defaults); ``-1`` all the cores. With more than one the compiled steps'
        threads update shared rows without locks (Hogwild, as fastText's), and a fit
        is no longer bit-reproducible. The linear model's step takes one thread per
        10,000 multiply-adds of an example's scores (stored entries times
        ``n_classes``) at most, where more threads contend for the same rows instead
        of sharing the work (``plan_.n_jobs``). See :ref:`threads`.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels: those seen in ``fit``, or ``classes`` when given; for a
        label-indicator ``y``, its column indices ``0..n_labels-1``.
    multilabel_ : bool
        Whether ``y`` was a label indicator (multi-label, see :ref:`multilabel`).
    sparse_output_ : bool
        Multi-label only: whether the training ``y`` was sparse, and so is
        :meth:`predict`'s output.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    noise_ : CategoricalNoise
        The noise distribution over encoded labels (on the CPU between fits).
    sparse_embeddings_ : bool
        Whether the label tables have sparse gradients (``sparse_embeddings``
        resolved).
    plan_ : ClassifierPlan
        Every ``"auto"`` setting of the fit resolved from the data, once, at its
        start (``regime``: ``"linear"``, ``"bag"`` or ``"network"``; the width, the
        negatives, the optimizer, the rate, the batch, the epochs' rule...); a fit
        that continues the network keeps it, with the parameters it honours
        applied (see :meth:`continue_refusal`).
    idf_ : ndarray of shape (`n_features_in_`,) or None
        The smoothed inverse document frequencies of the training ``X`` where
        the network reads it as ``bag="log1p-idf"`` (raised to ``plan_.idf_power``),
        else None.
    cooccurrence_ : scipy.sparse.csr_matrix of shape (`n_features_in_`, n_labels) or None
        Multi-label only: the positive PMI of each feature and label over the training
        rows (the pairs found in at least two rows), which the scores add times
        ``plan_.cooccurrence`` (see ``cooccurrence_weight``); None where that weight is
        0, and for single-label ``y``.
    temperature_ : float
        The temperature that divided the label tables after the last fit (fitted
        on its held-out examples: the full-rank linear model), else 1.0.
    bag_sgd_ : bool
        Whether the factored bag encoder is trained by plain SGD with the kernel's
        objective (fastText's regime, see ``optimizer``).
    sparse_input_ : bool
        Whether the first layer of the built-in encoder has sparse gradients
        (``sparse_embeddings`` resolved for a sparse ``X``).
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the :class:`~sknce.nn.LabelScorer`.
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``valid_loss`` with
        early stopping (and ``valid_tempered_loss`` until an epoch beats the prior
        start, where the fit calibrates), ``dur``, and what callbacks record.
    n_iter_ : int
        Number of epochs run (by the refit, where one followed).
    selection_history_ : list of dict
        Where a network was then trained on every example (``plan_.refit``: the
        linear model, and the compiled regime of a label indicator), the history of
        the fit on the held-out split that chose its epochs; ``history_`` is the
        refit's (in the multi-label regime, the epochs after those of the held-out
        fit it may continue). Absent when no refit followed.

    See Also
    --------
    ConditionalNCERegressor : The same estimation principle for continuous targets.
    sklearn.neural_network.MLPClassifier : Full-softmax MLP classifier.

    Notes
    -----
    Two of scikit-learn's common checks are expected to fail,
    ``check_sample_weight_equivalence_on_dense_data`` and ``..._on_sparse_data``: a
    weight scales an example's loss in each stochastic batch, while repeating the
    example changes the batches and the negatives drawn, so the two fits differ.

    References
    ----------
    .. [1] Z. Ma and M. Collins, "Noise Contrastive Estimation and Negative Sampling
       for Conditional Models: Consistency and Statistical Efficiency", EMNLP 2018.
       Eq. (1) (the model), Figure 1 (:math:`L_R`, :math:`L_B`), Section 4.3 (the
       counterexample to binary NCE), Section 5.1 (:math:`b_x`), Section 5.2 (the
       self-normalisation penalty).

    Examples
    --------
    >>> import numpy as np
    >>> from sknce import ConditionalNCEClassifier
    >>> rng = np.random.default_rng(0)
    >>> centers = rng.normal(scale=3, size=(20, 5))
    >>> y = rng.integers(0, 20, size=400)
    >>> X = centers[y] + rng.normal(size=(400, 5))
    >>> clf = ConditionalNCEClassifier(n_negatives=8, hidden_layer_sizes=(),
    ...                                max_epochs=30, lr=0.05, random_state=0)
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    >>> clf.predict_proba(X[:2]).sum(axis=1).round(6)
    array([1., 1.])
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "max_epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "objective": [StrOptions({"ranking", "binary", "mle"})],
        "n_negatives": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "noise": [StrOptions({"unigram", "uniform"}), "array-like"],
        "noise_power": [Interval(Real, 0, None, closed="left")],
        "self_normalization": [Interval(Real, 0, None, closed="left")],
        "n_norm_samples": [Interval(Integral, 1, None, closed="left")],
        "input_bias": ["boolean"],
        "input_bias_layer_sizes": [tuple, list],
        "hidden_layer_sizes": [tuple, list, StrOptions({"auto"})],
        "encoder": ENCODER_CONSTRAINT,
        "embedding_dim": [Interval(Integral, 1, None, closed="left"), None],
        "label_bias": ["boolean"],
        "init": [StrOptions({"prior", "random"})],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "sparse_embeddings": ["boolean", StrOptions({"auto"})],
        "shared_negatives": ["boolean"],
        "remove_accidental_hits": ["boolean"],
        "classes": ["array-like", None],
        "lr": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_jobs": [Integral, None],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "multilabel_threshold": [Interval(Real, 0, 1, closed="neither")],
        "cooccurrence_weight": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "bag": [StrOptions({"auto", *BAGS})],
    }

    _param_roles: dict = {
        **BaseNCE._param_roles,
        "n_negatives": APPLIED,
        "n_norm_samples": APPLIED,
        "shared_negatives": APPLIED,
        "remove_accidental_hits": APPLIED,
        "class_weight": APPLIED,
        "multilabel_threshold": APPLIED,
        "cooccurrence_weight": Fixed("fixed the co-occurrence table and its weight"),
        "n_jobs": APPLIED,
        "objective": Fixed("fixed the objective"),
        "self_normalization": Fixed("fixed the objective"),
        "noise": _LABELS,
        "noise_power": _LABELS,
        "classes": _LABELS,
        "input_bias": FIXED,
        "input_bias_layer_sizes": FIXED,
        "hidden_layer_sizes": FIXED,
        "encoder": FIXED,
        "embedding_dim": FIXED,
        "label_bias": FIXED,
        "dropout": FIXED,
        "sparse_embeddings": FIXED,
        "init": Fixed("set where the network started"),
        "bag": Fixed("fixed the network's reading of X (idf_ and the weighting)"),
    }

    def __init__(
        self,
        *,
        objective: str = "ranking",
        n_negatives: int | str = "auto",
        noise="unigram",
        noise_power: float = 1.0,
        self_normalization: float = 0.0,
        n_norm_samples: int = 64,
        input_bias: bool = False,
        input_bias_layer_sizes: tuple[int, ...] = (32,),
        hidden_layer_sizes: tuple[int, ...] | str = "auto",
        bag: str = "auto",
        encoder=None,
        embedding_dim: int | None = None,
        label_bias: bool = True,
        init: str = "prior",
        dropout: float = 0.0,
        sparse_embeddings: bool | str = "auto",
        shared_negatives: bool = False,
        remove_accidental_hits: bool = False,
        classes=None,
        class_weight: dict | str | None = None,
        multilabel_threshold: float = 0.5,
        cooccurrence_weight: float | str = "auto",
        max_epochs: int | str = "auto",
        batch_size: int | str = "auto",
        lr: float | str = "auto",
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 5,
        n_jobs: int | None = None,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.objective = objective
        self.n_negatives = n_negatives
        self.noise = noise
        self.noise_power = noise_power
        self.self_normalization = self_normalization
        self.n_norm_samples = n_norm_samples
        self.input_bias = input_bias
        self.input_bias_layer_sizes = input_bias_layer_sizes
        self.hidden_layer_sizes = hidden_layer_sizes
        self.bag = bag
        self.encoder = encoder
        self.embedding_dim = embedding_dim
        self.label_bias = label_bias
        self.init = init
        self.dropout = dropout
        self.sparse_embeddings = sparse_embeddings
        self.shared_negatives = shared_negatives
        self.remove_accidental_hits = remove_accidental_hits
        self.classes = classes
        self.n_jobs = n_jobs
        self.class_weight = class_weight
        self.multilabel_threshold = multilabel_threshold
        self.cooccurrence_weight = cooccurrence_weight

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_label = True
        return tags

    def _set_labels(
        self, labels: np.ndarray, counts: np.ndarray, declared, n_rows: int | None = None
    ) -> np.ndarray:
        """Set ``classes_`` and ``noise_`` from the training labels; return the log prior.

        ``labels`` are the sorted distinct training labels and ``counts`` their
        counts. With ``declared`` classes, the counts of all of them are smoothed by
        one, so that every label has a positive frequency and noise probability.
        Multi-label (``n_rows`` rows of a label indicator): ``labels`` are its
        columns, the noise counts are smoothed by one, and the "prior" is the logit
        of each label's frequency among the rows (smoothed by a half), where the
        per-label models start.
        """
        if n_rows is not None:
            self.classes_ = labels
            self.noise_ = _label_noise(self.noise, counts + 1, self.noise_power)
            return _multilabel.label_logits(counts, n_rows)
        if declared is None:
            self.classes_ = labels
        else:
            self.classes_ = np.unique(np.asarray(declared))
            self._check_known(labels)
            full = np.zeros(len(self.classes_), dtype=np.int64)
            full[np.searchsorted(self.classes_, labels)] = counts
            counts = full + 1
        self.noise_ = _label_noise(self.noise, counts, self.noise_power)
        return np.log(counts / counts.sum())

    def _check_known(self, y) -> None:
        unknown = np.setdiff1d(encode_labels(np.asarray(y))[0], self.classes_)
        if unknown.size:
            raise ValueError(
                f"y contains {unknown.size} label(s) that are not in classes_, e.g. "
                f"{unknown[:3].tolist()}; declare every label with the classes parameter "
                "(or partial_fit's classes argument on its first call)."
            )

    def _hidden_layers(self) -> tuple[int, ...]:
        """``hidden_layer_sizes`` as a tuple; ``"auto"`` is ``(256,)`` (for a dense ``X``)."""
        if self.hidden_layer_sizes == "auto":
            return (256,)
        return tuple(self.hidden_layer_sizes)

    def _check_hidden(self, name: str = "hidden_layer_sizes") -> tuple[int, ...]:
        if getattr(self, name) == "auto":
            return ()
        return super()._check_hidden(name)

    def _fit_lr(self) -> float:
        """The plan's rate; before this fit's plan (the parameter checks), any valid one."""
        plan = vars(self).get("_classifier_plan")
        if plan is not None:
            return plan.lr
        return ADAM_LR if self.lr == "auto" else self.lr

    def _make_step(self) -> TrainStep:
        """The compiled step of the plan (it applies on the CPU), else autograd's."""
        plan = self._classifier_plan
        if plan.kernel and plan.regime == "linear":
            return LinearSoftmaxStep(
                plan.n_jobs, plan.optimizer, plan.margin, plan.rival, plan.rival_threshold
            )
        if plan.kernel and plan.objective == "ova":
            return BagOneVsAllStep(plan.n_jobs)
        if plan.kernel:
            return BagRankingStep(plan.n_jobs)
        return super()._make_step()

    def _continued_roles(self) -> dict:
        """After a fit by a compiled step (``plan_.kernel``: the linear model's or
        fastText's regime), an ``optimizer`` or ``optimizer_kwargs`` that leave it are
        fixed (e.g. ``sknce.optim.LazyAdam``): the step trains by the plan's optimizer
        (``RowAdagrad`` or ``torch.optim.SGD``), which without options continues it."""
        roles = super()._continued_roles()
        plan = self.plan_
        optimizer, kwargs = self.optimizer, self.optimizer_kwargs
        if not plan.kernel or (optimizer in (torch.optim.Adam, plan.optimizer) and not kwargs):
            return roles
        regime = Fixed(
            f"chose the compiled step of the {plan.regime} regime (plan_.kernel), which "
            f"trains by {plan.optimizer.__module__}.{plan.optimizer.__name__} without "
            "options: that optimizer without optimizer_kwargs continues it"
        )
        return {**roles, "optimizer": regime, "optimizer_kwargs": regime}

    def _make_scorer(self, n_features: int, log_prior: np.ndarray):
        """The scorer of a new fit, started at ``log_prior`` with ``init="prior"``."""
        plan = self._classifier_plan
        if plan.regime == "linear":
            encoder = BagEncoder(
                n_features,
                plan.width,
                sparse_grad=plan.sparse_input,
                normalize=False,
                weighting=self._weighting(),
            )
            scorer = LinearLabelScorer(encoder, plan.width, label_bias=self.label_bias)
        else:
            scorer = self._label_scorer(n_features, plan)
        if self.init == "prior":
            scorer.start_at_prior(torch.as_tensor(log_prior, dtype=torch.float32))
        return scorer

    def _label_scorer(self, n_features: int, plan: ClassifierPlan) -> LabelScorer:
        """The factored scorer ``h(x)ᵀ e_y + b_y`` of the bag or of a network."""
        hidden = self._hidden_layers()
        if plan.regime == "bag":
            encoder = BagEncoder(
                n_features, plan.width, sparse_grad=plan.sparse_input, weighting=self._weighting()
            )
            dim = plan.width
        elif self.encoder is None and not hidden and self.embedding_dim is None:
            encoder, dim = DenseInput(torch.nn.Identity()), n_features
        else:
            width = 64 if self.embedding_dim is None else self.embedding_dim
            encoder, dim = self._make_encoder(
                n_features, lambda: MLP(n_features, hidden, width, sparse_grad=plan.sparse_input)
            )
        input_bias = None
        if self.input_bias:
            input_bias = MLP(n_features, tuple(self.input_bias_layer_sizes), 1)
        return LabelScorer(
            encoder,
            dim,
            len(self.classes_),
            label_bias=self.label_bias,
            input_bias=input_bias,
            sparse=plan.sparse_embeddings,
            dropout=self.dropout,
        )

    def _early_stopping(self) -> ChanceAwareEarlyStopping:
        if self.multilabel_:
            # a refit takes the held-out rows' best epoch itself, not the last one that
            # beat it by the plateau's margin
            refit = self._classifier_plan.refit
            return _multilabel.PrecisionEarlyStopping(
                self.patience, 0.0 if refit else _PLATEAU, refit=refit
            )
        # From the prior start, the untrained model is epoch 0: a fit whose epochs never
        # beat the label frequencies on held-out data returns to them. With a few rows per
        # class the held-out loss first rises above them, then falls below: the epochs
        # before the first that beats them are not misses. A plan that calibrates is
        # judged at its fitted temperature, so an epoch beats the start when its held-out
        # loss at its own fitted temperature does (a wide margin's raw scores are
        # over-confident until the temperature is fitted).
        stopping = (
            TemperedEarlyStopping if self._classifier_plan.calibrate else ChanceAwareEarlyStopping
        )
        return stopping(
            patience=self.patience,
            load_best=True,
            threshold=_PLATEAU,
            evaluate_initial=self.init == "prior",
            patient_start=True,
        )

    def _make_objective(self):
        plan = self._classifier_plan
        if plan.objective == "ova":
            return MultilabelOneVsAllLoss()
        if plan.objective == "softmax":
            return MarginSoftmaxLoss(plan.margin, plan.rival, plan.rival_threshold)
        objective = {"ranking": RankingNCELoss, "binary": BinaryNCELoss, "mle": SoftmaxLoss}
        criterion = objective[plan.objective]()
        if self.self_normalization > 0:
            criterion = SelfNormalized(criterion, self.self_normalization)
        return criterion

    # --- the hooks of the fit skeleton --------------------------------------------------
    _fits_streams = True
    _stream_carries_y = True
    _target_steps = _TARGET_STEPS
    _epoch_range = _EPOCH_RANGE

    def _schedule(self, n_examples: int, n_train: int, continues: bool) -> tuple[int, int]:
        """Batch size and epochs of the plan: the base's rule of about ``_target_steps``
        steps, or in the compiled regimes a number of example updates."""
        plan = self._classifier_plan
        batch_size = self.net_.batch_size if continues else plan.batch_size

        def steps(n: int, batch: int) -> int:
            return auto_epochs(n, batch, self._target_steps, self._epoch_range)

        return batch_size, plan.epochs(n_train, steps)

    def _holds_out(self) -> bool:
        """The plan's ``early_stopping``: the factored bag may hold out nothing
        (:func:`~sknce.conditional._plan.bag_holds_out`)."""
        return self._classifier_plan.early_stopping

    def _net_options(self, data: _Labelled) -> dict:
        """The linear decay of the plan's rate, as an extra callback; where a refit
        follows a multi-label hold-out, a net that only scores the held-out rows'
        precision (no validation loss)."""
        held_out = self.validation_fraction if self._holds_out() else 0.0
        options = self._decay_options(data.n_examples * (1 - held_out))
        if self.multilabel_ and self._classifier_plan.refit:
            options["net_class"] = _multilabel.PrecisionNet
        if (
            self.multilabel_
            and self.cooccurrence_weight == "auto"
            and self._cooccurrence_applies(_non_negative(data.X))
        ):
            plan = self._classifier_plan
            choice = _cooccurrence.WeightChoice(data.X, data.y, plan.bag, self.idf_)
            options.setdefault("extra_callbacks", []).append(("cooccurrence", choice))
        return options

    def _decay_options(self, per_epoch: float, skipped: int = 0, total: int | None = None) -> dict:
        """The plan's linear decay over epochs of ``per_epoch`` examples (none when the
        plan keeps the rate, or with the user's ``LRScheduler``); ``skipped`` and
        ``total``: :class:`~sknce._callbacks.LinearDecay`'s ``skipped_epochs`` and
        ``total_epochs``."""
        from skorch.callbacks import LRScheduler

        users = [c[1] if isinstance(c, tuple) else c for c in self.callbacks or ()]
        if not self._classifier_plan.lr_decay or any(isinstance(c, LRScheduler) for c in users):
            return {}
        decay = LinearDecay(END_LR, max(per_epoch, 1.0), total, skipped_epochs=skipped)
        return {"extra_callbacks": [("lr_decay", decay)]}

    def _check_params(self) -> None:
        self._check_hidden()
        self._check_hidden("input_bias_layer_sizes")
        check_n_jobs(self.n_jobs)
        _cooccurrence.check_weight(self.cooccurrence_weight)

    def _validate_fit_data(self, X, y, *, reset: bool, partial: bool, classes=None) -> _Labelled:
        if partial and isinstance(self.class_weight, str):
            raise ValueError(
                'class_weight="balanced" needs the counts of every label, which partial_fit '
                "does not see at once. Pass a dict, e.g. from "
                "sklearn.utils.class_weight.compute_class_weight on all the labels."
            )
        # what validate_data would say first about X (a list of chunks), or about no y
        check_not_a_chunk_list(X, streams=self._fits_streams)
        multilabel = y is not None and (
            _check_targets(y, multilabel=True) == "multilabel-indicator"
        )
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            reset=reset,
            multi_output=multilabel,
        )
        if multilabel or (not reset and getattr(self, "multilabel_", False)):
            return self._validate_indicator(X, y, multilabel, reset, classes)
        if reset:
            self.multilabel_ = False
            self._multilabel_plan = None
        if not reset:
            check_same_classes(classes, self.classes_)
        declared = self.classes if classes is None else classes
        if reset and partial and declared is None:
            raise ValueError(
                "classes must be passed on the first call to partial_fit (every label "
                "that any chunk may contain), e.g. partial_fit(X, y, classes=labels)."
            )
        return _Labelled(X, y, declared)

    def _validate_indicator(self, X, Y, multilabel: bool, reset: bool, classes) -> _Labelled:
        """Validated multi-label data: ``Y`` as CSR; errors naming the fix."""
        sparse = sp.issparse(Y)
        Y = _multilabel.validate_indicator(self, Y, multilabel, reset, classes)
        if reset:
            self.multilabel_ = True
            self.sparse_output_ = sparse
        return _Labelled(X, Y, None)

    def _with_weights(self, data: _Labelled, weights: np.ndarray | None) -> _Labelled:
        # rows without labels still train (every label a negative), but weight on them
        # alone teaches no label to be present: nothing a user meant to fit
        labelled = np.diff(data.y.indptr) > 0 if sp.issparse(data.y) else None
        if weights is not None and labelled is not None and not (weights[labelled] > 0).any():
            raise ValueError(UNTRAINED.format(where="rows without any label"))
        return data

    def _start_fit(self, data: _Labelled, seeds) -> _Labelled:
        entries = _entries_per_row(data.X)
        non_negative = _non_negative(data.X)
        self.cooccurrence_ = None
        if self.multilabel_:
            counts = np.asarray(data.y.sum(axis=0), dtype=np.float64).ravel()
            labels = np.arange(data.y.shape[1])
            self._multilabel_plan = _multilabel.resolve_plan(self, data.X, data.y)
            log_prior = self._set_labels_noise_and_plan(
                labels, counts, None, entries, n_rows=data.y.shape[0], non_negative=non_negative
            )
            _cooccurrence.check_applies(
                self.cooccurrence_weight, self._cooccurrence_applies(non_negative)
            )
            self._set_idf(data.X)
            return data._replace(log_prior=log_prior, n_examples=data.X.shape[0])
        labels, codes, counts = encode_labels(data.y)
        log_prior = self._set_labels_noise_and_plan(
            labels, counts, data.declared, entries, non_negative=non_negative
        )
        self._set_idf(data.X)
        return data._replace(
            log_prior=log_prior, n_examples=data.X.shape[0], labels=labels, codes=codes
        )

    def _set_idf(self, X, frequencies: tuple[np.ndarray, int] | None = None) -> None:
        """``idf_`` of the training ``X`` (or of ``(df, n_rows)`` summed over a stream)
        raised to the plan's ``idf_power``, where its representation weighs by it; else
        None."""
        plan = self._classifier_plan
        if plan.bag != "log1p-idf":
            self.idf_ = None
            return
        if frequencies is not None:
            self.idf_ = idf_of_frequencies(*frequencies)
        else:
            self.idf_ = smooth_idf(X)
        if plan.idf_power != 1.0:
            self.idf_ = self.idf_**plan.idf_power

    def _continue_fit(self, data: _Labelled) -> _Labelled:
        self._continue_plan()
        if self.multilabel_:
            return data
        labels, codes, _ = encode_labels(data.y)
        self._check_known(labels)
        return data._replace(labels=labels, codes=codes)

    def _continue_plan(self) -> None:
        """The fitted plan with the parameters it honours applied; a ValueError naming
        those it cannot (see :meth:`continue_refusal`)."""
        message = self.continue_refusal()
        if message is not None:
            raise ValueError(message)
        self.plan_ = self._classifier_plan = self.plan_.continued(self)
        step = self.net_.step
        if isinstance(step, KernelStep):
            step.n_jobs = self._classifier_plan.n_jobs

    def continue_refusal(self) -> str | None:
        """Why a fit continuing the fitted network cannot honour the current parameters.

        A parameter changed by ``set_params`` after a fit is either honoured by the
        next ``partial_fit`` or ``fit`` with ``warm_start=True`` (the learning rate,
        the batch size, the epochs, the threads; the negatives drawn and the
        optimizer where the fitted plan draws negatives or trains by autograd), or
        fixed by the plan of the first fit (the model, its representation of ``X``,
        the objective, the noise, the compiled step's optimizer, ...), in which case
        that fit raises this message.

        Returns
        -------
        str or None
            The message naming the parameters and the fix, or None when the
            parameters can be honoured (or the estimator is not fitted).
        """
        plan = getattr(self, "plan_", None)
        if plan is None:
            return None
        try:
            check_n_jobs(self.n_jobs)
        except ValueError as error:
            return str(error)
        return plan.refusal(self)

    def _make_dataset(self, data: _Labelled, device: str) -> SampledDataset:
        if self.multilabel_:
            plan = self._classifier_plan
            X = as_csr_or_dense(data.X)
            return SampledDataset(
                LabelSetSampler(X, data.y, self.noise_, plan.n_negatives, device, plan.shared)
            )
        # the indices in classes_ of the distinct labels, then of every sample
        encoded = np.searchsorted(self.classes_, data.labels)[data.codes]
        return SampledDataset(self._sampler(data.X, encoded, device))

    def _run(self, dataset, data, plan: FitPlan) -> None:
        """The base's schedule and training; then, where the plan calibrates and the fit
        held out examples, the temperature of the held-out log-likelihood and, for a new
        network, a refit on every example for the epochs the held-out set chose. The
        plan of the fit is then the fitted ``plan_`` alone."""
        labels_plan = self._classifier_plan
        if not plan.continues:
            self.__dict__.pop("selection_history_", None)  # a former fit's
        super()._run(dataset, data, plan)
        if not plan.continues:
            self._warn_if_prior_kept()
        self.temperature_ = 1.0
        temperature = None
        if labels_plan.calibrate and not plan.partial:
            temperature = self._held_out_temperature(dataset)
        held_out = isinstance(self.net_.train_split, HoldOut) and not plan.partial
        chosen = temperature is not None or (held_out and not labels_plan.calibrate)
        if self.multilabel_ and not plan.continues:
            self._fit_cooccurrence(data, plan)
        if chosen and labels_plan.refit and not plan.continues:
            stopping = dict(self.net_.callbacks_)["early_stopping"]
            epochs = getattr(stopping, "chosen_epochs_", stopping.best_epoch_)
            if epochs:
                self.selection_history_ = self.history_
                self._refits(dataset, data, plan, epochs, getattr(stopping, "start", None))
        if temperature is not None:
            self._scale_scores(temperature)
        del self._classifier_plan

    def _cooccurrence_applies(self, non_negative: bool) -> bool:
        """Whether the plan's model takes the co-occurrence term: the bag encoder of a
        sparse ``X`` of non-negative values, one row of its table per feature."""
        plan = self._classifier_plan
        single_rows = not plan.n_buckets
        return plan.regime == "bag" and plan.bag is not None and single_rows and non_negative

    def _fit_cooccurrence(self, data, plan: FitPlan) -> None:
        """The co-occurrence table of a new multi-label fit (``cooccurrence_``) and its
        weight, resolved into the plan (``plan_.cooccurrence``) before any refit.

        ``"auto"`` takes the weight that ranked the rows early stopping held out best
        at the epoch the fit chose (:class:`~sknce.conditional._cooccurrence.WeightChoice`,
        a table of the other rows); the fitted table then counts every training row.
        Without held-out rows (``partial_fit``, ``early_stopping=False``) ``"auto"`` is 0.
        """
        weight = self.cooccurrence_weight
        if not self._cooccurrence_applies(_non_negative(data.X)):
            weight = 0.0
        elif weight == "auto":
            weight = _cooccurrence.choose_weight(self._held_out_precisions(plan))
        weight = float(weight)
        if weight > 0:
            self.cooccurrence_ = _cooccurrence.ppmi_table(data.X, data.y)
        self.plan_ = self._classifier_plan = replace(self._classifier_plan, cooccurrence=weight)

    def _held_out_precisions(self, plan: FitPlan) -> list[float] | None:
        """The held-out rows' precision at each weight of the term
        (:class:`~sknce.conditional._cooccurrence.WeightChoice`) at the epoch the fit
        chose: the refit's epochs, or the best epoch it restored (the last recorded at
        or before it; None without a record)."""
        if plan.partial:
            return None
        history = self.net_.history
        stopping = dict(self.net_.callbacks_).get("early_stopping")
        epoch = getattr(stopping, "chosen_epochs_", None) or getattr(stopping, "best_epoch_", 0)
        records = [row.get("cooccurrence_precision") for row in history[: epoch or len(history)]]
        return next((r for r in reversed(records) if r is not None), None)

    def _warn_if_prior_kept(self) -> None:
        """ConvergenceWarning when early stopping restored the prior start: no epoch beat
        the label frequencies on the held-out examples, and every input gets the most
        frequent class."""
        stopping = dict(self.net_.callbacks_).get("early_stopping")
        if not (
            isinstance(stopping, ChanceAwareEarlyStopping)
            and stopping.evaluate_initial
            and getattr(stopping, "best_epoch_", None) == 0
        ):
            return
        warn_caller(
            "No epoch of this fit beat the label frequencies on the held-out examples "
            f"({len(self.history_)} epoch(s), plan_.regime={self.plan_.regime!r}): early "
            "stopping restored the prior start, so the model predicts the most frequent "
            "class for every input. The model learnt nothing it could show on held-out "
            "data: give it more examples per class, raise patience or max_epochs, or set "
            "early_stopping=False; with a few examples for each of thousands of classes, "
            "a linear model (tf-idf with LinearSVC) may serve better.",
            ConvergenceWarning,
        )

    def _refits(self, dataset, data, plan: FitPlan, chosen: int, starts=None) -> None:
        """The refit of ``round(plan_.refit_epochs * chosen)`` epochs; where
        ``plan_.refit_mix`` is above 0, its label tables take that share of those of a
        second refit on another seed (still one linear model)."""
        labels_plan = self._classifier_plan
        epochs = max(1, round(labels_plan.refit_epochs * chosen))
        selection = self.net_
        self._refit(dataset, data, plan, epochs, starts)
        mix = labels_plan.refit_mix
        if not mix:
            return
        first = [table.detach().clone() for table in self.net_.module_.label_tables()]
        self.net_ = selection  # the second refit, as the first, follows the held-out fit
        seeds = Seeds(plan.seeds.seed + _SECOND_REFIT_SEED)
        self._refit(dataset, data, replace(plan, seeds=seeds), epochs, starts)
        with torch.no_grad():
            for table, kept in zip(self.net_.module_.label_tables(), first):
                table.mul_(mix).add_(kept, alpha=1.0 - mix)

    def _refit(self, dataset, data, plan: FitPlan, epochs: int, starts=None) -> None:
        """A network trained on every example (none held out) for ``epochs``: a new one,
        or where ``starts(epochs)`` gives the state of the held-out fit after ``k``
        epochs (:class:`~sknce.conditional._multilabel.RefitStart`), that network
        trained for the other ``epochs - k``, its schedule continued."""
        start = None if starts is None else starts(epochs)
        skipped = 0 if start is None else start.epoch

        def build():
            module = self._make_module(data, plan.seeds)
            if start is not None:
                module.load_state_dict(start.module)
            return module, self._make_objective()

        options = self._decay_options(data.n_examples, skipped, epochs)
        if start is not None:
            callbacks = options.setdefault("extra_callbacks", [])
            callbacks.append(("refit_start", _multilabel.OptimizerStart(start.optimizer)))
        with self._training(data, plan.device):
            self._train(
                dataset,
                build,
                plan,
                max_epochs=epochs - skipped,
                batch_size=self._classifier_plan.batch_size,
                validation=False,
                **options,
            )

    def _scale_scores(self, temperature: float) -> None:
        """Divide the label tables by ``temperature`` (``temperature_``)."""
        with torch.no_grad():
            for table in self.net_.module_.label_tables():
                table.div_(temperature)
        self.temperature_ = temperature

    def _hold_out(self, seeds) -> HoldOut:
        """The base's hold-out, keeping every class a training example where the plan
        says (``plan_.keep_classes``)."""
        keep = self._classifier_plan.keep_classes
        return HoldOut(self.validation_fraction, seeds, keep_classes=keep)

    def _held_out_temperature(self, dataset) -> float | None:
        """The temperature of the examples early stopping held out (None without them)."""
        net = self.net_
        if not isinstance(net.train_split, HoldOut) or not isinstance(dataset, SampledDataset):
            return None
        _, valid = net.train_split(dataset)
        scorer = net.module_
        logits, labels, weights = [], [], []
        with torch.no_grad():
            for batch in valid.batches(net.batch_size, net.seeds.numpy("valid"), shuffle=False):
                inputs, targets = batch
                h, b = scorer.encode(inputs["x"])
                logits.append(scorer.score_range(h, b))
                labels.append(targets.labels)
                if targets.sample_weight is not None:
                    weights.append(targets.sample_weight)
        return fit_temperature(
            torch.cat(logits), torch.cat(labels), torch.cat(weights) if weights else None
        )

    def _make_module(self, data: _Labelled, seeds) -> LabelScorer:
        return self._make_scorer(self.n_features_in_, data.log_prior)

    @contextlib.contextmanager
    def _training(self, data, device: str) -> Iterator[None]:
        """The noise tables on ``device`` while training; between fits on the CPU.

        So a pickled estimator holds no device tensors (it unpickles without a GPU).
        """
        self.noise_.to(device)
        try:
            yield
        finally:
            self.noise_.to("cpu")

    def _validated_chunk(self, chunk, reset: bool):
        if not (isinstance(chunk, tuple) and len(chunk) == 2):
            raise TypeError(
                "a stream fitted by ConditionalNCEClassifier yields (X_chunk, y_chunk) "
                f"pairs; got a {type(chunk).__name__}."
            )
        X, y = validate_data(
            self, *chunk, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset
        )
        _check_targets(y)
        return X, y

    def _scan_chunk(self, chunk, index: int, summary: dict, reset: bool) -> int:
        """Validate a chunk; count its labels (``classes_``, the noise) and sparse entries."""
        X, y = self._validated_chunk(chunk, reset)
        labels = summary.get("labels", np.empty(0))
        counts = summary.get("counts", np.empty(0, dtype=np.int64))
        new, new_counts = np.unique(y, return_counts=True)
        merged = np.union1d(labels, new) if labels.size else new
        total = np.zeros(merged.shape[0], dtype=np.int64)
        total[np.searchsorted(merged, labels)] += counts
        total[np.searchsorted(merged, new)] += new_counts
        summary["labels"], summary["counts"] = merged, total
        summary.setdefault("entries", []).append(_entries_per_row(X))
        summary["n_examples"] = summary.get("n_examples", 0) + X.shape[0]
        summary["non_negative"] = summary.get("non_negative", True) and _non_negative(X)
        if sp.issparse(X):
            summary["df"] = summary.get("df", 0) + document_frequencies(X)
        self.multilabel_ = False
        self._multilabel_plan = None
        return X.shape[0]

    def _start_stream(self, chunks, summary: dict, seeds) -> _Labelled:
        entries = summary["entries"]
        sparse_stream = all(e is not None for e in entries)
        log_prior = self._set_labels_noise_and_plan(
            summary["labels"],
            summary["counts"],
            self.classes,
            max(entries) if sparse_stream else None,
            non_negative=summary["non_negative"],
        )
        self._set_idf(None, (summary.get("df", 0), summary["n_examples"]))
        return _Labelled(None, None, self.classes, log_prior, summary["n_examples"])

    def _continue_stream(self, chunks, summary: dict) -> None:
        self._continue_plan()
        self._check_known(summary["labels"])

    def _chunk_dataset(self, chunk, device: str) -> SampledDataset:
        X, y = self._validated_chunk(chunk, reset=False)
        self._check_known(y)
        return SampledDataset(self._sampler(X, np.searchsorted(self.classes_, y), device))

    def _set_labels_noise_and_plan(
        self,
        labels: np.ndarray,
        counts: np.ndarray,
        declared,
        entries: float | None,
        n_rows: int | None = None,
        non_negative: bool = True,
    ) -> np.ndarray:
        """Set the labels, the noise and the plan of a new fit.

        ``entries``: stored entries per row of a sparse ``X`` (None for dense input);
        ``n_rows``: the rows of a multi-label fit (None for single-label y);
        ``non_negative``: whether ``X`` holds no negative value. Returns the log
        prior (see :meth:`_set_labels`).
        """
        log_prior = self._set_labels(labels, counts, declared, n_rows)
        facts = DataFacts(
            len(self.classes_),
            self.n_features_in_,
            entries,
            non_negative,
            multilabel=n_rows is not None,
            n_samples=int(counts.sum()) if n_rows is None else n_rows,
        )
        accelerator = self.accelerator
        processes = 1 if accelerator is None else accelerator.num_processes
        multilabel = self._multilabel_plan if n_rows is not None else None
        plan = resolve_plan(self, facts, processes, multilabel)
        self.plan_ = self._classifier_plan = plan
        # the fitted attributes that state the plan (for users; the fit reads the plan)
        self.bag_sgd_ = plan.regime == "bag" and plan.kernel
        self.sparse_embeddings_ = plan.sparse_embeddings
        self.sparse_input_ = plan.sparse_input
        return log_prior

    def _weighting(self) -> BagWeighting | None:
        """The bag encoder's reading of ``X``: the plan's representation, its features
        folded into the plan's ``n_buckets`` (None: as given)."""
        plan = self._classifier_plan
        n_buckets = plan.n_buckets or None
        if plan.bag in (None, "counts") and n_buckets is None:
            return None
        return BagWeighting(plan.bag or "counts", self.idf_, n_buckets=n_buckets)

    def _sampler(self, X, y_enc: np.ndarray, device: str, **pairs) -> LabelSampler:
        """The sampler of encoded labels; ``pairs``: multi-label ``anchors`` and ``positives``."""
        plan = self._classifier_plan
        return LabelSampler(
            as_csr_or_dense(X),
            torch.as_tensor(y_enc, dtype=torch.int64),
            self.noise_,
            plan.n_negatives,
            plan.n_norm_samples,
            plan.remove_hits,
            device,
            shared=plan.shared,
            exhaustive=plan.exhaustive,
            **pairs,
        )

    def _optimizer_class(self) -> type:
        return self._classifier_plan.optimizer

    def _optimizer_options(self) -> dict:
        """The user's options, and the plan's damping as RowAdagrad's ``eps``."""
        options = super()._optimizer_options()
        if self._classifier_plan.damping:
            options["eps"] = self._classifier_plan.damping
        return options

    def fit(self, X, y=None, sample_weight=None) -> ConditionalNCEClassifier:
        """Fit the model by NCE (or the full softmax for ``objective="mle"``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or iterable
            Inputs; sparse matrices are sliced per batch, never densified whole. A
            restartable iterable of ``(X_chunk, y_chunk)`` pairs (e.g.
            :class:`~sknce.datasets.NpzChunks` over files holding ``y``) fits on data
            larger than memory: a first pass validates the chunks and counts the
            labels, then each epoch reads one chunk at a time (in a shuffled order
            when the iterable is a sequence) and draws its batches within it; early
            stopping holds out the last chunk. See :ref:`scaling`.
        y : array-like of shape (n_samples,), or None
            Labels, any hashable values; ``None`` when ``X`` is a stream of chunks.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example's loss (times its ``class_weight``), scaled to
            mean 1 over the training set; ``None``: 1. Not for a stream of chunks.

        Returns
        -------
        self : ConditionalNCEClassifier
            The fitted estimator.
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, classes=None, sample_weight=None) -> ConditionalNCEClassifier:
        """One pass of training over a chunk, continuing the fitted network.

        The first call fixes ``classes_`` (from ``classes``, required then unless the
        ``classes`` parameter is set), the noise distribution and the prior start
        (from the label counts of that chunk, smoothed by one); later calls keep the
        network and the optimizer's state. No validation split is held out and ``max_epochs`` is
        ignored: each call is one epoch over the chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs of this chunk; sparse matrices are sliced per batch.
        y : array-like of shape (n_samples,)
            Their labels, all of them in ``classes_`` (fixed by the first call).
        classes : array-like of shape (n_classes,) or None, default=None
            Every label of the problem; required on the first call (unless the
            ``classes`` parameter is set), ignored on later ones.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example's loss in this chunk (times its ``class_weight``),
            scaled to mean 1 over the chunk; ``None``: 1.

        Returns
        -------
        self : ConditionalNCEClassifier
            The fitted estimator.
        """
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)

    # --- inference ------------------------------------------------------------------
    _exported_methods = ("predict_proba", "predict_log_proba")

    def _inference_module(self, method: str) -> InferenceModule:
        """Every class's (log-)probability: the softmax of the scores, or with a label
        indicator (``multilabel_``) each label's own sigmoid, as :meth:`predict_log_proba`."""
        scorer = self.net_.module_
        offset = None
        table, weight = self._cooccurrence()
        if table is not None:
            weighting = getattr(scorer.encoder, "weighting", None)
            offset = _cooccurrence.CooccurrenceOffset(table, weight, weighting)
        body = LabelProbabilities(
            scorer, log=method == "predict_log_proba", multilabel=self.multilabel_, offset=offset
        )
        return InferenceModule(body, self.n_features_in_)

    def _validated(self, X):
        """Validated ``X`` as float32 CSR or a C-contiguous array."""
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        return as_csr_or_dense(X)

    def _row_blocks(self, X, method: str) -> Iterator[tuple[slice, Iterator]]:
        """Yield ``(rows, chunks)`` over inference batches of rows.

        ``chunks`` yields ``(start, scores)``: the scores of the labels
        ``start..start + scores.shape[1] - 1`` for those rows, at most
        ``_CLASS_CHUNK`` labels at a time, on the network's device (with the
        co-occurrence term of a multi-label fit that has one). Once they are
        all read, rows with a non-finite score are a ValueError naming the fix
        (``method`` in the message), rather than NaN outputs or a wrong argmax.
        """
        scorer = self.net_.module_
        n_classes = len(self.classes_)
        table, weight = self._cooccurrence()

        def chunks(h, b, shares):
            finite = None
            for start in range(0, n_classes, _CLASS_CHUNK):
                stop = min(start + _CLASS_CHUNK, n_classes)
                with torch.no_grad():
                    scores = scorer.score_range(h, b, start, stop)
                if shares is not None:
                    scores = _with_term(scores, shares, table, start)
                # two vectorised reductions, no boolean block: a NaN propagates to both,
                # an infinite score is the row's maximum or minimum
                rows_finite = torch.isfinite(scores.amax(dim=1)) & torch.isfinite(
                    scores.amin(dim=1)
                )
                finite = rows_finite if finite is None else finite & rows_finite
                yield start, scores
            # One check (one device sync) per batch of rows: NaN where a row is not finite.
            self._finite_output(torch.where(finite, 0.0, torch.nan), method)

        training = scorer.training  # a callback may predict in the middle of training
        scorer.eval()
        try:
            for rows in self._batches(X.shape[0]):
                with torch.no_grad():
                    h, b = scorer.encode(rows_to_tensor(X, rows, self.net_.device))
                shares = None
                if table is not None:
                    shares = _cooccurrence.row_shares(X[rows], self.plan_.bag, self.idf_, weight)
                yield rows, chunks(h, b, shares)
        finally:
            scorer.train(training)

    def _cooccurrence(self) -> tuple[sp.csr_matrix | None, float]:
        """The fitted co-occurrence table and its weight; ``(None, 0.0)`` without a
        term (a single-label fit, a weight of 0, an estimator pickled before it)."""
        table = getattr(self, "cooccurrence_", None) if self.multilabel_ else None
        weight = getattr(self.plan_, "cooccurrence", 0.0) if table is not None else 0.0
        return (table, weight) if weight > 0 else (None, 0.0)

    def predict_log_proba(self, X) -> np.ndarray:
        r"""Log-probabilities of every class, exactly normalised over ``classes_``.

        Scores are computed in blocks of at most 4096 classes per inference batch of
        rows, so the working memory does not grow with the number of classes; the
        returned array does, necessarily: for a large label set prefer
        :meth:`predict_topk`, whose output has ``k`` columns. Multi-label: the log of
        each label's own probability, :math:`\log \sigma(s(x, y))`, not normalised
        over the labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        X = self._validated(X)
        out = np.empty((X.shape[0], len(self.classes_)), dtype=np.float64)
        multilabel = self.multilabel_
        for rows, chunks in self._row_blocks(X, "predict_log_proba"):
            lse = None
            for start, scores in chunks:
                if multilabel:
                    logsig = torch.nn.functional.logsigmoid(scores.double())
                    out[rows, start : start + scores.shape[1]] = logsig.cpu().numpy()
                    continue
                # float64 throughout: the probabilities a user sums (log_loss checks) must
                # sum to 1 to float64 precision, which a float32 normaliser misses by 1e-7
                scores = scores.double()
                part = torch.logsumexp(scores, dim=1)
                lse = part if lse is None else torch.logaddexp(lse, part)
                out[rows, start : start + scores.shape[1]] = scores.cpu().numpy()
            if not multilabel:
                out[rows] -= lse.cpu().numpy()[:, None]
        return out

    def predict_proba(self, X) -> np.ndarray:
        r"""Probabilities of every class, exactly normalised over ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Rows sum to one; columns in the order of ``classes_``. Multi-label: each
            label's probability :math:`\sigma(s(x, y))` of being among the row's
            labels, in [0, 1]; rows do not sum to one.
        """
        out = self.predict_log_proba(X)
        return np.exp(out, out=out)  # in place: one n × |Y| array, not two

    def predict_topk(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` most probable classes of each input and their log-probabilities.

        Exact: the log-probabilities are normalised over all of ``classes_``, as in
        :meth:`predict_log_proba` (multi-label: each label's own log-probability).
        Each inference batch of rows keeps a running top-``k`` and a running
        log-normaliser over blocks of at most 4096 classes on the network's device,
        so the memory is O(n_samples × k) for the output plus one block, whatever the
        number of classes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs.
        k : int
            Number of classes returned per input, from 1 to ``len(classes_)``.

        Returns
        -------
        labels : ndarray of shape (n_samples, k)
            The classes, most probable first (classes of equal probability in any
            order).
        log_proba : ndarray of shape (n_samples, k)
            Their log-probabilities, non-increasing along each row.
        """
        X = self._validated(X)
        n_classes = len(self.classes_)
        if not isinstance(k, Integral) or isinstance(k, bool) or not 1 <= k <= n_classes:
            raise ValueError(
                f"k must be an int from 1 to the number of classes ({n_classes}); got {k!r}. "
                "For every class use predict_log_proba."
            )
        ids, log_proba = self._topk(X, int(k))
        return self.classes_[ids], log_proba

    def _topk(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict_topk` of a validated ``X``: the indices in ``classes_``."""
        ids = np.empty((X.shape[0], k), dtype=np.int64)
        log_proba = np.empty((X.shape[0], k), dtype=np.float64)
        multilabel = self.multilabel_
        for rows, chunks in self._row_blocks(X, "predict_topk"):
            best = best_id = lse = None
            for start, scores in chunks:
                value, index = scores.topk(min(k, scores.shape[1]), dim=1)
                index = index + start
                if best is not None:
                    value, index = torch.cat([best, value], 1), torch.cat([best_id, index], 1)
                    value, order = value.topk(min(k, value.shape[1]), dim=1)
                    index = index.gather(1, order)
                best, best_id = value, index
                if not multilabel:
                    part = _logsumexp(scores, value[:, :1])
                    lse = part if lse is None else torch.logaddexp(lse, part)
            if multilabel:
                log_proba[rows] = torch.nn.functional.logsigmoid(best.double()).cpu().numpy()
            else:
                log_proba[rows] = (best.double() - lse.unsqueeze(1)).cpu().numpy()
            ids[rows] = best_id.cpu().numpy()
        return ids, log_proba

    def predict(self, X) -> np.ndarray | sp.csr_matrix:
        """Most probable class, by an argmax over chunks of classes.

        Never allocates an ``(n_samples, n_classes)`` array: each inference batch of
        rows keeps a running maximum over blocks of at most 4096 classes, on the
        network's device. Multi-label: the labels whose probability exceeds
        ``multilabel_threshold``, as a label indicator (built from blocks of labels
        too).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs.

        Returns
        -------
        ndarray of shape (n_samples,), or indicator of shape (n_samples, n_classes)
            The classes. Multi-label: a 0/1 indicator, a CSR matrix when the training
            ``y`` was sparse (``sparse_output_``), else a dense int array.
        """
        X = self._validated(X)
        if self.multilabel_:
            return self._predict_indicator(X)
        best_id = np.empty(X.shape[0], dtype=np.int64)
        for rows, chunks in self._row_blocks(X, "predict"):
            best = index = None
            for start, scores in chunks:
                value, chunk_index = scores.max(dim=1)
                chunk_index = chunk_index + start
                if best is None:
                    best, index = value, chunk_index
                else:
                    # ``>``: the first of equal maxima wins, as numpy's argmax.
                    better = value > best
                    best = torch.where(better, value, best)
                    index = torch.where(better, chunk_index, index)
            best_id[rows] = index.cpu().numpy()
        return self.classes_[best_id]

    def _predict_indicator(self, X) -> np.ndarray | sp.csr_matrix:
        """The labels above ``multilabel_threshold``: a score above its logit."""
        cut = float(np.log(self.multilabel_threshold) - np.log1p(-self.multilabel_threshold))
        row_ids, label_ids = [], []
        for rows, chunks in self._row_blocks(X, "predict"):
            for start, scores in chunks:
                hit_rows, hit_labels = torch.nonzero(scores > cut, as_tuple=True)
                row_ids.append(hit_rows.cpu().numpy() + rows.start)
                label_ids.append(hit_labels.cpu().numpy() + start)
        row_ids = np.concatenate(row_ids) if row_ids else np.empty(0, dtype=np.int64)
        label_ids = np.concatenate(label_ids) if label_ids else np.empty(0, dtype=np.int64)
        shape = (X.shape[0], len(self.classes_))
        Y = sp.csr_matrix((np.ones(row_ids.size, dtype=np.int64), (row_ids, label_ids)), shape)
        return Y if self.sparse_output_ else Y.toarray()

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of :meth:`predict` on ``X`` against ``y``.

        Multi-label: the subset accuracy (the share of rows whose predicted label
        set is exactly ``y``'s), as scikit-learn's classifiers.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The inputs.
        y : array-like of shape (n_samples,) or label indicator (n_samples, n_classes)
            True labels.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example in the mean; ``None``: 1.

        Returns
        -------
        float
        """
        y_pred = self.predict(X)
        sample_weight = score_weights(sample_weight, y_pred.shape[0])
        if self.multilabel_:
            return float(accuracy_score(y, y_pred, sample_weight=sample_weight))
        return float(accuracy_score(check_sortable_labels(y), y_pred, sample_weight=sample_weight))
