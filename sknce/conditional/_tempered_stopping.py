"""Early stopping of a calibrated classifier, its start judged at a fitted temperature."""

from __future__ import annotations

import math

import torch

from sknce._callbacks import ChanceAwareEarlyStopping
from sknce.conditional._temperature import tempered_loss

__all__ = ["TemperedEarlyStopping"]


class TemperedEarlyStopping(ChanceAwareEarlyStopping):
    """:class:`~sknce._callbacks.ChanceAwareEarlyStopping` whose check against the start
    reads the held-out loss at a fitted temperature.

    A classifier whose label tables are divided by the temperature of its held-out
    log-likelihood after the fit (:func:`~sknce.conditional._temperature.fit_temperature`)
    is judged by that tempered likelihood. A wide training margin makes the raw scores of
    the first epochs over-confident by a factor the temperature removes, so their raw
    held-out loss can stay above the start's (the label frequencies, already calibrated)
    while their tempered loss is far below it: a fit that learnt would return to the
    start. Here an epoch beats the start when its held-out loss at its own fitted
    temperature is lower than the start's at its own, by the relative ``threshold``;
    once one has, the epochs compete on the monitored raw loss as in the parent (so the
    epoch kept is the parent's wherever the first epoch to beat the start is the same on
    both losses). The tempered losses of the epochs up to the first that beats the start
    are recorded in the history as ``valid_tempered_loss``. The parameters are the
    parent's.

    Attributes
    ----------
    initial_tempered_loss_ : float or None
        The tempered held-out loss of the starting weights (None before the first epoch,
        or without held-out examples).
    """

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.initial_tempered_loss_: float | None = None
        self.scores_: list = []

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs) -> None:
        if not training and self._judges_start():
            _, targets = batch
            self.scores_.append((y_pred["logits"].detach(), targets))

    def on_epoch_end(self, net, **kwargs) -> None:
        if self.scores_:
            loss, self.scores_ = _loss(self.scores_), []
            net.history.record("valid_tempered_loss", loss)
            start = self.initial_tempered_loss_
            beats = loss < start - self.threshold * abs(start)
            # the parent's test against the start, on the tempered losses
            self.dynamic_threshold_ = math.inf if beats else -math.inf
        super().on_epoch_end(net, **kwargs)

    def _judges_start(self) -> bool:
        """Whether the start is still the best: its tempered loss decides."""
        return self.start_is_best_ and self.initial_tempered_loss_ is not None

    def _initial_loss(self, net, dataset_valid) -> float:
        net._set_training(False)
        rng = net.epoch_rng(False)
        with torch.no_grad():
            scores = [
                (net.infer(inputs)["logits"], targets)
                for inputs, targets in dataset_valid.batches(net.batch_size, rng, shuffle=False)
            ]
        self.initial_tempered_loss_ = _loss(scores)
        return super()._initial_loss(net, dataset_valid)


def _loss(scores: list) -> float:
    """The tempered mean negative log-likelihood of ``(logits, targets)`` batches."""
    weights = [targets.sample_weight for _, targets in scores]
    return tempered_loss(
        torch.cat([logits for logits, _ in scores]),
        torch.cat([targets.labels for _, targets in scores]),
        None if weights[0] is None else torch.cat(weights),
    )
