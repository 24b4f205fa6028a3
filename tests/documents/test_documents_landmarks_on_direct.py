"""LandmarkNCEEmbedder(scorer=<a fitted DirectNCEEmbedder>): the landmark embedding of a
trained network, without training it again (issue 34, the demo's second fit)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import TruncatedSVD
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)


@pytest.fixture(scope="module")
def X():
    return make_topic_corpus(300, n_topics=3, n_words=60, mean_length=30, random_state=0).X


@pytest.fixture(scope="module")
def direct(X):
    return DirectNCEEmbedder(random_state=0).fit(X)


def test_the_fitted_scorer_gives_what_training_the_same_network_gives(X, direct):
    reused = LandmarkNCEEmbedder(n_landmarks=20, scorer=direct, random_state=0).fit(X)
    trained = LandmarkNCEEmbedder(n_landmarks=20, random_state=0).fit(X)
    assert trained.n_iter_ > 0 and reused.n_iter_ == 0 and reused.history_ == []
    np.testing.assert_array_equal(reused.landmarks_.toarray(), trained.landmarks_.toarray())
    np.testing.assert_array_equal(reused.transform(X), trained.transform(X))
    assert reused.score(X) == trained.score(X)
    assert reused.n_components_ == direct.n_components_


def test_the_embedder_is_copied_not_shared(X, direct):
    before = direct.transform(X)
    landmark = LandmarkNCEEmbedder(n_landmarks=20, scorer=direct, random_state=0).fit(X)
    assert landmark.net_ is not direct.net_ and landmark.net_.estimator is landmark
    assert direct.net_.estimator is direct
    for parameter in landmark.net_.module_.parameters():
        parameter.data.zero_()
    np.testing.assert_array_equal(direct.transform(X), before)


def test_a_frozen_embedder_survives_clone_and_grid_search(X, direct):
    landmark = LandmarkNCEEmbedder(scorer=FrozenEstimator(direct), random_state=0)
    search = GridSearchCV(landmark, {"n_landmarks": [10, 20]}, cv=2).fit(X)
    assert search.best_estimator_.n_iter_ == 0
    assert search.best_estimator_.transform(X).shape[1] == search.best_params_["n_landmarks"]


def test_an_untied_embedder_scores_both_sides(X):
    untied = DirectNCEEmbedder(tied=False, n_components=8, random_state=0).fit(X)
    out = LandmarkNCEEmbedder(n_landmarks=20, scorer=untied, random_state=0).fit_transform(X)
    assert out.shape == (X.shape[0], 20) and np.isfinite(out).all()


def test_an_unfitted_embedder_names_fit_and_frozen_estimator(X, direct):
    with pytest.raises(ValueError, match="not fitted.*FrozenEstimator"):
        LandmarkNCEEmbedder(scorer=DirectNCEEmbedder()).fit(X)
    cloned = clone(LandmarkNCEEmbedder(scorer=direct))  # clone unfits a bare embedder
    with pytest.raises(ValueError, match="FrozenEstimator"):
        cloned.fit(X)


@pytest.mark.parametrize(
    "scorer", [TruncatedSVD(2), LandmarkNCEEmbedder()], ids=["sklearn", "landmark"]
)
def test_another_estimator_is_a_type_error(X, scorer):
    with pytest.raises(TypeError, match="fitted DirectNCEEmbedder"):
        LandmarkNCEEmbedder(scorer=scorer.fit(X)).fit(X)


def test_other_words_or_another_bag_name_the_fix(X, direct):
    with pytest.raises(ValueError, match="X has 50 words.*fitted on 60"):
        LandmarkNCEEmbedder(scorer=direct).fit(X[:, :50])
    with pytest.raises(ValueError, match="bag='tf'.*set bag='log1p-idf'"):
        LandmarkNCEEmbedder(scorer=direct, bag="tf").fit(X)


def test_what_would_train_is_refused(X, direct):
    landmark = LandmarkNCEEmbedder(n_landmarks=10, scorer=direct, random_state=0)
    with pytest.raises(ValueError, match="trains nothing"):
        landmark.fit(X, sample_weight=np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="no partial_fit or fit on a stream"):
        landmark.partial_fit(X)
    with pytest.raises(ValueError, match="no partial_fit or fit on a stream"):
        landmark.fit([X[:150], X[150:]])
    assert not hasattr(landmark, "net_")  # each failed call left it unfitted
