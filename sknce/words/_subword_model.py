"""ACEWord2Vec's subword model: its discriminator and its vectors.

With ``subwords=True`` the discriminator is a :class:`~sknce.nn.SubwordSkipGram`
over the vocabulary's subword table, and the estimator's ``wv_`` is a
:class:`~sknce.words.SubwordVectors` viewing its input rows (on the CPU), so that
training moves them in place; :func:`sync_subword_vectors` renews the word
vectors (the means) from them.
"""

from __future__ import annotations

import numpy as np

from sknce.nn import SubwordSkipGram
from sknce.words._subword_vectors import SubwordVectors
from sknce.words._subwords import subword_table

__all__ = ["subword_discriminator", "subword_vectors", "sync_subword_vectors"]


def subword_discriminator(
    words: list[str], dim: int, min_n: int, max_n: int, bucket: int
) -> SubwordSkipGram:
    """A subword discriminator for a vocabulary: its rows and its table.

    Parameters
    ----------
    words : list of str
    dim : int
    min_n, max_n, bucket : int
        fastText's ``minn``, ``maxn``, ``bucket``.

    Returns
    -------
    SubwordSkipGram
    """
    ptr, rows = subword_table(words, min_n, max_n, bucket)
    return SubwordSkipGram(len(words), dim, ptr, rows, len(words) + bucket)


def _host(weight) -> np.ndarray:
    weight = weight.detach()
    return weight.numpy() if weight.device.type == "cpu" else weight.cpu().numpy()


def subword_vectors(
    words: list[str], counts: np.ndarray, discriminator: SubwordSkipGram, min_n: int, max_n: int
) -> SubwordVectors:
    """The vectors of a subword discriminator (views of its rows on the CPU).

    Parameters
    ----------
    words : list of str
    counts : ndarray
    discriminator : SubwordSkipGram
    min_n, max_n : int

    Returns
    -------
    SubwordVectors
    """
    host = _host(discriminator.input_embeddings.weight)
    n = len(words)
    return SubwordVectors(words, host[:n], host[n:], min_n=min_n, max_n=max_n, counts=counts)


def sync_subword_vectors(wv: SubwordVectors, discriminator: SubwordSkipGram) -> None:
    """Make ``wv`` the vectors of the discriminator's current rows.

    On the CPU ``wv`` views the rows (re-pointed if the parameters were replaced,
    e.g. after unpickling); from another device they are copied. Then the word
    vectors are recomputed in place (``wv.vectors`` stays the same array).

    Parameters
    ----------
    wv : SubwordVectors
    discriminator : SubwordSkipGram
    """
    host = _host(discriminator.input_embeddings.weight)
    if not np.may_share_memory(host, wv.vectors_vocab):
        n = len(wv)
        wv.vectors_vocab, wv.vectors_ngrams = host[:n], host[n:]
    wv.adjust_vectors()
