"""Conditional models learned by noise-contrastive estimation (Ma & Collins, 2018).

:class:`ConditionalNCEClassifier` models :math:`p(y \\mid x)` over large label sets;
:class:`ConditionalNCERegressor` models the density of a continuous target.
"""

from sknce.conditional._classifier import ConditionalNCEClassifier
from sknce.conditional._regressor import ConditionalNCERegressor

__all__ = ["ConditionalNCEClassifier", "ConditionalNCERegressor"]
