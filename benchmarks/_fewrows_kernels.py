"""A screening variant of the linear softmax kernel (issue 29's few-rows screens).

:func:`sgd_linear_softmax_ova` is :func:`sknce.conditional._kernels.sgd_linear_softmax`
(its scores, gradient and update: the same inlined helpers) with a one-vs-all term
added to each example's margin softmax loss, over the example's label ``y`` and its
``top`` highest-scoring other classes ``C`` (read before the update, on the raw scores
``z``, without the margin), ``weight`` times:

- ``kind=0`` (binary logistic, as ``LogisticRegression``'s one-vs-rest):
  ``softplus(-z_y) + sum_{k in C} softplus(z_k)``;
- ``kind=1`` (squared hinge, as ``LinearSVC``'s):
  ``max(0, 1 - z_y)^2 + sum_{k in C} max(0, 1 + z_k)^2``;
- ``kind=2`` (pairwise logistic against each competitor, shift-free):
  ``sum_{k in C} softplus(z_k - z_y)``.

``screen_fewrows.py --ova-kind`` patches it in; ``sknce`` is not edited. With
``kind=0, top=1`` its updates are those of the kernel's own ``rival`` term, to the bit.
"""

from __future__ import annotations

import math

import numpy as np

from sknce._jit import njit
from sknce.conditional._kernels import (
    _linear_scores,
    _linear_update,
    _margin_softmax_gradient,
)


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
    lo, hi, lr, margin, eps, kind, ova_weight, top, offset=0.0,
):  # fmt: skip
    """One step per example of the margin softmax plus ``ova_weight`` times the one-vs-all
    term of ``kind`` over the label and the ``top`` best other classes; the summed loss.
    ``offset``: the logistic and hinge terms read the scores less ``offset`` (their
    threshold between label and rival moved from 0 to ``offset``)."""
    n_classes = w_in.shape[1]
    z = np.zeros_like(w_in[0])
    typed = np.zeros_like(w_in[0, :1])
    rivals = np.empty(max(top, 1), dtype=np.int64)
    rival_scores = np.empty(max(top, 1), dtype=np.float64)
    total_loss = 0.0
    for i in range(lo, hi):
        label, weight = labels[i], weights[i] if weights.shape[0] > 0 else 1.0
        _linear_scores(w_in, bias, indices, data, indptr[i], indptr[i + 1], z, typed)
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
        loss = _margin_softmax_gradient(z, label, margin, weight, typed)
        if kind < 2:
            term, slope = _ova_term(own - offset, True, kind)
            loss += ova_weight * term
            z[label] += weight * ova_weight * slope
        for t in range(top):
            if rivals[t] < 0:
                continue
            if kind < 2:
                term, slope = _ova_term(rival_scores[t] - offset, False, kind)
            else:
                term, slope = _ova_term(rival_scores[t] - own, False, 0)
                z[label] -= weight * ova_weight * slope
            loss += ova_weight * term
            z[rivals[t]] += weight * ova_weight * slope
        total_loss += weight * loss
        lo_i, hi_i = indptr[i], indptr[i + 1]
        _linear_update(w_in, bias, w_sum, b_sum, indices, data, lo_i, hi_i, z, lr, eps, typed)
    return total_loss
