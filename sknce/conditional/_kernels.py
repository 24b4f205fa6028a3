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

The per-row helpers are inlined into each kernel by Numba (``inline="always"``): as
functions of their own, every call passed its row views through reference counts,
a large share of the one-vs-all kernel's time; inlined, a float32 fit's updates are
the same to the bit (``benchmarks/README.md``, "Multi-label, fifth round").
"""

from __future__ import annotations

import math

import numpy as np

from sknce._jit import njit

__all__ = [
    "BAG_CODES",
    "adagrad_bag_one_vs_all",
    "sgd_bag_ranking",
    "sgd_linear_softmax",
    "weighted_csr",
]

#: The representations of :func:`weighted_csr` (:class:`~sknce.nn.BagWeighting`'s ``bag``).
BAG_CODES = {"counts": 0, "log1p": 1, "log1p-idf": 2, "tf": 3}


@njit(nogil=True, cache=True, fastmath=True, inline="always")
def _bag_weights_total(data, lo, hi) -> float:
    """``sum |x|`` over a bag's entries (1 for an empty or all-zero bag)."""
    total = 0.0
    for r in range(lo, hi):
        total += abs(data[r])
    return total if total > 0.0 else 1.0


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _bag_mean(w_in, indices, data, start, stop, h, typed) -> float:
    """Set ``h`` to the bag's weighted mean of rows ``sum_j x_j W[j] / sum |x|``;
    return ``1 / sum |x|``. ``typed``: a 1-element scratch array in the tables' dtype."""
    inv = 1.0 / _bag_weights_total(data, start, stop)
    for k in range(h.shape[0]):
        h[k] = 0.0
    for r in range(start, stop):
        row = w_in[indices[r]]
        typed[0] = data[r] * inv
        weight = typed[0]
        for k in range(h.shape[0]):
            h[k] += weight * row[k]
    return inv


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _adagrad_step(v, sums, scale, direction, lr, eps, typed) -> None:
    """torch's Adagrad step of row ``v`` for the gradient ``scale * direction``:
    ``sums += g * g``, ``v -= lr * g / (sqrt(sums) + eps)``, in the tables' dtype."""
    typed[0] = lr
    rate = typed[0]
    typed[0] = eps
    tiny = typed[0]
    for k in range(v.shape[0]):
        gk = scale * direction[k]
        sums[k] += gk * gk
        v[k] -= rate * gk / (np.sqrt(sums[k]) + tiny)


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _move_label_row(v, h, grad, coef, lr, sums, eps, typed) -> None:
    """Add ``coef * v`` to the hidden gradient ``grad``, then move label row ``v`` by
    its gradient ``coef * h``: plain SGD at ``lr``, or Adagrad's step when ``sums`` (the
    row's running sums of squared gradients, updated) is not empty."""
    typed[0] = coef
    g = typed[0]
    if sums.shape[0] == 0:
        typed[0] = lr * coef
        step = typed[0]
        for k in range(h.shape[0]):
            grad[k] += g * v[k]
            v[k] -= step * h[k]
        return
    for k in range(h.shape[0]):
        grad[k] += g * v[k]
    _adagrad_step(v, sums, g, h, lr, eps, typed)


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _move_bias(b_label, row, coef, lr, sums, eps, typed) -> None:
    """Move label bias ``b_label[row]`` by its gradient ``coef``: plain SGD at ``lr``, or
    Adagrad's step when ``sums`` (the biases' running sums of squared gradients,
    updated) is not empty."""
    if sums.shape[0] == 0:
        typed[0] = lr * coef
        b_label[row] -= typed[0]
        return
    sums[row] += coef * coef
    b_label[row] -= lr * coef / (np.sqrt(sums[row]) + eps)


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _move_bag_rows(w_in, indices, data, start, stop, inv, lr, grad, sums, eps, typed) -> None:
    """Move the rows of a bag's features by their gradients ``x_j / sum|x| * grad``:
    plain SGD at ``lr``, or Adagrad's step when ``sums`` (the running sums of squared
    gradients of ``w_in``, updated) is not empty."""
    if sums.shape[0] == 0:
        for r in range(start, stop):
            row = w_in[indices[r]]
            typed[0] = lr * data[r] * inv
            step = typed[0]
            for k in range(grad.shape[0]):
                row[k] -= step * grad[k]
        return
    for r in range(start, stop):
        typed[0] = data[r] * inv
        _adagrad_step(w_in[indices[r]], sums[indices[r]], typed[0], grad, lr, eps, typed)


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _label_score(h, w_label, b_label, target, zero):
    """``h . E[target] + b[target]`` in the tables' dtype (``zero``: 0 in it)."""
    v = w_label[target]
    s = zero
    for k in range(h.shape[0]):
        s += h[k] * v[k]
    if b_label.shape[0] > 0:
        s += b_label[target]
    return s


@njit(nogil=True, cache=True, fastmath=True, inline="always")
def _slot(rows, n_rows, target) -> int:
    """The index of ``target`` among ``rows[:n_rows]`` (distinct), or ``n_rows``."""
    for t in range(n_rows):
        if rows[t] == target:
            return t
    return n_rows


@njit(nogil=True, cache=True, fastmath=True, inline="always")
def _gather(rows, coefs, n_rows, target, coef, distinct, slot_of) -> int:
    """Add ``coef`` to label row ``target``'s slot among ``rows[:n_rows]`` (a new slot
    unless it is there); return the number of slots.

    The slot is found in ``slot_of`` (the slot of every label, -1 for none) when it is
    not empty, else by a search of ``rows`` unless ``distinct`` (the labels are known
    distinct).
    """
    if slot_of.shape[0] > 0:
        slot = slot_of[target] if slot_of[target] >= 0 else n_rows
        slot_of[target] = slot
    else:
        slot = n_rows if distinct else _slot(rows, n_rows, target)
    if slot == n_rows:
        rows[slot] = target
        coefs[slot] = 0.0
        n_rows += 1
    coefs[slot] += coef
    return n_rows


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _update_rows(tables, sums, bag, h, grad, update, lr, eps, typed) -> None:
    """The update of one example: label rows ``rows[:n_rows]`` by their loss gradients
    ``coefs[t] * h`` (each read for the hidden gradient before it moves), their
    biases by ``coefs[t]``, then the bag's feature rows by the hidden gradient.

    ``tables``: ``(w_in, w_label, b_label)``; ``sums``: their Adagrad sums of squared
    gradients, updated, or three empty arrays for plain SGD; ``bag``: ``(indices,
    data, start, stop, inv)`` of the example's bag (:func:`_bag_mean`); ``update``:
    ``(rows, coefs, n_rows)`` (:func:`_gather`).
    """
    w_in, w_label, b_label = tables
    sums_in, sums_label, sums_bias = sums
    indices, data, start, stop, inv = bag
    rows, coefs, n_rows = update
    for k in range(grad.shape[0]):
        grad[k] = 0.0
    for t in range(n_rows):
        row_sums = sums_label[rows[t]] if sums_label.shape[0] > 0 else sums_bias
        _move_label_row(w_label[rows[t]], h, grad, coefs[t], lr, row_sums, eps, typed)
        if b_label.shape[0] > 0:
            _move_bias(b_label, rows[t], coefs[t], lr, sums_bias, eps, typed)
    _move_bag_rows(w_in, indices, data, start, stop, inv, lr, grad, sums_in, eps, typed)


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
    n_targets = negatives.shape[1] + 1
    shared = negatives.shape[0] == 1
    h = np.zeros_like(w_in[0])
    grad = np.zeros_like(w_in[0])
    # Scalars in the tables' dtype (float32 in a fit): the row loops then run in one
    # precision and vectorise; bookkeeping (softmax, loss) stays in float64.
    typed = np.zeros_like(w_in[0, :1])
    zero = typed[0]
    tables = (w_in, w_label, b_label)
    sgd = (w_in[:0], w_label[:0], typed[:0])  # plain SGD: no sums of squared gradients
    scores = np.empty(n_targets, dtype=np.float64)
    targets = np.empty(n_targets, dtype=np.int64)
    rows = np.empty(n_targets, dtype=np.int64)
    no_slots = rows[:0]
    coefs = np.empty(n_targets, dtype=np.float64)
    exps = np.empty(n_targets, dtype=np.float64)
    total_loss = 0.0
    for i in range(lo, hi):
        start, stop = indptr[i], indptr[i + 1]
        inv = _bag_mean(w_in, indices, data, start, stop, h, typed)
        label = labels[i]
        own = 0 if shared else i
        n_scored = 0
        top = -np.inf
        for j in range(n_targets):
            target = label if j == 0 else negatives[own, j - 1]
            if j > 0 and remove_hits and target == label:
                continue
            s = _label_score(h, w_label, b_label, target, zero)
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
            n_rows = _gather(rows, coefs, n_rows, targets[j], g, distinct, no_slots)
        bag = (indices, data, start, stop, inv)
        _update_rows(tables, sgd, bag, h, grad, (rows, coefs, n_rows), lr, 0.0, typed)
    return total_loss


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _logistic(s: float) -> tuple[float, float]:
    """``softplus(s) = log(1 + exp(s))`` and ``sigmoid(s) = 1 / (1 + exp(-s))``, from
    one exponential, without overflow."""
    e = math.exp(-abs(s))
    sigmoid = 1.0 / (1.0 + e) if s >= 0.0 else e / (1.0 + e)
    return max(s, 0.0) + math.log1p(e), sigmoid


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def adagrad_bag_one_vs_all(
    w_in: np.ndarray,
    w_label: np.ndarray,
    b_label: np.ndarray,
    sums_in: np.ndarray,
    sums_label: np.ndarray,
    sums_bias: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    positives: np.ndarray,
    pos_mask: np.ndarray,
    negatives: np.ndarray,
    neg_mask: np.ndarray,
    neg_coef: np.ndarray,
    weights: np.ndarray,
    lo: int,
    hi: int,
    lr: float,
    eps: float,
) -> float:
    """Apply one Adagrad step of the sampled one-vs-all loss per row ``lo..hi-1`` in
    place; return the summed loss.

    The loss of a row with positive labels ``P`` and sampled labels ``y_k`` is
    ``sum_p softplus(-s(x, p)) + sum_k c_k [y_k not in P] softplus(s(x, y_k))``
    (:func:`sknce.losses.multilabel_one_vs_all` with ``c_k = 1 / (K p_N(y_k))``).
    Each row's step is torch's ``Adagrad`` (``sum += g * g``; ``p -= lr * g /
    (sqrt(sum) + eps)``) on the gradient of its loss, every term read before any
    row moves (a label drawn twice moves once, by its summed gradient).

    Parameters
    ----------
    w_in, w_label, b_label : float arrays
        The bag's feature rows ``W`` (n_features, dim), the label embeddings ``E``
        (n_classes, dim) and biases ``b`` (n_classes,) or (0,), updated in place.
    sums_in, sums_label, sums_bias : float arrays of the shapes of the tables
        Adagrad's running sums of squared gradients, updated in place
        (``sums_bias`` empty without biases).
    indptr, indices, data : CSR arrays of the batch
        Row ``i``'s bag is ``indices[indptr[i]:indptr[i + 1]]`` with values
        ``data[...]`` (already weighted, e.g. by idf).
    positives : int64 array of shape (n, P)
        Each row's positive labels, padded.
    pos_mask : bool array of shape (n, P)
        False at the padding.
    negatives : int64 array of shape (n, K) or (1, K)
        Each row's sampled labels, or one set shared by every row.
    neg_mask : bool array of shape (n, K)
        False where a sampled label is one of the row's positives (not scored).
    neg_coef : float array of the shape of ``negatives``
        ``c_k``, the importance weight of each sampled label's term.
    weights : float array of shape (n,) or (0,)
        Weight of each row's loss (``sample_weight``), or empty for 1.
    lo, hi : int
        The rows this call trains on.
    lr, eps : float
        Adagrad's learning rate and the term added to the root of the sums.

    Returns
    -------
    float
        The summed loss of the rows, each evaluated before its own update.
    """
    n_pos = positives.shape[1]
    n_targets = n_pos + negatives.shape[1]
    shared = negatives.shape[0] == 1
    h = np.zeros_like(w_in[0])
    grad = np.zeros_like(w_in[0])
    typed = np.zeros_like(w_in[0, :1])
    zero = typed[0]
    rows = np.empty(n_targets, dtype=np.int64)
    coefs = np.empty(n_targets, dtype=np.float64)
    tables = (w_in, w_label, b_label)
    sums = (sums_in, sums_label, sums_bias)
    # a label drawn twice is one row of the update: each label's slot, found in O(1)
    slot_of = np.full(w_label.shape[0], -1, dtype=np.int64)
    total_loss = 0.0
    for i in range(lo, hi):
        start, stop = indptr[i], indptr[i + 1]
        inv = _bag_mean(w_in, indices, data, start, stop, h, typed)
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        own = 0 if shared else i
        n_rows = 0
        # every score read before any row moves: the positives (distinct) first
        for j in range(n_pos):
            if pos_mask[i, j]:
                s = _label_score(h, w_label, b_label, positives[i, j], zero)
                loss, sigmoid = _logistic(-s)
                total_loss += weight * loss
                n_rows = _gather(
                    rows, coefs, n_rows, positives[i, j], -weight * sigmoid, True, slot_of
                )
        for j in range(negatives.shape[1]):
            if neg_mask[i, j]:
                target = negatives[own, j]
                c = weight * neg_coef[own, j]
                s = _label_score(h, w_label, b_label, target, zero)
                loss, sigmoid = _logistic(s)
                total_loss += c * loss
                n_rows = _gather(rows, coefs, n_rows, target, c * sigmoid, False, slot_of)
        bag = (indices, data, start, stop, inv)
        _update_rows(tables, sums, bag, h, grad, (rows, coefs, n_rows), lr, eps, typed)
        for t in range(n_rows):
            slot_of[rows[t]] = -1
    return total_loss


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _linear_scores(w_in, bias, indices, data, start, stop, z, typed) -> None:
    """Set ``z`` to the scores ``b + sum_r data[r] V[indices[r]]`` of one example's
    entries ``start..stop-1`` (``bias`` empty: no ``b``)."""
    has_bias = bias.shape[0] > 0
    for k in range(z.shape[0]):
        z[k] = bias[k] if has_bias else 0.0
    for r in range(start, stop):
        row = w_in[indices[r]]
        typed[0] = data[r]
        value = typed[0]
        for k in range(z.shape[0]):
            z[k] += value * row[k]


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _margin_softmax_gradient(z, label, margin, weight, typed) -> float:
    """Turn the scores ``z`` into ``weight`` times the gradient of the cross-entropy of
    ``z`` less ``margin`` at ``label`` (``softmax - one-hot``); return that loss."""
    z[label] -= margin
    target = z[label]
    top = z[0]
    for k in range(1, z.shape[0]):
        top = max(top, z[k])
    norm = 0.0
    for k in range(z.shape[0]):
        z[k] = math.exp(z[k] - top)
        norm += z[k]
    for k in range(z.shape[0]):
        typed[0] = weight * z[k] / norm
        z[k] = typed[0]
    z[label] -= weight
    return top + math.log(norm) - target


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy", inline="always")
def _linear_update(w_in, bias, w_sum, b_sum, indices, data, start, stop, grad, lr, eps, typed):
    """Move the rows of one example's entries and the biases by ``-lr`` times their
    gradients for ``grad``, the gradient of its loss in the scores: row-wise AdaGrad
    (the accumulators ``w_sum``, ``b_sum`` grow by the squared norms) unless they are
    empty (plain SGD)."""
    adagrad = w_sum.shape[0] > 0
    squared = 0.0
    for k in range(grad.shape[0]):
        squared += grad[k] * grad[k]
    for r in range(start, stop):
        j = indices[r]
        row = w_in[j]
        if adagrad:
            w_sum[j] += data[r] * data[r] * squared
            typed[0] = lr * data[r] / (math.sqrt(w_sum[j]) + eps)
        else:
            typed[0] = lr * data[r]
        step = typed[0]
        for k in range(grad.shape[0]):
            row[k] -= step * grad[k]
    if bias.shape[0] > 0:
        if adagrad:
            b_sum[0] += squared
            typed[0] = lr / (math.sqrt(b_sum[0]) + eps)
        else:
            typed[0] = lr
        step = typed[0]
        for k in range(grad.shape[0]):
            bias[k] -= step * grad[k]


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
    rival: float = 0.0,
    threshold: float = 0.0,
) -> float:
    """Apply one softmax step per example ``lo..hi-1`` in place; return the summed loss.

    The scores of example ``i`` are ``z = b + sum_r data[r] V[indices[r]]`` over its
    entries, its loss the cross-entropy of ``z`` less ``margin`` at its label
    (the additive-margin softmax, Wang et al., 2018; 0: the log-likelihood) plus
    ``rival`` times the one-vs-all logistic loss of its label ``y`` and of its best
    other class ``c`` (the highest ``z_c``, ``c != y``, ties to the first),
    ``softplus(t - z_y) + softplus(z_c - t)`` on the scores without the margin (0: no
    term; ``t`` the ``threshold`` between them),
    and its update ``-lr`` times the gradient of that loss, row by row with
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
    rival : float, default=0.0
        The weight of the one-vs-all term of the label and its best rival.
    threshold : float, default=0.0
        The score ``t`` of that term's even odds.

    Returns
    -------
    float
        The summed loss of the examples, each evaluated before its own update.
    """
    n_classes = w_in.shape[1]
    z = np.zeros_like(w_in[0])
    typed = np.zeros_like(w_in[0, :1])
    total_loss = 0.0
    for i in range(lo, hi):
        start, stop = indptr[i], indptr[i + 1]
        _linear_scores(w_in, bias, indices, data, start, stop, z, typed)
        label = labels[i]
        own = float(z[label])
        best = -1
        if rival > 0.0:
            for k in range(n_classes):
                if k != label and (best < 0 or z[k] > z[best]):
                    best = k
        best_score = float(z[best]) if best >= 0 else 0.0
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        loss = _margin_softmax_gradient(z, label, margin, weight, typed)
        if best >= 0:
            # the one-vs-all term: d softplus(-s) / ds = -sigmoid(-s)
            own_loss, own_slope = _logistic(-(own - threshold))
            best_loss, best_slope = _logistic(best_score - threshold)
            loss += rival * (own_loss + best_loss)
            z[label] -= weight * rival * own_slope
            z[best] += weight * rival * best_slope
        total_loss += weight * loss
        _linear_update(w_in, bias, w_sum, b_sum, indices, data, start, stop, z, lr, eps, typed)
    return total_loss


@njit(nogil=True, cache=True, error_model="numpy")
def weighted_csr(
    rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int, bag: int, idf: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The CSR ``indptr`` and weighted values of a sparse batch of counts, in one pass.

    What :class:`~sknce.nn.BagWeighting` computes in torch, in the values' dtype
    (``bag``: :data:`BAG_CODES`): ``"log1p-idf"``, ``log(1 + x_j) idf_j`` with each row
    scaled to unit Euclidean norm; ``"tf"``, each row divided by its sum; ``"log1p"``;
    ``"counts"``, as given. A row whose norm or sum is not positive is not scaled.

    Parameters
    ----------
    rows, cols : int64 arrays of shape (nnz,)
        The row and column of each stored entry, sorted by row (a coalesced COO
        batch's indices).
    values : float array of shape (nnz,)
        The counts.
    n_rows : int
        Rows of the batch.
    bag : int
        The representation's code.
    idf : float array of shape (n_features,)
        Inverse document frequencies (``"log1p-idf"``; any array otherwise).

    Returns
    -------
    indptr : int64 array of shape (n_rows + 1,)
    data : float array of shape (nnz,)
    """
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    for r in range(rows.shape[0]):
        indptr[rows[r] + 1] += 1
    for i in range(n_rows):
        indptr[i + 1] += indptr[i]
    data = np.empty_like(values)
    one = np.ones(1, dtype=values.dtype)[0]
    for i in range(n_rows):
        total = one - one
        for r in range(indptr[i], indptr[i + 1]):
            v = values[r]
            if bag == 1 or bag == 2:
                v = np.log1p(v)
            if bag == 2:
                v = v * idf[cols[r]]
                total += v * v
            elif bag == 3:
                total += v
            data[r] = v
        if bag == 2:
            total = np.sqrt(total)
        if (bag == 2 or bag == 3) and total > 0:
            for r in range(indptr[i], indptr[i + 1]):
                data[r] = data[r] / total
    return indptr, data
