"""ConditionalNCEClassifier at its defaults: what a user's plain pipeline gets."""

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss

from sknce import ConditionalNCEClassifier


def _planted(n, n_classes=20, n_features=10, seed=0):
    """Labels from a softmax of a linear score, with a heavy-tailed label marginal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    weights = rng.normal(scale=1.5, size=(n_features, n_classes))
    logits = X @ weights - np.log(np.arange(1, n_classes + 1))
    gumbel = -np.log(-np.log(rng.random(logits.shape)))
    return X, np.argmax(logits + gumbel, axis=1)


def test_a_default_fit_beats_the_label_frequencies_in_log_likelihood_and_accuracy():
    X, y = _planted(1500)
    X_train, y_train, X_test, y_test = X[:1000], y[:1000], X[1000:], y[1000:]
    clf = ConditionalNCEClassifier(random_state=0).fit(X_train, y_train)
    prior = DummyClassifier(strategy="prior").fit(X_train, y_train)
    labels = clf.classes_
    nll = log_loss(y_test, clf.predict_proba(X_test), labels=labels)
    nll_prior = log_loss(y_test, prior.predict_proba(X_test), labels=labels)
    assert nll < nll_prior - 0.3
    assert clf.score(X_test, y_test) > prior.score(X_test, y_test) + 0.15


# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_the_untrained_model_is_the_label_frequencies():
    """init="prior": the start (epoch 0 of early stopping) predicts p(y)."""
    X, y = _planted(400)
    clf = ConditionalNCEClassifier(random_state=0, max_epochs=1, lr=1e-12).fit(X, y)
    frequencies = np.bincount(y, minlength=20) / len(y)
    np.testing.assert_allclose(clf.predict_proba(X[:5]), np.tile(frequencies, (5, 1)), atol=1e-6)
    random = ConditionalNCEClassifier(random_state=0, max_epochs=1, lr=1e-12, init="random")
    assert np.abs(random.fit(X, y).predict_proba(X[:5]) - frequencies).max() > 0.01


def test_early_stopping_is_on_and_returns_to_the_prior_when_nothing_beats_it():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(600, 5)), rng.integers(0, 5, size=600)  # X says nothing of y
    with pytest.warns(ConvergenceWarning, match="restored the prior start"):
        clf = ConditionalNCEClassifier(random_state=0).fit(X, y)
    assert "valid_loss" in clf.history_[-1]
    stopping = dict(clf.net_.callbacks_)["early_stopping"]
    assert stopping.best_epoch_ == 0  # the prior start, never improved upon
    frequencies = np.bincount(y) / len(y)
    np.testing.assert_allclose(clf.predict_proba(X[:3]), np.tile(frequencies, (3, 1)), atol=1e-6)


def test_partial_fit_needs_the_classes_on_its_first_call():
    X, y = _planted(100)
    clf = ConditionalNCEClassifier(random_state=0)
    with pytest.raises(ValueError, match=r"classes must be passed on the first call.*classes="):
        clf.partial_fit(X, y)
    assert not hasattr(clf, "net_")
    clf.partial_fit(X, y, classes=np.arange(20)).partial_fit(X[:10], y[:10])
    assert clf.n_iter_ == 2
