"""Multi-label ConditionalNCEClassifier: a label-indicator ``y``, its checks and its plan.

A label indicator ``Y`` makes each row an example with a set of positive labels,
trained by the sampled one-vs-all loss (:func:`sknce.losses.multilabel_one_vs_all`,
batches of :class:`~sknce.conditional._sampler.LabelSetSampler`). The classifier calls
the functions here from its fit hooks:

* :func:`validate_indicator` checks ``Y`` and the parameters that apply to
  single-label ``y`` only;
* :func:`resolve_plan` resolves the ``"auto"`` settings of a new fit once, from its
  data, into a :class:`MultilabelPlan` that the classifier's hooks read.

On a sparse ``X`` with the built-in encoder, the plan is extreme multi-label
classification's regime: the :class:`~sknce.nn.BagEncoder` over sublinear tf-idf
weights of the features (for counts), trained by per-row Adagrad, which the
compiled :class:`~sknce.conditional._kernel_step.BagOneVsAllStep` runs on the CPU.
The constants are screened in ``benchmarks/README.md`` ("Multi-label at extreme
classification speed").
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
import torch

from sknce._callbacks import ChanceAwareEarlyStopping

__all__ = [
    "MultilabelPlan",
    "PrecisionEarlyStopping",
    "held_out_precision",
    "label_logits",
    "resolve_plan",
    "validate_indicator",
]

#: The compiled regime: width of h(x) and of the label embeddings; Adagrad's rate of
#: ``lr="auto"`` (decaying linearly over the fit, as in fastText's regime); noise labels
#: per row, one per ``LABELS_PER_NEGATIVE`` labels within ``NEGATIVES_RANGE``; rows per
#: batch; ``max_epochs`` of ``"auto"``, about ``ROW_UPDATES`` row updates within
#: ``EPOCH_RANGE``.
DIM = 64
LR = 0.2
LABELS_PER_NEGATIVE = 32
NEGATIVES_RANGE = (64, 256)
BATCH = 2048
ROW_UPDATES = 100_000
EPOCH_RANGE = (5, 20)
#: Elsewhere (autograd's step): noise labels per row, and positive labels per batch
#: (the rows of a batch hold about this many).
AUTOGRAD_NEGATIVES = 64
AUTOGRAD_BATCH = 256
#: Early stopping's monitor: the mean of precision@1 to @``TOP`` over at most
#: ``MONITOR_ROWS`` held-out rows (fewer with many labels: at most about
#: ``MONITOR_SCORES`` label scores per epoch, at least ``MIN_MONITOR_ROWS`` rows).
TOP = 5
MONITOR_ROWS = 2048
MIN_MONITOR_ROWS = 256
MONITOR_SCORES = 20_000_000


@dataclasses.dataclass(frozen=True)
class MultilabelPlan:
    """The settings of a multi-label fit, resolved once from its data and parameters.

    Attributes
    ----------
    bag : bool
        The built-in bag encoder (a sparse ``X``, ``hidden_layer_sizes="auto"``, no
        ``encoder``).
    weigh_bags : bool
        The bag weighs its features by ``log(1 + count) * idf`` (``X`` holds counts).
    compiled : bool
        The bag trains by per-row Adagrad (``torch.optim.Adagrad``), which the
        compiled step runs on the CPU.
    optimizer : type
        The optimizer class of the fit.
    dim : int or None
        Width of the bag (``embedding_dim=None``); None outside the compiled regime.
    n_negatives, batch_size : int
        Their ``"auto"`` values.
    lr : float or None
        Adagrad's rate of ``lr="auto"`` in the compiled regime; None elsewhere.
    refit : bool
        After a fit that held out rows, a new network is trained on every row for the
        epochs of the held-out rows' best precision (the compiled regime).
    """

    bag: bool
    weigh_bags: bool
    compiled: bool
    optimizer: type
    dim: int | None
    n_negatives: int
    batch_size: int
    lr: float | None
    refit: bool


def _is_counts(X) -> bool:
    """Whether a sparse ``X`` holds counts (non-negative integers)."""
    values = X.data
    return bool(np.all(values >= 0) and np.all(values == np.round(values)))


def auto_negatives(n_labels: int) -> int:
    """``n_negatives="auto"`` of the compiled regime for ``n_labels`` labels."""
    return int(np.clip(round(n_labels / LABELS_PER_NEGATIVE), *NEGATIVES_RANGE))


def resolve_plan(estimator, X, Y: sp.csr_matrix) -> MultilabelPlan:
    """The :class:`MultilabelPlan` of a new fit of ``estimator`` (a
    ConditionalNCEClassifier) on ``X`` and the label indicator ``Y``."""
    bag = estimator.encoder is None and estimator.hidden_layer_sizes == "auto" and sp.issparse(X)
    compiled = (
        bag
        and estimator.optimizer in (torch.optim.Adam, torch.optim.Adagrad)
        and not estimator.optimizer_kwargs
        and estimator.dropout == 0
        and not estimator.input_bias
    )
    if not compiled:
        # autograd's step: about as many positive labels per batch as 256 rows of
        # single-label y have
        per_row = max(Y.nnz / max(Y.shape[0], 1), 1.0)
        return MultilabelPlan(
            bag=bag,
            weigh_bags=bag and _is_counts(X),
            compiled=False,
            optimizer=estimator.optimizer,
            dim=None,
            n_negatives=AUTOGRAD_NEGATIVES,
            batch_size=int(np.clip(round(AUTOGRAD_BATCH / per_row), 16, AUTOGRAD_BATCH)),
            lr=None,
            refit=False,
        )
    return MultilabelPlan(
        bag=True,
        weigh_bags=_is_counts(X),
        compiled=True,
        optimizer=torch.optim.Adagrad,
        dim=DIM,
        n_negatives=auto_negatives(Y.shape[1]),
        batch_size=BATCH,
        lr=LR,
        refit=True,
    )


def label_logits(counts: np.ndarray, n_rows: int) -> np.ndarray:
    """The logit of each label's frequency among ``n_rows`` rows (smoothed by a half):
    where the per-label models start (``init="prior"``)."""
    frequency = (counts + 0.5) / (n_rows + 1.0)
    return np.log(frequency) - np.log1p(-frequency)


def validate_indicator(estimator, Y, multilabel: bool, reset: bool, classes) -> sp.csr_matrix:
    """``Y`` as a canonical int8 CSR indicator; a ValueError naming the fix for a bad
    one, or for parameters that apply to single-label ``y`` only.

    ``multilabel``: ``Y`` is a label indicator (else single-label ``y`` given to a
    multi-label fit); ``reset``: a new fit.
    """
    n_labels = Y.shape[1] if multilabel else None
    values = np.unique(Y.data if sp.issparse(Y) else Y) if multilabel else np.empty(0)
    if not np.isin(values, (0, 1)).all():
        raise ValueError(
            f"A 2-D y is a label indicator of 0/1 values (multi-label); got the values "
            f"{values[:5].tolist()}. Binarize it, e.g. (Y > 0).astype(int)."
        )
    if multilabel and not (values == 1).any():
        raise ValueError(
            "y is a label indicator without any label (every entry is 0): there is "
            "nothing to fit. Mark each row's labels with 1."
        )
    if not reset and (not estimator.multilabel_ or n_labels != len(estimator.classes_)):
        n_fitted = len(estimator.classes_)
        raise ValueError(
            f"This estimator was fitted on a label indicator of {n_fitted} labels; y must "
            f"be one too (shape (n_samples, {n_fitted})), got "
            f"{'labels' if n_labels is None else f'{n_labels} columns'}. To change the "
            "labels, fit anew."
        )
    declared = estimator.classes if classes is None else classes
    if declared is not None and not np.array_equal(np.asarray(declared), np.arange(n_labels)):
        raise ValueError(
            "With a label-indicator y the classes are its column indices, "
            f"0..{n_labels - 1}; leave classes=None (or pass np.arange({n_labels}))."
        )
    if estimator.class_weight is not None:
        raise ValueError(
            "class_weight applies to single-label y; with a label-indicator y weigh the "
            "rows with sample_weight."
        )
    unsupported = {
        "objective": (estimator.objective, "ranking"),
        "self_normalization": (estimator.self_normalization, 0.0),
    }
    for name, (value, default) in unsupported.items():
        if value != default:
            raise ValueError(
                f"{name}={value!r} applies to single-label y; a label-indicator y trains "
                f"the sampled one-vs-all loss (per-label probabilities): leave {name} at "
                f"{default!r}."
            )
    Y = sp.csr_matrix(Y, dtype=np.int8, copy=True)
    Y.eliminate_zeros()
    Y.sum_duplicates()  # sorted, each label once per row
    Y.data[:] = 1
    return Y


def held_out_precision(estimator, dataset) -> float | None:
    """The mean of precision@1 to @``TOP`` of ``estimator`` on the labelled rows of a
    held-out ``dataset`` (of a :class:`~sknce.conditional._sampler.LabelSetSampler`);
    None when none of them has a label.

    At most ``MONITOR_ROWS`` rows are scored (the first of the dataset's), fewer with
    many labels so that an epoch scores at most about ``MONITOR_SCORES`` labels.
    """
    n_labels = len(estimator.classes_)
    budget = int(np.clip(MONITOR_SCORES // n_labels, MIN_MONITOR_ROWS, MONITOR_ROWS))
    rows = np.asarray(dataset.rows)[:budget]
    positives, mask = dataset.sampler.positives(rows)
    labelled = mask.any(axis=1)
    if not labelled.any():
        return None
    k = min(TOP, n_labels)
    top, _ = estimator._topk(dataset.sampler.X[rows[labelled]], k)
    positives, mask = positives[labelled], mask[labelled]
    hits = ((top[:, :, None] == positives[:, None, :]) & mask[:, None, :]).any(axis=2)
    precision = np.cumsum(hits, axis=1) / np.arange(1, k + 1)
    return float(precision.mean())


class PrecisionEarlyStopping(ChanceAwareEarlyStopping):
    """Early stopping of a multi-label fit on the held-out rows' precision.

    At the end of each epoch with validation, records ``valid_precision``
    (:func:`held_out_precision`) in the history, and stops when it has not risen
    by more than ``threshold`` (relative) for ``patience`` epochs, restoring the
    weights of the best epoch. The held-out log-likelihood is no monitor for the
    ranking: the per-label models grow more confident on the training rows while
    their ranking still improves (``benchmarks/README.md``).

    Parameters
    ----------
    patience : int
    threshold : float
    """

    def __init__(self, patience: int, threshold: float) -> None:
        super().__init__(
            monitor="valid_precision",
            patience=patience,
            load_best=True,
            threshold=threshold,
            lower_is_better=False,
        )

    def on_epoch_end(self, net, dataset_valid=None, **kwargs) -> None:
        if dataset_valid is not None and "valid_loss" in net.history[-1]:
            precision = held_out_precision(net.estimator, dataset_valid)
            if precision is not None:
                net.history.record("valid_precision", precision)
        super().on_epoch_end(net, dataset_valid=dataset_valid, **kwargs)
