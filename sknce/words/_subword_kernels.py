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

Skip-gram has a kernel of its own, :func:`sgd_subword_pairs`: fastText's
orientation (a centre word's subwords predict each of its context words) makes
consecutive pairs share their input word, whose rows are then read once and
written once per run of pairs instead of once per pair (see there).

fastText's skip-gram takes the plain mean over the word's row and its n-gram
rows; gensim's ``FastText(sg=1)`` divides their sum by the number of n-grams
alone (one fewer), a scaling of the input that these kernels do not copy.
"""

from __future__ import annotations

import numpy as np

from sknce._jit import njit
from sknce.words._kernels import _train_example

__all__ = [
    "expand_bags",
    "input_bags",
    "sgd_subword_pairs",
    "subword_table_of",
]


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


def subword_table_of(discriminator) -> tuple[np.ndarray, np.ndarray] | None:
    """The subword table of a discriminator as numpy arrays; ``None`` for a word-level one."""
    table = getattr(discriminator, "subword_table", None)
    return None if table is None else table()


def input_bags(
    discriminator, words: np.ndarray, ptr: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """A batch's input side as the kernels read it: words, or bags of subword rows.

    Parameters
    ----------
    discriminator : torch module
        With a subword table (:class:`~sknce.nn.SubwordSkipGram`), the words become
        the bags of their rows; otherwise they are returned as given.
    words : int64 array
    ptr : int64 array or None
        The bags' pointer (CBOW), ``None`` for one word per example.

    Returns
    -------
    words, ptr
        For :func:`~sknce.words._kernels.sgd_pairs` (``ptr`` None) or
        :func:`~sknce.words._kernels.sgd_cbow`.
    """
    table = subword_table_of(discriminator)
    if table is None:
        return words, ptr
    if ptr is None:
        ptr = np.arange(words.shape[0] + 1, dtype=np.int64)
    rows_ptr, rows = expand_bags(*table, words, ptr)
    return rows, rows_ptr


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_subword_pairs(
    w_in: np.ndarray,
    w_out: np.ndarray,
    table_ptr: np.ndarray,
    table_rows: np.ndarray,
    inputs: np.ndarray,
    outputs: np.ndarray,
    negatives: np.ndarray,
    neg_weights: np.ndarray,
    log_kpn: np.ndarray,
    lr_start: float,
    lr_end: float,
) -> float:
    """Skip-gram SGD steps with subword inputs, in place; return the summed loss.

    Pair ``i``'s input vector is the mean ``h`` of the rows of word ``inputs[i]``;
    its targets, scores and loss are those of
    :func:`~sknce.words._kernels.sgd_pairs`, and each of the word's rows moves by
    the whole gradient of ``h``. A run of consecutive pairs with the same input
    word reads the word's rows once: after a pair's step every row has moved by
    its gradient ``g``, so the mean has moved by ``g`` too, and ``h + g`` is the
    next pair's input; the rows are written once, by the run's summed gradient.
    This is the per-pair update exactly when the word's rows are distinct (a row
    listed twice, by a repeated n-gram or a hash collision inside the word, would
    move the mean by a little more than ``g``), and it spares a pair the reading
    and writing of its word's ~20 rows, most of a subword step's cost.

    Parameters
    ----------
    w_in : float32 array of shape (n_words + bucket, dim)
    w_out : float32 array of shape (n_words, dim)
    table_ptr, table_rows : int64 arrays
        The subword table (word ``w``'s rows are ``table_rows[table_ptr[w]:table_ptr[w + 1]]``).
    inputs, outputs : int64 arrays of shape (n_pairs,)
        Input (centre) and output (context) words.
    negatives, neg_weights, log_kpn, lr_start, lr_end
        As :func:`~sknce.words._kernels.sgd_pairs`.

    Returns
    -------
    float
    """
    n_pairs = inputs.shape[0]
    dim = w_in.shape[1]
    h = np.empty(dim, dtype=np.float32)
    grad = np.empty(dim, dtype=np.float32)
    total_grad = np.zeros(dim, dtype=np.float32)
    scratch = np.empty(negatives.shape[1] + 1, dtype=np.int64)
    gs = np.empty(negatives.shape[1] + 1, dtype=np.float32)
    total = 0.0
    i = 0
    while i < n_pairs:
        word = inputs[i]
        lo, hi = table_ptr[word], table_ptr[word + 1]
        h[:] = 0.0
        for t in range(lo, hi):
            row = w_in[table_rows[t]]
            for k in range(dim):
                h[k] += row[k]
        inv = np.float32(1.0 / max(hi - lo, 1))
        for k in range(dim):
            h[k] *= inv
            total_grad[k] = 0.0
        while i < n_pairs and inputs[i] == word:
            lr = lr_start + (lr_end - lr_start) * (i / max(n_pairs - 1, 1))
            total += _train_example(
                h, grad, w_out, outputs[i], negatives, neg_weights, i, log_kpn, lr, scratch, gs
            )
            for k in range(dim):
                h[k] += grad[k]
                total_grad[k] += grad[k]
            i += 1
        for t in range(lo, hi):
            row = w_in[table_rows[t]]
            for k in range(dim):
                row[k] += total_grad[k]
    return total
