"""Torch modules of ACEWord2Vec: the word2vec scorer and the discriminator/generator pair.

One scorer serves both of word2vec's architectures: an example's input side is
one word (skip-gram: the centre word predicts a context word) or a bag of words
(CBOW: the mean of the context words predicts the centre word).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ACESkipGram", "SharedCentreGenerator", "SkipGram", "bag_mean"]


def bag_mean(embedding: nn.Embedding, words: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Mean input vector of each bag of words, with word2vec's CBOW gradient.

    The value is the mean of the bag's rows; the gradient each row receives is the
    whole gradient of the mean (that of the sum), not ``1 / size`` of it: word2vec's
    and gensim's ``cbow_mean=1`` update, which the compiled CBOW kernel also applies.

    Parameters
    ----------
    embedding : nn.Embedding
        The input embeddings whose rows are averaged.
    words : LongTensor of shape (n_words,)
        The bags' words, bag after bag.
    offsets : LongTensor of shape (n_bags,)
        Start of each bag in ``words`` (every bag non-empty).

    Returns
    -------
    Tensor of shape (n_bags, dim)
    """
    total = F.embedding_bag(words, embedding.weight, offsets, mode="sum", sparse=embedding.sparse)
    ends = torch.cat([offsets[1:], offsets.new_tensor([words.shape[0]])])
    sizes = (ends - offsets).clamp_(min=1).unsqueeze(1).to(total.dtype)
    return total + (total / sizes - total).detach()


class SkipGram(nn.Module):
    r"""word2vec's scorer :math:`s(t, c) = u_t^\top v_c` with input and output embeddings.

    :math:`u_t` is the input vector of a word (skip-gram) or the mean input vector of
    a bag of words (CBOW, see :meth:`encode`). Initialised as word2vec does: input
    vectors uniform in :math:`[-0.5/d, 0.5/d]`, output vectors zero.

    Parameters
    ----------
    n_words : int
        Vocabulary size.
    dim : int
        Embedding dimension :math:`d`.
    sparse : bool, default=False
        Give the embeddings sparse gradients (only the rows used in a batch).
    """

    def __init__(self, n_words: int, dim: int, *, sparse: bool = False) -> None:
        super().__init__()
        self.input_embeddings = nn.Embedding(n_words, dim, sparse=sparse)
        self.output_embeddings = nn.Embedding(n_words, dim, sparse=sparse)
        with torch.no_grad():
            self.input_embeddings.weight.uniform_(-0.5 / dim, 0.5 / dim)
            self.output_embeddings.weight.zero_()

    def forward(self, centres: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Scores of ``targets`` given ``centres``.

        Parameters
        ----------
        centres : LongTensor of shape (batch,)
            The word whose input vector each row scores with.
        targets : LongTensor of shape (batch,) or (batch, K)
            The output words scored, one or K per row.

        Returns
        -------
        Tensor of the shape of ``targets``
        """
        u = self.input_embeddings(centres)
        v = self.output_embeddings(targets)
        if targets.dim() == 1:
            return (u * v).sum(dim=-1)
        return torch.bmm(v, u.unsqueeze(-1)).squeeze(-1)

    def encode(self, words: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
        """Input vectors of examples: one word each, or the mean of a bag each (CBOW).

        Parameters
        ----------
        words : LongTensor of shape (n_examples,), or (n_words,) with ``offsets``
            One word per example, or the examples' bags of words one after another.
        offsets : LongTensor of shape (n_examples,) or None, default=None
            Start of each example's bag in ``words`` (:func:`bag_mean`).

        Returns
        -------
        Tensor of shape (n_examples, dim)
        """
        if offsets is None:
            return self.input_embeddings(words)
        return bag_mean(self.input_embeddings, words, offsets)

    def candidate_logits(self, h: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every input vector ``h``, one matrix product.

        Parameters
        ----------
        h : Tensor of shape (n_queries, dim)
            Input vectors (:meth:`encode`).
        candidates : LongTensor of shape (n_candidates,)
            The words whose output vectors are scored.

        Returns
        -------
        Tensor of shape (n_queries, n_candidates)
        """
        return h @ self.output_embeddings(candidates).T

    def logits(self, centres: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every centre, one matrix product.

        Parameters
        ----------
        centres : LongTensor of shape (n_centres,)
            The words whose input vectors score.
        candidates : LongTensor of shape (n_candidates,)
            The words whose output vectors are scored.

        Returns
        -------
        Tensor of shape (n_centres, n_candidates)
        """
        return self.candidate_logits(self.input_embeddings(centres), candidates)


class SharedCentreGenerator(nn.Module):
    r"""A generator whose centre vectors are the discriminator's input vectors.

    Scores :math:`s(t, c) = u_t^\top h_c`: :math:`u_t` is the discriminator's input
    vector of the centre word (read, never updated by the generator: its gradient
    is cut) and :math:`h_c` the generator's own output vectors (zero at first, so
    the first proposals are the noise). A skip-gram generator has its own centre
    vector :math:`g_t`, which REINFORCE updates only when :math:`t` is a centre
    word of a batch; here every centre word's proposal follows its discriminator
    vector, however rarely the word is seen.

    Parameters
    ----------
    centre_embeddings : nn.Embedding
        The discriminator's input embeddings (shared, not a parameter of this module).
    n_words : int
        Vocabulary size.
    dim : int
        Embedding dimension, that of ``centre_embeddings``.
    """

    def __init__(self, centre_embeddings: nn.Embedding, n_words: int, dim: int) -> None:
        super().__init__()
        # Held in a tuple so that nn.Module does not register it: the generator's
        # optimiser must not update the discriminator's vectors.
        self._centres = (centre_embeddings,)
        self.output_embeddings = nn.Embedding(n_words, dim, sparse=True)
        with torch.no_grad():
            self.output_embeddings.weight.zero_()

    def encode(self, words: torch.Tensor, offsets: torch.Tensor | None = None) -> torch.Tensor:
        """The discriminator's input vectors of examples, without gradient.

        Parameters
        ----------
        words : LongTensor of shape (n_examples,), or (n_words,) with ``offsets``
            One word per example, or the examples' bags of words one after another.
        offsets : LongTensor of shape (n_examples,) or None, default=None
            Start of each example's bag in ``words`` (:func:`bag_mean`).

        Returns
        -------
        Tensor of shape (n_examples, dim)
        """
        centres = self._centres[0]
        if offsets is None:
            return centres(words).detach()
        return bag_mean(centres, words, offsets).detach()

    def candidate_logits(self, h: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every input vector ``h``, one matrix product.

        Parameters
        ----------
        h : Tensor of shape (n_queries, dim)
            Input vectors (:meth:`encode`).
        candidates : LongTensor of shape (n_candidates,)
            The words whose (generator) output vectors are scored.

        Returns
        -------
        Tensor of shape (n_queries, n_candidates)
        """
        return h @ self.output_embeddings(candidates).T

    def logits(self, centres: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every centre (see :meth:`SkipGram.logits`).

        Parameters
        ----------
        centres : LongTensor of shape (n_centres,)
            The centre words, read through the discriminator's input vectors.
        candidates : LongTensor of shape (n_candidates,)
            The words whose (generator) output vectors are scored.

        Returns
        -------
        Tensor of shape (n_centres, n_candidates)
        """
        return self.candidate_logits(self.encode(centres), candidates)


class ACESkipGram(nn.Module):
    r"""The discriminator and (optionally) the generator of ACE for word embeddings.

    Both are word2vec networks (Bose et al., 2018, Appendix B.1): the
    discriminator scores an example's true output word, :math:`D = \sigma(u_t^\top v_c)`
    (skip-gram: :math:`u_t` the centre word's input vector, :math:`c` a context word;
    CBOW: :math:`u_t` the mean input vector of the context words, :math:`c` the
    centre word); the generator's softmax over its scores, :math:`G(\cdot \mid t)`,
    proposes negative output words. The word vectors are the discriminator's input
    embeddings.

    Parameters
    ----------
    n_words : int
        Vocabulary size.
    dim : int
        Dimension of the word vectors.
    adversarial : bool, default=True
        Build the generator.
    generator_centre : {"own", "discriminator"}, default="own"
        ``"own"``: a skip-gram generator with its own centre vectors (the paper's);
        ``"discriminator"``: a :class:`SharedCentreGenerator` conditioned on the
        discriminator's input vectors.
    discriminator : SkipGram or None, default=None
        The discriminator (e.g. a :class:`~sknce.nn.SubwordSkipGram`); ``None``: a
        :class:`SkipGram` of ``n_words`` words.
    """

    def __init__(
        self,
        n_words: int,
        dim: int,
        *,
        adversarial: bool = True,
        generator_centre: str = "own",
        discriminator: SkipGram | None = None,
    ) -> None:
        super().__init__()
        self.discriminator = SkipGram(n_words, dim) if discriminator is None else discriminator
        if not adversarial:
            self.generator = None
        elif generator_centre == "discriminator":
            self.generator = SharedCentreGenerator(
                self.discriminator.input_embeddings, n_words, dim
            )
        else:
            # Sparse gradients: a generator step touches only the batch's centres and
            # candidates, so its cost does not grow with the vocabulary.
            self.generator = SkipGram(n_words, dim, sparse=True)

    def forward(
        self,
        words: torch.Tensor,
        positives: torch.Tensor,
        negatives: torch.Tensor,
        offsets: torch.Tensor | None = None,
    ) -> dict:
        """The discriminator's scores: ``pos`` of the true output words, ``neg`` of the negatives.

        Parameters
        ----------
        words : LongTensor of shape (batch,), or (n_words,) with ``offsets``
            Each example's input word (skip-gram: its centre word), or its bag of
            input words (CBOW: its context words).
        positives : LongTensor of shape (batch,)
            The true output words (skip-gram: the context; CBOW: the centre word).
        negatives : LongTensor of shape (batch, K)
            The negative output words drawn for each example.
        offsets : LongTensor of shape (batch,) or None, default=None
            Start of each example's bag in ``words`` (CBOW).

        Returns
        -------
        dict of Tensor
            ``pos`` of shape (batch,) and ``neg`` of shape (batch, K).
        """
        discriminator = self.discriminator
        h = discriminator.encode(words, offsets)
        pos = (h * discriminator.output_embeddings(positives)).sum(dim=-1)
        neg = torch.bmm(discriminator.output_embeddings(negatives), h.unsqueeze(-1)).squeeze(-1)
        return {"pos": pos, "neg": neg}
