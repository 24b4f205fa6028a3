"""Encoders of a batch of inputs: MLPs whose first layer takes sparse or dense input.

:class:`DenseInput` wraps a user's encoder so that it always receives a dense
batch, and :func:`output_dim` reads the width of an encoder's output.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MLP", "DenseInput", "InputLinear", "output_dim"]


class InputLinear(nn.Module):
    """A linear layer that takes a dense tensor or a sparse COO tensor.

    Sparse input is never densified: it goes through
    :func:`torch.nn.functional.embedding_bag` (weighted sums of weight rows) when
    gradients are off or ``sparse_grad=True``, else through ``torch.sparse.mm``.
    With ``sparse_grad=True`` the weight gradient is sparse: only the rows of the
    words present in the batch, which an optimiser such as
    :class:`~sknce.optim.LazyAdam` updates alone. The output is the same either way.

    Parameters
    ----------
    in_features : int
        Number of input features (columns of ``x``).
    out_features : int
        Number of outputs.
    bias : bool, default=True
        Add a learned bias to the output.
    sparse_grad : bool, default=False
        Give the weight a sparse gradient for sparse (row-major, as
        ``sknce._data.csr_to_tensor`` builds) input.
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
        """``x @ weight + bias``, for dense or sparse COO ``x``.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, out_features)
        """
        if not x.is_sparse:
            out = x @ self.weight
        elif self.sparse_grad or not torch.is_grad_enabled():
            # embedding_bag is also the faster forward (bench_documents_speed.py; see
            # benchmarks/README.md), so inference always takes it.
            out = self._embedding_bag(x)
        else:
            out = torch.sparse.mm(x, self.weight)
        return out if self.bias is None else out + self.bias

    def _embedding_bag(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight`` as weighted bags of weight rows, one bag per row of ``x``."""
        x = x.coalesce()  # row-major order: each row's entries are contiguous
        return sparse_rows_bag(x, self.weight, x.values(), self.sparse_grad)


class MLP(nn.Module):
    """Fully connected network: ``[Linear → LayerNorm → ReLU] * h → Linear``.

    The architecture of Tosh et al. (2021, Sections 6.2 and 7.2); with
    ``hidden_layer_sizes=()`` it is a single linear map.

    Parameters
    ----------
    in_features : int
        Number of input features.
    hidden_layer_sizes : tuple of int
        Widths of the hidden layers, as in sklearn's ``MLPClassifier``.
    out_features : int
        Width of the output.
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
        """The network's output on a batch.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, out_features)
        """
        return self.hidden(self.input(x))


class DenseInput(nn.Module):
    """Wrap a user's encoder: dense input, and its output checked.

    A sparse batch is densified (one batch at a time, never the whole ``X``). The
    output must be a float32 tensor of shape (batch, d): its shape and dtype are
    checked at every call (free: no data is read) and its values once, on the first
    training batch, so that a wrong encoder is named here rather than failing inside
    sknce's scorers. A training batch of one row is encoded in eval mode when the
    encoder has batch normalisation, which cannot compute batch statistics of one
    row (the running statistics are used for that batch).

    Parameters
    ----------
    module : nn.Module
        Maps a dense float32 batch of shape (batch, n_features) to (batch, d).
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module
        self.checked_values = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The wrapped module's output on the dense form of ``x``.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, d)
        """
        x = x.to_dense() if x.is_sparse else x
        if self.training and x.shape[0] == 1 and _has_batch_norm(self.module):
            self.module.eval()
            try:
                out = self.module(x)
            finally:
                self.module.train()
        else:
            out = self.module(x)
        first = self.training and not getattr(self, "checked_values", True)
        check_encoder_output(out, x.shape, values=first)
        if self.training:
            self.checked_values = True
        return out


def sparse_rows_bag(
    x: torch.Tensor, weight: torch.Tensor, values: torch.Tensor, sparse: bool
) -> torch.Tensor:
    """``sum_j values_ij weight[j]`` per row ``i`` of a coalesced sparse COO ``x``.

    ``values`` are the weights of ``x``'s stored entries (its values, or a scaling of
    them); ``embedding_bag`` reads only the rows of ``weight`` present, and with
    ``sparse`` its gradient is sparse too.
    """
    rows, cols = x.indices()
    counts = torch.bincount(rows, minlength=x.shape[0])
    return F.embedding_bag(
        cols,
        weight,
        counts.cumsum(0) - counts,
        mode="sum",
        per_sample_weights=values,
        sparse=sparse,
    )


def build_encoder(encoder_class: type, n_features: int) -> nn.Module:
    """An encoder class built with ``n_features``, or with no argument if it takes none.

    Parameters
    ----------
    encoder_class : type
        A ``torch.nn.Module`` subclass.
    n_features : int
        Number of input features, passed as the first positional argument when the
        class's constructor accepts one.

    Returns
    -------
    nn.Module
    """
    try:
        parameters = list(inspect.signature(encoder_class).parameters.values())
    except (TypeError, ValueError):  # no signature to read: pass the width as documented
        return encoder_class(n_features)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    takes_width = any(
        p.kind in positional or p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters
    )
    return encoder_class(n_features) if takes_width else encoder_class()


def _has_batch_norm(module: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


def check_encoder_output(out, input_shape, values: bool = False) -> None:
    """A ValueError naming what an encoder must return when ``out`` is not it.

    Parameters
    ----------
    out : object
        The encoder's output on a batch of shape ``input_shape``.
    input_shape : tuple of int
        ``(batch, n_features)``.
    values : bool, default=False
        Also check that the values are finite (reads them: a device sync).
    """
    batch, n_features = input_shape
    must = (
        f"An encoder must map a float32 tensor of shape (batch, {n_features}) to a float32 "
        "tensor of shape (batch, d)"
    )
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"the encoder returned a {type(out).__name__}, not a tensor. {must}.")
    if out.dim() != 2 or out.shape[0] != batch:
        raise ValueError(
            f"the encoder returned {tuple(out.shape)} for a batch of shape "
            f"({batch}, {n_features}): {must}, one row per input row. Flatten its output "
            "(end it with torch.nn.Flatten()) and do not drop, add or reorder rows."
        )
    if out.dtype != torch.float32:
        raise ValueError(
            f"the encoder returned {out.dtype} values. {must}: keep its weights in float32 "
            "(do not call .double() on it) and cast its output with .float() if it computes "
            "in another type; integer outputs (argmax, indices) carry no gradient."
        )
    if values and not bool(torch.isfinite(out).all()):
        raise ValueError(
            f"the encoder returned NaN or infinite values on a training batch. {must}, "
            "finite: check its initialisation, its operations (log of 0, division by 0) "
            "and the scale of its inputs."
        )


def output_dim(encoder: nn.Module, n_features: int) -> int:
    """Width of ``encoder``'s output on a batch of two zero inputs, checking it is 2-D.

    Parameters
    ----------
    encoder : nn.Module
        Maps a float32 batch of shape (batch, n_features) to (batch, d).
    n_features : int
        Number of input features.

    Returns
    -------
    int
        ``d``.

    Raises
    ------
    ValueError
        If the encoder fails on a (2, n_features) batch or does not return (2, d).
    """
    was_training = encoder.training
    encoder.eval()
    try:
        with torch.no_grad():
            out = encoder(torch.zeros(2, n_features))
    except Exception as error:
        raise ValueError(
            f"the encoder failed on a batch of shape (2, {n_features}) (two samples of the "
            f"{n_features} input features): {type(error).__name__}: {error}. An encoder "
            "must map a float32 tensor of shape (batch, n_features) to (batch, d)."
        ) from error
    finally:
        encoder.train(was_training)
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"the encoder must map a batch of shape (batch, {n_features}) to (batch, d); on "
            f"a batch of 2 it returned {shape}. Flatten its output, e.g. end it with "
            "torch.nn.Flatten()."
        )
    check_encoder_output(out, (2, n_features))
    return int(out.shape[1])
