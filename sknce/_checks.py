"""Checks of input and settings that would otherwise fail deep inside numpy, scipy or torch.

Pure functions: each takes what it checks and raises a ``ValueError`` or
``TypeError`` naming the problem and the fix, or returns nothing. They are
called from the few places every estimator goes through (input validation in
:func:`sknce._compat.validate_data`, the parameter checks of
:class:`~sknce._base.BaseNCE`, chunk loading), so each fault is caught once for
every estimator.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_not_a_chunk_list",
    "check_not_text",
    "check_sparse_structure",
]


def check_not_text(X) -> None:
    """A TypeError naming ``CountVectorizer`` when ``X`` is raw text rather than numbers.

    Parameters
    ----------
    X : object
        The input of an estimator that takes a numeric matrix.

    Raises
    ------
    TypeError
        If ``X`` is a string, or a 1-D sequence or array whose first item is a string.
    """
    if isinstance(X, (str, bytes)):
        first = X
    else:
        one_d = isinstance(X, np.ndarray) and X.ndim == 1
        if not (one_d or (isinstance(X, Sequence) and not hasattr(X, "shape"))) or not len(X):
            return
        first = X[0]
    if not isinstance(first, (str, bytes)):
        return
    raise TypeError(
        f"X holds raw text (e.g. {str(first)[:40]!r}), but this estimator takes a numeric "
        "matrix (rows of word counts or features). Turn the text into counts first, e.g. "
        "make_pipeline(sklearn.feature_extraction.text.CountVectorizer(), estimator); "
        "sknce.ACEWord2Vec learns from text directly."
    )


def check_not_a_chunk_list(X) -> None:
    """A ValueError naming the loop to write when ``X`` is a list of chunks, not one array.

    Parameters
    ----------
    X : object
        The input of a method that takes one array (``partial_fit``, ``transform``, ...).

    Raises
    ------
    ValueError
        If ``X`` is a list or tuple whose first item is a 2-D block (a sparse matrix or
        an array with ``ndim == 2``) or an ``(X_chunk, y_chunk)`` pair.
    """
    if not isinstance(X, (list, tuple)) or not X:
        return
    first = X[0]
    if isinstance(first, tuple) and len(first) == 2:
        first = first[0]
    if not (sp.issparse(first) or getattr(first, "ndim", None) == 2):
        return
    raise ValueError(
        f"X is a list of {len(X)} chunks (2-D blocks of rows), but this method takes one "
        "array. Pass the chunks one at a time (for chunk in chunks: "
        "estimator.partial_fit(chunk)), stack them (scipy.sparse.vstack), or pass the list "
        "to fit, which trains on a stream of chunks."
    )


def check_sparse_structure(X, name: str = "X") -> None:
    """A ValueError when a CSR or CSC matrix's index arrays are not a valid matrix.

    scipy builds such a matrix without complaint, and it fails later in C++ code
    (``vector::_M_default_append``) or gives wrong sums. Checked here: ``indptr``
    starts at 0, never decreases and ends within ``indices``; every index lies
    within the matrix.

    Parameters
    ----------
    X : object
        Checked if it is a sparse matrix or array in CSR or CSC format.
    name : str, default="X"
        The input's name in the message.

    Raises
    ------
    ValueError
        Naming what is wrong and how to rebuild the matrix.
    """
    if not sp.issparse(X) or X.format not in ("csr", "csc"):
        return
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    n_major, n_minor = X.shape if X.format == "csr" else X.shape[::-1]
    line = "row" if X.format == "csr" else "column"
    other = "column" if X.format == "csr" else "row"
    problem = None
    if indptr.ndim != 1 or len(indptr) != n_major + 1:
        problem = (
            f"indptr has {indptr.size} entries where {n_major + 1} (one per {line} + 1) are needed"
        )
    elif indptr[0] != 0:
        problem = f"indptr starts at {indptr[0]} instead of 0"
    elif len(indptr) > 1 and np.any(np.diff(indptr) < 0):
        at = int(np.argmax(np.diff(indptr) < 0))
        problem = f"indptr decreases at {line} {at} ({indptr[at]} then {indptr[at + 1]})"
    elif indptr[-1] > len(indices) or len(indices) != len(X.data):
        problem = (
            f"indptr ends at {indptr[-1]} with {len(indices)} indices and {len(X.data)} "
            "values (they must agree)"
        )
    elif indices.size:
        used = indices[: indptr[-1]]
        if used.size and (used.min() < 0 or used.max() >= n_minor):
            bad = int(used.min()) if used.min() < 0 else int(used.max())
            problem = f"it holds {other} index {bad}, outside 0..{n_minor - 1}"
    if problem is not None:
        raise ValueError(
            f"{name} is a malformed {X.format.upper()} matrix of shape {X.shape}: {problem}. "
            "Rebuild it from valid arrays (scipy.sparse.csr_matrix((data, indices, indptr), "
            "shape=...) with 0 <= indices < n_columns and a non-decreasing indptr), or "
            "rewrite the file it came from."
        )
