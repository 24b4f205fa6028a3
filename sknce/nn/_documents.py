r"""Scorers of document pairs (Tosh et al., 2021).

A scorer splits :math:`f(x, x')` into a left encoder, a right encoder and a
``combine`` step, so that each half of a batch is encoded once and every
(left, right) pairing is scored from the encodings. ``forward(x1, x2, partners)``
scores each document's positive pair ``(x1[i], x2[i])`` and its negative pairs
``(x1[i], x2[partners[i, j]])``, which the sampler drew:

* :class:`PairScorer`: a general network of the pair whose first layer acts on
  the concatenation, ``W [x; x'] + b = (W_1 x + b) + W_2 x'``; the right side
  ``W_2 x'`` of a landmark is computed once and reused for every document
  (the landmark embedding, Eq. 3);
* :class:`BilinearScorer`: :math:`f(x, x') = f_1(x)^\top f_2(x')` with two
  encoders, or one (:math:`f_1 = f_2`) (the direct embedding, Eq. 6).

:class:`LinearSkipEncoder` is the direct embedding's default encoder: a linear map
of the bag, to which hidden layers add a residual branch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sknce.nn._mlp import MLP, InputLinear

__all__ = ["BilinearScorer", "LinearSkipEncoder", "PairScorer"]


class _PairScoring(nn.Module):
    """``forward`` shared by the document scorers: positive and negative pair scores."""

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, partners: torch.Tensor) -> dict:
        """Scores ``pos`` (B,) of ``(x1[i], x2[i])`` and ``neg`` (B, k) of the partners.

        Parameters
        ----------
        x1 : Tensor of shape (B, n_words), dense or sparse
            First halves of the batch's documents.
        x2 : Tensor of shape (B', n_words), dense or sparse
            Second halves (``B' >= B``: extra rows serve as negatives only).
        partners : LongTensor of shape (B, k)
            Rows of ``x2`` paired with each first half as negatives.

        Returns
        -------
        dict of Tensor
            ``pos`` of shape (B,) and ``neg`` of shape (B, k).
        """
        a = self.encode_left(x1)
        c = self.encode_right(x2)
        pos = self.combine(a, c[: a.shape[0]])
        # index_select: the backward of c[partners] adds in a thread-dependent order on the
        # CPU (not reproducible with several torch threads); index_select's does not.
        negatives = c.index_select(0, partners.reshape(-1)).reshape(*partners.shape, -1)
        neg = self.combine(a.unsqueeze(1), negatives)
        return {"pos": pos, "neg": neg}


class PairScorer(_PairScoring):
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
        Normalise each hidden layer's pre-activation (per example).
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
        """First-layer contribution of the first half, ``W_1 x + b``.

        Parameters
        ----------
        x : Tensor of shape (batch, n_words), dense or sparse
            First halves of documents.

        Returns
        -------
        Tensor of shape (batch, hidden_layer_sizes[0])
        """
        return self.left(x)

    def encode_right(self, x: torch.Tensor) -> torch.Tensor:
        """First-layer contribution of the second half (or landmark), ``W_2 x'``.

        Parameters
        ----------
        x : Tensor of shape (batch, n_words), dense or sparse
            Second halves of documents, or landmarks.

        Returns
        -------
        Tensor of shape (batch, hidden_layer_sizes[0])
        """
        return self.right(x)

    def combine(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Scores from broadcastable encodings ``a`` and ``c`` (last axis: features).

        Parameters
        ----------
        a : Tensor of shape (..., hidden_layer_sizes[0])
            Encodings of first halves (:meth:`encode_left`).
        c : Tensor of shape (..., hidden_layer_sizes[0])
            Encodings of second halves (:meth:`encode_right`).

        Returns
        -------
        Tensor of the broadcast shape without its last axis
        """
        return self.head(a + c).squeeze(-1)

    def combine_block(
        self, a: torch.Tensor, c: torch.Tensor, buffer: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``combine(a, c)`` of one encoding ``a`` against a block ``c``, for inference.

        The same function, computed in place where the layers allow (the sum of the
        encodings into ``buffer``, the ReLUs), so that evaluating many blocks allocates
        only the outputs of the layer norms and linear layers. Not differentiable.

        Parameters
        ----------
        a : Tensor of shape (hidden_layer_sizes[0],)
            :meth:`encode_left` of one bag.
        c : Tensor of shape (m, hidden_layer_sizes[0])
            :meth:`encode_right` of ``m`` bags (e.g. landmarks).
        buffer : Tensor of shape (m, hidden_layer_sizes[0]) or None, default=None
            Receives ``a + c`` (overwritten); ``None``: a new tensor.

        Returns
        -------
        Tensor of shape (m,)
        """
        h = torch.add(c, a, out=buffer)
        for layer in self.head:
            if isinstance(layer, nn.ReLU):
                h = h.relu_()
            elif isinstance(layer, nn.LayerNorm):
                h = F.layer_norm(h, layer.normalized_shape, layer.weight, layer.bias, layer.eps)
            else:
                h = F.linear(h, layer.weight, layer.bias)
        return h.squeeze(-1)


class BilinearScorer(_PairScoring):
    r""":math:`f(x, x') = f_1(x)^\top f_2(x')` with two encoders, or one (Tosh et al., Eq. 6).

    Parameters
    ----------
    f1 : nn.Module
        Encoder of the first half, mapping a batch of bags of words to (batch, d)
        (e.g. :class:`~sknce.nn.MLP`).
    f2 : nn.Module or None, default=None
        Encoder of the second half; ``None`` ties it to ``f1``:
        :math:`f(x, x') = f_1(x)^\top f_1(x')`.
    """

    def __init__(self, f1: nn.Module, f2: nn.Module | None = None) -> None:
        super().__init__()
        self.f1 = f1
        self.f2 = f2

    @property
    def tied(self) -> bool:
        """Whether both halves go through ``f1``."""
        return self.f2 is None

    def encode_left(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`f_1(x)`, the embedding.

        Parameters
        ----------
        x : Tensor of shape (batch, n_words), dense or sparse
            First halves of documents (or whole documents, to embed them).

        Returns
        -------
        Tensor of shape (batch, d)
        """
        return self.f1(x)

    def encode_right(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`f_2(x')` (:math:`f_1(x')` when tied).

        Parameters
        ----------
        x : Tensor of shape (batch, n_words), dense or sparse
            Second halves of documents.

        Returns
        -------
        Tensor of shape (batch, d)
        """
        return self.f1(x) if self.f2 is None else self.f2(x)

    def combine(self, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """Inner products of broadcastable encodings.

        Parameters
        ----------
        a : Tensor of shape (..., d)
            Encodings of first halves (:meth:`encode_left`).
        c : Tensor of shape (..., d)
            Encodings of second halves (:meth:`encode_right`).

        Returns
        -------
        Tensor of the broadcast shape without its last axis
        """
        return (a * c).sum(-1)


class LinearSkipEncoder(nn.Module):
    r"""A linear map of the bag, plus a residual MLP branch that starts at zero.

    :math:`f(x) = x P + g(x)`, with :math:`P` of shape ``(in_features, out_features)``
    and :math:`g` an :class:`~sknce.nn.MLP` with ``hidden_layer_sizes`` whose output
    layer is initialised at zero, so that training starts from the linear map
    (:math:`g` is absent when ``hidden_layer_sizes=()``). No bias: an empty bag
    maps to zero.

    Parameters
    ----------
    in_features : int
        Vocabulary size (columns of the bags).
    out_features : int
        Dimension of the embedding.
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers of the branch :math:`g`.
    weight : array-like of shape (in_features, out_features) or None, default=None
        Initial :math:`P` (e.g. a spectral initialisation); ``None``: the uniform
        initialisation of :class:`~sknce.nn.InputLinear`.
    sparse_grad : bool, default=False
        Sparse gradients of the word weights of :math:`P` and of the branch's first
        layer (see :class:`~sknce.nn.InputLinear`).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden_layer_sizes: tuple[int, ...] = (),
        weight=None,
        sparse_grad: bool = False,
    ) -> None:
        super().__init__()
        self.linear = InputLinear(in_features, out_features, bias=False, sparse_grad=sparse_grad)
        if weight is not None:
            with torch.no_grad():
                self.linear.weight.copy_(torch.as_tensor(weight, dtype=torch.float32))
        self.branch = None
        if hidden_layer_sizes:
            self.branch = MLP(
                in_features, tuple(hidden_layer_sizes), out_features, sparse_grad=sparse_grad
            )
            last = self.branch.hidden[-1]
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`x P + g(x)` on a batch of bags.

        Parameters
        ----------
        x : Tensor of shape (batch, in_features), dense or sparse
            Bags of words.

        Returns
        -------
        Tensor of shape (batch, out_features)
        """
        out = self.linear(x)
        return out if self.branch is None else out + self.branch(x)
