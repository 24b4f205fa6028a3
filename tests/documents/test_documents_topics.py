"""make_topic_corpus: the generative model and the exact posterior means."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import trapezoid

from sknce.datasets import make_topic_corpus


def test_shapes_and_marginals():
    c = make_topic_corpus(500, n_topics=4, n_words=50, mean_length=30, random_state=0)
    assert sp.isspmatrix_csr(c.X) and c.X.shape == (500, 50)
    assert c.topics.shape == (4, 50) and c.doc_topics.shape == (500, 4)
    np.testing.assert_allclose(c.topics.sum(1), 1.0)
    np.testing.assert_allclose(c.word_probs.sum(), 1.0)
    assert abs(c.X.sum(1).mean() - 30) < 1.5
    assert c.posterior_mean is None  # no closed form for Dirichlet topics and prior
    np.testing.assert_array_equal(c.target, c.doc_topics.argmax(1))
    # Empirical word frequencies follow the marginal.
    freq = np.asarray(c.X.sum(0)).ravel() / c.X.sum()
    assert np.abs(freq - c.word_probs).sum() < 0.15


def test_reproducible():
    a = make_topic_corpus(50, n_topics=3, n_words=20, random_state=3)
    b = make_topic_corpus(50, n_topics=3, n_words=20, random_state=3)
    assert (a.X != b.X).nnz == 0


def test_block_posterior_matches_numerical_integration():
    # K = 2: E[w_1 | x] by quadrature of Beta(beta, beta) prior x block likelihood.
    beta = 0.3
    c = make_topic_corpus(
        20, n_topics=2, n_words=10, topics="block", beta=beta, mean_length=6, random_state=0
    )
    block = c.topics.argmax(0)
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    for i in range(5):
        x = c.X[i].toarray().ravel()
        n1 = x[block == 0].sum()
        n2 = x[block == 1].sum()
        dens = grid ** (beta - 1 + n1) * (1 - grid) ** (beta - 1 + n2)
        expected = trapezoid(grid * dens, grid) / trapezoid(dens, grid)
        assert abs(c.posterior_mean[i, 0] - expected) < 2e-3


def test_single_topic_posterior_matches_bayes_rule():
    c = make_topic_corpus(
        30, n_topics=3, n_words=8, doc_topics="single", alpha=1.0, mean_length=4, random_state=0
    )
    for i in range(10):
        x = c.X[i].toarray().ravel()
        like = np.prod(c.topics**x, axis=1)
        np.testing.assert_allclose(c.posterior_mean[i], like / like.sum(), rtol=1e-8)


def test_block_posterior_is_informative():
    c = make_topic_corpus(400, n_topics=5, n_words=100, topics="block", beta=0.1, random_state=0)
    assert (c.posterior_mean.argmax(1) == c.target).mean() > 0.9
    np.testing.assert_allclose(c.posterior_mean.sum(1), 1.0)
    s = make_topic_corpus(
        50, n_topics=5, n_words=100, topics="block", doc_topics="single", random_state=0
    )
    np.testing.assert_allclose(s.posterior_mean, s.doc_topics)  # blocks identify the topic


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"topics": "lda"}, "topics"),
        ({"beta": 0}, "beta"),
        ({"n_words": 2, "topics": "block"}, "n_words"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_topic_corpus(10, n_topics=3, **kwargs)
