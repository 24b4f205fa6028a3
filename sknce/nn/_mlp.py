"""Multi-layer perceptrons whose first layer accepts sparse or dense input."""

from __future__ import annotations

import math

import torch
from torch import nn


class InputLinear(nn.Module):
    """A linear layer that takes a dense tensor or a sparse COO tensor.

    Sparse input goes through ``torch.sparse.mm``, so a bag-of-words batch is
    never densified.

    Parameters
    ----------
    in_features : int
    out_features : int
    bias : bool, default=True
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        bound = 1.0 / math.sqrt(max(in_features, 1))
        nn.init.uniform_(self.weight, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.sparse.mm(x, self.weight) if x.is_sparse else x @ self.weight
        return out if self.bias is None else out + self.bias


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
    """

    def __init__(
        self,
        in_features: int,
        hidden_layer_sizes: tuple[int, ...],
        out_features: int,
        layer_norm: bool = True,
        bias: bool = True,
    ) -> None:
        super().__init__()
        widths = [in_features, *hidden_layer_sizes, out_features]
        # Hidden layers always carry a bias; ``bias`` controls the output layer only.
        n_layers = len(widths) - 1
        self.input = InputLinear(widths[0], widths[1], bias=bias or n_layers > 1)
        layers: list[nn.Module] = []
        for i in range(1, n_layers):
            if layer_norm:
                layers.append(nn.LayerNorm(widths[i]))
            layers.append(nn.ReLU())
            layers.append(nn.Linear(widths[i], widths[i + 1], bias=bias or i < n_layers - 1))
        self.hidden = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden(self.input(x))
