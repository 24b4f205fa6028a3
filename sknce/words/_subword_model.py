"""ACEWord2Vec's subword model: its discriminator, its kernel step and its vectors.

With ``subwords=True`` the discriminator is a :class:`~sknce.nn.SubwordSkipGram`
over the vocabulary's subword table, trained on the CPU with plain SGD by
:class:`SubwordKernelStep`, and the estimator's ``wv_`` is a
:class:`~sknce.words.SubwordVectors` viewing its input rows (on the CPU), so that
training moves them in place; :func:`sync_subword_vectors` renews the word
vectors (the means) from them.
"""

from __future__ import annotations

import os

import numpy as np

from sknce.nn import SubwordSkipGram
from sknce.words._net import ACEKernelStep
from sknce.words._subword_kernels import input_bags, sgd_subword_pairs, subword_table_of
from sknce.words._subword_vectors import SubwordVectors
from sknce.words._subwords import subword_table

__all__ = [
    "MAX_AMPLIFICATION",
    "SubwordKernelStep",
    "amplification",
    "check_amplification",
    "check_subword_memory",
    "renew_subword_noise",
    "subword_discriminator",
    "subword_vectors",
    "sync_subword_vectors",
]


class SubwordKernelStep(ACEKernelStep):
    """ACE's kernel step for a subword discriminator (NCE and ACE alike).

    Skip-gram pairs are trained in fastText's orientation, the centre word's subwords
    predicting each context word (the sampler gives word2vec's, the context word
    predicting the centre word), so that the pairs of one centre word share their
    input and :func:`~sknce.words._subword_kernels.sgd_subword_pairs` reads its rows
    once; the generator then proposes negatives given the centre word. A CBOW
    example's bag becomes the rows of all its context words, trained by
    :func:`~sknce.words._kernels.sgd_cbow`. The rewards of ACE's samples score the
    discriminator's subword inputs.
    """

    def prepare(self, net, inputs: dict, targets):
        if "offsets" not in inputs:
            inputs = {**inputs, "words": inputs["positives"], "positives": inputs["words"]}
        state = super().prepare(net, inputs, targets)
        state.subword_table = subword_table_of(net.module_.discriminator)
        if state.ptr is not None:
            state.words, state.ptr = self.input_side(net, state)
        return state

    def input_side(self, net, state):
        return input_bags(net.module_.discriminator, state.words, state.ptr)

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        if state.ptr is not None:
            return super().kernel(net, state, lo, hi, lr)
        weights = state.weights[lo:hi] if state.weights.shape[0] else state.weights
        return sgd_subword_pairs(
            state.w_in,
            state.w_out,
            *state.subword_table,
            state.words[lo:hi],
            state.positives[lo:hi],
            state.negatives[lo:hi],
            weights,
            state.log_kpn,
            lr,
            lr,
        )


#: Largest factor by which one SGD step may move a word's input vector more than a
#: plain word2vec step (see :func:`check_amplification`): in gensim's Lee corpus a token
#: of 400 "x" (394) made skip-gram's first epoch drift, one of 800 (794) destabilised it,
#: one of 3000 made it diverge; its words reach 1.17 (benchmarks/README.md).
MAX_AMPLIFICATION = 100.0


def amplification(rows: np.ndarray) -> float:
    """How many times farther a step moves the mean of ``rows`` than one row's step.

    fastText adds the gradient of a word's input vector (the mean of its rows) to
    each of its rows once per occurrence: a row listed ``m`` times moves ``m`` times,
    and the mean moves ``sum(m**2) / len(rows)`` times the gradient (1 when no row
    repeats).

    Parameters
    ----------
    rows : int array
        A word's rows, repeats included.

    Returns
    -------
    float
    """
    _, counts = np.unique(rows, return_counts=True)
    return float(np.dot(counts, counts)) / max(len(rows), 1)


def check_amplification(words: list[str], ptr: np.ndarray, rows: np.ndarray) -> None:
    """Raise a ValueError naming the tokens whose repeated n-grams make a fit diverge.

    A word's amplification (:func:`amplification`) is at most its number of rows
    divided by its number of distinct rows, at most its largest multiplicity, so
    only words with more than ``MAX_AMPLIFICATION`` rows are measured.

    Parameters
    ----------
    words : list of str
    ptr, rows : int64 arrays
        The subword table (:func:`~sknce.words._subwords.subword_table`).
    """
    sizes = np.diff(ptr)
    worst = []
    for w in np.flatnonzero(sizes > MAX_AMPLIFICATION):
        factor = amplification(rows[ptr[w] : ptr[w + 1]])
        if factor > MAX_AMPLIFICATION:
            worst.append((factor, words[w]))
    if not worst:
        return
    factor, word = max(worst)
    others = f" ({len(worst) - 1} more tokens like it)" if len(worst) > 1 else ""
    raise ValueError(
        f"with subwords=True the token {word[:20]!r}... ({len(word)} characters){others} "
        "repeats its character n-grams: fastText's update moves each n-gram row once per "
        f"occurrence, so one step moves this word's vector {factor:.0f} times as far as a "
        "plain word's, and the fit diverges whatever lr. Drop or shorten such tokens "
        "before fitting (e.g. a trim_rule returning sknce.words.RULE_DISCARD for words "
        "longer than 100 characters, as word2vec.c cuts them), or lower max_n."
    )


def check_subword_memory(bucket: int, dim: int) -> None:
    """Raise a ValueError naming ``bucket`` if its rows cannot fit in this machine's memory.

    Checked before the corpus is read, so that ``bucket=2**31`` is an error naming
    it rather than an ``OSError`` of the allocation after a long scan.

    Parameters
    ----------
    bucket : int
    dim : int
        ``n_components``.
    """
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): not checked
        return
    needed = bucket * dim * 4
    if memory > 0 and needed > memory:
        default = 2_000_000 * dim * 4
        raise ValueError(
            f"bucket={bucket} n-gram rows of n_components={dim} float32 values need "
            f"{needed / 2**30:.1f} GiB, more than this machine's {memory / 2**30:.1f} GiB of "
            f"memory. Lower bucket (fastText's default 2000000 needs {default / 2**20:.0f} MiB "
            "here; fewer rows share more n-grams) or n_components."
        )


def subword_discriminator(
    words: list[str], dim: int, min_n: int, max_n: int, bucket: int
) -> SubwordSkipGram:
    """A subword discriminator for a vocabulary: its rows and its table.

    Raises the errors of :func:`check_subword_memory` and
    :func:`check_amplification` before the rows are allocated.

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
    check_subword_memory(bucket, dim)
    ptr, rows = subword_table(words, min_n, max_n, bucket)
    check_amplification(words, ptr, rows)
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


def renew_subword_noise(net, n_words: int, n_grown: int, noise):
    """Take the noise of updated counts; return the function that undoes it.

    A subword network cannot take new words (its n-gram rows follow the word rows):
    ``n_grown > n_words`` is an error naming the way out.
    """
    if n_grown > n_words:
        raise ValueError(
            f"partial_fit(update_vocabulary=True) found {n_grown - n_words} new words, and a "
            "subword model (subwords=True) cannot add words: its n-gram rows follow the word "
            "rows. Their vectors come from their n-grams already (wv_[word]); call "
            "partial_fit without update_vocabulary, or fit again."
        )
    old_noise = net.noise
    net.set_noise(noise)
    return lambda: net.set_noise(old_noise)
