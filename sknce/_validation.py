"""Input checks shared by the estimator families (no estimator logic).

Label arrays (class or group ids) are encoded by sorting them; a mix of types
cannot be sorted, and the error says how to fix it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_sortable_labels"]


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
    try:
        np.unique(y)
    except TypeError:
        kinds = sorted({type(v).__name__ for v in y.ravel()})
        raise TypeError(
            f"{name} mixes labels of types {kinds}, which cannot be sorted; give every "
            f"sample a label of one type (all numbers or all strings), e.g. {name}.astype(str)."
        ) from None
    return y
