"""The spectral initialisation of a linear document encoder.

At small scores the logistic loss of Tosh et al.'s Eq. (6) is, to first order,
minus the mean score of positive pairs plus the mean score of negative pairs. For a
tied linear encoder ``f(x) = x P`` that objective is ``-tr(P' C P)`` with ``C`` the
centred, symmetrised cross-covariance of the two halves of a document,

    C = (A'B + B'A) / n - (a b' + b a'),

(``A``, ``B``: the bags of the first and second halves of the ``n`` documents,
``a``, ``b`` their column means): halves of one document against halves of two.
Its top eigenvectors are the optimum of the spectral contrastive loss of HaoChen
et al. (2021), and the starting point from which the logistic loss is then trained.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from sknce.documents._split import split_documents

__all__ = ["spectral_projection"]


def spectral_projection(
    X: sp.csr_matrix,
    n_components: int,
    split: str,
    bags: Callable[[sp.csr_matrix], sp.csr_matrix],
    rng: np.random.Generator,
    *,
    power: float = 0.5,
    oversampling: int = 20,
    n_iter: int = 4,
    max_documents: int = 50_000,
) -> np.ndarray:
    """Top eigenvectors of the cross-half covariance of a corpus, scaled by their eigenvalues.

    The eigenvectors are found by randomized subspace iteration (Halko, Martinsson
    and Tropp, 2011, Algorithm 4.4) on ``C`` applied as products with the sparse
    halves, never formed: ``n_components + oversampling`` vectors, ``n_iter`` passes.

    Parameters
    ----------
    X : csr_matrix of shape (n_documents, n_words)
        Integer word counts, every row with at least two tokens.
    n_components : int
        Number ``d`` of columns returned (at most ``n_words``).
    split : {"both", "partition", "resample", "word"}
        How each document is split into halves (one draw).
    bags : callable
        Maps a count matrix of halves to the encoder's input (e.g. term frequencies).
    rng : numpy.random.Generator
        Source of the halves, of the document sample and of the starting vectors.
    power : float, default=0.5
        Column ``j`` (eigenvalue ``w_j``) is scaled by ``(w_j / w_1) ** power``; columns
        of non-positive eigenvalues are zero.
    oversampling : int, default=20
    n_iter : int, default=4
    max_documents : int, default=50_000
        Larger corpora are estimated on this many documents drawn at random.

    Returns
    -------
    ndarray of shape (n_words, n_components), float32
    """
    n, n_words = X.shape
    if n > max_documents:
        X = X[np.sort(rng.choice(n, max_documents, replace=False))]
        n = max_documents
    first, second = split_documents(X, split, rng)
    A = sp.csr_matrix(bags(first), dtype=np.float64)
    B = sp.csr_matrix(bags(second), dtype=np.float64)
    mean_a = np.asarray(A.mean(axis=0)).ravel()
    mean_b = np.asarray(B.mean(axis=0)).ravel()
    At, Bt = A.T.tocsr(), B.T.tocsr()

    def cov(Q: np.ndarray) -> np.ndarray:
        out = (At @ (B @ Q) + Bt @ (A @ Q)) / n
        return out - (np.outer(mean_a, mean_b @ Q) + np.outer(mean_b, mean_a @ Q))

    k = min(n_components + oversampling, n_words)
    Q = np.linalg.qr(cov(rng.standard_normal((n_words, k))))[0]
    for _ in range(n_iter):
        Q = np.linalg.qr(cov(Q))[0]
    values, vectors = np.linalg.eigh(Q.T @ cov(Q))
    top = np.argsort(values)[::-1][:n_components]
    values = np.maximum(values[top], 0.0)
    P = Q @ vectors[:, top]
    if values[0] > 0:
        P *= (values / values[0]) ** power
    return P.astype(np.float32)
