"""Your own torch encoder in place of the default MLP: it trains, clones, pickles, errs clearly."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from torch import nn

from sknce import (
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    DirectNCEEmbedder,
    LatentClassNCEEmbedder,
)


class DigitsCNN(nn.Module):
    """A small CNN on sklearn's 8x8 digit images, given flat (batch, 64) rows."""

    def __init__(self, n_features: int = 64, n_components: int = 32) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Unflatten(1, (1, 8, 8)),
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 256),
            nn.LayerNorm(256),
            nn.ReLU(),
            nn.Linear(256, n_components),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class TwoLayer(nn.Module):
    """A user MLP built from the number of input features."""

    def __init__(self, n_features: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, train_size=500, random_state=0, stratify=y)


def _probe(embedder, digits) -> float:
    X_train, X_test, y_train, y_test = digits
    embedder.fit(X_train, y_train)
    probe = LogisticRegression(max_iter=1000).fit(embedder.transform(X_train), y_train)
    return probe.score(embedder.transform(X_test), y_test)


def test_a_cnn_encoder_on_digits_probes_at_least_as_well_as_the_default_mlp(digits):
    budget = dict(n_components=32, max_epochs=10, batch_size=64, random_state=0)
    cnn = LatentClassNCEEmbedder(encoder=DigitsCNN, **budget)
    mlp = LatentClassNCEEmbedder(**budget)
    cnn_accuracy, mlp_accuracy = _probe(cnn, digits), _probe(mlp, digits)
    assert cnn_accuracy >= mlp_accuracy > 0.9
    assert cnn.n_components_ == 32
    assert isinstance(cnn.net_.module_.encoder.encoder.module, DigitsCNN)


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=3, size=(6, 5))
    y = rng.integers(0, 6, size=300)
    return centers[y] + rng.normal(size=(300, 5)), y


@pytest.mark.parametrize("encoder", [TwoLayer, TwoLayer(5)], ids=["class", "instance"])
def test_a_user_mlp_trains_the_classifier_and_survives_clone_and_pickle(blobs, encoder):
    X, y = blobs
    clf = ConditionalNCEClassifier(
        encoder=encoder, n_negatives=4, max_epochs=20, lr=0.01, random_state=0
    ).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert clf.net_.module_.embedding_dim == 16
    twin = clone(clf)
    assert not hasattr(twin, "net_")
    if isinstance(encoder, nn.Module):
        assert twin.encoder is not encoder  # cloned params are copies
        # The instance is copied at fit: the user's module is never trained in place.
        untouched = TwoLayer(5)
        untouched.load_state_dict(encoder.state_dict())
        clf.fit(X, y)
        for a, b in zip(encoder.parameters(), untouched.parameters()):
            assert torch.equal(a, b)
    np.testing.assert_array_equal(twin.fit(X, y).predict(X), clf.predict(X))
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), rtol=1e-6)


# One or two epochs on random counts, which share no structure between document halves:
# the embedder cannot beat a constant guess, and says so. The test is about the encoder.
@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
def test_direct_and_regressor_take_an_encoder_and_sparse_input_is_densified_per_batch():
    rng = np.random.default_rng(0)
    counts = sp.csr_matrix(rng.poisson(1.0, size=(80, 12)).astype(float))
    emb = DirectNCEEmbedder(encoder=TwoLayer, max_epochs=2, random_state=0).fit(counts)
    assert emb.transform(counts).shape == (80, 16) == (80, emb.n_components_)
    f1, f2 = emb.net_.module_.f1, emb.net_.module_.f2
    assert not torch.equal(f1.module.net[0].weight, f2.module.net[0].weight)
    # An instance: f2 starts re-initialised, not as a second copy of f1.
    emb = DirectNCEEmbedder(encoder=TwoLayer(12), max_epochs=1, random_state=0).fit(counts)
    assert list(emb.get_feature_names_out()[:2]) == ["directnceembedder0", "directnceembedder1"]
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=120)
    reg = ConditionalNCERegressor(encoder=TwoLayer, max_epochs=30, lr=0.01, random_state=0)
    assert reg.fit(X, y).score(X, y) > 0.5


@pytest.mark.parametrize(
    ("encoder", "message"),
    [
        (nn.Linear(3, 4), r"failed on a batch of shape \(2, 5\)"),
        (nn.Sequential(nn.Unflatten(1, (5, 1))), r"returned \(2, 5, 1\).*Flatten"),
        ("mlp", "must be None, an object implementing 'forward'"),
    ],
)
def test_an_encoder_that_cannot_work_is_a_clear_error(blobs, encoder, message):
    X, y = blobs
    with pytest.raises((ValueError, TypeError), match=message):
        LatentClassNCEEmbedder(encoder=encoder, max_epochs=1).fit(X, y)


def _output_of(estimator, X):
    if hasattr(estimator, "transform"):
        return estimator.transform(X)
    return estimator.predict(X)


@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
@pytest.mark.parametrize("encoder", [TwoLayer, TwoLayer(5)], ids=["class", "instance"])
@pytest.mark.parametrize(
    "make", [DirectNCEEmbedder, LatentClassNCEEmbedder, ConditionalNCERegressor]
)
def test_a_user_encoder_survives_clone_and_pickle_on_every_array_estimator(make, encoder, blobs):
    X, y = blobs
    if make is DirectNCEEmbedder:
        X = np.random.default_rng(1).poisson(2.0, size=(300, 5)).astype(float)
    estimator = make(encoder=encoder, max_epochs=3, random_state=0)
    fitted = estimator.fit(X) if make is DirectNCEEmbedder else estimator.fit(X, y)
    twin = clone(fitted)
    assert not hasattr(twin, "net_")
    if isinstance(encoder, nn.Module):
        assert twin.encoder is not encoder
    refit = twin.fit(X) if make is DirectNCEEmbedder else twin.fit(X, y)
    np.testing.assert_allclose(_output_of(refit, X), _output_of(fitted, X), rtol=1e-5, atol=1e-6)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(_output_of(again, X), _output_of(fitted, X), rtol=1e-6, atol=1e-7)
