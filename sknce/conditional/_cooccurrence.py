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
round" measured it as a re-ranking, "fifth round" as built here).

The functions here build the table (:func:`ppmi_table`), the term of a block of rows
(:func:`add_term`, a compiled pass), the choice of ``w`` on held-out rows at each epoch
of the held-out fit (:class:`WeightChoice`), and the term as a torch module of dense rows
for the exported module (:class:`CooccurrenceOffset`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.preprocessing import normalize
from skorch.callbacks import Callback
from torch import nn

from sknce._bags import normalize_bags
from sknce._jit import njit
from sknce.conditional._multilabel import MIN_MONITOR_ROWS, MONITOR_ROWS, MONITOR_SCORES

__all__ = [
    "MIN_ROWS",
    "WEIGHTS",
    "CooccurrenceOffset",
    "WeightChoice",
    "add_term",
    "best_by_term",
    "check_applies",
    "check_weight",
    "choose_weight",
    "grid_precision",
    "held_out_rows",
    "ppmi_table",
    "row_shares",
    "term",
]

#: A (feature, label) pair enters the table when found in at least this many rows: a pair
#: seen once has the largest PMI of all and says nothing.
MIN_ROWS = 2
#: Labels per block of the table's count of pairs (its working memory).
LABEL_BLOCK = 1024
#: The weights ``cooccurrence_weight="auto"`` chooses from on held-out rows (0: no term).
WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: Precision@1 to @``TOP`` is the choice's criterion (as early stopping's monitor), of
#: a row's top labels among its ``CANDIDATES`` best by score and by term.
TOP = 5
CANDIDATES = 32
#: The weight chosen is the smallest that gains this share of the best weight's gain in
#: that precision over no term (:func:`choose_weight`).
GAIN_SHARE = 0.9
#: Table entries per step of the exported module: its working memory is a
#: ``(batch, EXPORT_CHUNK)`` block whatever the table's size.
EXPORT_CHUNK = 16384


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
    labels = sp.csc_matrix(Y, dtype=np.float32)
    by_feature = present.T.tocsr()
    rows_of_feature = np.asarray(present.sum(axis=0), dtype=np.float64).ravel()
    rows_of_label = np.asarray(labels.sum(axis=0), dtype=np.float64).ravel()
    parts = []
    # by blocks of labels: the pairs found once (most of them) are never all held at once
    for start in range(0, Y.shape[1], LABEL_BLOCK):
        pairs = by_feature @ labels[:, start : start + LABEL_BLOCK]
        pairs.data[pairs.data < MIN_ROWS] = 0
        pairs.eliminate_zeros()
        pairs = pairs.tocoo()
        columns = pairs.col + start
        pmi = np.log(
            pairs.data.astype(np.float64)
            * X.shape[0]
            / (rows_of_feature[pairs.row] * rows_of_label[columns])
        )
        keep = pmi > 0
        parts.append((pmi[keep].astype(np.float32), pairs.row[keep], columns[keep]))
    values, features, columns = (np.concatenate(p) for p in zip(*parts, strict=True))
    table = sp.csr_matrix((values, (features, columns)), shape=(X.shape[1], Y.shape[1]))
    table.sort_indices()
    return table


def row_shares(X, bag: str, idf: np.ndarray | None, weight: float = 1.0) -> sp.csr_matrix:
    """``weight`` times the rows of ``X`` as the bag encoder reads them: the
    representation ``bag`` (:func:`sknce._bags.normalize_bags`), each row divided by its
    absolute sum (an empty row stays zero).

    Returns
    -------
    csr_matrix of float32, sorted indices
    """
    shares = normalize(normalize_bags(X, bag, idf), norm="l1", copy=False)
    shares.data *= np.float32(weight)
    shares.sort_indices()
    return shares


@njit(nogil=True, cache=True)
def _add_term(out, row_ptr, row_features, row_shares, ptr, labels, values, start) -> None:
    stop = start + out.shape[1]
    for i in range(out.shape[0]):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = row_features[p]
            share = row_shares[p]
            # the feature's labels are sorted: those of the block are one run
            lo = ptr[j] + np.searchsorted(labels[ptr[j] : ptr[j + 1]], start)
            for q in range(lo, ptr[j + 1]):
                label = labels[q]
                if label >= stop:
                    break
                out[i, label - start] += share * values[q]


def add_term(out: np.ndarray, shares: sp.csr_matrix, table: sp.csr_matrix, start: int = 0) -> None:
    """Add the term of rows to their scores of the labels ``start..start + out.shape[1]
    - 1``, in place.

    One pass over the table's rows of each row's features, so the cost is that of the
    pairs the rows meet, whatever the number of labels, and no other block is made
    (the term of a row of many features meets most labels: a sparse product would
    store it densely, twice).

    Parameters
    ----------
    out : ndarray of float32, shape (n_rows, n_block), C-contiguous
        The scores of the block of labels, added to.
    shares : csr_matrix of float32, shape (n_rows, n_features)
        :func:`row_shares` of the rows (times the weight), sorted indices.
    table : csr_matrix of float32, shape (n_features, n_labels)
        :func:`ppmi_table`, sorted indices.
    start : int, default=0
        The first label of the block.
    """
    _add_term(
        out,
        shares.indptr,
        shares.indices,
        shares.data,
        table.indptr,
        table.indices,
        table.data,
        start,
    )


def term(X, bag: str, idf: np.ndarray | None, table: sp.csr_matrix, weight: float) -> np.ndarray:
    """``weight`` times the co-occurrence term of each row of ``X`` and each label.

    Returns
    -------
    ndarray of float32, shape (n_rows, n_labels)
    """
    out = np.zeros((X.shape[0], table.shape[1]), dtype=np.float32)
    add_term(out, row_shares(X, bag, idf, weight), table)
    return out


def grid_precision(
    scores: torch.Tensor,
    terms: torch.Tensor,
    truth: torch.Tensor,
    by_term: torch.Tensor | None = None,
    weights=WEIGHTS,
) -> list[float]:
    """The mean precision@1 to @``TOP`` of rows ranked by ``scores + w * terms``, for each
    weight ``w`` of ``weights``.

    Each row's top labels are taken among its ``CANDIDATES`` best by the scores and its
    ``CANDIDATES`` best by the term (the term is at least 0, so a label outside both
    would need a high score and a high term at once): one ranking of every label per
    row, not one per weight.

    Parameters
    ----------
    scores, terms : Tensor of shape (n_rows, n_labels)
        The network's scores and the term at weight 1.
    truth : BoolTensor of shape (n_rows, n_labels)
        The rows' labels; every row has one at least.
    by_term : LongTensor of shape (n_rows, CANDIDATES) or None, default=None
        Each row's best labels by the term (:func:`best_by_term`), when known.
    weights : sequence of float, default=WEIGHTS

    Returns
    -------
    list of float
        One mean precision per weight.
    """
    width = min(CANDIDATES, scores.shape[1])
    by_score = scores.topk(width, dim=1).indices
    if by_term is None:
        by_term = best_by_term(terms)
    candidates = torch.cat([by_score, by_term], dim=1)
    top_scores = scores.gather(1, candidates)
    # a label among both lists counts once
    twice = (by_term[:, :, None] == by_score[:, None, :]).any(dim=2)
    top_scores[:, width:] = top_scores[:, width:].masked_fill(twice, -torch.inf)
    top_terms, hits = terms.gather(1, candidates), truth.gather(1, candidates)
    k = min(TOP, scores.shape[1])
    # every weight at once: (n_weights, n_rows, 2 * CANDIDATES)
    grid = torch.tensor(weights, dtype=top_scores.dtype)[:, None, None]
    order = (top_scores + grid * top_terms).topk(k, dim=2).indices
    found = hits.expand(len(weights), -1, -1).gather(2, order).double()
    precision = found.cumsum(dim=2) / torch.arange(1, k + 1, dtype=torch.float64)
    return precision.mean(dim=(1, 2)).tolist()


def best_by_term(terms: torch.Tensor) -> torch.Tensor:
    """Each row's ``CANDIDATES`` best labels by the term (:func:`grid_precision`)."""
    return terms.topk(min(CANDIDATES, terms.shape[1]), dim=1).indices


def choose_weight(precisions, weights=WEIGHTS) -> float:
    """The weight the held-out precisions at each weight of ``weights`` ask for: the
    smallest whose gain over no term (the first weight, 0) is at least ``GAIN_SHARE``
    of the best gain; 0 without a gain, or without precisions.

    The held-out rows are scored by a network and a table of 90% of the rows, and the
    fitted model of every row needs less of the term than they do: on the neighbours
    task they ranked best at 8-16 where the test rows did at 4-8, with 8 and 16 within
    0.003 of each other (``benchmarks/README.md``). The smallest weight near the top
    takes that shrinkage, and does not follow the noise between neighbouring weights.
    """
    if precisions is None:
        return 0.0
    values = np.asarray(precisions, dtype=np.float64)
    gain = values.max() - values[0]
    if not gain > 0:
        return 0.0
    return float(weights[int(np.flatnonzero(values >= values[0] + GAIN_SHARE * gain)[0])])


class _HeldOut(NamedTuple):
    """What :class:`WeightChoice` keeps of the held-out rows it scores during a fit."""

    X: sp.csr_matrix
    terms: torch.Tensor
    by_term: torch.Tensor
    truth: torch.Tensor
    scores: torch.Tensor


class WeightChoice(Callback):
    """At the end of each epoch of a held-out fit, the held-out rows' precision at each
    weight of the term (:func:`grid_precision`), recorded as ``cooccurrence_precision``:
    ``cooccurrence_weight="auto"`` then takes the best weight at the epoch the fit
    chose (the network a refit reproduces), not at its last one, which may have trained
    past its best (and asks more of the term).

    The term of the held-out rows comes from a table of the training rows of the split
    only, so the choice sees rows that neither the network nor the table learnt from.
    The rows scored are the first of the held-out ones, as many as early stopping's
    monitor scores (:func:`held_out_rows`). The data and the cached terms are dropped
    when training ends (the fitted net does not carry them).

    Parameters
    ----------
    X : csr_matrix of shape (n_rows, n_features)
        The fit's rows (the split's rows index them).
    Y : csr_matrix of shape (n_rows, n_labels)
        Their labels.
    bag : str
        The bag's representation of ``X``.
    idf : ndarray or None
        Its idf.
    """

    def __init__(self, X, Y, bag: str, idf) -> None:
        self.X = X
        self.Y = Y
        self.bag = bag
        self.idf = idf

    def on_train_begin(self, net, **kwargs) -> None:
        self.held_out_ = None

    def on_epoch_end(self, net, dataset_train=None, dataset_valid=None, **kwargs) -> None:
        if dataset_valid is None or self.X is None:
            return
        if self.held_out_ is None:
            self.held_out_ = self._held_out(np.asarray(dataset_train.rows), dataset_valid.rows)
        held_out = self.held_out_
        if held_out.X.shape[0] == 0:
            return
        scores = held_out.scores  # one buffer for every epoch
        for rows, chunks in net.estimator._row_blocks(held_out.X, "fit"):
            for start, chunk in chunks:
                scores[rows, start : start + chunk.shape[1]] = chunk.cpu()
        precisions = grid_precision(scores, held_out.terms, held_out.truth, held_out.by_term)
        net.history.record("cooccurrence_precision", precisions)

    def _held_out(self, train_rows: np.ndarray, valid_rows) -> _HeldOut:
        """The labelled held-out rows scored, their term and their labels."""
        rows = held_out_rows(valid_rows, self.Y.shape[1])
        rows = rows[np.diff(self.Y.indptr)[rows] > 0]
        X = self.X[rows]
        table = ppmi_table(self.X[train_rows], self.Y[train_rows])
        terms = torch.from_numpy(term(X, self.bag, self.idf, table, 1.0))
        return _HeldOut(
            X,
            terms,
            best_by_term(terms),
            torch.from_numpy(self.Y[rows].toarray() > 0),
            torch.empty(terms.shape),
        )

    def on_train_end(self, net, **kwargs) -> None:
        self.X = self.Y = self.held_out_ = None


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
