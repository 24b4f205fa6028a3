"""Splitting strategies and bag normalisation of the contrastive task."""

import numpy as np
import pytest
import scipy.sparse as sp

from sknce.documents import split_documents
from sknce.documents._split import normalize_bags


@pytest.fixture
def counts():
    rng = np.random.default_rng(0)
    X = rng.poisson(0.4, size=(40, 25)).astype(np.float64)
    X[3] = 0  # an empty document
    X[4] = 0
    X[4, 7] = 1  # a one-token document
    return sp.csr_matrix(X)


def _rowsums(M):
    return np.asarray(M.sum(axis=1)).ravel()


@pytest.mark.parametrize("split", ["partition", "word"])
def test_partition_and_word_halves_sum_to_the_document(counts, split):
    first, second = split_documents(counts, split, random_state=0)
    np.testing.assert_array_equal((first + second).toarray(), counts.toarray())
    assert first.data.min() > 0 and second.data.min() > 0


def test_partition_sizes_and_randomness(counts):
    lengths = _rowsums(counts)
    first, second = split_documents(counts, "partition", random_state=0)
    np.testing.assert_array_equal(_rowsums(first), (lengths + 1) // 2)
    np.testing.assert_array_equal(_rowsums(second), lengths // 2)
    again, _ = split_documents(counts, "partition", random_state=0)
    other, _ = split_documents(counts, "partition", random_state=1)
    np.testing.assert_array_equal(first.toarray(), again.toarray())
    assert (first != other).nnz > 0


def test_partition_is_uniform_over_tokens():
    # One document "a a a b": token "b" lands in the first half (2 of 4 slots) half the time.
    X = sp.csr_matrix(np.array([[3.0, 1.0]]))
    hits = [split_documents(X, "partition", random_state=s)[0][0, 1] for s in range(2000)]
    assert abs(np.mean(hits) - 0.5) < 0.04


def test_word_split_second_half_is_one_token(counts):
    lengths = _rowsums(counts)
    first, second = split_documents(counts, "word", random_state=0)
    np.testing.assert_array_equal(_rowsums(second), (lengths > 0).astype(float))
    np.testing.assert_array_equal(_rowsums(first), np.maximum(lengths - 1, 0))


def test_resample_draws_from_the_document(counts):
    lengths = _rowsums(counts)
    first, second = split_documents(counts, "resample", random_state=0)
    np.testing.assert_array_equal(_rowsums(first), (lengths + 1) // 2)
    np.testing.assert_array_equal(_rowsums(second), lengths // 2)
    support = counts.toarray() > 0
    assert np.all(support[first.toarray() > 0]) and np.all(support[second.toarray() > 0])
    # With replacement: a word can appear more often than in the document.
    X = sp.csr_matrix(np.ones((1, 40)))
    half, _ = split_documents(X, "resample", random_state=0)
    assert half.data.max() > 1


def test_both_mixes_the_two_strategies(counts):
    X = sp.csr_matrix(np.random.default_rng(1).poisson(2.0, size=(400, 30)).astype(float))
    first, second = split_documents(X, "both", random_state=0)
    is_partition = np.all((first + second).toarray() == X.toarray(), axis=1)
    np.testing.assert_array_equal(_rowsums(first), (_rowsums(X) + 1) // 2)
    assert 0.4 < is_partition.mean() < 0.6


def test_unknown_split_raises(counts):
    with pytest.raises(ValueError, match="split must be one of"):
        split_documents(counts, "halves")


def test_normalize_bags(counts):
    tf = normalize_bags(counts, "tf")
    sums = _rowsums(tf)
    np.testing.assert_allclose(sums[_rowsums(counts) > 0], 1.0, rtol=1e-6)
    assert sums[3] == 0
    np.testing.assert_allclose(
        normalize_bags(counts, "log1p").toarray(), np.log1p(counts.toarray()), rtol=1e-6
    )
    np.testing.assert_array_equal(normalize_bags(counts, "counts").toarray(), counts.toarray())
    with pytest.raises(ValueError, match="bag must be one of"):
        normalize_bags(counts, "binary")
