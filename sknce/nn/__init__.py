"""Torch modules of sknce: encoders, and the scorers of each estimator family.

A scorer's ``forward`` receives a batch drawn by its family's sampler and returns
the scores of the batch's positives and negatives; the objectives of
:mod:`sknce.losses` turn them into a loss. Nothing here draws negatives or knows
about scikit-learn or skorch.
"""

import sys
import warnings

from sknce.nn._conditional import (
    BagEncoder,
    BagWeighting,
    LabelScorer,
    LinearLabelScorer,
    TargetEnergy,
)
from sknce.nn._contrastive import LatentClassScorer, SphereEncoder
from sknce.nn._documents import BilinearScorer, LinearSkipEncoder, PairScorer
from sknce.nn._mlp import MLP, DenseInput, InputLinear, output_dim
from sknce.nn._subwords import SubwordSkipGram
from sknce.nn._words import ACESkipGram, SharedCentreGenerator, SkipGram, bag_mean

__all__ = [
    "MLP",
    "ACESkipGram",
    "BagEncoder",
    "BagWeighting",
    "BilinearScorer",
    "DenseInput",
    "InputLinear",
    "LabelScorer",
    "LinearLabelScorer",
    "LatentClassScorer",
    "LinearSkipEncoder",
    "PairScorer",
    "SharedCentreGenerator",
    "SkipGram",
    "SphereEncoder",
    "SubwordSkipGram",
    "TargetEnergy",
    "bag_mean",
    "output_dim",
]


def _asked_by_the_import_system() -> bool:
    """Whether the caller of ``__getattr__`` is ``from sknce.nn import ...``'s own probe.

    For a package, ``from sknce.nn import LazyAdam`` first asks ``hasattr`` inside
    importlib, then fetches the name: without this test one import would warn twice.
    """
    return sys._getframe(2).f_code.co_filename.startswith("<frozen importlib")


def __getattr__(name: str):
    if name == "LazyAdam":
        from sknce.optim import LazyAdam

        if not _asked_by_the_import_system():
            warnings.warn(
                "sknce.nn.LazyAdam moved to sknce.optim.LazyAdam (an optimizer is not a "
                "network module); import it from there. The old path will be removed in "
                "sknce 0.3.",
                FutureWarning,
                stacklevel=2,
            )
        return LazyAdam
    raise AttributeError(f"module 'sknce.nn' has no attribute {name!r}")
