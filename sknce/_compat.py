"""The private scikit-learn helpers sknce relies on, imported in one place.

scikit-learn moves private helpers between releases; importing them here keeps
every estimator file free of version juggling.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = [
    "HasMethods",
    "Interval",
    "Options",
    "StrOptions",
    "_fit_context",
    "check_is_fitted",
    "validate_data",
]
