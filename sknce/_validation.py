"""Input checks shared by the estimator families (no estimator logic).

Label arrays (class or group ids) are encoded by sorting them; a mix of types
cannot be sorted, and the error says how to fix it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["all_strings", "check_no_missing_labels", "check_sortable_labels", "encode_labels"]


def check_sortable_labels(y, name: str = "y") -> np.ndarray:
    """``y`` as an array of labels that can be sorted, or a TypeError naming the mix.

    Labels (class or group ids) are encoded by sorting them; a mix of types (numbers
    and strings, or a ``None`` among numbers) cannot be sorted.

    Parameters
    ----------
    y : array-like
        Labels.
    name : str, default="y"
        The input's name in the message.

    Returns
    -------
    ndarray
    """
    y = np.asarray(y)
    if all_strings(y):
        return y
    check_no_missing_labels(y, name)
    try:
        np.unique(y)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in y.ravel()})
        raise TypeError(
            f"{name} mixes labels of types {kinds}, which cannot be sorted; give every "
            f"sample a label of one type (all numbers or all strings), e.g. {name}.astype(str)."
        ) from None
    return y


def check_no_missing_labels(y, name: str = "y") -> None:
    """Raise a ValueError naming the samples whose label is ``None`` (or a NaN object).

    A missing label cannot be a class (sorting fails, and scikit-learn calls such
    a ``y`` of "unknown" type): the error says which samples and how to drop them.

    Parameters
    ----------
    y, name
        As in :func:`check_sortable_labels`.
    """
    try:
        y = np.asarray(y)
    except ValueError:  # ragged lists (label sets): what they are is said elsewhere
        return
    if y.dtype != object:
        return
    missing = [i for i, v in enumerate(y.ravel()) if _missing(v)]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"{name} has no label (None or NaN) for {len(missing)} sample(s), at {shown}: "
            "every sample needs one. Drop the unlabelled samples (e.g. keep = "
            f"[v is not None for v in {name}]; X[keep], {name}[keep]) or give them a label."
        )


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def all_strings(y: np.ndarray) -> bool:
    """Whether ``y`` is a 1-D object array of strings (labels as Python strings).

    Parameters
    ----------
    y : object
        Labels; anything but a 1-D object array of strings gives False.

    Returns
    -------
    bool
    """
    return (
        isinstance(y, np.ndarray)
        and y.ndim == 1
        and y.dtype == object
        and all(isinstance(v, str) for v in y)
    )


def encode_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sorted distinct labels of ``y``, each sample's index among them, their counts.

    The result of ``np.unique(y, return_inverse=True, return_counts=True)``. For an
    object array of strings it is computed by hashing the samples and sorting only
    the distinct labels: numpy sorts an object array by comparing Python objects one
    pair at a time, which at 10^5 samples and more takes longer than a fit's epoch.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Sortable labels (see :func:`check_sortable_labels`).

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    codes : int64 ndarray of shape (n_samples,)
        ``classes[codes]`` is ``y``.
    counts : int64 ndarray of shape (n_classes,)
    """
    if not all_strings(y):
        classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
        return classes, codes.reshape(-1).astype(np.int64, copy=False), counts
    index: dict[str, int] = {}
    first_seen = np.fromiter((index.setdefault(v, len(index)) for v in y), np.int64, y.shape[0])
    distinct = np.empty(len(index), dtype=object)
    distinct[:] = list(index)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    counts = np.bincount(first_seen, minlength=len(index))[order]
    return distinct[order], rank[first_seen], counts
