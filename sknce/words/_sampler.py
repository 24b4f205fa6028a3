"""The sampler of ACEWord2Vec: examples of a corpus and their negatives.

:class:`WordSampler` turns a pass over a corpus into batches of examples: the
(centre, context) pairs of skip-gram (:func:`~sknce.words._corpus.pair_batches`)
or the (context words, centre) examples of CBOW
(:func:`~sknce.words._corpus.cbow_batches`), with subsampling and windows as
word2vec, ``K`` negatives per example drawn from the unigram noise and, in
adversarial epochs, the random draws of the generator's samples
(:class:`~sknce.words._generator.AdversarialDraws`; the training step fills those
slots from the current generator). :class:`CorpusDataset` is a corpus (or its
training or validation documents) as the training engine's dataset.

All draws of a batch come from the epoch's numpy Generator: it seeds the
compiled alias sampler (:func:`~sknce.words._kernels.sample_alias`), faster than
torch's ``randint``/``rand``/gather over the same tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch

from sknce._data import Batch, process_stream, to_device
from sknce.noise import CategoricalNoise, alias_tables
from sknce.words._corpus import Vocabulary, cbow_batches, pair_batches
from sknce.words._generator import AdversarialDraws
from sknce.words._kernels import sample_alias, sample_uniform

__all__ = ["CorpusDataset", "WordSampler", "draw_adversarial"]

_SEED_HIGH = 2**63 - 1


def draw_adversarial(
    noise: CategoricalNoise,
    n_examples: int,
    n_negatives: int,
    noise_mixture: float,
    n_candidates: int,
    rng: np.random.Generator,
    tables: tuple[np.ndarray, np.ndarray] | None = None,
) -> AdversarialDraws:
    """The random draws of a batch's generator samples.

    Each of the ``n_examples x n_negatives`` slots is the generator's with
    probability ``1 - noise_mixture``; the batch shares ``n_candidates`` words
    drawn from ``noise``; each generator slot gets a uniform number for its
    inverse-CDF draw.

    Parameters
    ----------
    noise : CategoricalNoise
    n_examples, n_negatives, n_candidates : int
    noise_mixture : float
    rng : numpy.random.Generator
    tables : (accept, alias) or None, default=None
        The noise's alias tables (computed when ``None``).
    """
    accept, alias = tables if tables is not None else alias_tables(noise.probs)
    seeds = rng.integers(_SEED_HIGH, size=3)
    coins = sample_uniform(n_examples * n_negatives, seeds[0])
    from_generator = (coins >= noise_mixture).reshape(n_examples, n_negatives)
    candidates = sample_alias(accept, alias, 1, n_candidates, seeds[1]).reshape(-1)
    uniforms = sample_uniform(int(from_generator.sum()), seeds[2])
    return AdversarialDraws(
        torch.from_numpy(from_generator),
        torch.from_numpy(candidates),
        torch.from_numpy(uniforms),
        np.nonzero(from_generator),
    )


class WordSampler:
    """Batches of word2vec examples with their negatives, from one pass over a corpus.

    An example has input words and one true output word: skip-gram's example is a
    (centre, context) pair whose input is the context word and output the centre
    word, the orientation in which word2vec.c and gensim train it; CBOW's is a
    centre word with its context words (input: the context words, output: the
    centre word). A
    batch's inputs are the keyword arguments of :class:`~sknce.nn.ACESkipGram`:
    ``words`` (and, for CBOW, the bags' ``offsets``), ``positives``, ``negatives``.

    Parameters
    ----------
    vocab : Vocabulary
    tokenizer : callable or None
        Splits string documents.
    window : int
    sample : float
        Subsampling threshold (0: none).
    noise : CategoricalNoise
        The unigram noise :math:`p_N`.
    n_negatives : int
    noise_mixture : float
        Probability that a negative of an adversarial epoch comes from :math:`p_N`.
    n_candidates : int
        Size of an adversarial batch's shared candidate set.
    device : str
    architecture : {"skipgram", "cbow"}, default="skipgram"
    shrink_windows : bool, default=True
        word2vec's dynamic window (see :func:`~sknce.words._corpus.pair_batches`).
    """

    def __init__(
        self,
        vocab: Vocabulary,
        tokenizer: Callable[[str], Sequence[str]] | None,
        window: int,
        sample: float,
        noise: CategoricalNoise,
        n_negatives: int,
        noise_mixture: float,
        n_candidates: int,
        device: str,
        architecture: str = "skipgram",
        shrink_windows: bool = True,
    ) -> None:
        self.vocab = vocab
        self.tokenizer = tokenizer
        self.window = window
        self.sample = sample
        self.noise = noise
        self.n_negatives = n_negatives
        self.noise_mixture = noise_mixture
        self.n_candidates = n_candidates
        self.device = device
        self.architecture = architecture
        self.shrink_windows = shrink_windows
        self._tables = alias_tables(noise.probs)

    def batches(
        self,
        documents: Iterable,
        batch_size: int,
        rng: np.random.Generator,
        adversarial: bool = False,
        targets: bool = True,
    ) -> Iterator[Batch]:
        """One pass over ``documents`` in batches of ``batch_size`` examples.

        ``targets=False`` leaves out what only the autograd objective reads (the
        noise log-probabilities and the accidental-hit mask): the compiled kernel
        computes them itself.
        """
        options = dict(
            window=self.window,
            sample=self.sample,
            batch_size=batch_size,
            rng=rng,
            shrink_windows=self.shrink_windows,
        )
        if self.architecture == "cbow":
            for ptr, contexts, centres in cbow_batches(
                documents, self.tokenizer, self.vocab, **options
            ):
                yield self.batch(
                    contexts, centres, rng, ptr=ptr, adversarial=adversarial, targets=targets
                )
        else:
            # word2vec.c and gensim train a pair as the context word's input vector
            # predicting the centre word: a centre word's consecutive pairs share its
            # output row and move each neighbour's input vector once. The pairs are
            # those of the other orientation in distribution (windows are symmetric),
            # the SGD path is word2vec's (screen in benchmarks/README.md, ACEWord2Vec).
            for centres, contexts in pair_batches(
                documents, self.tokenizer, self.vocab, **options
            ):
                yield self.batch(contexts, centres, rng, adversarial=adversarial, targets=targets)

    def batch(
        self,
        words: np.ndarray,
        positives: np.ndarray,
        rng: np.random.Generator,
        ptr: np.ndarray | None = None,
        adversarial: bool = False,
        targets: bool = True,
    ) -> Batch:
        """The batch of the given examples: their noise negatives and the objective's targets.

        Parameters
        ----------
        words : int64 array
            Input words: one per example (skip-gram), or the bags' words (CBOW).
        positives : int64 array of shape (n_examples,)
        rng : numpy.random.Generator
        ptr : int64 array of shape (n_examples + 1,) or None, default=None
            The bags' pointer (CBOW).
        adversarial : bool, default=False
            Also draw the generator's slots (:func:`draw_adversarial`).
        targets : bool, default=True
        """
        noise, k, device = self.noise, self.n_negatives, self.device
        size = positives.shape[0]
        accept, alias = self._tables
        # The noise negatives are drawn in every epoch, so that the draws of the
        # windows and negatives of an ACE fit's epochs are those of an NCE fit.
        negatives = torch.from_numpy(
            sample_alias(accept, alias, size, k, rng.integers(_SEED_HIGH))
        )
        positives_t = torch.from_numpy(positives)
        inputs = {
            "words": to_device(words, device),
            "positives": to_device(positives_t, device),
            "negatives": to_device(negatives, device),
        }
        if ptr is not None:
            inputs["offsets"] = to_device(ptr[:-1], device)
        if adversarial:
            inputs["adversarial"] = draw_adversarial(
                noise, size, k, self.noise_mixture, self.n_candidates, rng, self._tables
            )
        batch_targets = None
        if targets:
            batch_targets = {
                "pos_log_noise": to_device(noise.log_prob(positives_t.to(noise.device)), device),
                "neg_log_noise": to_device(noise.log_prob(negatives.to(noise.device)), device),
                "neg_mask": to_device(negatives != positives_t.unsqueeze(1), device),
            }
        return Batch(inputs, batch_targets, size=size)


class CorpusDataset(torch.utils.data.Dataset):
    """A restartable corpus (or some of its documents) as the training engine's dataset.

    Parameters
    ----------
    documents : iterable
        The corpus, read once per epoch.
    sampler : WordSampler
    n_documents : int or None
        Documents per pass (counted when the vocabulary was built); None when
        unknown (a single pass, e.g. ``score`` or ``partial_fit`` on a stream).
    keep : ndarray of bool of shape (n_documents,) or None, default=None
        The documents of this dataset (all when ``None``).
    """

    def __init__(
        self,
        documents: Iterable,
        sampler: WordSampler,
        n_documents: int | None,
        keep: np.ndarray | None = None,
    ) -> None:
        self.documents = documents
        self.sampler = sampler
        self.n_documents = None if n_documents is None else int(n_documents)
        self.keep = keep

    def __len__(self) -> int:
        if self.keep is not None:
            return int(self.keep.sum())
        return self.n_documents or 0

    def split(
        self, fraction: float, rng: np.random.Generator
    ) -> tuple[CorpusDataset, CorpusDataset]:
        """A random ``ceil(fraction * n)`` of the documents for validation, the others train."""
        n_valid = int(np.ceil(fraction * self.n_documents))
        valid = np.zeros(self.n_documents, dtype=bool)
        valid[rng.permutation(self.n_documents)[:n_valid]] = True
        return (
            CorpusDataset(self.documents, self.sampler, self.n_documents, ~valid),
            CorpusDataset(self.documents, self.sampler, self.n_documents, valid),
        )

    def _pass(self, counter: list[int], shard: tuple[int, int] | None = None) -> Iterator:
        rank, n_processes = shard or (0, 1)
        for i, document in enumerate(self.documents):
            counter[0] = i + 1
            kept = self.keep is None or (i < len(self.keep) and self.keep[i])
            if kept and i % n_processes == rank:
                yield document

    def _no_pair_message(self) -> str:
        """Why a pass gave no pair, and the fix: on a small corpus, subsampling first."""
        which = "corpus" if self.keep is None else "held-out part of the corpus"
        sample = self.sampler.sample
        fixes = ["pass longer documents or more of them"]
        if self.keep is not None:
            fixes.append("set early_stopping=False")
        if sample:
            return (
                f"the {which} yields no (centre, context) pair once frequent words are "
                f"subsampled (sample={sample}): on a small corpus nearly every word is "
                "frequent relative to the corpus size, and subsampling drops so many that "
                "no document keeps two words in a window. Set sample=0 (no subsampling; "
                "gensim's default 1e-3 is meant for corpora of millions of words), or "
                + ", or ".join(fixes)
                + "."
            )
        return (
            f"the {which} yields no (centre, context) pair: its documents have fewer than "
            "two in-vocabulary words. Lower min_count, or " + ", or ".join(fixes) + "."
        )

    def batches(
        self,
        batch_size: int,
        rng: np.random.Generator,
        shuffle: bool,
        adversarial: bool = False,
        targets: bool = True,
        shard: tuple[int, int] | None = None,
    ) -> Iterator[Batch]:
        """One pass over the corpus in corpus order (as word2vec; ``shuffle`` is ignored).

        With ``shard=(rank, n_processes)``, over the documents ``i`` with
        ``i % n_processes == rank``, drawing from the process's own stream
        (data-parallel training by local SGD).
        """
        if shard is not None:
            rng = process_stream(rng, shard[0])
        read = [0]
        n_batches = 0
        documents = self._pass(read, shard)
        batches = self.sampler.batches(documents, batch_size, rng, adversarial, targets)
        for batch in batches:
            n_batches += 1
            yield batch
        if read[0] == 0:
            if self.n_documents is None:
                raise ValueError("X yielded no document; pass a non-empty corpus.")
            raise ValueError(
                f"the second pass over X yielded nothing (the first read {self.n_documents} "
                "documents): X must start the corpus afresh at each iteration (a list, or "
                "an object whose __iter__ restarts it, like gensim's LineSentence); a "
                "wrapper around a generator that is already exhausted yields nothing the "
                "second time."
            )
        if n_batches == 0:
            raise ValueError(self._no_pair_message())
