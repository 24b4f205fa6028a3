"""Torch modules of ACEWord2Vec: the skip-gram scorer and the discriminator/generator pair."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ACESkipGram", "SharedCentreGenerator", "SkipGram"]


class SkipGram(nn.Module):
    r"""Skip-gram scorer :math:`s(t, c) = u_t^\top v_c` with input and output embeddings.

    Initialised as word2vec does: input vectors uniform in
    :math:`[-0.5/d, 0.5/d]`, output vectors zero.

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
        targets : LongTensor of shape (batch,) or (batch, K)

        Returns
        -------
        Tensor of the shape of ``targets``
        """
        u = self.input_embeddings(centres)
        v = self.output_embeddings(targets)
        if targets.dim() == 1:
            return (u * v).sum(dim=-1)
        return torch.bmm(v, u.unsqueeze(-1)).squeeze(-1)

    def logits(self, centres: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every centre, one matrix product.

        Parameters
        ----------
        centres : LongTensor of shape (n_centres,)
        candidates : LongTensor of shape (n_candidates,)

        Returns
        -------
        Tensor of shape (n_centres, n_candidates)
        """
        return self.input_embeddings(centres) @ self.output_embeddings(candidates).T


class SharedCentreGenerator(nn.Module):
    r"""A generator whose centre vectors are the discriminator's input vectors.

    Scores :math:`s(t, c) = u_t^\top h_c`: :math:`u_t` is the discriminator's input
    vector of the centre word (read, never updated by the generator: its gradient
    is cut) and :math:`h_c` the generator's own output vectors (zero at first, so
    the first proposals are the noise). A skip-gram generator has its own centre
    vector :math:`g_t`, which REINFORCE updates only when :math:`t` is a centre
    word of a batch; here every centre word's proposal follows its discriminator
    vector, however rarely the word is seen. (On the benchmark corpus of
    :class:`~sknce.ACEWord2Vec` the rare words' own :math:`g_t` did get trained,
    and this generator lowered their similarity scores.)

    Parameters
    ----------
    centre_embeddings : nn.Embedding
        The discriminator's input embeddings (shared, not a parameter of this module).
    n_words : int
    dim : int
    """

    def __init__(self, centre_embeddings: nn.Embedding, n_words: int, dim: int) -> None:
        super().__init__()
        # Held in a tuple so that nn.Module does not register it: the generator's
        # optimiser must not update the discriminator's vectors.
        self._centres = (centre_embeddings,)
        self.output_embeddings = nn.Embedding(n_words, dim, sparse=True)
        with torch.no_grad():
            self.output_embeddings.weight.zero_()

    def logits(self, centres: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores of every candidate for every centre (see :meth:`SkipGram.logits`).

        Parameters
        ----------
        centres : LongTensor of shape (n_centres,)
        candidates : LongTensor of shape (n_candidates,)

        Returns
        -------
        Tensor of shape (n_centres, n_candidates)
        """
        u = self._centres[0](centres).detach()
        return u @ self.output_embeddings(candidates).T


class ACESkipGram(nn.Module):
    r"""The discriminator and (optionally) the generator of ACE for word embeddings.

    Both are skip-gram networks (Bose et al., 2018, Appendix B.1): the
    discriminator scores a (centre, context) pair, :math:`D = \sigma(u_t^\top v_c)`;
    the generator's softmax over its scores, :math:`G(\cdot \mid w_t)`, proposes
    negative contexts. The word vectors are the discriminator's input embeddings.

    Parameters
    ----------
    n_words : int
    dim : int
    adversarial : bool, default=True
        Build the generator.
    generator_centre : {"own", "discriminator"}, default="own"
        ``"own"``: a skip-gram generator with its own centre vectors (the paper's);
        ``"discriminator"``: a :class:`SharedCentreGenerator` conditioned on the
        discriminator's input vectors.
    """

    def __init__(
        self,
        n_words: int,
        dim: int,
        *,
        adversarial: bool = True,
        generator_centre: str = "own",
    ) -> None:
        super().__init__()
        self.discriminator = SkipGram(n_words, dim)
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

    def forward(self, centres: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The discriminator's scores (see :meth:`SkipGram.forward`)."""
        return self.discriminator(centres, targets)
