"""sknce: noise-contrastive estimation as scikit-learn estimators.

The estimators are imported lazily so that ``import sknce`` stays cheap; torch
loads on first use of an estimator.
"""

from __future__ import annotations

from sknce._lazy import lazy_names

__version__ = "0.1.0"  # the one place the version is written: pyproject.toml reads it

_ESTIMATORS = {
    "LandmarkNCEEmbedder": "sknce.documents",
    "DirectNCEEmbedder": "sknce.documents",
    "ACEWord2Vec": "sknce.words",
    "ConditionalNCEClassifier": "sknce.conditional",
    "ConditionalNCERegressor": "sknce.conditional",
    "LatentClassNCEEmbedder": "sknce.contrastive",
}

__all__ = [*_ESTIMATORS, "__version__"]


__getattr__, __dir__ = lazy_names(__name__, _ESTIMATORS, __all__)
