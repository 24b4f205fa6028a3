"""Outputs that were silently wrong (issue 22) and now come with a warning that names
the recipe: topic posteriors from an uncalibrated scorer, streaming regression beyond
the first chunk's target range."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sknce import ConditionalNCERegressor, LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus
from sknce.documents import recover_topic_posterior

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)


@pytest.fixture(scope="module")
def corpus():
    return make_topic_corpus(
        64, n_topics=3, n_words=30, topics="block", doc_topics="single", random_state=0
    )


def _landmark(corpus, scorer):
    params = dict(n_landmarks=30, landmarks="words", split="word", hidden_layer_sizes=(8,))
    return LandmarkNCEEmbedder(
        scorer=scorer, max_epochs=1, early_stopping=False, random_state=0, **params
    ).fit(corpus.X)


def test_posteriors_from_the_bilinear_scorer_warn_naming_the_pair_recipe(corpus):
    emb = _landmark(corpus, "bilinear")
    with pytest.warns(UserWarning, match=r"not calibrated.*scorer='pair', bag='tf'"):
        recover_topic_posterior(emb, corpus.X, corpus.topics, corpus.word_probs)


def test_posteriors_from_the_pair_scorer_do_not_warn(corpus):
    emb = _landmark(corpus, "pair")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        eta = recover_topic_posterior(emb, corpus.X, corpus.topics, corpus.word_probs)
    np.testing.assert_allclose(eta.sum(axis=1), 1.0)


def _line(low, high, n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, low + (high - low) * (X[:, 0] + 1) / 2 + 0.05 * rng.normal(size=n)


FAST_REG = dict(hidden_layer_sizes=(8,), n_negatives=4, random_state=0)


def test_partial_fit_beyond_the_first_chunks_range_warns_with_the_fix():
    reg = ConditionalNCERegressor(**FAST_REG).partial_fit(*_line(0, 1))
    X, y = _line(2, 5, seed=1)
    with pytest.warns(UserWarning, match=r"200 of 200 targets .*beyond.*spans the targets"):
        reg.partial_fit(X, y)


def test_partial_fit_within_the_first_chunks_range_does_not_warn():
    reg = ConditionalNCERegressor(**FAST_REG).partial_fit(*_line(0, 1))
    X, y = _line(0.2, 0.8, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        reg.partial_fit(X, y)


def test_a_constant_first_partial_fit_chunk_warns():
    X, _ = _line(0, 1)
    with pytest.warns(UserWarning, match="first partial_fit chunk has a constant target"):
        ConditionalNCERegressor(**FAST_REG).partial_fit(X, np.full(len(X), 3.0))
