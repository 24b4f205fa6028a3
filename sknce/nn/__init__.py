"""Torch modules of sknce: generic building blocks here, family scorers beside them.

Estimators import modules from this package; nothing in it knows about
scikit-learn or skorch.
"""

from sknce.nn._mlp import MLP, InputLinear

__all__ = ["MLP", "InputLinear"]
from sknce.nn._conditional import *  # noqa: E402, F403 (conditional NCE scorers)
from sknce.nn._contrastive import *  # noqa: E402, F403 (latent-class NCE encoder and loss)
from sknce.nn._documents import *  # noqa: E402, F403 (document-pair scorers)
from sknce.nn._words import *  # noqa: E402, F403 (skip-gram discriminator and generator)
