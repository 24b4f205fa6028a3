"""Compiled CPU kernels of ConditionalNCEClassifier on sparse bag input (fastText's inner loop).

A torch step over a batch of sparse bags and ``K`` sampled labels runs a dozen
dispatcher calls, an autograd graph and an optimizer over tiny rows; on a CPU it
costs about 20 times fastText's per-example work (profile in
``benchmarks/README.md``). :func:`sgd_bag_ranking` does what fastText's and
word2vec's C code do instead: for each example, one pass that builds the hidden
vector from the rows of the bag's features, scores the true label and the ``K``
noise labels, and updates the rows it read in place with plain SGD. It runs on the
numpy views of the torch parameters (``param.detach().numpy()`` shares memory on
the CPU), so the torch module stays the model that is pickled and queried.

The model is that of :class:`~sknce.nn.BagEncoder` and
:class:`~sknce.nn.LabelScorer`: ``h(x) = sum_j w_j W[j]`` over the bag's features
(``w = x / sum|x|``, the mean of the rows for a bag of counts), and
``s(x, y) = h . E[y] + b[y]``. The loss is the ranking NCE loss of
:func:`sknce.losses.ranking_nce` (Ma & Collins, 2018, Figure 1): with
``a_j = s(x, y_j) - log p_N(y_j)`` over the true label ``y_0`` and the negatives
``y_1..y_K``, ``logsumexp(a) - a_0``. The update of an example is exactly ``-lr``
times the gradient of its loss, every term read before any row moves (a label row
that occurs several times moves once by the sum of its coefficients);
``tests/conditional/test_classifier_kernel.py`` checks it against autograd.

:func:`sgd_linear_softmax` is the same per-example loop for the full-rank linear
model of :class:`~sknce.nn.LinearLabelScorer`, ``s(x, y) = sum_j x_j V[j, y] + b[y]``
on already weighted inputs, with the exact softmax over every class and row-wise
AdaGrad (:class:`sknce.optim.RowAdagrad`) or plain SGD.

Several threads may run a kernel on different slices of one batch at once: it
holds no GIL (``nogil=True``) and the threads race on shared rows without locks,
as fastText's workers do (Hogwild; Recht et al., 2011), so a multi-threaded fit is
not bit-reproducible.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["sgd_bag_ranking", "sgd_linear_softmax"]


@njit(nogil=True, cache=True, fastmath=True)
def _bag_weights_total(data, lo, hi) -> float:
    """``sum |x|`` over a bag's entries (1 for an empty or all-zero bag)."""
    total = 0.0
    for r in range(lo, hi):
        total += abs(data[r])
    return total if total > 0.0 else 1.0


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_bag_ranking(
    w_in: np.ndarray,
    w_label: np.ndarray,
    b_label: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    labels: np.ndarray,
    negatives: np.ndarray,
    pos_log_noise: np.ndarray,
    neg_log_noise: np.ndarray,
    weights: np.ndarray,
    lo: int,
    hi: int,
    lr: float,
    remove_hits: bool,
    distinct: bool = False,
) -> float:
    """Apply one ranking-NCE SGD step per example ``lo..hi-1`` in place; return the summed loss.

    Parameters
    ----------
    w_in : float array of shape (n_features, dim)
        The bag encoder's feature rows ``W``, updated in place.
    w_label : float array of shape (n_classes, dim)
        The label embeddings ``E``, updated in place.
    b_label : float array of shape (n_classes,) or (0,)
        The label biases ``b`` (updated in place), or empty for none.
    indptr, indices, data : CSR arrays of the batch
        Example ``i``'s bag is ``indices[indptr[i]:indptr[i + 1]]`` with values
        ``data[...]``.
    labels : int64 array of shape (n,)
    negatives : int64 array of shape (n, K) or (1, K)
        Each example's negatives, or one set shared by every example.
    pos_log_noise : float array of shape (n,)
        ``log p_N`` of each example's label.
    neg_log_noise : float array of shape (n, K) or (1, K)
        ``log p_N`` of each negative (as ``negatives``).
    weights : float array of shape (n,) or (0,)
        Weight of each example's loss (``sample_weight``), or empty for 1.
    lo, hi : int
        The examples this call trains on.
    lr : float
        Learning rate.
    remove_hits : bool
        Skip the negatives equal to the example's label.
    distinct : bool, default=False
        The scored labels of an example are distinct (e.g. every class once): the
        search for a repeated label row, quadratic in ``K``, is skipped.

    Returns
    -------
    float
        The summed loss of the examples, each evaluated before its own update.
    """
    dim = w_in.shape[1]
    n_targets = negatives.shape[1] + 1
    shared = negatives.shape[0] == 1
    has_bias = b_label.shape[0] > 0
    h = np.zeros_like(w_in[0])
    grad = np.zeros_like(w_in[0])
    # Scalars in the tables' dtype (float32 in a fit): the row loops then run in one
    # precision and vectorise; bookkeeping (softmax, loss) stays in float64.
    typed = np.zeros_like(w_in[0, :1])
    zero = typed[0]
    scores = np.empty(n_targets, dtype=np.float64)
    targets = np.empty(n_targets, dtype=np.int64)
    rows = np.empty(n_targets, dtype=np.int64)
    coefs = np.empty(n_targets, dtype=np.float64)
    exps = np.empty(n_targets, dtype=np.float64)
    total_loss = 0.0
    for i in range(lo, hi):
        start, stop = indptr[i], indptr[i + 1]
        inv = 1.0 / _bag_weights_total(data, start, stop)
        for k in range(dim):
            h[k] = 0.0
        for r in range(start, stop):
            row = w_in[indices[r]]
            typed[0] = data[r] * inv
            weight = typed[0]
            for k in range(dim):
                h[k] += weight * row[k]
        label = labels[i]
        own = 0 if shared else i
        n_scored = 0
        top = -np.inf
        for j in range(n_targets):
            target = label if j == 0 else negatives[own, j - 1]
            if j > 0 and remove_hits and target == label:
                continue
            v = w_label[target]
            s = zero
            for k in range(dim):
                s += h[k] * v[k]
            if has_bias:
                s += b_label[target]
            s -= pos_log_noise[i] if j == 0 else neg_log_noise[own, j - 1]
            scores[n_scored] = s
            targets[n_scored] = target
            top = max(top, s)
            n_scored += 1
        norm = 0.0
        for j in range(n_scored):
            exps[j] = math.exp(scores[j] - top)
            norm += exps[j]
        lse = top + math.log(norm)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        total_loss += weight * (lse - scores[0])
        # d loss / d a_j = softmax_j - [j = 0], gathered per distinct label row
        n_rows = 0
        for j in range(n_scored):
            g = weight * (exps[j] / norm - (1.0 if j == 0 else 0.0))
            target = targets[j]
            slot = n_rows
            if not distinct:
                for t in range(n_rows):
                    if rows[t] == target:
                        slot = t
            if slot == n_rows:
                rows[slot] = target
                coefs[slot] = 0.0
                n_rows += 1
            coefs[slot] += g
        for k in range(dim):
            grad[k] = 0.0
        # each label row read for the hidden gradient before it moves
        for t in range(n_rows):
            v = w_label[rows[t]]
            typed[0] = coefs[t]
            g = typed[0]
            typed[0] = lr * coefs[t]
            step = typed[0]
            for k in range(dim):
                grad[k] += g * v[k]
                v[k] -= step * h[k]
            if has_bias:
                b_label[rows[t]] -= step
        for r in range(start, stop):
            row = w_in[indices[r]]
            typed[0] = lr * data[r] * inv
            step = typed[0]
            for k in range(dim):
                row[k] -= step * grad[k]
    return total_loss


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_linear_softmax(
    w_in: np.ndarray,
    bias: np.ndarray,
    w_sum: np.ndarray,
    b_sum: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    lo: int,
    hi: int,
    lr: float,
    margin: float,
    eps: float,
) -> float:
    """Apply one softmax step per example ``lo..hi-1`` in place; return the summed loss.

    The scores of example ``i`` are ``z = b + sum_r data[r] V[indices[r]]`` over its
    entries, its loss the cross-entropy of ``z`` less ``margin`` at its label
    (the additive-margin softmax, Wang et al., 2018; 0: the log-likelihood), and
    its update ``-lr`` times the gradient of that loss, row by row with
    row-wise AdaGrad: a row's accumulator grows by the squared norm of its
    gradient and its step is divided by the accumulator's square root plus
    ``eps`` (:class:`sknce.optim.RowAdagrad`); with empty accumulators, plain
    SGD. Every score is read before any row moves.

    Parameters
    ----------
    w_in : float array of shape (n_features, n_classes)
        ``V``, updated in place.
    bias : float array of shape (n_classes,) or (0,)
        The label biases ``b`` (updated in place), or empty for none.
    w_sum : float array of shape (n_features,) or (0,)
        AdaGrad accumulators of the rows of ``V`` (updated in place), or empty for SGD.
    b_sum : float array of shape (1,) or (0,)
        AdaGrad accumulator of ``b`` (one row), or empty.
    indptr, indices, data, labels, weights, lo, hi, lr
        As :func:`sgd_bag_ranking`'s (``data``: the weighted input).
    margin : float
        Subtracted from the score of the example's label in training.
    eps : float
        AdaGrad's stabiliser.

    Returns
    -------
    float
        The summed loss of the examples, each evaluated before its own update.
    """
    n_classes = w_in.shape[1]
    adagrad = w_sum.shape[0] > 0
    has_bias = bias.shape[0] > 0
    z = np.zeros_like(w_in[0])
    typed = np.zeros_like(w_in[0, :1])
    total_loss = 0.0
    for i in range(lo, hi):
        start, stop = indptr[i], indptr[i + 1]
        for k in range(n_classes):
            z[k] = bias[k] if has_bias else 0.0
        for r in range(start, stop):
            row = w_in[indices[r]]
            typed[0] = data[r]
            value = typed[0]
            for k in range(n_classes):
                z[k] += value * row[k]
        label = labels[i]
        z[label] -= margin
        target = z[label]
        top = z[0]
        for k in range(1, n_classes):
            top = max(top, z[k])
        norm = 0.0
        for k in range(n_classes):
            z[k] = math.exp(z[k] - top)
            norm += z[k]
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        total_loss += weight * (top + math.log(norm) - target)
        # z becomes the gradient of the loss in the scores: weight * (softmax - one-hot)
        squared = 0.0
        for k in range(n_classes):
            typed[0] = weight * z[k] / norm
            z[k] = typed[0]
        z[label] -= weight
        for k in range(n_classes):
            squared += z[k] * z[k]
        for r in range(start, stop):
            j = indices[r]
            row = w_in[j]
            if adagrad:
                w_sum[j] += data[r] * data[r] * squared
                typed[0] = lr * data[r] / (math.sqrt(w_sum[j]) + eps)
            else:
                typed[0] = lr * data[r]
            step = typed[0]
            for k in range(n_classes):
                row[k] -= step * z[k]
        if has_bias:
            if adagrad:
                b_sum[0] += squared
                typed[0] = lr / (math.sqrt(b_sum[0]) + eps)
            else:
                typed[0] = lr
            step = typed[0]
            for k in range(n_classes):
                bias[k] -= step * z[k]
    return total_loss
