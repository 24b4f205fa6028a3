"""sknce: noise-contrastive estimation as scikit-learn estimators.

The estimators are imported lazily so that ``import sknce`` stays cheap; torch
loads on first use of an estimator.
"""

from __future__ import annotations

import importlib

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


def __getattr__(name: str):
    if name in _ESTIMATORS:
        return getattr(importlib.import_module(_ESTIMATORS[name]), name)
    raise AttributeError(f"module 'sknce' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
