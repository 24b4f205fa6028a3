"""Early stopping of the linear classifier: its check against the prior start reads the
held-out loss at a fitted temperature (``TemperedEarlyStopping``)."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning
from test_classifier_plan import _three_rows_per_class

from sknce import ConditionalNCEClassifier
from sknce._callbacks import ChanceAwareEarlyStopping
from sknce.conditional import _classifier, _tempered_stopping
from sknce.conditional._temperature import fit_temperature, tempered_loss
from sknce.conditional._tempered_stopping import TemperedEarlyStopping


@pytest.mark.parametrize("weighted", [False, True])
def test_the_tempered_loss_is_the_log_likelihood_at_the_fitted_temperature(weighted):
    rng = np.random.default_rng(0)
    logits = torch.as_tensor(rng.normal(scale=4.0, size=(400, 30)))
    labels = torch.distributions.Categorical(logits=logits / 2.5).sample()
    weights = torch.as_tensor(rng.uniform(0.1, 3.0, size=400)) if weighted else None
    w = torch.ones(400, dtype=torch.float64) if weights is None else weights * 400 / weights.sum()

    def nll(t):
        return -float(w @ torch.log_softmax(logits / t, dim=1)[range(400), labels]) / 400

    loss = tempered_loss(logits, labels, weights)
    assert loss == pytest.approx(nll(fit_temperature(logits, labels, weights)), abs=1e-5)
    # over-confident scores: tempering lowers the loss, and no temperature beats it by more
    # than the prior on log T allows
    assert loss < nll(1.0) - 0.1
    assert all(loss <= nll(t) + 1e-4 for t in np.geomspace(0.2, 20.0, 41))
    assert tempered_loss(torch.empty(0, 3), torch.empty(0, dtype=torch.int64)) == 0.0


def _noise(n=600, n_classes=5, seed=1):
    """Sparse counts that say nothing of the labels."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, 300, density=0.03, random_state=seed, format="csr")
    X.data = np.ceil(X.data * 3)
    return X, rng.integers(0, n_classes, size=n)


def test_a_linear_fit_that_learns_nothing_keeps_the_prior_on_the_tempered_check():
    X, y = _noise()
    with pytest.warns(ConvergenceWarning, match="restored the prior start"):
        clf = ConditionalNCEClassifier(random_state=0).fit(X, y)
    assert clf.plan_.regime == "linear"
    stopping = dict(clf.net_.callbacks_)["early_stopping"]
    assert isinstance(stopping, TemperedEarlyStopping) and stopping.best_epoch_ == 0
    start = stopping.initial_tempered_loss_
    tempered = [row["valid_tempered_loss"] for row in clf.history_]
    assert tempered and all(loss >= start * (1 - 1e-3) for loss in tempered)
    # the label frequencies at the fitted temperature, for every input
    tempered = (np.bincount(y) / len(y)) ** (1 / clf.temperature_)
    expected = np.tile(tempered / tempered.sum(), (3, 1))
    np.testing.assert_allclose(clf.predict_proba(X[:3]), expected, atol=1e-6)


def _tempered_losses(monkeypatch, start: float, epochs: float) -> None:
    """The tempered loss of the start is ``start``, of every epoch ``epochs``."""
    calls = []

    def loss(logits, labels, weights=None):
        calls.append(None)
        return start if len(calls) == 1 else epochs

    monkeypatch.setattr(_tempered_stopping, "tempered_loss", loss)


def test_an_epoch_that_beats_the_start_only_once_tempered_is_kept(monkeypatch):
    # the raw held-out loss never beats the prior here (the fit above keeps it); an epoch
    # whose tempered loss does is kept, and then the epochs compete on the raw loss
    X, y = _noise()
    _tempered_losses(monkeypatch, start=10.0, epochs=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = ConditionalNCEClassifier(random_state=0).fit(X, y)
    # refit on every row for the epochs chosen; the first epoch beat the start, so only it
    # was tempered
    selection = clf.selection_history_
    assert clf.n_iter_ >= 1 and selection[clf.n_iter_ - 1]["valid_loss_best"]
    assert [("valid_tempered_loss" in row) for row in selection] == [True] + [False] * (
        len(selection) - 1
    )


def test_an_epoch_that_beats_the_start_only_raw_is_not(monkeypatch):
    X, y = _three_rows_per_class(64, seed=0)
    _tempered_losses(monkeypatch, start=1.0, epochs=1.0)
    with pytest.warns(ConvergenceWarning, match="restored the prior start"):
        clf = ConditionalNCEClassifier(random_state=0).fit(X, y)
    assert dict(clf.net_.callbacks_)["early_stopping"].best_epoch_ == 0
    assert min(row["valid_loss"] for row in clf.history_) < 0.5 * math.log(64)


def test_where_the_raw_loss_beats_the_start_first_the_fit_is_the_raw_checks(monkeypatch):
    X, y = _three_rows_per_class(64, seed=0)
    tempered = ConditionalNCEClassifier(random_state=0).fit(X, y)
    monkeypatch.setattr(_classifier, "TemperedEarlyStopping", ChanceAwareEarlyStopping)
    raw = ConditionalNCEClassifier(random_state=0).fit(X, y)
    assert tempered.n_iter_ == raw.n_iter_ and tempered.temperature_ == raw.temperature_
    np.testing.assert_array_equal(tempered.predict_proba(X), raw.predict_proba(X))
