"""Torch modules of sknce: encoders, and the scorers of each estimator family.

A scorer's ``forward`` receives a batch drawn by its family's sampler and returns
the scores of the batch's positives and negatives; the objectives of
:mod:`sknce.losses` turn them into a loss. Nothing here draws negatives or knows
about scikit-learn or skorch.
"""

import warnings

from sknce.nn._conditional import LabelScorer, TargetEnergy
from sknce.nn._contrastive import LatentClassScorer, SphereEncoder
from sknce.nn._documents import BilinearScorer, LinearSkipEncoder, PairScorer
from sknce.nn._mlp import MLP, DenseInput, InputLinear, output_dim
from sknce.nn._words import ACESkipGram, SharedCentreGenerator, SkipGram, bag_mean

__all__ = [
    "MLP",
    "ACESkipGram",
    "BilinearScorer",
    "DenseInput",
    "InputLinear",
    "LabelScorer",
    "LatentClassScorer",
    "LinearSkipEncoder",
    "PairScorer",
    "SharedCentreGenerator",
    "SkipGram",
    "SphereEncoder",
    "TargetEnergy",
    "bag_mean",
    "output_dim",
]


def __getattr__(name: str):
    if name == "LazyAdam":
        warnings.warn(
            "sknce.nn.LazyAdam moved to sknce.optim.LazyAdam (an optimizer is not a network "
            "module); import it from there. The old path will be removed in sknce 0.3.",
            FutureWarning,
            stacklevel=2,
        )
        from sknce.optim import LazyAdam

        return LazyAdam
    raise AttributeError(f"module 'sknce.nn' has no attribute {name!r}")
