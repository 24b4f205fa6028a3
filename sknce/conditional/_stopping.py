"""Early stopping of the regressor on its held-out log-likelihood, with a guard for the start."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
from scipy.stats import t as student_t
from skorch.callbacks import EarlyStopping

__all__ = ["LikelihoodStopping"]

#: Smallest gain in mean held-out log-likelihood (nats per example) that counts.
_MIN_GAIN = 1e-4

#: Fewest held-out examples on which the test can let a fit leave its start.
_MIN_TESTED = 10


class LikelihoodStopping(EarlyStopping):
    """Stop when the held-out log-likelihood has not improved for ``patience`` epochs.

    The regressor's density is normalised, so its held-out log-likelihood, the
    quantity it is judged by, can be measured exactly at every epoch. The weights
    the fit starts from are evaluated first (epoch 0); training stops after
    ``patience`` epochs in which the mean log-likelihood has not exceeded its best
    so far by 1e-4 nats. The weights kept are those of the epoch of highest mean
    log-likelihood among the start and, with ``level``, the epochs whose
    per-example gain over the start passes a one-sided paired t-test at ``level``
    on 10 held-out examples or more: a sound start (the base density of
    :class:`~sknce.ConditionalNCERegressor`) is not replaced by a fit to the noise
    of a handful of examples. The history records the mean held-out negative
    log-likelihood as ``valid_nll``.

    With example weights, the means are weighted and the test is on the weighted mean
    gain, with Kish's effective number of examples
    :math:`(\\sum_i w_i)^2 / \\sum_i w_i^2` in place of their number: examples of weight
    0 count in neither.

    Parameters
    ----------
    log_likelihood : callable
        ``log_likelihood(net, dataset_valid) -> (log_likelihoods, weights)``: the
        held-out examples' log-likelihoods under the net's current weights, an array,
        and their weights (an array, or ``None`` for unweighted examples).
    patience : int, default=20
        Epochs without improvement before training stops.
    level : float or None, default=0.95
        Confidence of the test that keeps the best epoch over the start; ``None``:
        no test (a random start).

    Attributes
    ----------
    best_epoch_ : int
        The epoch whose weights are kept (the one before the fit's first: the start).
    """

    def __init__(
        self,
        log_likelihood: Callable[..., np.ndarray],
        patience: int = 20,
        level: float | None = 0.95,
    ) -> None:
        super().__init__(monitor="valid_nll", patience=patience, load_best=True)
        self.log_likelihood = log_likelihood
        self.level = level

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.start_ = None

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs) -> None:
        if self.start_ is not None or dataset_valid is None:
            return
        self.start_, self.weights_ = self.log_likelihood(net, dataset_valid)
        if self.weights_ is not None and not self.weights_.sum() > 0:
            raise ValueError(
                "every example held out for early stopping has sample_weight 0, so the "
                "held-out log-likelihood measures nothing. Give more examples a positive "
                "weight, raise validation_fraction, or set early_stopping=False."
            )
        self.best_mean_ = self.kept_mean_ = self._mean(self.start_)
        self.best_epoch_ = len(net.history) - 1  # the epoch before this fit's first
        self.best_model_weights_ = copy.deepcopy(net.module_.state_dict())

    def on_epoch_end(self, net, dataset_valid=None, **kwargs) -> None:
        if dataset_valid is None:
            return  # an epoch without validation (partial_fit)
        current, _ = self.log_likelihood(net, dataset_valid)
        mean = self._mean(current)
        net.history.record(self.monitor, -mean)
        if mean > self.kept_mean_ and self._beats_start(current):
            self.kept_mean_ = mean
            self.best_epoch_ = net.history[-1, "epoch"]
            self.best_model_weights_ = copy.deepcopy(net.module_.state_dict())
        if mean > self.best_mean_ + _MIN_GAIN:
            self.best_mean_ = mean
            self.misses_ = 0
        else:
            self.misses_ += 1
        if self.misses_ == self.patience:
            raise KeyboardInterrupt

    def _mean(self, values: np.ndarray) -> float:
        """The mean of ``values``, weighted by the held-out examples' weights."""
        if self.weights_ is None:
            return float(np.mean(values))
        return float(np.average(values, weights=self.weights_))

    def _beats_start(self, current: np.ndarray) -> bool:
        if self.level is None:
            return True
        gain = current - self.start_
        w = self.weights_
        n = gain.size if w is None else float(w.sum()) ** 2 / float(np.square(w).sum())
        if n < _MIN_TESTED:
            return False
        mean = self._mean(gain)
        if w is None:
            std = float(np.std(gain, ddof=1))
        else:  # the weighted variance, unbiased for n effective examples
            std = np.sqrt(float(np.average((gain - mean) ** 2, weights=w)) * n / (n - 1))
        margin = student_t.ppf(self.level, n - 1) * std / np.sqrt(n)
        return mean > margin
