"""Input checks shared by the analysis functions of :mod:`sknce.contrastive`."""

from __future__ import annotations

import numpy as np

__all__ = ["check_class_probs"]


def check_class_probs(class_probs, *, name: str = "class_probs") -> np.ndarray:
    """Return ``class_probs`` as a float64 probability vector over at least 2 classes.

    Raises
    ------
    ValueError
        If it is not 1-d, has fewer than 2 entries, has negative or non-finite
        entries, or does not sum to 1 (within 1e-6).
    """
    probs = np.asarray(class_probs, dtype=np.float64)
    if probs.ndim != 1 or probs.shape[0] < 2:
        raise ValueError(
            f"{name} must be a 1-d array of the probabilities of at least 2 classes; got "
            f"shape {probs.shape}."
        )
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError(f"{name} must hold finite, non-negative probabilities; got {probs}.")
    if abs(probs.sum() - 1.0) > 1e-6:
        raise ValueError(
            f"{name} must sum to 1, got {probs.sum():.6g}. Divide the class weights by their sum."
        )
    return probs / probs.sum()
