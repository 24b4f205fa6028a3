"""Density estimation by binary NCE against a Gaussian fitted to the data.

The user guide's example of a new estimator ("Adding an estimator" in
docs/user_guide/core.rst shows this file): tests/test_contributor.py copies it to
``sknce/density.py`` of a copy of the repository, adds the other three pieces the
guide names, and runs the registry-driven tests on it.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
import torch
from sklearn.base import DensityMixin

from sknce._base import BaseNCE, common_params
from sknce._checks import APPLIED, Fixed
from sknce._compat import Interval, check_is_fitted, validate_data
from sknce._data import Batch, SampledDataset, Targets, rows_to_tensor
from sknce._random import torch_generator
from sknce.losses import BinaryNCELoss
from sknce.nn import MLP
from sknce.nn._inference import InferenceModule

__all__ = ["NCEDensityEstimator"]


class GaussianNoisePairs:
    """The sampler: each example against ``k`` draws of a diagonal Gaussian."""

    def __init__(self, X, mean, scale, k):
        self.X, self.k = X, k
        self.mean = torch.as_tensor(mean, dtype=torch.float32)
        self.scale = torch.as_tensor(scale, dtype=torch.float32)

    def __len__(self):
        return self.X.shape[0]

    def log_noise(self, x):
        z = (x - self.mean) / self.scale
        log_norm = torch.log(self.scale).sum() + 0.5 * x.shape[-1] * math.log(2 * math.pi)
        return -0.5 * (z**2).sum(-1) - log_norm

    def __call__(self, rows, rng):
        x = rows_to_tensor(self.X, rows)
        eps = torch.randn((len(rows), self.k, x.shape[1]), generator=torch_generator(rng))
        noise = self.mean + self.scale * eps
        targets = Targets(pos_log_noise=self.log_noise(x), neg_log_noise=self.log_noise(noise))
        return Batch({"x": x, "noise": noise}, targets, size=len(rows))


class EnergyScorer(torch.nn.Module):
    """The scorer: an MLP's ``s(x)``, the log-density up to the objective's normaliser."""

    def __init__(self, n_features, hidden_layer_sizes):
        super().__init__()
        self.energy = MLP(n_features, hidden_layer_sizes, 1)

    def log_density(self, x):
        return self.energy(x)[..., 0]

    def forward(self, x, noise):
        return {"pos": self.log_density(x), "neg": self.log_density(noise)}


class LogDensity(torch.nn.Module):
    """``score_samples`` in torch: the scorer's ``s(x)`` minus the learned normaliser."""

    def __init__(self, scorer, objective):
        super().__init__()
        self.scorer, self.objective = scorer, objective

    def forward(self, x):
        return self.scorer.log_density(x) - self.objective.gamma


class NCEDensityEstimator(DensityMixin, BaseNCE):
    """Density of dense data by binary NCE against a Gaussian fitted to it.

    Parameters
    ----------
    n_negatives : int, default=8
        Draws of the Gaussian per example.
    hidden_layer_sizes : tuple of int, default=(16,)
        Widths of the hidden layers of the log-density's network.
    max_epochs, batch_size, lr, optimizer, optimizer_kwargs, callbacks, warm_start, \
device, random_state, verbose, early_stopping, validation_fraction, patience, accelerator
        The training parameters every sknce estimator shares.

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
        The noise Gaussian: the data's (weighted) mean and standard deviation.
    """

    _parameter_constraints = {
        **BaseNCE._parameter_constraints,
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "hidden_layer_sizes": [tuple],
    }

    # what a continued fit (warm_start, partial_fit) does with a changed parameter
    _param_roles = {
        **BaseNCE._param_roles,
        "n_negatives": APPLIED,  # every fit makes its sampler anew
        "hidden_layer_sizes": Fixed("built the network's layers"),
    }

    # the methods sknce.export exports, each built by _inference_module
    _exported_methods = ("score_samples",)

    def __init__(
        self,
        *,
        n_negatives: int = 8,
        hidden_layer_sizes: tuple[int, ...] = (16,),
        max_epochs: int = 20,
        batch_size: int = 64,
        lr: float = 1e-2,
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 5,
        accelerator=None,
        n_jobs: int | None = None,
    ) -> None:
        self.n_negatives = n_negatives
        self.hidden_layer_sizes = hidden_layer_sizes
        super().__init__(**common_params(locals()))

    # --- the hooks of the fit skeleton ---
    def _validate_fit_data(self, X, y, *, reset, partial):
        # validated as given (float64 or float32): values beyond float32's range are
        # named here, before the cast to the network's float32
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=reset)
        return X.astype(np.float32)

    def _with_weights(self, data, weights):
        # the batches carry the weights; the Gaussian, fitted before the network, needs them too
        return data, weights

    def _start_fit(self, data, seeds):
        X, weights = data
        self.mean_ = np.average(X, axis=0, weights=weights)
        variance = np.average((X - self.mean_) ** 2, axis=0, weights=weights)
        self.scale_ = np.sqrt(variance) + 1e-3
        return data

    def _make_dataset(self, data, device):
        X, _ = data
        return SampledDataset(GaussianNoisePairs(X, self.mean_, self.scale_, self.n_negatives))

    def _make_module(self, data, seeds):
        return EnergyScorer(self.n_features_in_, self._check_hidden())

    def _make_objective(self):
        return BinaryNCELoss()

    def _inference_module(self, method):
        return InferenceModule(
            LogDensity(self.net_.module_, self.net_.criterion_), self.n_features_in_
        )

    # --- its own methods ---
    def score_samples(self, X) -> np.ndarray:
        """Log-density of each row of ``X`` (normalised by the learned ``gamma``)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        with torch.no_grad():
            x = torch.as_tensor(X, dtype=torch.float32)
            out = LogDensity(self.net_.module_, self.net_.criterion_)(x)
        return self._finite_output(out, "score_samples").numpy().astype(np.float64)

    def score(self, X, y=None) -> float:
        """Mean log-density of the rows of ``X``."""
        return float(np.mean(self.score_samples(X)))
