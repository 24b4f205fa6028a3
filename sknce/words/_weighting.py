"""How ACEWord2Vec averages a document's word vectors: mean, tf-idf or SIF.

The statistics are fitted from one more pass over the training corpus and kept
on the estimator (``idf_`` and ``document_frequency_``, or ``sif_component_``);
the functions here take the estimator, whose ``weighting``, ``sif_a``,
``vocabulary_``, ``counts_`` and ``vectors_`` they read.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sknce.words._corpus import iter_documents, token_error

__all__ = ["encoded", "fit_weighting", "weighted_mean", "word_weights"]


def encoded(estimator, X) -> Iterator[np.ndarray]:
    """The in-vocabulary rows of each document of ``X``."""
    index = estimator.vocabulary_
    for i, doc in enumerate(iter_documents(X, estimator.tokenizer)):
        try:
            yield np.fromiter((index[w] for w in doc if w in index), dtype=np.int64)
        except TypeError:
            raise token_error(doc, i) from None


def fit_weighting(estimator, X, reset: bool) -> None:
    """The statistics of ``weighting``: idf (counts accumulate over partial fits) or
    SIF's principal component, from one more pass over ``X``."""
    if reset:
        for name in ("idf_", "document_frequency_", "sif_component_"):
            if hasattr(estimator, name):
                delattr(estimator, name)
    if estimator.weighting == "tfidf":
        frequency = np.zeros(len(estimator.vocabulary_), dtype=np.int64)
        n_documents = 0
        for ids in encoded(estimator, X):
            frequency[np.unique(ids)] += 1
            n_documents += 1
        if hasattr(estimator, "document_frequency_"):
            previous = estimator.document_frequency_
            frequency[: len(previous)] += previous
            n_documents += estimator.n_documents_
        estimator.document_frequency_, estimator.n_documents_ = frequency, n_documents
        # smoothed as TfidfTransformer(smooth_idf=True)
        idf = np.log((1.0 + n_documents) / (1.0 + frequency)) + 1.0
        estimator.idf_ = idf.astype(np.float32)
    elif estimator.weighting == "sif":
        weights = _sif_weights(estimator)
        dim = estimator.n_components
        moment = np.zeros((dim, dim), dtype=np.float64)
        for ids in encoded(estimator, X):
            if len(ids):
                vector = weighted_mean(estimator, ids, weights).astype(np.float64)
                moment += np.outer(vector, vector)
        # the first (uncentred) principal component, as Arora et al.'s TruncatedSVD
        component = np.linalg.eigh(moment)[1][:, -1]
        estimator.sif_component_ = component.astype(np.float32)


def word_weights(estimator) -> np.ndarray | None:
    """Each word's weight in a document's mean (``None``: all 1)."""
    if estimator.weighting == "mean":
        return None
    if estimator.weighting == "tfidf":
        _check_fitted(estimator, "idf_")
        return estimator.idf_
    _check_fitted(estimator, "sif_component_")
    return _sif_weights(estimator)


def weighted_mean(estimator, ids: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """The weighted mean of the vectors of the words ``ids`` of one document."""
    vectors = estimator.vectors_[ids]
    if weights is None:
        return vectors.mean(axis=0)
    w = weights[ids]
    if estimator.weighting == "tfidf":
        return w @ vectors / w.sum()
    return w @ vectors / len(ids)  # SIF: (1/|s|) sum a / (a + p(w)) v_w


def _sif_weights(estimator) -> np.ndarray:
    """SIF's :math:`a / (a + p(w))`, with :math:`p(w)` the word's corpus frequency."""
    frequency = estimator.counts_ / estimator.counts_.sum()
    return (estimator.sif_a / (estimator.sif_a + frequency)).astype(np.float32)


def _check_fitted(estimator, attribute: str) -> None:
    if not hasattr(estimator, attribute):
        raise ValueError(
            f"weighting={estimator.weighting!r} needs {attribute}, which fit computes for "
            "that weighting; it was fitted with another one. Fit again after "
            "set_params(weighting=...)."
        )
