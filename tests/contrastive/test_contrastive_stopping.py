"""LatentClassNCEEmbedder's early stopping on the held-out same-class nearest-neighbour rate."""

from __future__ import annotations

import numpy as np
import pytest

from sknce import LatentClassNCEEmbedder
from sknce.contrastive._sampler import LatentClassDataset, LatentClassSampler
from sknce.contrastive._stopping import NeighbourStopping
from sknce.datasets import make_latent_classes


def _data():
    data = make_latent_classes(300, n_classes=6, n_features=5, noise=1.5, random_state=0)
    return data.X, data.y


def test_the_kept_weights_are_those_of_the_best_smoothed_held_out_neighbour_rate():
    X, y = _data()
    emb = LatentClassNCEEmbedder(random_state=0).fit(X, y)
    rates = np.array([row["valid_nn"] for row in emb.history_])
    smoothed = np.array([row["valid_nn_smoothed"] for row in emb.history_])
    # An exponential moving average of the epochs' rates from 0, weight 0.8 on the past.
    expected = [0.2 * rates[0]]
    for rate in rates[1:]:
        expected.append(0.8 * expected[-1] + 0.2 * rate)
    np.testing.assert_allclose(smoothed, expected)
    best = len(smoothed) - 1 - int(np.argmax(smoothed[::-1]))  # the later one on a tie
    stopper = dict(emb.net_.callbacks_)["early_stopping"]
    assert stopper.best_epoch_ == emb.history_[best]["epoch"]
    # The history (and so the verbose table) marks that epoch as the best when it ends.
    assert emb.history_[best]["valid_nn_smoothed_best"]
    assert not any(row["valid_nn_smoothed_best"] for row in emb.history_[best + 1 :])
    # The rate of the fitted embedder, recomputed from the same hold-out: the kept epoch's.
    sampler = LatentClassSampler(emb._scale(X.astype(np.float32)), y, 16, "batch", False, "cpu")
    _, valid = LatentClassDataset(sampler).split(0.1, emb.net_.seeds.numpy("split"))
    Z = emb.transform(X)
    held, pool = valid.sampler.anchors, valid.sampler.pool
    nearest = pool[np.argmax(Z[held] @ Z[pool].T, axis=1)]
    assert np.mean(y[nearest] == y[held]) == pytest.approx(rates[best])


def _fit_with_scripted_rates(monkeypatch, rates):
    """A fit whose held-out rate at epoch ``e`` is ``rates[e - 1]``: patience 3, no smoothing."""
    script = iter(rates)
    monkeypatch.setattr(NeighbourStopping, "_rate", lambda self, net, sampler: next(script))
    monkeypatch.setattr(
        LatentClassNCEEmbedder,
        "_early_stopping",
        lambda self: NeighbourStopping(patience=3, smoothing=0.0),
    )
    return LatentClassNCEEmbedder(max_epochs=20, random_state=0).fit(*_data())


def test_training_stops_after_patience_epochs_without_a_rise(monkeypatch):
    # Scripted rates, no smoothing: a rise must exceed the best by more than 0.001; a
    # tie or a smaller rise is a miss but moves the kept epoch on.
    emb = _fit_with_scripted_rates(monkeypatch, [0.5, 0.7, 0.7, 0.6, 0.7005, 0.9, 0.9])
    assert emb.n_iter_ == 5
    assert dict(emb.net_.callbacks_)["early_stopping"].best_epoch_ == 5


def test_epochs_with_every_held_out_point_right_are_not_misses(monkeypatch):
    # A small held-out set saturates: a perfect rate is no sign of overfitting.
    emb = _fit_with_scripted_rates(monkeypatch, [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.9, 0.9, 1.0])
    assert emb.n_iter_ == 9  # misses at epochs 7-9 only
    assert dict(emb.net_.callbacks_)["early_stopping"].best_epoch_ == 6


def test_the_rate_is_measured_on_a_fixed_subset_of_large_splits(monkeypatch):
    monkeypatch.setattr("sknce.contrastive._stopping._MAX_QUERIES", 7)
    monkeypatch.setattr("sknce.contrastive._stopping._MAX_REFERENCES", 40)
    emb = LatentClassNCEEmbedder(max_epochs=2, random_state=0).fit(*_data())
    queries, references = dict(emb.net_.callbacks_)["early_stopping"].rows_
    assert len(queries) == 7 and len(references) == 40
    rates = [row["valid_nn"] for row in emb.history_]
    assert all(r * 7 == pytest.approx(round(r * 7)) for r in rates)


def test_partial_fit_records_no_rate():
    emb = LatentClassNCEEmbedder(random_state=0).partial_fit(*_data())
    assert "valid_nn" not in emb.history_[0]
