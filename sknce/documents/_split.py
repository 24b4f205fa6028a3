"""Splitting documents into two halves, the contrastive task of Tosh et al. (2021).

Every function works on a whole batch of documents at once: a CSR matrix of
integer counts is expanded into its tokens (one entry per word occurrence,
grouped by document), the tokens are assigned to halves with vectorised NumPy
operations, and the halves are packed back into two CSR matrices.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sknce._bags import BAGS, normalize_bags, smooth_idf
from sknce._bags import canonical as _canonical

__all__ = ["BAGS", "SPLITS", "normalize_bags", "smooth_idf", "split_documents"]

#: The splitting strategies of Tosh et al. (2021), Sections 6.2 and 7.2.
SPLITS = ("both", "partition", "resample", "word")

#: Most tokens split in one call: a block of documents is expanded into its tokens, and
#: counts this large are not word counts (a corpus of 10^9 tokens is split batch by batch).
_MAX_TOKENS = 10**9


def _tokens(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Expand integer counts into tokens.

    Returns ``(tokens, doc, lengths, starts)``: the word id and document of every
    token (tokens of one document are contiguous), each document's length and the
    position of its first token.
    """
    counts = X.data.astype(np.int64)
    row_of_entry = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    tokens = np.repeat(X.indices.astype(np.int64), counts)
    doc = np.repeat(row_of_entry, counts)
    lengths = np.bincount(doc, minlength=X.shape[0]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return tokens, doc, lengths, starts


def _pack(doc: np.ndarray, tokens: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """Bag the tokens of each document into a CSR count matrix (duplicates summed)."""
    ones = np.ones(tokens.shape[0], dtype=np.float32)
    out = sp.csr_matrix((ones, (doc, tokens)), shape=shape)
    out.sum_duplicates()
    return out


def _partition(tokens, doc, lengths, starts, rng, shape):
    """A uniformly random partition: ceil(m/2) tokens to the first half, the rest to the second."""
    order = np.lexsort((rng.random(tokens.shape[0]), doc))
    rank = np.arange(tokens.shape[0]) - starts[doc]  # doc is sorted, so rank within doc
    first = rank < (lengths[doc] + 1) // 2
    shuffled = tokens[order]
    return _pack(doc[first], shuffled[first], shape), _pack(doc[~first], shuffled[~first], shape)


def _resample(tokens, doc, lengths, starts, rng, shape):
    """Two bags of ceil(m/2) and floor(m/2) tokens drawn with replacement from the document."""
    halves = []
    for size in ((lengths + 1) // 2, lengths // 2):
        owner = np.repeat(np.arange(shape[0]), size)
        position = starts[owner] + (rng.random(owner.shape[0]) * lengths[owner]).astype(np.int64)
        halves.append(_pack(owner, tokens[position], shape))
    return halves[0], halves[1]


def _word(tokens, doc, lengths, starts, rng, shape):
    """The second half is one random token of the document, the first half the rest."""
    has = lengths > 0
    rows = np.flatnonzero(has)
    picked = starts[rows] + (rng.random(rows.shape[0]) * lengths[rows]).astype(np.int64)
    keep = np.ones(tokens.shape[0], dtype=bool)
    keep[picked] = False
    return _pack(doc[keep], tokens[keep], shape), _pack(rows, tokens[picked], shape)


_STRATEGIES = {"partition": _partition, "resample": _resample, "word": _word}


def split_documents(
    X: sp.csr_matrix, split: str = "both", random_state=None
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split each document of a count matrix into two halves.

    Parameters
    ----------
    X : sparse matrix of shape (n_documents, n_words)
        Non-negative integer word counts (CSR or convertible to CSR).
    split : {"both", "partition", "resample", "word"}, default="both"
        ``"partition"``: a uniformly random partition of the document's tokens
        into halves of ``ceil(m/2)`` and ``floor(m/2)`` tokens (sampling without
        replacement); ``"resample"``: two bags of those sizes drawn with
        replacement from the document's empirical word distribution; ``"both"``:
        each document uses one of the two with probability 1/2 (Tosh et al.,
        Section 7.2); ``"word"``: the second half is a single random token and
        the first half the rest (Section 6.2).
    random_state : int, numpy Generator or None, default=None
        Source of the random partitions, draws and single tokens; an int makes the
        halves reproducible.

    Returns
    -------
    first, second : csr_matrix of shape (n_documents, n_words), float32
        The two halves. For ``"partition"`` and ``"word"``, ``first + second == X``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    rng = np.random.default_rng(random_state)
    X = _canonical(X)
    data = X.data
    if data.size and (np.any(data < 0) or not np.all(np.equal(np.mod(data, 1), 0))):
        raise ValueError(
            "split_documents splits documents into their tokens, so X must hold "
            "non-negative integer word counts (e.g. CountVectorizer's output); it has "
            "negative or non-integer values."
        )
    if data.sum() > _MAX_TOKENS:
        raise ValueError(
            f"X holds {data.sum():.3g} tokens in {X.shape[0]} documents, more than the "
            f"{_MAX_TOKENS:.0e} a call expands into tokens: these are not word counts, or "
            "split fewer documents at a time."
        )
    shape = X.shape
    tokens, doc, lengths, starts = _tokens(X)
    if split != "both":
        return _STRATEGIES[split](tokens, doc, lengths, starts, rng, shape)
    first_p, second_p = _partition(tokens, doc, lengths, starts, rng, shape)
    first_r, second_r = _resample(tokens, doc, lengths, starts, rng, shape)
    use_partition = sp.diags((rng.random(shape[0]) < 0.5).astype(np.float32))
    use_resample = sp.diags(np.float32(1) - use_partition.diagonal())
    first = (use_partition @ first_p + use_resample @ first_r).tocsr()
    second = (use_partition @ second_p + use_resample @ second_r).tocsr()
    first.eliminate_zeros()
    second.eliminate_zeros()
    return first, second
