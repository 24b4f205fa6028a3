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

__all__ = [
    "WeightedSampler",
    "check_weighted_examples",
    "row_weights",
    "score_weights",
    "unit_mean",
]


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
        try:
            by_class = compute_sample_weight(class_weight, y)
        except (ValueError, TypeError) as error:
            # scikit-learn names the fault but not the parameter's form that fixes it
            raise type(error)(
                f"class_weight={class_weight!r} does not fit the labels of y ({error}). "
                "Give 'balanced', None, or a dict whose keys are labels of y."
            ) from error
        weights = weights * by_class
    return weights


def unit_mean(weights: np.ndarray) -> np.ndarray | None:
    """``weights`` scaled to mean 1, as float32; ``None`` when they are all equal.

    Computed in float64 on the weights divided by the largest first, so that
    weights near float64's largest value (whose sum overflows) or subnormal ones
    (whose inverse sum overflows) are scaled as any others. Equal weights are the
    unweighted objective, to the bit.
    """
    weights = np.asarray(weights, dtype=np.float64)
    top = weights.max(initial=0.0)
    if not top > 0:
        raise ValueError(
            "sample_weight (times class_weight) is zero for every example: nothing to fit. "
            "Give some examples a positive weight."
        )
    if np.all(weights == weights[0]):
        return None
    scaled = weights / top
    return (scaled * (len(scaled) / scaled.sum())).astype(np.float32)


def score_weights(sample_weight, n_samples: int) -> np.ndarray | None:
    """The weights of a ``score``, divided by the largest (the score is unchanged).

    scikit-learn's metrics sum the weights, which overflows for weights near
    float64's largest value (and gives NaN); checked as a fit checks them.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
    n_samples : int

    Returns
    -------
    ndarray of float64 or None
    """
    if sample_weight is None:
        return None
    weights = _check_sample_weight(
        sample_weight, np.empty((n_samples, 0)), dtype=np.float64, ensure_non_negative=True
    )
    top = weights.max(initial=0.0)
    return weights / top if top > 0 else weights


#: What the error says when weight remains only on rows that make no example.
UNTRAINED = (
    "sample_weight (times class_weight) is positive only on rows that give no training "
    "example: {where}. Every example the fit would train on has weight 0, so it would fit "
    "nothing. Give a positive weight to rows that are trained on."
)


def check_weighted_examples(dataset, held_out: bool = False) -> None:
    """Raise a ValueError if every example of ``dataset`` has weight 0.

    Rows can carry weight and still give no example: a row of a label indicator
    without any label, a point alone in its group (the latent-class embedder),
    or, after the validation split, the rows held out for early stopping.

    Parameters
    ----------
    dataset : dataset of a fit
        Its ``sampler`` (a :class:`WeightedSampler`, else nothing is checked) and
        its ``rows`` (the examples it trains on; all of the sampler's without).
    held_out : bool, default=False
        Whether ``dataset`` is the training part of a validation split.
    """
    sampler = getattr(dataset, "sampler", None)
    if not isinstance(sampler, WeightedSampler) or len(sampler) == 0:
        return
    if sampler.examples_weight(getattr(dataset, "rows", None)) > 0:
        return
    where = (
        "every row of positive weight was held out for early stopping (raise their "
        "number, or set early_stopping=False)"
        if held_out
        else "rows without any label (a label indicator) or points alone in their group"
    )
    raise ValueError(UNTRAINED.format(where=where))


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

    def examples_weight(self, rows: np.ndarray | None = None) -> float:
        """The total weight of the examples ``rows`` (``None``: every example).

        Parameters
        ----------
        rows : int array or None, default=None
            Indices of the sampler's examples.

        Returns
        -------
        float
        """
        if rows is None:
            rows = np.arange(len(self.sampler))
        rows = np.asarray(rows, dtype=np.int64)
        points = self.sampler.anchors[rows] if hasattr(self.sampler, "anchors") else rows
        return float(self.weights.double()[torch.as_tensor(points)].sum())

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
