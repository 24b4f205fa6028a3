"""A screening variant of the linear softmax kernel (issue 29's few-rows screens).

:func:`sgd_linear_softmax_ova` is :func:`sknce.conditional._kernels.sgd_linear_softmax`
with a one-vs-all term added to each example's margin softmax loss, over the
example's label ``y`` and its ``top`` highest-scoring other classes ``C`` (read
before the update, on the raw scores ``z``, without the margin), ``weight`` times:

- ``kind=0`` (binary logistic, as ``LogisticRegression``'s one-vs-rest):
  ``softplus(-z_y) + sum_{k in C} softplus(z_k)``;
- ``kind=1`` (squared hinge, as ``LinearSVC``'s):
  ``max(0, 1 - z_y)^2 + sum_{k in C} max(0, 1 + z_k)^2``;
- ``kind=2`` (pairwise logistic against each competitor, shift-free):
  ``sum_{k in C} softplus(z_k - z_y)``.

``screen_fewrows.py --ova-kind`` patches it in; ``sknce`` is not edited.
"""

from __future__ import annotations

import math

import numpy as np

from sknce._jit import njit


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def _ova_term(raw: float, positive: bool, kind: int) -> tuple[float, float]:
    """The one-vs-all loss of one raw score and its derivative in the score."""
    sign = -1.0 if positive else 1.0
    s = sign * raw
    if kind == 0:
        e = math.exp(-abs(s))
        sigmoid = 1.0 / (1.0 + e) if s >= 0.0 else e / (1.0 + e)
        return max(s, 0.0) + math.log1p(e), sign * sigmoid
    gap = max(0.0, 1.0 + s)
    return gap * gap, sign * 2.0 * gap


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_linear_softmax_ova(
    w_in, bias, w_sum, b_sum, indptr, indices, data, labels, weights,
    lo, hi, lr, margin, eps, kind, ova_weight, top,
):  # fmt: skip
    """One step per example of the margin softmax plus ``ova_weight`` times the one-vs-all
    term of ``kind`` over the label and the ``top`` best other classes; the summed loss."""
    n_classes = w_in.shape[1]
    adagrad = w_sum.shape[0] > 0
    has_bias = bias.shape[0] > 0
    z = np.zeros_like(w_in[0])
    typed = np.zeros_like(w_in[0, :1])
    rivals = np.empty(max(top, 1), dtype=np.int64)
    rival_scores = np.empty(max(top, 1), dtype=np.float64)
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
        own = float(z[label])
        # the top other classes by raw score, best first
        for t in range(top):
            rivals[t], rival_scores[t] = -1, -np.inf
        for k in range(n_classes if top > 0 else 0):
            if k == label or z[k] <= rival_scores[top - 1]:
                continue
            t = top - 1
            while t > 0 and z[k] > rival_scores[t - 1]:
                rivals[t], rival_scores[t] = rivals[t - 1], rival_scores[t - 1]
                t -= 1
            rivals[t], rival_scores[t] = k, z[k]
        z[label] -= margin
        target = z[label]
        best = z[0]
        for k in range(1, n_classes):
            best = max(best, z[k])
        norm = 0.0
        for k in range(n_classes):
            z[k] = math.exp(z[k] - best)
            norm += z[k]
        weight = weights[i] if weights.shape[0] > 0 else 1.0
        loss = best + math.log(norm) - target
        for k in range(n_classes):
            typed[0] = weight * z[k] / norm
            z[k] = typed[0]
        z[label] -= weight
        if kind < 2:
            term, slope = _ova_term(own, True, kind)
            loss += ova_weight * term
            z[label] += weight * ova_weight * slope
        for t in range(top):
            if rivals[t] < 0:
                continue
            if kind < 2:
                term, slope = _ova_term(rival_scores[t], False, kind)
            else:
                term, slope = _ova_term(rival_scores[t] - own, False, 0)
                z[label] -= weight * ova_weight * slope
            loss += ova_weight * term
            z[rivals[t]] += weight * ova_weight * slope
        total_loss += weight * loss
        squared = 0.0
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
