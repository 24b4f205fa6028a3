"""Warnings attributed to the user's line, however deep inside a fit they are raised."""

from __future__ import annotations

import os
import sys
import warnings

import sklearn
import skorch
import torch

import sknce

# The packages a fit passes through between the user's call and the warning.
_INTERNAL = tuple(
    os.path.dirname(module.__file__) + os.sep for module in (sknce, sklearn, skorch, torch)
)


def caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside sknce, scikit-learn, skorch and torch.

    A fixed ``stacklevel`` breaks whenever the call path of a fit changes; this one
    names the user's line (the one calling ``fit``, or a function of sknce) on any path.
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame = frame.f_back
        level += 1
    return level


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the caller outside sknce (:func:`caller_stacklevel`)."""
    warnings.warn(message, category, stacklevel=caller_stacklevel())
