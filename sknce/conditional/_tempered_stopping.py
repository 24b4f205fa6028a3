"""Early stopping of a calibrated classifier, its start judged at a fitted temperature."""

from __future__ import annotations

import math

import torch

from sknce._callbacks import ChanceAwareEarlyStopping
from sknce.conditional._temperature import tempered_loss

__all__ = ["TemperedEarlyStopping"]


class TemperedEarlyStopping(ChanceAwareEarlyStopping):
    """:class:`~sknce._callbacks.ChanceAwareEarlyStopping` whose check against the
    start reads the held-out loss at a fitted temperature.

    PROTOTYPE: ``scope="start"``: the epochs compete on the raw held-out loss, an epoch
    beats the start on the tempered one; ``scope="all"``: everything on the tempered one.
    """

    scope = "start"

    def __init__(self, **kwargs) -> None:
        if self.scope == "all":
            kwargs.setdefault("monitor", "valid_tempered_loss")
        super().__init__(**kwargs)

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.initial_tempered_loss_ = None

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs) -> None:
        self.scores_: list = []
        super().on_epoch_begin(net, dataset_valid=dataset_valid, **kwargs)

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs) -> None:
        if not training and y_pred is not None:
            _, targets = batch
            self.scores_.append((y_pred["logits"].detach(), targets))

    def on_epoch_end(self, net, **kwargs) -> None:
        if self.scores_:
            loss = _loss(self.scores_)
            net.history.record("valid_tempered_loss", loss)
            self.scores_ = []
            start = self.initial_tempered_loss_
            if self.scope == "start" and self.start_is_best_ and start is not None:
                beats = loss < start - self.threshold * abs(start)
                self.dynamic_threshold_ = math.inf if beats else -math.inf
        super().on_epoch_end(net, **kwargs)

    def _initial_loss(self, net, dataset_valid) -> float:
        net._set_training(False)
        rng = net.epoch_rng(False)
        with torch.no_grad():
            scores = [
                (net.infer(inputs)["logits"], targets)
                for inputs, targets in dataset_valid.batches(net.batch_size, rng, shuffle=False)
            ]
        self.initial_tempered_loss_ = _loss(scores)
        if self.scope == "all":
            return self.initial_tempered_loss_
        return super()._initial_loss(net, dataset_valid)


def _loss(scores: list) -> float:
    """The tempered mean negative log-likelihood of ``(logits, targets)`` batches."""
    weights = [targets.sample_weight for _, targets in scores]
    return tempered_loss(
        torch.cat([logits for logits, _ in scores]),
        torch.cat([targets.labels for _, targets in scores]),
        None if weights[0] is None else torch.cat(weights),
    )
