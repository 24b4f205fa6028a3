"""Early stopping of the latent-class embedder on a held-out nearest-neighbour rate.

A representation of latent classes is used by finding a point's nearest
neighbours or by a linear model on top; the held-out NCE loss, an average over
all pairs and negatives, is a poor guide to either: it can bottom out early and
rise while the share of held-out points whose nearest training point is of their
own class keeps rising (the measurement is in benchmarks/README.md, "Figures moved
out of the code"). The embedder therefore stops on that share.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from skorch.callbacks import EarlyStopping

from sknce._data import rows_to_tensor

__all__ = ["NeighbourStopping"]

#: Most held-out points (queries) and training points (references) the rate is measured
#: on: a fixed random subset of each, so that an epoch's check costs O(queries x references).
_MAX_QUERIES = 2000
_MAX_REFERENCES = 10000

#: Smallest rise of the smoothed rate that counts as progress: an average creeping up to a
#: rate that has stopped moving is a plateau.
_MIN_RISE = 1e-3

#: Rows encoded at once.
_CHUNK = 4096


class NeighbourStopping(EarlyStopping):
    """Stop when the held-out same-class nearest-neighbour rate has stopped rising.

    At the end of every epoch the held-out points (the validation anchors) and the
    training points are encoded; the rate is the share of held-out points whose
    nearest training point (largest inner product of the unit vectors, i.e.
    cosine) belongs to their class, on at most 2,000 held-out and 10,000 training
    points drawn once per fit. The rate of a few hundred points moves by several
    points from one epoch to the next, so it is smoothed over epochs by an
    exponential moving average, ``m = smoothing * m + (1 - smoothing) * rate``,
    started at ``m = 0``: a lucky rate in the first epochs, when the rate moves
    most, does not set a best that the average of later epochs cannot reach.
    Training stops after ``patience`` epochs in which ``m`` has not risen more
    than 0.001 above its best, not counting the epochs in which every held-out
    point is right (on a small held-out set the rate saturates long before the
    representation stops improving, and it shows no overfitting either); the
    weights kept are those of the epoch of highest ``m``, the later one on a tie.
    The history records the rate as ``valid_nn`` and its average as
    ``valid_nn_smoothed``.

    The starting weights are not a candidate: on a small held-out set the rate
    saturates (every point right) at a start whose classes are not yet apart,
    e.g. the principal-component start on iris, and a later epoch could then
    never beat it.

    Parameters
    ----------
    patience : int, default=30
        Epochs without a rise of the smoothed rate before training stops.
    smoothing : float, default=0.8
        Weight of the past in the moving average (0: the epoch's rate alone).

    Attributes
    ----------
    best_epoch_ : int
        The epoch whose weights are kept.
    """

    def __init__(self, patience: int = 30, smoothing: float = 0.8) -> None:
        super().__init__(
            monitor="valid_nn_smoothed", patience=patience, lower_is_better=False, load_best=True
        )
        self.smoothing = smoothing

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.rows_ = None
        self.smoothed_ = 0.0
        self.best_smoothed_ = self.dynamic_threshold_ = -np.inf
        self.best_model_weights_ = None

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs) -> None:
        if self.rows_ is not None or dataset_valid is None:
            return
        sampler = dataset_valid.sampler
        rng = net.seeds.numpy("monitor")
        queries = _subset(sampler.anchors, _MAX_QUERIES, rng)
        references = _subset(sampler.pool, _MAX_REFERENCES, rng)
        self.rows_ = (queries, references)

    def on_epoch_end(self, net, dataset_valid=None, **kwargs) -> None:
        if dataset_valid is None or self.rows_ is None:
            return  # an epoch without validation (partial_fit)
        rate = self._rate(net, dataset_valid.sampler)
        net.history.record("valid_nn", rate)
        self.smoothed_ = self.smoothing * self.smoothed_ + (1 - self.smoothing) * rate
        net.history.record(self.monitor, self.smoothed_)
        if self.smoothed_ > self.dynamic_threshold_:
            self.dynamic_threshold_ = self.smoothed_ + _MIN_RISE
            self.misses_ = 0
        elif rate < 1.0:  # every held-out point right: no sign of overfitting either
            self.misses_ += 1
        if self.smoothed_ >= self.best_smoothed_:  # a tie moves the kept epoch on
            self.best_smoothed_ = self.smoothed_
            self.best_epoch_ = net.history[-1, "epoch"]
            self.best_model_weights_ = copy.deepcopy(net.module_.state_dict())
        # The history's (and the verbose table's) best: the epoch whose weights are kept.
        net.history.record(f"{self.monitor}_best", self.best_epoch_ == net.history[-1, "epoch"])
        if self.misses_ >= self.patience:
            raise KeyboardInterrupt

    def _rate(self, net, sampler) -> float:
        """The share of the query rows whose nearest reference row is of their class."""
        queries, references = self.rows_
        module = getattr(net.module_, "module", net.module_)  # unwrapped from DDP
        encoder = module.encoder
        was_training = encoder.training
        encoder.eval()
        with torch.no_grad():
            q = _encode(encoder, sampler.X, queries, net.device)
            r = _encode(encoder, sampler.X, references, net.device)
            nearest = (q @ r.T).argmax(dim=1).cpu().numpy()
        encoder.train(was_training)
        codes = sampler.codes
        return float(np.mean(codes[references[nearest]] == codes[queries]))


def _subset(rows: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``rows``, or a sorted random ``size`` of them."""
    if len(rows) <= size:
        return np.asarray(rows)
    return np.sort(rng.choice(rows, size, replace=False))


def _encode(encoder, X, rows: np.ndarray, device) -> torch.Tensor:
    """The unit vectors of ``X[rows]``."""
    return torch.cat(
        [
            encoder(rows_to_tensor(X, rows[start : start + _CHUNK], device))
            for start in range(0, len(rows), _CHUNK)
        ]
    )
