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

:func:`word_means` averages each word's rows into its vector. Everything here
is numpy, vectorised over the n-grams or the rows, so that loading and querying
:class:`~sknce.words.SubwordVectors` imports no compiler (numba costs about
60 MiB and its compiled code as much again).
"""

from __future__ import annotations

from collections.abc import Sequence

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


#: Words cut into n-grams, or averaged, at a time: a bound on the temporary arrays
#: (tens of MiB) for any vocabulary.
_WORDS_PER_CHUNK = 1 << 16


def _ngram_spans(data, starts, ends, min_n, max_n):
    """Byte spans of every n-gram of the words ``data[starts[w]:ends[w]]``, in fastText's order.

    Returns the first byte, the end byte and the word of each n-gram.
    """
    first = np.flatnonzero((data & 0xC0) != 0x80)  # the bytes that start a character
    bounds = np.append(first, data.shape[0])
    word = np.searchsorted(ends, first, side="right")
    # characters of the word from each character on
    left = np.searchsorted(first, ends[word]) - np.arange(first.shape[0])
    lengths = np.arange(min_n, max_n + 1)
    # rows: characters (so words, then first characters), columns: lengths, as fastText
    valid = lengths[None, :] <= left[:, None]
    if min_n == 1 <= max_n:  # "<" and ">" alone are no n-grams
        valid[:, 0] &= (first != starts[word]) & (left != 1)
    char, column = np.nonzero(valid)
    return first[char], bounds[char + lengths[column]], word[char]


def _fnv_buckets(data, lo, hi, bucket):
    """``ft_hash(data[lo[i]:hi[i]]) % bucket`` for every span, vectorised over the spans."""
    h = np.full(lo.shape[0], FNV_OFFSET, dtype=np.uint32)
    signed = data.astype(np.uint32)
    signed[data >= 0x80] |= np.uint32(0xFFFFFF00)  # fastText's sign-extended int8_t
    for k in range(int((hi - lo).max(initial=0))):
        live = np.flatnonzero(lo + k < hi)
        h[live] = (h[live] ^ signed[lo[live] + k]) * np.uint32(FNV_PRIME)  # wraps mod 2**32
    return h.astype(np.int64) % bucket


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
    ptr = np.zeros(len(words) + 1, dtype=np.int64)
    parts = []
    for lo in range(0, len(words), _WORDS_PER_CHUNK):
        encoded = [f"<{w}>".encode() for w in words[lo : lo + _WORDS_PER_CHUNK]]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        ends = np.cumsum(lengths)
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        first, end, word = _ngram_spans(data, ends - lengths, ends, min_n, max_n)
        parts.append(_fnv_buckets(data, first, end, bucket))
        ptr[lo + 1 : lo + 1 + len(encoded)] = np.bincount(word, minlength=len(encoded))
    np.cumsum(ptr, out=ptr)
    buckets = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
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


def word_means(
    w_vocab: np.ndarray,
    w_ngrams: np.ndarray,
    table_ptr: np.ndarray,
    table_rows: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out[w]`` = the mean of word ``w``'s rows, for every word, in place.

    Row ``r`` of the table is ``w_vocab[r]`` below ``len(w_vocab)``, else
    ``w_ngrams[r - len(w_vocab)]``; a word without rows gets zeros. Each mean is a
    sparse row of weights ``1 / n_rows`` times each table (scipy's compiled product),
    summed in the tables' float32 as fastText sums a word's rows, a bounded
    number of words at a time.
    """
    from scipy.sparse import csr_matrix

    n_vocab = w_vocab.shape[0]
    n_words = table_ptr.shape[0] - 1
    sizes = np.diff(table_ptr)
    for lo in range(0, n_words, _WORDS_PER_CHUNK):
        hi = min(lo + _WORDS_PER_CHUNK, n_words)
        rows = table_rows[table_ptr[lo] : table_ptr[hi]]
        word = np.repeat(np.arange(hi - lo), sizes[lo:hi])
        weight = (1 / np.maximum(sizes[lo:hi], 1)).astype(out.dtype)[word]
        out[lo:hi] = 0
        ngram = rows >= n_vocab
        for own, table in ((~ngram, w_vocab), (ngram, w_ngrams)):
            ptr = np.zeros(hi - lo + 1, dtype=np.int64)
            np.cumsum(np.bincount(word[own], minlength=hi - lo), out=ptr[1:])
            columns = rows[own] - (n_vocab if table is w_ngrams else 0)
            part = csr_matrix((weight[own], columns, ptr), shape=(hi - lo, len(table)))
            out[lo:hi] += part @ table
