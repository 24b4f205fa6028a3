"""Exceptions raised by sknce."""

from __future__ import annotations

__all__ = ["TrainingDivergedError"]


class TrainingDivergedError(ValueError):
    """A fit diverged: its loss or its parameters became non-finite or exploded.

    Raised during ``fit`` with a message naming what to change (usually a lower
    learning rate). The estimator keeps the fitted state it had before that fit.
    A subclass of :class:`ValueError`, so code catching bad-input errors catches
    it too.
    """
