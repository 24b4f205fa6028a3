"""The co-occurrence term of a multi-label score: how often a feature and a label meet.

A multi-label :class:`~sknce.ConditionalNCEClassifier` on a sparse ``X`` scores

.. math::

    s(x, y) = h(x)^\\top e_y + b_y + w \\sum_j a_j(x)\\, \\mathrm{PPMI}[j, y],

where :math:`a_j(x)` are the shares of the row's features as the bag encoder reads them
(its weighting, e.g. ``log(1 + count) * idf``, each row summing to 1 in absolute value)
and :math:`\\mathrm{PPMI}[j, y] = \\max(0, \\log(n_{jy} N / (n_j n_y)))` the positive
pointwise mutual information of feature ``j`` and label ``y`` over the ``N`` training rows
(:math:`n_{jy}`: rows holding both; kept for the pairs found in at least ``MIN_ROWS``
rows). The factored score ties thousands of labels to their features through a few
shared dimensions; the table gives each (feature, label) pair its own association, as
the label trees' sparse linear models do (``benchmarks/README.md``, "Multi-label, fourth
round").

The functions here build the table (:func:`ppmi_table`), the term of a block of rows
(:func:`term`), the choice of ``w`` on held-out rows (:func:`choose_weight`), and the
term as a torch module of dense rows for the exported module (:class:`CooccurrenceOffset`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.preprocessing import normalize
from torch import nn

from sknce._bags import normalize_bags
from sknce.conditional._multilabel import MIN_MONITOR_ROWS, MONITOR_ROWS, MONITOR_SCORES

__all__ = [
    "MIN_ROWS",
    "WEIGHTS",
    "CooccurrenceOffset",
    "check_applies",
    "check_weight",
    "choose_weight",
    "held_out_rows",
    "mean_precision",
    "ppmi_table",
    "row_shares",
    "term",
]

#: A (feature, label) pair enters the table when found in at least this many rows: a pair
#: seen once has the largest PMI of all and says nothing.
MIN_ROWS = 2
#: The weights ``cooccurrence_weight="auto"`` chooses from on held-out rows (0: no term).
WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: Precision@1 to @``TOP`` is the choice's criterion (as early stopping's monitor).
TOP = 5
#: Table entries per step of the exported module: its working memory is a
#: ``(batch, EXPORT_CHUNK)`` block whatever the table's size.
EXPORT_CHUNK = 65536


def check_weight(weight) -> None:
    """A ValueError naming the fix for a ``cooccurrence_weight`` that is not ``"auto"`` or
    a finite number at least 0 (the parameter constraints let ``True`` and ``inf`` in)."""
    if isinstance(weight, str):
        return
    if isinstance(weight, (bool, np.bool_)) or not np.isfinite(weight):
        raise ValueError(
            f"cooccurrence_weight must be 'auto' or a finite number >= 0, got {weight!r}: "
            "'auto' chooses it on the held-out rows, 0 switches the term off."
        )


def check_applies(weight, applies: bool) -> None:
    """A ValueError naming the fix for a weight above 0 given to a fit whose model takes
    no co-occurrence term (``applies`` False: not the bag encoder of a sparse ``X`` of
    non-negative values)."""
    if applies or isinstance(weight, str) or weight == 0:
        return
    raise ValueError(
        f"cooccurrence_weight={weight!r} adds a term of the features' co-occurrence with "
        "the labels, which needs a sparse X of non-negative values (e.g. counts) read by "
        "the built-in bag encoder (hidden_layer_sizes='auto', no encoder). Leave "
        "cooccurrence_weight='auto' (it is then 0) or set it to 0."
    )


def held_out_rows(rows, n_labels: int) -> np.ndarray:
    """The first of the held-out ``rows`` that the choice of the weight scores: as many
    as early stopping's monitor (:func:`~sknce.conditional._multilabel.held_out_precision`)."""
    budget = int(np.clip(MONITOR_SCORES // n_labels, MIN_MONITOR_ROWS, MONITOR_ROWS))
    return np.asarray(rows)[:budget]


def ppmi_table(X: sp.csr_matrix, Y: sp.csr_matrix) -> sp.csr_matrix:
    """The positive PMI of each feature and label over the rows of ``X`` and ``Y``.

    Parameters
    ----------
    X : csr_matrix of shape (n_rows, n_features)
        The inputs; a feature is in a row where its value is above 0.
    Y : csr_matrix of shape (n_rows, n_labels)
        The 0/1 label indicator.

    Returns
    -------
    csr_matrix of float32, shape (n_features, n_labels)
        :math:`\\max(0, \\log(n_{jy} N / (n_j n_y)))` for the pairs found in at least
        ``MIN_ROWS`` rows with a positive PMI; no other entry stored.
    """
    present = sp.csr_matrix(X > 0, dtype=np.float32)
    labels = sp.csr_matrix(Y, dtype=np.float32)
    pairs = (present.T.tocsr() @ labels).tocoo()
    n_rows = X.shape[0]
    rows_of_feature = np.asarray(present.sum(axis=0), dtype=np.float64).ravel()
    rows_of_label = np.asarray(labels.sum(axis=0), dtype=np.float64).ravel()
    counts = pairs.data.astype(np.float64)
    pmi = np.log(counts * n_rows / (rows_of_feature[pairs.row] * rows_of_label[pairs.col]))
    keep = (pmi > 0) & (counts >= MIN_ROWS)
    table = sp.csr_matrix(
        (pmi[keep].astype(np.float32), (pairs.row[keep], pairs.col[keep])),
        shape=(X.shape[1], Y.shape[1]),
    )
    table.sort_indices()
    return table


def row_shares(X: sp.csr_matrix, bag: str, idf: np.ndarray | None) -> sp.csr_matrix:
    """The rows of ``X`` as the bag encoder reads them: the representation ``bag``
    (:func:`sknce._bags.normalize_bags`), each row divided by its absolute sum (an
    empty row stays zero).

    Returns
    -------
    csr_matrix of float32
    """
    return normalize(normalize_bags(X, bag, idf), norm="l1", copy=False)


def term(
    X: sp.csr_matrix, bag: str, idf: np.ndarray | None, table: sp.csr_matrix, weight: float
) -> sp.csr_matrix:
    """``weight`` times the co-occurrence term of each row of ``X`` and each label.

    Returns
    -------
    csr_matrix of float32, shape (n_rows, n_labels)
    """
    out = row_shares(X, bag, idf) @ table
    out.data *= np.float32(weight)
    return out


def mean_precision(scores: np.ndarray, Y: sp.csr_matrix) -> tuple[float, int]:
    """The sum over the labelled rows of their mean precision@1 to @``TOP`` by ``scores``
    and how many rows were labelled."""
    labelled = np.diff(Y.indptr) > 0
    if not labelled.any():
        return 0.0, 0
    k = min(TOP, scores.shape[1])
    order = torch.from_numpy(scores[labelled]).topk(k, dim=1, sorted=True).indices.numpy()
    truth = Y[labelled].toarray().astype(bool)
    hits = np.take_along_axis(truth, order, axis=1)
    precision = np.cumsum(hits, axis=1) / np.arange(1, k + 1)
    return float(precision.mean(axis=1).sum()), int(labelled.sum())


def choose_weight(
    blocks: Iterable[tuple[slice, np.ndarray]],
    terms: sp.csr_matrix,
    Y: sp.csr_matrix,
    weights: tuple[float, ...] = WEIGHTS,
) -> float:
    """The weight of ``weights`` whose term added to the scores ranks held-out rows best.

    Parameters
    ----------
    blocks : iterable of (slice, ndarray)
        ``(rows, scores)``: the network's scores of every label for blocks of the
        held-out rows, in order.
    terms : csr_matrix of shape (n_rows, n_labels)
        The term of those rows at weight 1 (:func:`term`, from a table of other rows).
    Y : csr_matrix of shape (n_rows, n_labels)
        Their labels.
    weights : tuple of float, default=WEIGHTS
        The candidates, ascending.

    Returns
    -------
    float
        The weight of the best mean precision@1 to @5 over the labelled rows (the
        smallest among equals; 0 without a labelled row, or where no weight beats 0).
    """
    totals = np.zeros(len(weights))
    for rows, scores in blocks:
        extra = terms[rows].toarray()
        for i, weight in enumerate(weights):
            totals[i] += mean_precision(scores + np.float32(weight) * extra, Y[rows])[0]
    return float(weights[int(np.argmax(totals))])


class CooccurrenceOffset(nn.Module):
    """The co-occurrence term of dense rows, for the exported module of a fit.

    Parameters
    ----------
    table : csr_matrix of shape (n_features, n_labels)
        :func:`ppmi_table`.
    weight : float
        Its weight ``w``.
    weighting : nn.Module or None
        The bag encoder's reading of ``x`` (:class:`~sknce.nn.BagWeighting`); None: as
        given.
    """

    def __init__(self, table: sp.csr_matrix, weight: float, weighting: nn.Module | None) -> None:
        super().__init__()
        coo = table.tocoo()
        self.n_labels = int(table.shape[1])
        self.weighting = weighting
        self.register_buffer("feature", torch.as_tensor(coo.row, dtype=torch.int64))
        self.register_buffer("label", torch.as_tensor(coo.col, dtype=torch.int64))
        self.register_buffer(
            "value", torch.as_tensor(coo.data * np.float32(weight), dtype=torch.float32)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The term, shape (batch, n_labels), of dense rows ``x`` (batch, n_features)."""
        if self.weighting is not None:
            x = self.weighting(x)
        total = x.abs().sum(dim=1, keepdim=True)
        shares = x / torch.where(total > 0, total, 1.0)
        out = x.new_zeros((x.shape[0], self.n_labels))
        for start in range(0, self.value.shape[0], EXPORT_CHUNK):
            part = slice(start, start + EXPORT_CHUNK)
            contributions = shares.index_select(1, self.feature[part]) * self.value[part]
            out = out.index_add(1, self.label[part], contributions)
        return out
