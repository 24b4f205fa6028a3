"""recover_topic_posterior: the linear map back from exact single-word embeddings."""

import copy

import numpy as np
import pytest

from sknce import LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus
from sknce.documents import recover_topic_posterior

#: These embedders stand in for exact ones (bilinear by default): the calibration warning
#: of recover_topic_posterior (tests/test_reliability_outputs.py) is expected here.
pytestmark = pytest.mark.filterwarnings("ignore:recover_topic_posterior reads exp f:UserWarning")


@pytest.fixture(scope="module")
def corpus():
    return make_topic_corpus(
        200, n_topics=4, n_words=40, topics="block", beta=0.1, mean_length=30, random_state=0
    )


@pytest.fixture(scope="module")
def fitted(corpus):
    return LandmarkNCEEmbedder(
        n_landmarks=30,
        landmarks="words",
        split="word",
        hidden_layer_sizes=(8,),
        max_epochs=1,
        early_stopping=False,
        random_state=0,
    ).fit(corpus.X)


def exact_embedder(fitted, corpus, n_negatives, scale):
    """A copy of ``fitted`` whose ``transform`` is ``scale * L E[w | x] / n_negatives``.

    That is ``exp f`` of the Bayes-optimal log-odds (with ``n_negatives`` negatives),
    each document's row off by the factor ``scale``.
    """
    emb = copy.copy(fitted).set_params(n_negatives=n_negatives)
    words = emb.landmarks_.indices
    L = corpus.topics[:, words].T / corpus.word_probs[words, None]
    phi = scale[:, None] * (corpus.posterior_mean @ L.T) / n_negatives
    emb.transform = lambda X: phi[: X.shape[0]]
    return emb


@pytest.mark.parametrize("n_negatives", [1, 3])
def test_exact_embedding_gives_the_posterior(fitted, corpus, n_negatives):
    emb = exact_embedder(fitted, corpus, n_negatives, np.ones(corpus.X.shape[0]))
    for normalize in (True, False):
        eta = recover_topic_posterior(
            emb, corpus.X, corpus.topics, corpus.word_probs, normalize=normalize
        )
        np.testing.assert_allclose(eta, corpus.posterior_mean, atol=1e-10)


def test_normalize_cancels_a_per_document_factor(fitted, corpus):
    scale = np.random.default_rng(0).uniform(0.5, 2.0, size=corpus.X.shape[0])
    emb = exact_embedder(fitted, corpus, 1, scale)
    args = (emb, corpus.X, corpus.topics, corpus.word_probs)
    np.testing.assert_allclose(recover_topic_posterior(*args), corpus.posterior_mean, atol=1e-10)
    # Without the rescaling the projection shifts every entry: the factor stays an error.
    plain = recover_topic_posterior(*args, normalize=False)
    assert np.linalg.norm(plain - corpus.posterior_mean, axis=1).mean() > 0.05
    np.testing.assert_allclose(plain.sum(1), 1.0)
