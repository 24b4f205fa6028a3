"""Cases found by trying sknce as a hostile or unlucky user would (issue 15), one test each."""

import numpy as np
import pytest
import scipy.sparse as sp

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder, LatentClassNCEEmbedder
from sknce.contrastive import simplex_etf_report
from sknce.datasets import make_topic_corpus
from sknce.documents import project_simplex, recover_topic_posterior, split_documents

SMALL = dict(hidden_layer_sizes=(8,), max_epochs=1, random_state=0)


@pytest.fixture(scope="module")
def corpus():
    return make_topic_corpus(286, n_topics=3, n_words=40, mean_length=30, random_state=0)


@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
@pytest.mark.parametrize("batch_size", [256, 1])
def test_a_last_training_batch_of_one_document_trains(corpus, cls, batch_size):
    """286 documents: 29 held out, 257 = 256 + 1 train; batch_size=1 is all batches of one."""
    params = dict(n_landmarks=5) if cls is LandmarkNCEEmbedder else dict(n_components=4)
    emb = cls(batch_size=batch_size, **params, **SMALL).fit(corpus.X)
    assert np.all(np.isfinite(emb.transform(corpus.X)))


@pytest.mark.parametrize("cls", [DirectNCEEmbedder, LandmarkNCEEmbedder])
def test_duplicate_stored_entries_embed_as_their_sum(corpus, cls):
    params = dict(n_landmarks=5) if cls is LandmarkNCEEmbedder else dict(n_components=4)
    emb = cls(bag="log1p", **params, **SMALL).fit(corpus.X)
    X = sp.csr_matrix(corpus.X[:5])
    coo = X.tocoo()
    # Every count stored as two parts (half and half rounded), a non-canonical CSR.
    halves = np.floor(coo.data / 2)
    split = sp.csr_matrix(
        (
            np.concatenate([halves, coo.data - halves]),
            (np.concatenate([coo.row, coo.row]), np.concatenate([coo.col, coo.col])),
        ),
        shape=X.shape,
    )
    split.has_canonical_format = False
    np.testing.assert_allclose(emb.transform(split), emb.transform(X), rtol=1e-5)


def test_split_documents_rejects_counts_that_are_not_counts():
    with pytest.raises(ValueError, match="non-negative integer word counts"):
        split_documents(sp.csr_matrix([[1.5, 2.0]]), "partition", 0)
    with pytest.raises(ValueError, match="not word counts"):
        split_documents(sp.csr_matrix([[1e12, 2.0]]), "partition", 0)


def test_project_simplex_rejects_nan_and_empty_rows():
    with pytest.raises(ValueError, match="NaN or infinity"):
        project_simplex([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="at least one column"):
        project_simplex(np.zeros((2, 0)))
    np.testing.assert_allclose(project_simplex([[2.0, 0.0]]), [[1.0, 0.0]])


def test_simplex_etf_report_rejects_nan_labels():
    Z = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="labels contain NaN"):
        simplex_etf_report(Z, [0, np.nan, 1])


def test_recover_topic_posterior_names_the_estimator_it_needs(corpus):
    direct = DirectNCEEmbedder(n_components=4, **SMALL).fit(corpus.X)
    with pytest.raises(TypeError, match="needs a LandmarkNCEEmbedder.*DirectNCEEmbedder"):
        recover_topic_posterior(direct, corpus.X, corpus.topics, corpus.word_probs)
    landmark = LandmarkNCEEmbedder(n_landmarks=5, landmarks="words", **SMALL).fit(corpus.X)
    topics = corpus.topics.copy()
    topics[0, 0] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        recover_topic_posterior(landmark, corpus.X, topics, corpus.word_probs)


def test_exclude_collisions_with_a_single_class_is_an_error():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="no negative is left"):
        LatentClassNCEEmbedder(exclude_collisions=True, **SMALL).fit(X, np.zeros(20))
