"""fit(X, y, sample_weight=...), partial_fit and class_weight on the estimators, with routing."""

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.ensemble import AdaBoostClassifier
from sklearn.model_selection import KFold, cross_validate
from sklearn.utils.class_weight import compute_sample_weight

from sknce import (
    ConditionalNCEClassifier,
    DirectNCEEmbedder,
    LandmarkNCEEmbedder,
    LatentClassNCEEmbedder,
)
from sknce.datasets import make_latent_classes, make_topic_corpus

pytestmark = [
    pytest.mark.filterwarnings(
        "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
    ),
    pytest.mark.filterwarnings(r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning"),
]
X, Y = make_classification(
    300, n_features=6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=0
)
# uniform noise and a random start: neither depends on the labels' frequencies, so the
# labels of rows of weight 0 cannot reach the fit by another path
CLF = dict(
    n_negatives=2, hidden_layer_sizes=(8,), max_epochs=4, batch_size=32, lr=0.05,
    noise="uniform", init="random", random_state=0,
)  # fmt: skip


def _proba(sample_weight=None, y=Y, **params):
    clf = ConditionalNCEClassifier(**{**CLF, **params})
    return clf.fit(X, y, sample_weight=sample_weight).predict_proba(X)


def test_rows_of_weight_zero_do_not_count():
    w = np.ones(len(Y))
    w[::3] = 0
    corrupt = Y.copy()
    corrupt[::3] = (Y[::3] + 1) % 3
    np.testing.assert_allclose(_proba(w), _proba(w, y=corrupt), rtol=1e-5, atol=1e-7)
    assert not np.allclose(_proba(None, y=corrupt), _proba(w, y=corrupt), atol=1e-3)


def test_unit_and_constant_weights_are_the_unweighted_fit():
    expected = _proba()
    np.testing.assert_array_equal(_proba(np.ones(len(Y))), expected)
    np.testing.assert_array_equal(_proba(np.full(len(Y), 0.01)), expected)  # AdaBoost's scale


def test_class_weight_is_sample_weight_by_class():
    weights = {0: 0.5, 1: 2.0, 2: 1.0}
    by_class = np.array([weights[c] for c in Y])
    np.testing.assert_allclose(
        _proba(class_weight=weights), _proba(by_class), rtol=1e-6, atol=1e-8
    )
    np.testing.assert_allclose(
        _proba(class_weight="balanced"),
        _proba(compute_sample_weight("balanced", Y)),
        rtol=1e-6,
        atol=1e-8,
    )
    with pytest.raises(ValueError, match="class_weight"):
        ConditionalNCEClassifier(**{**CLF, "class_weight": "often"}).fit(X, Y)


def test_partial_fit_takes_sample_weight():
    w = np.ones(len(Y))
    w[::3] = 0
    corrupt = Y.copy()
    corrupt[::3] = (Y[::3] + 1) % 3
    outs = []
    for y in (Y, corrupt):
        clf = ConditionalNCEClassifier(**CLF)
        clf.partial_fit(X, y, classes=[0, 1, 2], sample_weight=w)
        outs.append(clf.partial_fit(X, y, sample_weight=w).predict_proba(X))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-7)


def test_adaboost_boosts_the_classifier():
    boost = AdaBoostClassifier(ConditionalNCEClassifier(**CLF), n_estimators=3, random_state=0)
    boost.fit(X, Y)
    assert len(boost.estimators_) >= 2
    assert boost.score(X, Y) > 0.6


def test_weighted_cross_validate_routes_the_weights():
    w = np.where(Y == 0, 3.0, 1.0)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = ConditionalNCEClassifier(**CLF).set_fit_request(sample_weight=True)
        clf.set_score_request(sample_weight=True)
        result = cross_validate(clf, X, Y, params={"sample_weight": w}, cv=KFold(3))
    assert result["test_score"].shape == (3,)
    assert np.all(result["test_score"] > 0.5)
    # the routed weights reached fit: a split fitted by hand with them scores the same
    train, test = np.arange(100, 300), np.arange(100)
    clf = ConditionalNCEClassifier(**CLF).fit(X[train], Y[train], sample_weight=w[train])
    assert result["test_score"][0] == pytest.approx(
        clf.score(X[test], Y[test], sample_weight=w[test])
    )


def test_embedders_take_sample_weight():
    data = make_latent_classes(120, n_classes=4, n_features=5, random_state=0)
    counts = make_topic_corpus(n_documents=120, n_words=40, random_state=0).X
    # no early stopping: a restored start (the spectral one) would hide the training
    fast = dict(max_epochs=2, early_stopping=False, random_state=0)
    cases = [
        (LatentClassNCEEmbedder(n_components=3, **fast), data.X, data.y),
        (DirectNCEEmbedder(n_components=3, init="random", **fast), counts, None),
        (LandmarkNCEEmbedder(n_landmarks=4, **fast), counts, None),
    ]
    rng = np.random.default_rng(0)
    for est, Xe, ye in cases:
        plain = est.fit(Xe, ye).transform(Xe)
        ones = est.fit(Xe, ye, sample_weight=np.ones(Xe.shape[0])).transform(Xe)
        np.testing.assert_array_equal(ones, plain)
        weighted = est.fit(Xe, ye, sample_weight=rng.uniform(0, 2, Xe.shape[0])).transform(Xe)
        assert not np.allclose(weighted, plain), type(est).__name__
        assert hasattr(est, "set_fit_request") and hasattr(est, "set_partial_fit_request")


def test_document_weights_follow_the_documents_kept():
    counts = make_topic_corpus(n_documents=60, n_words=30, random_state=0).X.toarray()
    counts[0] = 0  # skipped by fit (fewer than 2 tokens): its weight goes with it
    est = DirectNCEEmbedder(n_components=3, max_epochs=1, early_stopping=False, random_state=0)
    with pytest.raises(ValueError):
        est.fit(counts, sample_weight=np.ones(59))  # one weight per row of X, skipped or not
    w = np.ones(60)
    w[0] = 1000.0  # the skipped document's weight must not reach the others
    np.testing.assert_array_equal(
        est.fit(counts, sample_weight=w).transform(counts),
        est.fit(counts).transform(counts),
    )


def test_weights_are_refused_for_a_stream_of_chunks_and_balanced_partial_fit():
    with pytest.raises(ValueError, match="stream of chunks"):
        ConditionalNCEClassifier(**{**CLF, "class_weight": "balanced"}).fit([(X, Y)])
    counts = make_topic_corpus(n_documents=40, n_words=20, random_state=0).X
    with pytest.raises(ValueError, match="stream of chunks"):
        DirectNCEEmbedder(max_epochs=1).fit([counts], sample_weight=np.ones(40))
    with pytest.raises(ValueError, match="balanced"):
        ConditionalNCEClassifier(**{**CLF, "class_weight": "balanced"}).partial_fit(
            X, Y, classes=[0, 1, 2]
        )
