r"""The unit-sphere encoder and k-negative objective of latent-class NCE (Awasthi et al., 2022).

:class:`SphereEncoder` maps inputs to unit vectors :math:`f(x) \in \mathbb{S}^{d-1}`;
:class:`LatentClassNCELoss` encodes a batch of anchors and positives once and scores
them against ``k`` negatives with the core's :func:`~sknce.losses.k_negative`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sknce.losses import k_negative
from sknce.nn._mlp import MLP

__all__ = ["LatentClassNCELoss", "SphereEncoder"]


class SphereEncoder(nn.Module):
    """An MLP whose outputs are normalised to the unit sphere.

    ``[Linear → LayerNorm → ReLU] * h → Linear → x / ||x||``: every operation acts
    on one example at a time, so an encoding never depends on the rest of the batch.

    Parameters
    ----------
    in_features : int
        Input dimension (dense or sparse input).
    hidden_layer_sizes : tuple of int
        Hidden widths; ``()`` is a linear map followed by the normalisation.
    n_components : int
        Output dimension ``d``.
    """

    def __init__(
        self, in_features: int, hidden_layer_sizes: tuple[int, ...], n_components: int
    ) -> None:
        super().__init__()
        self.mlp = MLP(in_features, tuple(hidden_layer_sizes), n_components)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.mlp(x), dim=1)


class LatentClassNCELoss(nn.Module):
    r"""The NCE loss of Definition 2.1 on a batch of (anchor, positive, k negatives).

    Parameters
    ----------
    encoder : SphereEncoder
    loss : {"logistic", "hinge"}, default="logistic"
    beta : float, default=1.0
        Inverse temperature :math:`\beta`.
    """

    def __init__(self, encoder: nn.Module, loss: str = "logistic", beta: float = 1.0) -> None:
        super().__init__()
        self.encoder = encoder
        self.loss = loss
        self.beta = beta

    def forward(
        self,
        x: torch.Tensor,
        x_pos: torch.Tensor,
        neg_index: torch.Tensor | None = None,
        x_neg: list[torch.Tensor] | None = None,
        negative_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Return the mean k-negative loss of the batch.

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
        negative_mask : bool Tensor of shape (B, k) or None
            ``False`` drops a negative (one of the anchor's own class).
        """
        n_anchors = x.shape[0]
        z = self.encoder(torch.cat([x, x_pos]))
        anchor, positive = z[:n_anchors], z[n_anchors:]
        if neg_index is not None:
            negatives = z[neg_index]
        else:
            encoded = self.encoder(torch.cat(x_neg))  # (k B, d), block j = negative j
            negatives = encoded.reshape(len(x_neg), n_anchors, -1).transpose(0, 1)
        return k_negative(
            anchor,
            positive,
            negatives,
            loss=self.loss,
            beta=self.beta,
            negative_mask=negative_mask,
        )
