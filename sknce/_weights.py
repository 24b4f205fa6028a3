"""Per-example weights of a fit: ``fit(X, y, sample_weight=...)`` and ``class_weight``.

The weights are validated as scikit-learn does, multiplied by the class weights, and
scaled to mean 1 over the training examples, so that a weighted batch loss (the
objectives of :mod:`sknce.losses` divide the weighted sum by the batch size) keeps the
scale of the unweighted one: the learning rate means the same, and weights that sum to 1
(:class:`~sklearn.ensemble.AdaBoostClassifier`'s) train as well as counts. A sampler is
wrapped by :class:`WeightedSampler`, which puts each batch's weights in its
``targets.sample_weight``.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.class_weight import compute_sample_weight

from sknce._compat import _check_sample_weight
from sknce._data import Batch, to_device

__all__ = ["WeightedSampler", "row_weights", "unit_mean"]


def row_weights(sample_weight, X, y=None, class_weight=None) -> np.ndarray | None:
    """The weights of the rows of a fit's ``X``: validated, times the class weights.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
        The user's weights: finite and non-negative (scikit-learn's checks).
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The examples (for their number).
    y : array-like of shape (n_samples,) or None, default=None
        The labels, for ``class_weight``.
    class_weight : dict, "balanced" or None, default=None
        Class weights multiplying the sample weights, as in scikit-learn's classifiers.

    Returns
    -------
    ndarray of shape (n_samples,), float64, or None
        ``None`` when neither weights nor class weights are given.
    """
    if sample_weight is None and class_weight is None:
        return None
    weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if class_weight is not None:
        weights = weights * compute_sample_weight(class_weight, y)
    return weights


def unit_mean(weights: np.ndarray) -> np.ndarray | None:
    """``weights`` scaled to mean 1, as float32; ``None`` when they are all equal.

    Equal weights are the unweighted objective, to the bit.
    """
    total = weights.sum()
    if not total > 0:
        raise ValueError(
            "sample_weight (times class_weight) is zero for every example: nothing to fit. "
            "Give some examples a positive weight."
        )
    if np.all(weights == weights[0]):
        return None
    return (weights * (len(weights) / total)).astype(np.float32)


class WeightedSampler:
    """A sampler whose batches carry their examples' weights (``targets.sample_weight``).

    The rows a sampler receives index its examples, or its ``anchors`` (the latent-class
    sampler), whose weights are those of the points. Every other attribute is the
    wrapped sampler's.

    Parameters
    ----------
    sampler : callable
        ``sampler(rows, rng) -> Batch``.
    weights : ndarray of shape (n_points,)
        One weight per row of the fit's data.
    """

    def __init__(self, sampler, weights: np.ndarray) -> None:
        self.sampler = sampler
        self.weights = torch.as_tensor(weights)

    def __len__(self) -> int:
        return len(self.sampler)

    def __getattr__(self, name: str):
        if name == "sampler":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.sampler, name)

    def restricted(self, *args, **kwargs) -> WeightedSampler:
        """The wrapped sampler's ``restricted``, weighted alike."""
        return WeightedSampler(self.sampler.restricted(*args, **kwargs), self.weights.numpy())

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        batch = self.sampler(rows, rng)
        rows = np.asarray(rows)
        points = self.sampler.anchors[rows] if hasattr(self.sampler, "anchors") else rows
        weight = self.weights[torch.as_tensor(points, dtype=torch.long)]
        weight = to_device(weight, next(iter(batch.inputs.values())).device)
        return Batch(batch.inputs, batch.targets.replace(sample_weight=weight), size=batch.size)
