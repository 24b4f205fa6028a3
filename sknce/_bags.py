"""Bags of words shared by the families: canonical counts, smoothed idf, the networks' input.

The document embedders and the latent-class embedder's ``log1p-idf`` scaling
read the same representations from here.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize

__all__ = [
    "BAGS",
    "canonical",
    "document_frequencies",
    "idf_of_frequencies",
    "normalize_bags",
    "smooth_idf",
]

#: Representations of a bag of words fed to the networks.
BAGS = ("log1p-idf", "tf", "log1p", "counts")


def canonical(X) -> sp.csr_matrix:
    """``X`` as CSR with duplicate stored entries summed (a copy when they are present)."""
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def smooth_idf(X: sp.csr_matrix) -> np.ndarray:
    """Smooth inverse document frequencies, as scikit-learn's ``TfidfTransformer`` computes them.

    ``idf(w) = log((1 + n) / (1 + df(w))) + 1``, with ``n`` the number of documents
    (rows) and ``df(w)`` the number of them that contain word ``w``.

    Parameters
    ----------
    X : csr_matrix of shape (n_documents, n_words)
        Counts (canonical CSR: one stored entry per word of a row).

    Returns
    -------
    ndarray of shape (n_words,), float64
    """
    return idf_of_frequencies(document_frequencies(X), X.shape[0])


def document_frequencies(X) -> np.ndarray:
    """The number of rows of ``X`` in which each column has a positive count.

    Parameters
    ----------
    X : sparse matrix of shape (n_documents, n_words)
        Counts.

    Returns
    -------
    ndarray of shape (n_words,), int64
    """
    X = canonical(X)
    return np.bincount(X.indices[X.data > 0], minlength=X.shape[1])


def idf_of_frequencies(df: np.ndarray, n_documents: int) -> np.ndarray:
    """:func:`smooth_idf` from document frequencies ``df`` over ``n_documents`` rows
    (e.g. summed over the chunks of a stream).

    Parameters
    ----------
    df : ndarray of shape (n_words,)
    n_documents : int

    Returns
    -------
    ndarray of shape (n_words,), float64
    """
    return np.log((1.0 + n_documents) / (1.0 + np.asarray(df, dtype=np.float64))) + 1.0


def normalize_bags(X: sp.csr_matrix, bag: str, idf: np.ndarray | None = None) -> sp.csr_matrix:
    """The representation of bags of words fed to the networks.

    Parameters
    ----------
    X : csr_matrix of shape (n_documents, n_words)
        Counts.
    bag : {"log1p-idf", "tf", "log1p", "counts"}
        ``"log1p-idf"``: ``log(1 + count) * idf``, each row scaled to unit Euclidean
        norm (an empty row stays zero); ``"tf"``: term frequencies (each row divided
        by its sum; an empty row stays zero); ``"log1p"``: ``log(1 + count)``;
        ``"counts"``: raw counts.
    idf : ndarray of shape (n_words,) or None, default=None
        Inverse document frequencies (:func:`smooth_idf`); needed by ``"log1p-idf"``.

    Returns
    -------
    csr_matrix of float32
    """
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    X.sum_duplicates()  # log1p of a word's summed count, not of each stored part
    if bag == "tf":
        sums = np.asarray(X.sum(axis=1)).ravel()
        scale = np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)
        X.data *= np.repeat(scale, np.diff(X.indptr)).astype(np.float32)
    elif bag == "log1p":
        np.log1p(X.data, out=X.data)
    elif bag == "log1p-idf":
        if idf is None or len(idf) != X.shape[1]:
            raise ValueError(
                f"bag='log1p-idf' needs the inverse document frequencies of the "
                f"{X.shape[1]} words (idf of shape ({X.shape[1]},))."
            )
        np.log1p(X.data, out=X.data)
        X.data *= np.asarray(idf, dtype=np.float32)[X.indices]
        X = normalize(X, copy=False)
    elif bag != "counts":
        raise ValueError(f"bag must be one of {BAGS}, got {bag!r}.")
    return X
