"""fastText's scorer: word2vec's, with each input word the mean of its subword rows."""

from __future__ import annotations

import mmap

import numpy as np
import torch
from torch import nn

from sknce.nn._words import SkipGram, bag_mean

__all__ = ["SubwordSkipGram"]


def _table(n_rows: int, dim: int) -> np.ndarray:
    """An uninitialised float32 matrix, in transparent huge pages where Linux offers them.

    The n-gram rows are read at random all over a table of ~1 GB: with 4 KiB pages
    nearly every row costs a TLB miss, which 2 MiB pages spare (see
    ``benchmarks/README.md``). Elsewhere an ordinary array.
    """
    size = n_rows * dim * 4
    if size < (1 << 24) or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.empty((n_rows, dim), dtype=np.float32)
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    memory.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(memory, dtype=np.float32).reshape(n_rows, dim)


class SubwordSkipGram(SkipGram):
    r"""The scorer :math:`s(t, c) = u_t^\top v_c` with :math:`u_t` built from subwords.

    :math:`u_t` is the mean of the input rows of word :math:`t`: its own row and
    the rows of its hashed character n-grams (Bojanowski et al., 2017; the rows
    of ``sknce.words._subwords.subword_table``); a bag of words (CBOW) is the
    mean over all the rows of its words. Each row receives the whole gradient of
    the mean (:func:`~sknce.nn.bag_mean`), as in fastText. The input embeddings
    have ``n_words + bucket`` rows (words first), the output embeddings
    ``n_words``. Initialised as :class:`~sknce.nn.SkipGram` (input rows uniform in
    :math:`[-0.5/d, 0.5/d)`, output rows zero), from a seed drawn from torch's
    generator.

    Parameters
    ----------
    n_words : int
        Vocabulary size.
    dim : int
        Embedding dimension.
    table_ptr, table_rows : int64 arrays
        Word ``w``'s input rows are ``table_rows[table_ptr[w]:table_ptr[w + 1]]``.
    n_rows : int
        Rows of the input embeddings (``n_words + bucket``).
    """

    def __init__(
        self, n_words: int, dim: int, table_ptr: np.ndarray, table_rows: np.ndarray, n_rows: int
    ) -> None:
        nn.Module.__init__(self)
        # numpy fills ~10x faster than torch's uniform_, from a seed of torch's generator
        weight = _table(n_rows, dim)
        seed = int(torch.randint(0, 2**62, (1,)))
        np.random.default_rng(seed).random(out=weight, dtype=np.float32)
        weight -= 0.5
        weight *= 1.0 / dim
        self.input_embeddings = nn.Embedding(n_rows, dim, _weight=torch.from_numpy(weight))
        self.output_embeddings = nn.Embedding(n_words, dim, _weight=torch.zeros(n_words, dim))
        self.register_buffer("table_ptr", torch.as_tensor(table_ptr, dtype=torch.int64))
        self.register_buffer("table_rows", torch.as_tensor(table_rows, dtype=torch.int64))

    @property
    def n_words(self) -> int:
        """Vocabulary size (rows of the output embeddings)."""
        return self.output_embeddings.num_embeddings

    def subword_table(self) -> tuple[np.ndarray, np.ndarray]:
        """The table as numpy arrays (views on the CPU), for the compiled kernels."""
        return self.table_ptr.cpu().numpy(), self.table_rows.cpu().numpy()

    def expand(
        self, words: torch.Tensor, offsets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The input rows of examples (one word each, or bags) and each example's start.

        Parameters
        ----------
        words : LongTensor of shape (n_examples,), or (n_words,) with ``offsets``
            Vocabulary indices: one word per example, or the words of every bag.
        offsets : LongTensor of shape (n_examples,) or None, default=None
            Start of each example's bag in ``words``; ``None``: one word per example.

        Returns
        -------
        rows : LongTensor
            The rows of every word, word after word.
        row_offsets : LongTensor of shape (n_examples,)
            Start of each example's rows in ``rows``.
        """
        starts = self.table_ptr[words]
        sizes = self.table_ptr[words + 1] - starts
        word_starts = torch.cumsum(sizes, 0) - sizes
        word_of = torch.repeat_interleave(torch.arange(words.shape[0], device=words.device), sizes)
        position = torch.arange(word_of.shape[0], device=words.device) - word_starts[word_of]
        rows = self.table_rows[starts[word_of] + position]
        return rows, word_starts if offsets is None else word_starts[offsets]

    def encode(self, words: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
        """Input vectors of examples: the mean of the rows of their word or bag.

        Parameters
        ----------
        words : LongTensor of shape (n_examples,), or (n_words,) with ``offsets``
            Vocabulary indices: one word per example, or the words of every bag.
        offsets : LongTensor of shape (n_examples,) or None, default=None
            Start of each example's bag in ``words``; ``None``: one word per example.

        Returns
        -------
        Tensor of shape (n_examples, dim)
        """
        return bag_mean(self.input_embeddings, *self.expand(words, offsets))

    def forward(self, centres: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Scores of ``targets`` given ``centres`` (see :meth:`SkipGram.forward`).

        Parameters
        ----------
        centres : LongTensor of shape (n_examples,)
            The input words, whose vectors are the means of their subword rows.
        targets : LongTensor of shape (n_examples,) or (n_examples, n_candidates)
            The output words scored against them.

        Returns
        -------
        Tensor of the shape of ``targets``
        """
        u = self.encode(centres)
        v = self.output_embeddings(targets)
        if targets.dim() == 1:
            return (u * v).sum(dim=-1)
        return torch.bmm(v, u.unsqueeze(-1)).squeeze(-1)

    def logits(self, centres: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every centre, one matrix product.

        Parameters
        ----------
        centres : LongTensor of shape (n_examples,)
            The input words.
        candidates : LongTensor of shape (n_candidates,)
            The output words scored for every centre.

        Returns
        -------
        Tensor of shape (n_examples, n_candidates)
        """
        return self.candidate_logits(self.encode(centres), candidates)
