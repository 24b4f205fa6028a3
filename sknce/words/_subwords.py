"""fastText's character n-grams of a word and their hashed rows.

A word ``w`` is represented by its own row and the rows of the character
n-grams of ``<w>`` (``<`` and ``>`` mark its boundaries), for ``n`` from
``min_n`` to ``max_n``, each n-gram hashed into one of ``bucket`` rows
(Bojanowski et al., 2017). Everything here reproduces fastText's
``Dictionary::computeSubwords`` and ``Dictionary::hash`` (``dictionary.cc``)
bit for bit, as gensim's ``compute_ngrams_bytes`` and ``ft_hash_bytes`` do:

* n-grams are cut from the UTF-8 bytes of ``<w>`` at character boundaries (a
  continuation byte ``10xxxxxx`` never starts an n-gram) and ``n`` counts
  characters; the one-character n-grams ``<`` and ``>`` are never produced;
* the hash is 32-bit FNV-1a over those bytes, each byte sign-extended first
  (fastText reads them as ``int8_t``; bytes ``>= 0x80`` hash differently from
  the textbook FNV-1a);
* the n-grams of a word come in order of their first character, then of their
  length, and a repeated n-gram keeps each of its occurrences (its row counts
  twice in the mean, as in fastText).

:func:`word_means` averages each word's rows into its vector. The compiled
functions here are compiled (or loaded from numba's cache) on their first call,
so that importing :class:`~sknce.words.SubwordVectors` does not import numba;
they are called from Python, never from another compiled function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "AUTO_BUCKET_MAX",
    "AUTO_ROWS_PER_NGRAM",
    "FNV_OFFSET",
    "FNV_PRIME",
    "auto_bucket",
    "ft_hash",
    "ngram_buckets",
    "ngrams",
    "subword_table",
    "word_means",
]

#: 32-bit FNV-1a's offset basis and prime (fastText's ``Dictionary::hash``).
FNV_OFFSET = 2166136261
FNV_PRIME = 16777619
#: ``bucket="auto"``: this many rows per distinct n-gram of the vocabulary (about one
#: n-gram in 9 then shares its row with another, ``1 - exp(-1/8)``), at most fastText's
#: and gensim's default.
AUTO_ROWS_PER_NGRAM = 8
AUTO_BUCKET_MAX = 2_000_000


def ft_hash(data: bytes) -> int:
    """fastText's hash of a byte string: FNV-1a over its sign-extended bytes.

    Parameters
    ----------
    data : bytes
        Usually the UTF-8 bytes of an n-gram.

    Returns
    -------
    int
        In ``[0, 2**32)``.
    """
    h = FNV_OFFSET
    for byte in data:
        # fastText: h ^= uint32_t(int8_t(c)), a sign-extended byte
        h ^= byte | 0xFFFFFF00 if byte >= 0x80 else byte
        h = (h * FNV_PRIME) & 0xFFFFFFFF
    return h


def ngrams(word: str, min_n: int, max_n: int) -> list[bytes]:
    """The character n-grams of ``<word>`` as fastText cuts them, in its order.

    Parameters
    ----------
    word : str
        The word, without boundary marks.
    min_n, max_n : int
        Shortest and longest n-gram, in characters.

    Returns
    -------
    list of bytes
        The UTF-8 bytes of each n-gram.
    """
    data = f"<{word}>".encode()
    out = []
    size = len(data)
    for i in range(size):
        if data[i] & 0xC0 == 0x80:
            continue
        j, n = i, 1
        while j < size and n <= max_n:
            j += 1
            while j < size and data[j] & 0xC0 == 0x80:
                j += 1
            if n >= min_n and not (n == 1 and (i == 0 or j == size)):
                out.append(data[i:j])
            n += 1
    return out


def _njit_on_first_call(**options) -> Callable:
    """numba's ``njit(**options)``, applied when the function is first called.

    These kernels serve :class:`~sknce.words.SubwordVectors`, which are loaded
    and queried without the trainer: importing numba costs about 125 MiB and
    half a second, paid here only by the first table or mean computed.
    """

    def decorate(function: Callable) -> Callable:
        @functools.cache
        def compiled() -> Callable:
            from numba import njit

            return njit(**options)(function)

        @functools.wraps(function)
        def call(*args):
            return compiled()(*args)

        return call

    return decorate


_PRIME64 = np.uint64(FNV_PRIME)
_LOW32 = np.uint64(0xFFFFFFFF)


@_njit_on_first_call(nogil=True, cache=True)
def _hash_ngrams(data, starts, ends, min_n, max_n, bucket, counts_only, out):
    """Bucket of every n-gram of every word, words given as ``data[starts[w]:ends[w]]``.

    With ``counts_only`` returns the number of n-grams of each word; otherwise
    writes the buckets, word after word, into ``out`` and returns the counts.
    """
    n_words = starts.shape[0]
    counts = np.zeros(n_words, dtype=np.int64)
    m = 0
    for w in range(n_words):
        lo, hi = starts[w], ends[w]
        for i in range(lo, hi):
            if data[i] & 0xC0 == 0x80:
                continue
            j, n = i, 1
            h = np.uint32(FNV_OFFSET)
            while j < hi and n <= max_n:
                # extend the n-gram by one character, hashing its bytes as they come
                while True:
                    byte = np.int64(data[j])
                    if byte >= 0x80:
                        byte |= 0xFFFFFF00
                    h = np.uint32((np.uint64(h ^ np.uint32(byte)) * _PRIME64) & _LOW32)
                    j += 1
                    if j >= hi or data[j] & 0xC0 != 0x80:
                        break
                if n >= min_n and not (n == 1 and (i == lo or j == hi)):
                    if not counts_only:
                        out[m] = np.int64(h) % bucket
                    m += 1
                    counts[w] += 1
                n += 1
    return counts


def ngram_buckets(words: Sequence[str], min_n: int, max_n: int, bucket: int):
    """The bucket of each n-gram of each word, as a CSR pair.

    Parameters
    ----------
    words : sequence of str
    min_n, max_n : int
        Shortest and longest n-gram, in characters.
    bucket : int
        Number of hashed rows (at least 1).

    Returns
    -------
    ptr : int64 array of shape (len(words) + 1,)
        Word ``i``'s buckets are ``buckets[ptr[i]:ptr[i + 1]]``.
    buckets : int64 array
        ``ft_hash(ngram) % bucket`` of each n-gram, in :func:`ngrams`' order.
    """
    encoded = [f"<{w}>".encode() for w in words]
    lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    empty = np.empty(0, dtype=np.int64)
    counts = _hash_ngrams(data, starts, ends, min_n, max_n, bucket, True, empty)
    ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    buckets = np.empty(ptr[-1], dtype=np.int64)
    _hash_ngrams(data, starts, ends, min_n, max_n, bucket, False, buckets)
    return ptr, buckets


def subword_table(words: Sequence[str], min_n: int, max_n: int, bucket: int):
    """Each word's rows in a matrix of ``len(words) + bucket`` input vectors.

    Word ``i``'s rows are ``i`` itself, then ``len(words) + b`` for the bucket
    ``b`` of each of its n-grams (fastText's ``Dictionary::getSubwords``: the
    word's id first, its n-grams' rows after the ``nwords`` word rows).

    Parameters
    ----------
    words : sequence of str
    min_n, max_n : int
    bucket : int
        ``0`` gives each word its own row alone (no n-grams).

    Returns
    -------
    ptr : int64 array of shape (len(words) + 1,)
    rows : int64 array
        Word ``i``'s rows are ``rows[ptr[i]:ptr[i + 1]]``.
    """
    n_words = len(words)
    if bucket == 0 or max_n < min_n:
        return np.arange(n_words + 1, dtype=np.int64), np.arange(n_words, dtype=np.int64)
    ptr, buckets = ngram_buckets(words, min_n, max_n, bucket)
    sizes = np.diff(ptr) + 1
    table_ptr = np.zeros(n_words + 1, dtype=np.int64)
    np.cumsum(sizes, out=table_ptr[1:])
    rows = np.empty(table_ptr[-1], dtype=np.int64)
    rows[table_ptr[:-1]] = np.arange(n_words)
    mask = np.ones(rows.shape[0], dtype=bool)
    mask[table_ptr[:-1]] = False
    rows[mask] = buckets + n_words
    return table_ptr, rows


def auto_bucket(words: Sequence[str], min_n: int, max_n: int) -> int:
    """The number of n-gram rows ``bucket="auto"`` gives a vocabulary.

    :data:`AUTO_ROWS_PER_NGRAM` rows per distinct n-gram of the words (told apart
    by their 32-bit hashes), at most :data:`AUTO_BUCKET_MAX`; 0 without n-grams.
    fastText's 2,000,000 rows are made for vocabularies of millions of n-grams:
    a smaller one trains a few percent of them, and the rest only hold memory
    (763 MiB at 100 dimensions).

    Parameters
    ----------
    words : sequence of str
    min_n, max_n : int

    Returns
    -------
    int
    """
    if max_n < min_n or not len(words):
        return 0
    hashes = ngram_buckets(words, min_n, max_n, 1 << 32)[1]
    return min(AUTO_BUCKET_MAX, AUTO_ROWS_PER_NGRAM * int(np.unique(hashes).shape[0]))


@_njit_on_first_call(nogil=True, cache=True, fastmath=True)
def word_means(
    w_vocab: np.ndarray,
    w_ngrams: np.ndarray,
    table_ptr: np.ndarray,
    table_rows: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[w]`` = the mean of word ``w``'s rows, for every word, in place.

    Row ``r`` of the table is ``w_vocab[r]`` below ``len(w_vocab)``, else
    ``w_ngrams[r - len(w_vocab)]``. Summed in float64.
    """
    dim = w_vocab.shape[1]
    n_words = w_vocab.shape[0]
    acc = np.empty(dim, dtype=np.float64)
    for w in range(table_ptr.shape[0] - 1):
        lo, hi = table_ptr[w], table_ptr[w + 1]
        acc[:] = 0.0
        for t in range(lo, hi):
            r = table_rows[t]
            row = w_vocab[r] if r < n_words else w_ngrams[r - n_words]
            for k in range(dim):
                acc[k] += row[k]
        inv = 1.0 / max(hi - lo, 1)
        for k in range(dim):
            out[w, k] = acc[k] * inv
