"""Multi-layer perceptrons whose first layer accepts sparse or dense input."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class InputLinear(nn.Module):
    """A linear layer that takes a dense tensor or a sparse COO tensor.

    Sparse input is never densified: it goes through
    :func:`torch.nn.functional.embedding_bag` (weighted sums of weight rows) when
    gradients are off or ``sparse_grad=True``, else through ``torch.sparse.mm``.
    With ``sparse_grad=True`` the weight gradient is sparse: only the rows of the
    words present in the batch, which an optimiser such as
    :class:`~sknce.nn.LazyAdam` updates alone. The output is the same either way.

    Parameters
    ----------
    in_features : int
    out_features : int
    bias : bool, default=True
    sparse_grad : bool, default=False
        Give the weight a sparse gradient for sparse (row-major, as
        :func:`sknce._data.csr_to_tensor` builds) input.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, sparse_grad: bool = False
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.sparse_grad = bool(sparse_grad)
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        bound = 1.0 / math.sqrt(max(in_features, 1))
        nn.init.uniform_(self.weight, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_sparse:
            out = x @ self.weight
        elif self.sparse_grad or not torch.is_grad_enabled():
            # embedding_bag is also the faster forward (1.3-1.5x in
            # benchmarks/bench_documents_speed.py), so inference always takes it.
            out = self._embedding_bag(x)
        else:
            out = torch.sparse.mm(x, self.weight)
        return out if self.bias is None else out + self.bias

    def _embedding_bag(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight`` as weighted bags of weight rows, one bag per row of ``x``."""
        x = x.coalesce()  # row-major order: each row's entries are contiguous
        rows, cols = x.indices()
        counts = torch.bincount(rows, minlength=x.shape[0])
        return F.embedding_bag(
            cols,
            self.weight,
            counts.cumsum(0) - counts,
            mode="sum",
            per_sample_weights=x.values(),
            sparse=self.sparse_grad,
        )


class MLP(nn.Module):
    """Fully connected network: ``[Linear → LayerNorm → ReLU] * h → Linear``.

    The architecture of Tosh et al. (2021, Sections 6.2 and 7.2); with
    ``hidden_layer_sizes=()`` it is a single linear map.

    Parameters
    ----------
    in_features : int
    hidden_layer_sizes : tuple of int
        Widths of the hidden layers, as in sklearn's ``MLPClassifier``.
    out_features : int
    layer_norm : bool, default=True
        Normalise each hidden layer's pre-activation (per example, so outputs
        never depend on the rest of the batch).
    bias : bool, default=True
        Bias of the output layer.
    sparse_grad : bool, default=False
        Sparse gradient of the first layer's weight for sparse input (see
        :class:`InputLinear`).
    """

    def __init__(
        self,
        in_features: int,
        hidden_layer_sizes: tuple[int, ...],
        out_features: int,
        layer_norm: bool = True,
        bias: bool = True,
        sparse_grad: bool = False,
    ) -> None:
        super().__init__()
        widths = [in_features, *hidden_layer_sizes, out_features]
        # Hidden layers always carry a bias; ``bias`` controls the output layer only.
        n_layers = len(widths) - 1
        self.input = InputLinear(
            widths[0], widths[1], bias=bias or n_layers > 1, sparse_grad=sparse_grad
        )
        layers: list[nn.Module] = []
        for i in range(1, n_layers):
            if layer_norm:
                layers.append(nn.LayerNorm(widths[i]))
            layers.append(nn.ReLU())
            layers.append(nn.Linear(widths[i], widths[i + 1], bias=bias or i < n_layers - 1))
        self.hidden = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden(self.input(x))
