"""Scorers of document pairs and their contrastive objective (Tosh et al., 2021).

A scorer splits :math:`f(x, x')` into a left encoder, a right encoder and a
``combine`` step, so that each half of a batch is encoded once and every
(left, right) pairing is scored from the encodings:

* :class:`PairScorer`: a general network of the pair whose first layer acts on
  the concatenation, ``W [x; x'] + b = (W_1 x + b) + W_2 x'``; the right side
  ``W_2 x'`` of a landmark is computed once and reused for every document
  (the landmark embedding, Eq. 3);
* :class:`BilinearScorer`: :math:`f(x, x') = f_1(x)^\top f_2(x')` with two MLP
  encoders (the direct embedding, Eq. 6).

:class:`DocumentPairLoss` turns a batch of split documents into positive and
negative pairs and scores them with the core's :func:`~sknce.losses.pair_logistic`.
"""

from __future__ import annotations

import torch
from torch import nn

from sknce.losses import pair_logistic
from sknce.nn._mlp import MLP, InputLinear

__all__ = ["BilinearScorer", "DocumentPairLoss", "PairScorer"]


class PairScorer(nn.Module):
    r"""A fully connected network of a pair of bags, :math:`f(x, x')`.

    ``[Linear on (x, x') → LayerNorm → ReLU] → [Linear → LayerNorm → ReLU]* → Linear → 1``;
    the first layer is written as ``left(x) + right(x')``.

    Parameters
    ----------
    in_features : int
        Vocabulary size.
    hidden_layer_sizes : tuple of int
        At least one hidden layer (a linear function of the pair has no interaction).
    layer_norm : bool, default=True
    sparse_grad : bool, default=False
        Sparse gradients of the first layer's word weights (see
        :class:`~sknce.nn.InputLinear`).
    """

    def __init__(
        self,
        in_features: int,
        hidden_layer_sizes: tuple[int, ...],
        layer_norm: bool = True,
        sparse_grad: bool = False,
    ) -> None:
        super().__init__()
        if len(hidden_layer_sizes) < 1:
            raise ValueError("PairScorer needs at least one hidden layer.")
        widths = [*hidden_layer_sizes, 1]
        self.left = InputLinear(in_features, widths[0], bias=True, sparse_grad=sparse_grad)
        self.right = InputLinear(in_features, widths[0], bias=False, sparse_grad=sparse_grad)
        layers: list[nn.Module] = []
        for i in range(len(widths) - 1):
            if layer_norm:
                layers.append(nn.LayerNorm(widths[i]))
            layers.append(nn.ReLU())
            layers.append(nn.Linear(widths[i], widths[i + 1]))
        self.head = nn.Sequential(*layers)

    def encode_left(self, x: torch.Tensor) -> torch.Tensor:
        """First-layer contribution of the first half, ``W_1 x + b``."""
        return self.left(x)

    def encode_right(self, x: torch.Tensor) -> torch.Tensor:
        """First-layer contribution of the second half (or landmark), ``W_2 x'``."""
        return self.right(x)

    def combine(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Scores from broadcastable encodings ``a`` and ``c`` (last axis: features)."""
        return self.head(a + c).squeeze(-1)


class BilinearScorer(nn.Module):
    r""":math:`f(x, x') = f_1(x)^\top f_2(x')` with two MLP encoders (Tosh et al., Eq. 6).

    Parameters
    ----------
    in_features : int
    hidden_layer_sizes : tuple of int
    n_components : int
        Output dimension of :math:`f_1` and :math:`f_2`.
    layer_norm : bool, default=True
    sparse_grad : bool, default=False
        Sparse gradients of the first layers' word weights (see
        :class:`~sknce.nn.InputLinear`).
    """

    def __init__(
        self,
        in_features: int,
        hidden_layer_sizes: tuple[int, ...],
        n_components: int,
        layer_norm: bool = True,
        sparse_grad: bool = False,
    ) -> None:
        super().__init__()
        kwargs = dict(layer_norm=layer_norm, sparse_grad=sparse_grad)
        self.f1 = MLP(in_features, hidden_layer_sizes, n_components, **kwargs)
        self.f2 = MLP(in_features, hidden_layer_sizes, n_components, **kwargs)

    def encode_left(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`f_1(x)`, the embedding."""
        return self.f1(x)

    def encode_right(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`f_2(x')`."""
        return self.f2(x)

    def combine(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Inner products of broadcastable encodings."""
        return (a * c).sum(-1)


class DocumentPairLoss(nn.Module):
    """Logistic loss of Tosh et al. (2021), Eq. (1), on positive and negative pairs.

    Document ``i`` of the batch gives the positive pair ``(x1[i], x2[i])`` and the
    negative pairs ``(x1[i], x2[partners[i, j]])``, ``j < k``, where ``partners``
    indexes other documents of the batch.

    Parameters
    ----------
    scorer : PairScorer or BilinearScorer
    """

    def __init__(self, scorer: nn.Module) -> None:
        super().__init__()
        self.scorer = scorer

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, partners: torch.Tensor) -> torch.Tensor:
        a = self.scorer.encode_left(x1)
        c = self.scorer.encode_right(x2)
        pos = self.scorer.combine(a, c)
        neg = self.scorer.combine(a.unsqueeze(1), c[partners]).reshape(-1)
        scores = torch.cat([pos, neg])
        labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
        return pair_logistic(scores, labels)
