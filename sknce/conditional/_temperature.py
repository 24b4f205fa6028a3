"""The temperature of a fitted classifier, from its held-out log-likelihood (Guo et al., 2017).

A softmax model trained with a margin, a decaying rate and early stopping is rarely
calibrated: its log-probabilities are too flat or too sharp by about a constant
factor. :func:`fit_temperature` finds the factor ``T`` that maximises the held-out
log-likelihood of ``softmax(s / T)``; dividing the label tables by ``T`` folds it
into the model, so ``predict_proba`` and every export of the network use it and the
argmax (the accuracy) is unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["fit_temperature", "tempered_loss"]

#: ``log T`` is searched in ``[-_LOG_RANGE, _LOG_RANGE]``.
_LOG_RANGE = 3.0
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
#: Steps of the search: to float precision for the fitted temperature, to about 1e-3 in
#: ``log T`` for the loss of every epoch.
_ITERATIONS = 48
_COARSE_ITERATIONS = 16


def fit_temperature(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None
) -> float:
    r"""The temperature ``T`` maximising the log-likelihood of ``softmax(logits / T)``.

    With a standard normal prior on :math:`\log T`: the objective is
    :math:`\sum_i w_i \log \mathrm{softmax}(s_i / T)_{y_i} - (\log T)^2 / 2`, so a
    handful of held-out examples cannot push ``T`` to an extreme (with a few
    hundred the prior is negligible). Golden-section search of :math:`\log T` in
    ``[-3, 3]``.

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
        Held-out scores.
    labels : LongTensor of shape (n,)
        Their classes.
    weights : Tensor of shape (n,) or None, default=None
        Weights of the examples (scaled to sum ``n``); ``None``: 1.

    Returns
    -------
    float
        ``T > 0``; 1.0 for no example.
    """
    if logits.shape[0] == 0:
        return 1.0
    return _search(logits, labels, weights, _ITERATIONS)[0]


def tempered_loss(
    logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None
) -> float:
    """The mean negative log-likelihood of ``softmax(logits / T)`` at the temperature
    :func:`fit_temperature` would fit, searched to a coarser tolerance (``log T`` within
    about 1e-3, so the loss within about 1e-6 of its optimum): the held-out loss a
    calibrated model has, cheap enough for every epoch of a fit.

    Parameters
    ----------
    logits, labels, weights
        As for :func:`fit_temperature`.

    Returns
    -------
    float
        The weighted mean negative log-likelihood; 0.0 for no example.
    """
    if logits.shape[0] == 0:
        return 0.0
    return _search(logits, labels, weights, _COARSE_ITERATIONS, np.float32)[1]


def _search(logits, labels, weights, iterations: int, dtype=np.float64) -> tuple[float, float]:
    """``(T, mean negative log-likelihood at T)`` by a golden-section search of ``log T``."""
    # In numpy, on one thread: each of the evaluations is a few passes over an
    # (n, n_classes) block, which torch's thread pool slows down rather than splits.
    logits = torch.as_tensor(logits).detach().cpu().double().numpy()
    rows = np.arange(logits.shape[0])
    # log softmax(b s)_y = b (s_y - max s) - log sum exp(b (s - max s)) for b > 0
    shifted = logits - logits.max(axis=1, keepdims=True)
    at_label = shifted[rows, torch.as_tensor(labels).cpu().numpy()]
    shifted = shifted.astype(dtype, copy=False)
    if weights is None:
        w = np.ones(len(rows))
    else:
        w = torch.as_tensor(weights).detach().cpu().double().numpy()
        w = w * (len(rows) / w.sum())

    def log_likelihood(log_t: float) -> float:
        beta = math.exp(-log_t)
        log_norm = np.log(np.exp(shifted * dtype(beta)).sum(axis=1, dtype=np.float64))
        return float(w @ (beta * at_label - log_norm))

    def objective(log_t: float) -> float:
        return log_likelihood(log_t) - log_t * log_t / 2.0

    low, high = -_LOG_RANGE, _LOG_RANGE
    left, right = high - _GOLDEN * (high - low), low + _GOLDEN * (high - low)
    f_left, f_right = objective(left), objective(right)
    for _ in range(iterations):
        if f_left >= f_right:
            high, right, f_right = right, left, f_left
            left = high - _GOLDEN * (high - low)
            f_left = objective(left)
        else:
            low, left, f_left = left, right, f_right
            right = low + _GOLDEN * (high - low)
            f_right = objective(right)
    log_t = (low + high) / 2.0
    return math.exp(log_t), -log_likelihood(log_t) / len(rows)
