"""Compiled CPU kernels of the subword (fastText) model of ACEWord2Vec.

With subwords, the input vector of a word is the mean of its rows
(:func:`~sknce.words._subwords.subword_table`: its own row and those of its
hashed character n-grams), and each of those rows receives the whole gradient
of the mean (fastText's ``Model::update`` for its unsupervised models, gensim's
``FastText``). An example's input side is then a bag of rows: the rows of its
input word (skip-gram), or of all its context words (CBOW, one mean over all of
them, as gensim's ``fasttext_fast_sentence_cbow_neg``). :func:`expand_bags`
turns a batch's words into those bags, and
:func:`~sknce.words._kernels.sgd_cbow`, word2vec's CBOW update of a bag's mean,
is exactly the subword update of each bag: the same SGD step, thread-safe in
the same Hogwild way.

fastText's skip-gram takes the plain mean over the word's row and its n-gram
rows; gensim's ``FastText(sg=1)`` divides their sum by the number of n-grams
alone (one fewer), a scaling of the input that these kernels do not copy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["expand_bags", "input_bags", "word_means"]


@njit(nogil=True, cache=True)
def expand_bags(
    table_ptr: np.ndarray, table_rows: np.ndarray, words: np.ndarray, ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The bags of input rows of a batch's examples.

    Parameters
    ----------
    table_ptr, table_rows : int64 arrays
        The subword table: word ``w``'s rows are
        ``table_rows[table_ptr[w]:table_ptr[w + 1]]``.
    words : int64 array
        The examples' input words, bag after bag.
    ptr : int64 array of shape (n_examples + 1,)
        Example ``i``'s words are ``words[ptr[i]:ptr[i + 1]]`` (one word each for
        skip-gram).

    Returns
    -------
    rows_ptr : int64 array of shape (n_examples + 1,)
        Example ``i``'s rows are ``rows[rows_ptr[i]:rows_ptr[i + 1]]``.
    rows : int64 array
        The rows of the words of each example, word after word.
    """
    n = ptr.shape[0] - 1
    rows_ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        size = 0
        for r in range(ptr[i], ptr[i + 1]):
            w = words[r]
            size += table_ptr[w + 1] - table_ptr[w]
        rows_ptr[i + 1] = rows_ptr[i] + size
    rows = np.empty(rows_ptr[n], dtype=np.int64)
    m = 0
    for r in range(ptr[0], ptr[n]):
        w = words[r]
        for t in range(table_ptr[w], table_ptr[w + 1]):
            rows[m] = table_rows[t]
            m += 1
    return rows_ptr, rows


@njit(nogil=True, cache=True, fastmath=True)
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


def input_bags(
    discriminator, words: np.ndarray, ptr: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """A batch's input side as the kernels read it: words, or bags of subword rows.

    Parameters
    ----------
    discriminator : torch module
        With a ``subword_table`` method (:class:`~sknce.nn.SubwordSkipGram`), the
        words become the bags of their rows; otherwise they are returned as given.
    words : int64 array
    ptr : int64 array or None
        The bags' pointer (CBOW), ``None`` for one word per example.

    Returns
    -------
    words, ptr
        For :func:`~sknce.words._kernels.sgd_pairs` (``ptr`` None) or
        :func:`~sknce.words._kernels.sgd_cbow`.
    """
    table = getattr(discriminator, "subword_table", None)
    if table is None:
        return words, ptr
    if ptr is None:
        ptr = np.arange(words.shape[0] + 1, dtype=np.int64)
    rows_ptr, rows = expand_bags(*table(), words, ptr)
    return rows, rows_ptr
