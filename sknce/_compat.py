"""The private scikit-learn helpers sknce relies on, imported in one place.

scikit-learn moves private helpers between releases; importing them here keeps
every estimator file free of version juggling.

:func:`validate_data` is scikit-learn's, followed by the check every sknce
estimator needs on numeric input and scikit-learn does not make: values that
float32 arithmetic cannot carry (:func:`check_float32_range`). Every estimator
validates its input through it, in ``fit``, ``partial_fit`` and at inference.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import _check_sample_weight, check_is_fitted
from sklearn.utils.validation import validate_data as _sklearn_validate_data

from sknce._checks import check_not_a_chunk_list, check_not_text, check_sparse_structure

__all__ = [
    "FLOAT32_SAFE",
    "HasMethods",
    "Interval",
    "Options",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "check_float32_range",
    "check_is_fitted",
    "validate_data",
    "validate_params",
]

#: Largest input magnitude sknce accepts: the square root of float32's largest value
#: (about 1.8e19). Networks compute in float32 and square their inputs' scale
#: (LayerNorm's variance, distances), so larger values overflow to inf and NaN.
FLOAT32_SAFE = float(np.sqrt(np.finfo(np.float32).max))


def check_float32_range(X, name: str = "X") -> None:
    """Raise a ValueError naming the fix when ``X`` holds values float32 cannot carry.

    Parameters
    ----------
    X : ndarray or sparse matrix
        Validated numeric input (other inputs are not checked).
    name : str, default="X"
        The input's name in the message.

    Raises
    ------
    ValueError
        If a value is NaN or infinite, or larger in magnitude than
        :data:`FLOAT32_SAFE`.
    """
    data = X.data if sp.issparse(X) else X
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "fc" or not data.size:
        return
    # min and max: two passes without the copy np.abs would make.
    low, high = float(np.min(data)), float(np.max(data))
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(
            f"Input {name} contains NaN or infinity; sknce needs finite values. Remove or "
            "impute them (e.g. with sklearn.impute.SimpleImputer)."
        )
    largest = max(abs(low), abs(high))
    if largest > FLOAT32_SAFE:
        raise ValueError(
            f"Input {name} has values as large as {largest:.3g} in magnitude; sknce's "
            f"networks compute in float32, where values beyond {FLOAT32_SAFE:.2g} overflow "
            "(their squares exceed float32's range, about 3.4e38) and give NaN. Scale "
            f"{name}, e.g. with sklearn.preprocessing.StandardScaler (MaxAbsScaler for "
            "sparse input)."
        )


def validate_data(_estimator, /, X="no_validation", y="no_validation", **kwargs):
    """scikit-learn's ``validate_data``, then :func:`check_float32_range` on ``X``.

    Before scikit-learn's checks, ``X`` is checked not to be raw text, a list of
    chunks, or a sparse matrix with broken index arrays (:mod:`sknce._checks`):
    these would otherwise fail inside numpy or scipy, naming neither cause nor fix.

    Parameters
    ----------
    _estimator : estimator
    X, y, **kwargs
        As :func:`sklearn.utils.validation.validate_data`.

    Returns
    -------
    The validated ``X``, ``y``, or ``(X, y)``, as scikit-learn returns them.
    """
    no_X = isinstance(X, str) and X == "no_validation"
    if not no_X:
        check_not_text(X)
        check_not_a_chunk_list(X, streams=getattr(_estimator, "_fits_streams", True))
        check_sparse_structure(X)
    out = _sklearn_validate_data(_estimator, X, y, **kwargs)
    if not no_X and not kwargs.get("skip_check_array", False):
        check_float32_range(out[0] if isinstance(out, tuple) else out)
    return out
