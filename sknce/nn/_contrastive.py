r"""The unit-sphere scorer of latent-class NCE (Awasthi et al., 2022).

:class:`SphereEncoder` maps inputs to unit vectors :math:`f(x) \in \mathbb{S}^{d-1}`;
:class:`LatentClassScorer` encodes a batch of anchors and positives once and
gathers (or encodes) their ``k`` negatives, for the core's
:class:`~sknce.losses.KNegativeLoss`. :class:`OffsetEncoder` adds a learnable
offset to an encoder's output (the latent-class embedder's principal-component
start puts one on a coordinate of its own).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LatentClassScorer", "OffsetEncoder", "SphereEncoder"]


class OffsetEncoder(nn.Module):
    """An encoder followed by a learnable offset, ``encoder(x) + offset``.

    Parameters
    ----------
    encoder : nn.Module
        Maps a batch of inputs to (batch, d), e.g. :class:`~sknce.nn.LinearSkipEncoder`.
    offset : array-like of shape (d,)
        Initial offset.
    """

    def __init__(self, encoder: nn.Module, offset) -> None:
        super().__init__()
        self.encoder = encoder
        self.offset = nn.Parameter(torch.as_tensor(offset, dtype=torch.float32).clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x) + self.offset


class SphereEncoder(nn.Module):
    """An encoder whose outputs are normalised to the unit sphere, ``f(x) / ||f(x)||``.

    Every operation acts on one example at a time (for the default MLP), so an
    encoding never depends on the rest of the batch.

    Parameters
    ----------
    encoder : nn.Module
        Maps a batch of inputs to (batch, d), e.g. :class:`~sknce.nn.MLP`.
    """

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The encodings of a batch, scaled to unit norm.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, d)
        """
        return F.normalize(self.encoder(x), dim=1)


class LatentClassScorer(nn.Module):
    r"""Embeddings of a batch of (anchor, positive, k negatives) tuples (Definition 2.1).

    Parameters
    ----------
    encoder : SphereEncoder
        Encodes anchors, positives and negatives alike.
    """

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(
        self,
        x: torch.Tensor,
        x_pos: torch.Tensor,
        neg_index: torch.Tensor | None = None,
        x_neg: list[torch.Tensor] | None = None,
    ) -> dict:
        """Return ``anchor`` (B, d), ``positive`` (B, d) and ``negatives`` (B, k, d).

        Parameters
        ----------
        x, x_pos : Tensor of shape (B, n_features), dense or sparse
            The anchors and their positives, encoded in one forward pass.
        neg_index : LongTensor of shape (B, k) or None
            Negatives taken from the batch itself: rows of ``cat([x, x_pos])``
            (no extra forward pass; gathering them costs O(B k d)).
        x_neg : list of k Tensors of shape (B, n_features) or None
            Negatives drawn separately, block ``j`` holding every anchor's
            ``j``-th negative; used when ``neg_index`` is None.

        Returns
        -------
        dict of Tensor
        """
        n_anchors = x.shape[0]
        z = self.encoder(torch.cat([x, x_pos]))
        anchor, positive = z[:n_anchors], z[n_anchors:]
        if neg_index is not None:
            # index_select, not z[neg_index]: the backward of advanced indexing accumulates
            # in a thread-dependent order on the CPU, so a fit would not be reproducible
            # with several torch threads; index_select's backward adds in a fixed order.
            negatives = z.index_select(0, neg_index.reshape(-1)).reshape(*neg_index.shape, -1)
        else:
            encoded = self.encoder(torch.cat(x_neg))  # (k B, d), block j = negative j
            negatives = encoded.reshape(len(x_neg), n_anchors, -1).transpose(0, 1)
        return {"anchor": anchor, "positive": positive, "negatives": negatives}
