"""Scorers of the conditional NCE family (Ma & Collins, 2018).

* :class:`BagWeighting` weighs a bag of counts (sublinear counts, idf, unit rows), as
  ``sknce._bags.normalize_bags`` does, sparse or dense, inside a network;
* :class:`BagEncoder` maps a sparse bag of features to the weighted mean (or sum) of
  their rows (fastText's hidden layer), the encoder of sparse input;
* :class:`LabelScorer` scores (input, label) pairs, ``s(x, y) = h(x)ᵀ e_y + b_y``;
* :class:`LinearLabelScorer` scores them by a full-rank linear model of the input,
  ``s(x, y) = h(x)_y + b_y`` with ``h(x) = x V`` (one row of ``V`` per feature);
* :class:`TargetEnergy` scores (input, continuous target) pairs (Gustafsson et al., 2020).

Their ``forward`` scores the labels or targets a sampler drew; the objectives of
:mod:`sknce.losses` turn the scores into a loss.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sknce.nn._mlp import MLP, sparse_rows_bag

__all__ = ["BagEncoder", "BagWeighting", "LabelScorer", "LinearLabelScorer", "TargetEnergy"]


class BagWeighting(nn.Module):
    r"""A bag of counts as a network reads it: ``sknce._bags.normalize_bags`` in torch.

    ``"log1p-idf"``: :math:`\log(1 + x_j)\, \mathrm{idf}_j`, each row scaled to unit
    Euclidean norm; ``"tf"``: each row divided by its sum; ``"log1p"``:
    :math:`\log(1 + x_j)`; ``"counts"``: as given. An all-zero row stays zero. A
    sparse COO batch stays sparse (only its stored values change); a dense one
    stays dense, so the module exports as it trains.

    Parameters
    ----------
    bag : {"log1p-idf", "tf", "log1p", "counts"}
        The representation.
    idf : array-like of shape (n_features,) or None, default=None
        Inverse document frequencies (``"log1p-idf"`` only), a buffer.
    n_buckets : int or None, default=None
        Fold the weighted features into this many columns: feature ``j`` into column
        ``j % n_buckets``, the values of a row's colliding features summed (the
        hashing trick, for a table of fewer rows than features); None: one column
        per feature.
    """

    def __init__(self, bag: str, idf=None, n_buckets: int | None = None) -> None:
        super().__init__()
        if bag not in ("log1p-idf", "tf", "log1p", "counts"):
            raise ValueError(f"bag must be 'log1p-idf', 'tf', 'log1p' or 'counts'; got {bag!r}.")
        if (bag == "log1p-idf") != (idf is not None):
            raise ValueError("bag='log1p-idf' needs idf, and only it takes one.")
        if n_buckets is not None and (
            isinstance(n_buckets, bool)
            or not isinstance(n_buckets, (int, np.integer))
            or n_buckets < 1
        ):
            raise ValueError(f"n_buckets must be a positive integer or None; got {n_buckets!r}.")
        self.bag = bag
        self.n_buckets = None if n_buckets is None else int(n_buckets)
        if idf is not None:
            idf = torch.as_tensor(np.asarray(idf, dtype=np.float64), dtype=torch.float32)
            if idf.ndim != 1:
                raise ValueError(
                    f"idf must hold one value per feature (1-D); got shape {tuple(idf.shape)}."
                )
            if not bool(torch.isfinite(idf).all()) or bool((idf < 0).any()):
                raise ValueError(
                    "idf must be finite and non-negative (e.g. sknce._bags.smooth_idf of "
                    "the training counts)."
                )
        self.register_buffer("idf", idf)

    def __setstate__(self, state: dict) -> None:
        state.setdefault("n_buckets", None)  # pickled before the folding existed
        super().__setstate__(state)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The weighted batch.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse COO
            Counts.

        Returns
        -------
        Tensor of the same layout (a sparse input comes back coalesced), of shape
        (batch, n_features), or (batch, n_buckets) when folded
        """
        if not x.is_sparse:
            values, rows = x, None
        else:
            x = x.coalesce()
            values, rows = x.values(), x.indices()[0]
        weighted = self._weigh(values, rows, x)
        if rows is None:
            return weighted if self.n_buckets is None else self._fold_dense(weighted)
        if self.n_buckets is None:
            return torch.sparse_coo_tensor(
                x.indices(), weighted, x.shape, is_coalesced=True, check_invariants=False
            )
        indices = torch.stack([rows, x.indices()[1] % self.n_buckets])
        shape = (x.shape[0], self.n_buckets)
        return torch.sparse_coo_tensor(indices, weighted, shape, check_invariants=False).coalesce()

    def _fold_dense(self, x: torch.Tensor) -> torch.Tensor:
        """Columns ``j`` summed into ``j % n_buckets``: zero-padded to whole blocks of
        ``n_buckets`` columns, the blocks summed (static shapes, so that it exports)."""
        n_blocks = -(-x.shape[1] // self.n_buckets)
        padded = F.pad(x, (0, n_blocks * self.n_buckets - x.shape[1]))
        return padded.reshape(x.shape[0], n_blocks, self.n_buckets).sum(dim=1)

    def _weigh(self, values: torch.Tensor, rows: torch.Tensor | None, x: torch.Tensor):
        """Weighted ``values``: a dense batch (``rows`` None) or a sparse one's stored values."""
        if self.bag == "counts":
            return values
        if self.bag == "log1p":
            return torch.log1p(values)
        if self.bag == "log1p-idf":
            idf = self.idf.to(values.dtype)
            values = torch.log1p(values) * (idf if rows is None else idf[x.indices()[1]])
            squares = self._row_sums(values.square(), rows, x)
            norms = squares.sqrt()
        else:
            norms = self._row_sums(values, rows, x)
        norms = torch.where(norms > 0, norms, 1.0)
        return values / (norms if rows is None else norms[rows])

    @staticmethod
    def _row_sums(values: torch.Tensor, rows: torch.Tensor | None, x: torch.Tensor):
        if rows is None:
            return values.sum(dim=1, keepdim=True)
        return torch.zeros(x.shape[0], dtype=values.dtype, device=values.device).index_add_(
            0, rows, values
        )


class BagEncoder(nn.Module):
    r"""The weighted mean of a bag's feature rows, :math:`h(x) = \sum_j x_j W_j / \sum_j |x_j|`.

    For a row of counts (a bag of words) it is the mean of its words' rows, the
    hidden layer of fastText's classifier (Joulin et al., 2017). With
    ``normalize=False`` it is the sum :math:`\sum_j x_j W_j`, for inputs already
    weighted (e.g. by ``sknce._bags.normalize_bags``). Sparse input goes
    through :func:`torch.nn.functional.embedding_bag` and is never densified. An
    all-zero row maps to zero.

    Parameters
    ----------
    n_features : int
        Number of input features (rows of ``W``; ``weighting.n_buckets`` rows when
        the weighting folds them).
    dim : int
        Width of :math:`h(x)`.
    sparse_grad : bool, default=False
        Give ``W`` a sparse gradient (only the rows of the features present), for
        optimisers such as :class:`sknce.optim.LazyAdam`.
    normalize : bool, default=True
        Divide by :math:`\sum_j |x_j|` (the mean of the rows); ``False``: the sum.
    weighting : BagWeighting or None, default=None
        Applied to the input first (the bag as the encoder reads it); None: as given.

    Attributes
    ----------
    weight : Parameter of shape (n_features or n_buckets, dim)
        ``W``, drawn uniformly from :math:`[-1/d, 1/d]` as fastText draws its
        input vectors.
    """

    def __init__(
        self,
        n_features: int,
        dim: int,
        sparse_grad: bool = False,
        normalize: bool = True,
        weighting: BagWeighting | None = None,
    ) -> None:
        super().__init__()
        self.sparse_grad = bool(sparse_grad)
        self.normalize = bool(normalize)
        idf = None if weighting is None else weighting.idf
        if idf is not None and idf.shape != (int(n_features),):
            raise ValueError(
                f"idf must hold one value per feature, shape ({int(n_features)},); got "
                f"shape {tuple(idf.shape)}."
            )
        self.weighting = weighting
        folded = weighting is not None and weighting.n_buckets is not None
        n_rows = weighting.n_buckets if folded else n_features
        self.weight = nn.Parameter(torch.empty(int(n_rows), int(dim)))
        nn.init.uniform_(self.weight, -1.0 / dim, 1.0 / dim)

    def __setstate__(self, state: dict) -> None:
        # encoders pickled before ``normalize`` and ``weighting`` existed: the mean of x
        state.setdefault("normalize", True)
        state.get("_modules", {}).setdefault("weighting", None)
        super().__setstate__(state)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`h(x)` of a batch.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse COO
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, dim)
        """
        if self.weighting is not None:
            x = self.weighting(x)
        if not x.is_sparse:
            if not self.normalize:
                return x.to(self.weight.dtype) @ self.weight
            total = x.abs().sum(dim=1, keepdim=True)
            return (x / torch.where(total > 0, total, 1.0)) @ self.weight
        x = x.coalesce()  # row-major order: each row's entries are contiguous
        values = x.values()
        if not self.normalize:
            return sparse_rows_bag(x, self.weight, values.to(self.weight.dtype), self.sparse_grad)
        rows = x.indices()[0]
        total = torch.zeros(x.shape[0], dtype=values.dtype, device=values.device)
        total.index_add_(0, rows, values.abs())
        total = torch.where(total > 0, total, 1.0)
        shares = (values / total[rows]).to(self.weight.dtype)
        return sparse_rows_bag(x, self.weight, shares, self.sparse_grad)


class LabelScorer(nn.Module):
    r"""Score of an input and a label, :math:`s(x, y) = h(x)^\top e_y + b_y (+ b(x))`.

    Parameters
    ----------
    encoder : nn.Module
        The encoder :math:`h`, mapping a batch of inputs to (batch, dim).
    dim : int
        Width of :math:`h(x)` and of the label embeddings :math:`e_y`.
    n_classes : int
        Number of labels.
    label_bias : bool, default=True
        Learn the label bias :math:`b_y`.
    input_bias : nn.Module or None, default=None
        A network :math:`b(x)` with one output, added to every label's score
        (Ma & Collins' :math:`b_x`, Section 5.1).
    sparse : bool, default=False
        Give the label embeddings and biases sparse gradients (only the rows of
        the scored labels), for optimisers such as :class:`sknce.optim.LazyAdam`.
    dropout : float, default=0.0
        Share of the components of :math:`h(x)` zeroed in training (inverted
        dropout, Srivastava et al., 2014); none at inference.
    """

    def __init__(
        self,
        encoder: nn.Module,
        dim: int,
        n_classes: int,
        label_bias: bool = True,
        input_bias: nn.Module | None = None,
        sparse: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.sparse = bool(sparse)
        self.dropout = nn.Dropout(dropout)
        self.encoder = encoder
        self.embedding_dim = int(dim)
        self.n_classes = int(n_classes)
        self.label_embedding = nn.Embedding(n_classes, dim)
        nn.init.normal_(self.label_embedding.weight, std=dim**-0.5)
        # Shape (n_classes, 1), so that it is an embedding table like e_y.
        self.label_bias = nn.Parameter(torch.zeros(n_classes, 1)) if label_bias else None
        self.input_bias = input_bias

    def forward(
        self,
        x: torch.Tensor,
        labels: torch.Tensor | None = None,
        negatives: torch.Tensor | None = None,
        norm: torch.Tensor | None = None,
    ) -> dict:
        """Scores of the given labels, or of every label.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.
        labels : LongTensor of shape (batch,) or None
            The true labels: scored as ``pos``; with ``labels=None`` every label is
            scored (``logits`` of shape (batch, n_classes), the full softmax).
        negatives : LongTensor of shape (batch, K) or (K,), or None
            Noise labels, scored as ``neg`` of shape (batch, K): K per input, or one
            set of K shared by the batch (scored with one matrix product,
            :meth:`score_shared`).
        norm : LongTensor of shape (batch, m) or (m,), or None
            Noise labels of the self-normalisation penalty, scored as ``norm``
            (per input, or shared as ``negatives``).

        Returns
        -------
        dict of str to Tensor
            ``pos`` (or ``logits``), ``neg`` and ``norm`` as requested.
        """
        h, b = self.encode(x)
        if labels is None:
            scores = {"logits": self.score_range(h, b)}
        else:
            scores = {"pos": self.score(h, b, labels)}
        for name, drawn in (("neg", negatives), ("norm", norm)):
            if drawn is not None:
                score = self.score_shared if drawn.dim() == 1 else self.score
                scores[name] = score(h, b, drawn)
        return scores

    @torch.no_grad()
    def start_at_prior(self, log_prior: torch.Tensor) -> None:
        r"""Start at the model :math:`p(y \mid x) = p(y)`: biases ``log_prior``, embeddings 0.

        Every input then gets the same scores, so the untrained model predicts the
        label frequencies (uniform probabilities without a label bias); the
        embeddings move away from zero at the first step, the encoder at the next.

        Parameters
        ----------
        log_prior : Tensor of shape (n_classes,)
            Log-probabilities of the labels, e.g. of their training frequencies.
        """
        if self.label_bias is not None:
            self.label_bias.copy_(log_prior.reshape(-1, 1))
        self.label_embedding.weight.zero_()

    def label_tables(self) -> list[torch.Tensor]:
        """The parameters that scale every label's score: ``e_y`` and ``b_y``.

        Dividing them by ``T`` divides :math:`s(x, y) - b(x)` by ``T``.

        Returns
        -------
        list of Parameter
        """
        bias = [] if self.label_bias is None else [self.label_bias]
        return [self.label_embedding.weight, *bias]

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return :math:`h(x)` of shape (batch, dim) and :math:`b(x)` (batch,) or None.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        tuple of (Tensor, Tensor or None)
        """
        h = self.dropout(self.encoder(x))
        b = None if self.input_bias is None else self.input_bias(x).squeeze(1)
        return h, b

    def score(self, h: torch.Tensor, b: torch.Tensor | None, labels: torch.Tensor) -> torch.Tensor:
        """Scores of given labels for encoded inputs.

        Parameters
        ----------
        h : Tensor of shape (batch, dim)
            :math:`h(x)` (:meth:`encode`).
        b : Tensor of shape (batch,) or None
            :math:`b(x)` (:meth:`encode`).
        labels : LongTensor of shape (batch,) or (batch, K)
            One label or K labels per input.

        Returns
        -------
        Tensor of the shape of ``labels``
        """
        flat = labels.reshape(-1)
        e = self._rows(self.label_embedding.weight, flat).reshape(*labels.shape, -1)
        s = (h * e).sum(1) if labels.dim() == 1 else torch.bmm(e, h.unsqueeze(2)).squeeze(2)
        if self.label_bias is not None:
            s = s + self._rows(self.label_bias, flat).reshape(labels.shape)
        if b is not None:
            s = s + (b if labels.dim() == 1 else b.unsqueeze(1))
        return s

    def score_shared(
        self, h: torch.Tensor, b: torch.Tensor | None, labels: torch.Tensor
    ) -> torch.Tensor:
        """Scores of one set of labels for every encoded input, by one matrix product.

        Parameters
        ----------
        h : Tensor of shape (batch, dim)
            :math:`h(x)` (:meth:`encode`).
        b : Tensor of shape (batch,) or None
            :math:`b(x)` (:meth:`encode`).
        labels : LongTensor of shape (K,)
            The labels scored against every input (e.g. a batch's shared negatives).

        Returns
        -------
        Tensor of shape (batch, K)
        """
        e = self._rows(self.label_embedding.weight, labels)
        s = h @ e.T
        if self.label_bias is not None:
            s = s + self._rows(self.label_bias, labels).squeeze(1)
        if b is not None:
            s = s + b.unsqueeze(1)
        return s

    def _rows(self, table: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Rows ``labels`` (1-D) of a label table, with a sparse gradient when ``sparse``."""
        if self.sparse:
            return F.embedding(labels, table, sparse=True)
        # index_select: its backward is an index_add, about twice as fast on the CPU as
        # nn.Embedding's (which sorts the indices) for (batch, K) blocks.
        return table.index_select(0, labels)

    def score_range(
        self, h: torch.Tensor, b: torch.Tensor | None, start: int = 0, stop: int | None = None
    ) -> torch.Tensor:
        """Scores of the contiguous labels ``start..stop-1`` for encoded inputs.

        Parameters
        ----------
        h : Tensor of shape (batch, dim)
            :math:`h(x)` (:meth:`encode`).
        b : Tensor of shape (batch,) or None
            :math:`b(x)` (:meth:`encode`).
        start : int, default=0
            First label scored.
        stop : int or None, default=None
            One past the last label scored; ``None`` means ``n_classes``.

        Returns
        -------
        Tensor of shape (batch, stop - start)
        """
        stop = self.n_classes if stop is None else stop
        weight = self.label_embedding.weight[start:stop]
        if self.label_bias is None:
            s = h @ weight.T
        else:  # the bias added by the product itself: one pass over the block
            s = torch.addmm(self.label_bias[start:stop, 0], h, weight.T)
        if b is not None:
            s = s + b.unsqueeze(1)
        return s


class LinearLabelScorer(nn.Module):
    r"""Score of an input and a label by a full-rank linear model, :math:`s(x, y) = h(x)_y + b_y`.

    The encoder maps an input to one score per label, e.g. a
    :class:`BagEncoder` of width ``n_classes`` without normalisation,
    :math:`h(x) = x V`: a sparse linear layer, one row of ``V`` per feature (the
    multinomial logistic model, :math:`\mathrm{rank}(V) = \min(n_{features},
    n_{classes})`). The same interface as :class:`LabelScorer`.

    Parameters
    ----------
    encoder : nn.Module
        Maps a batch of inputs to (batch, n_classes).
    n_classes : int
        Number of labels.
    label_bias : bool, default=True
        Learn the label bias :math:`b_y` (a parameter of shape (1, n_classes): one
        row, updated at every step).
    """

    def __init__(self, encoder: nn.Module, n_classes: int, label_bias: bool = True) -> None:
        super().__init__()
        self.encoder = encoder
        self.n_classes = int(n_classes)
        self.label_bias = nn.Parameter(torch.zeros(1, n_classes)) if label_bias else None

    forward = LabelScorer.forward

    @torch.no_grad()
    def start_at_prior(self, log_prior: torch.Tensor) -> None:
        r"""Start at :math:`p(y \mid x) = p(y)`: biases ``log_prior``, the encoder's weight 0.

        Parameters
        ----------
        log_prior : Tensor of shape (n_classes,)
            Log-probabilities of the labels, e.g. of their training frequencies.
        """
        if self.label_bias is not None:
            self.label_bias.copy_(log_prior.reshape(1, -1))
        self.encoder.weight.zero_()

    def label_tables(self) -> list[torch.Tensor]:
        """The parameters that scale every label's score: ``V`` and ``b``.

        Returns
        -------
        list of Parameter
        """
        bias = [] if self.label_bias is None else [self.label_bias]
        return [self.encoder.weight, *bias]

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        """:math:`h(x)`, the scores before the label bias, and no input bias:
        :meth:`LabelScorer.encode`'s interface.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse COO
            A batch of inputs.

        Returns
        -------
        h : Tensor of shape (batch, n_classes)
        b : None
        """
        return self.encoder(x), None

    def _bias(self, labels: torch.Tensor) -> torch.Tensor | float:
        return 0.0 if self.label_bias is None else self.label_bias[0, labels]

    def score(self, h: torch.Tensor, b: None, labels: torch.Tensor) -> torch.Tensor:
        """Scores of given labels for encoded inputs: :meth:`LabelScorer.score`'s interface.

        Parameters
        ----------
        h : Tensor of shape (batch, n_classes)
            :math:`h(x)` (:meth:`encode`).
        b : None
            No input bias.
        labels : LongTensor of shape (batch,) or (batch, K)
            The labels scored for each input.

        Returns
        -------
        Tensor of the shape of ``labels``
        """
        index = labels.unsqueeze(1) if labels.dim() == 1 else labels
        return h.gather(1, index).reshape(labels.shape) + self._bias(labels)

    def score_shared(self, h: torch.Tensor, b: None, labels: torch.Tensor) -> torch.Tensor:
        """Scores of one set of labels for every encoded input:
        :meth:`LabelScorer.score_shared`'s interface.

        Parameters
        ----------
        h : Tensor of shape (batch, n_classes)
            :math:`h(x)` (:meth:`encode`).
        b : None
            No input bias.
        labels : LongTensor of shape (K,)
            The labels scored for every input.

        Returns
        -------
        Tensor of shape (batch, K)
        """
        return h[:, labels] + self._bias(labels)

    def score_range(
        self, h: torch.Tensor, b: None, start: int = 0, stop: int | None = None
    ) -> torch.Tensor:
        """Scores of the contiguous labels ``start..stop-1`` for encoded inputs:
        :meth:`LabelScorer.score_range`'s interface.

        Parameters
        ----------
        h : Tensor of shape (batch, n_classes)
            :math:`h(x)` (:meth:`encode`).
        b : None
            No input bias.
        start : int, default=0
            First label scored.
        stop : int or None, default=None
            One past the last label scored; ``None`` means ``n_classes``.

        Returns
        -------
        Tensor of shape (batch, stop - start)
        """
        stop = self.n_classes if stop is None else stop
        s = h[:, start:stop]
        return s if self.label_bias is None else s + self.label_bias[0, start:stop]


class TargetEnergy(nn.Module):
    r"""Score of an input and a scalar target, :math:`s(x, y) = \log b(y \mid x) + r(x, y)`.

    The residual energy :math:`r(x, y) = f([g(x), \phi(y)])` combines a network
    :math:`g` of the input, an MLP embedding :math:`\phi` of the target and an MLP
    head :math:`f` on their concatenation, the architecture of Gustafsson et al.
    (2020) for energy-based regression. The density is
    :math:`p(y \mid x) \propto \exp s(x, y)`.

    With ``base_df``, the target is a residual in units of a base model's scale and
    :math:`b` is a Student-t density with ``base_df`` degrees of freedom, location
    :math:`m(x)` and scale :math:`e^{l(x)}`, :math:`(m, l)` a linear map of
    :math:`g(x)` (a learned correction of the base's location and scale); that map
    and the head's output layer start at zero, so that the untrained model *is* the
    standard Student-t, and :math:`r` sees the target clipped to ``support``: beyond
    it the density follows :math:`b`'s tails. Without it, :math:`s = r` (the paper's
    model).

    Parameters
    ----------
    encoder : nn.Module
        The input network :math:`g`, mapping a batch of inputs to (batch, d_x).
        (e.g. :class:`~sknce.nn.MLP`).
    encoder_dim : int
        Width ``d_x`` of :math:`g(x)`.
    embedding_dim : int
        Width of :math:`\phi(y)` and of the head's hidden layer.
    base_df : float or None, default=None
        Degrees of freedom of the Student-t base density; ``None``: no base.
    support : tuple of float or None, default=None
        ``(low, high)``: the targets :math:`r` sees are clipped to this interval;
        ``None``: not clipped.
    """

    def __init__(
        self,
        encoder: nn.Module,
        encoder_dim: int,
        embedding_dim: int,
        base_df: float | None = None,
        support: tuple[float, float] | None = None,
    ) -> None:
        super().__init__()
        d = int(embedding_dim)
        self.x_net = encoder
        self.y_net = MLP(1, (d,), d)
        self.head = MLP(int(encoder_dim) + d, (d,), 1)
        self.base_df = None if base_df is None else float(base_df)
        self.support = None if support is None else tuple(float(v) for v in support)
        self.location_scale = None
        if base_df is not None:
            self.location_scale = nn.Linear(int(encoder_dim), 2)
            for layer in (self.head.hidden[-1], self.location_scale):
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)

    def forward(self, x: torch.Tensor, y: torch.Tensor, noise_y: torch.Tensor) -> dict:
        """Scores ``pos`` of the observed targets ``y`` and ``neg`` of ``noise_y``.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.
        y : Tensor of shape (batch,)
            Their observed targets.
        noise_y : Tensor of shape (batch, K)
            Noise targets drawn for each input.

        Returns
        -------
        dict of Tensor
            ``pos`` of shape (batch,) and ``neg`` of shape (batch, K).
        """
        g = self.encode(x)
        # One pass over the observed and the noise targets: the same scores, half the
        # operations of two passes (on small data a step is its operations' overhead).
        scores = self.score(g, torch.cat([y.unsqueeze(1), noise_y], dim=1))
        return {"pos": scores[:, 0], "neg": scores[:, 1:]}

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`g(x)`, the input network's output.

        Parameters
        ----------
        x : Tensor of shape (batch, n_features), dense or sparse
            A batch of inputs.

        Returns
        -------
        Tensor of shape (batch, d_x)
        """
        return self.x_net(x)

    def score(self, g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Scores :math:`s(x, y)` of targets for encoded inputs.

        Parameters
        ----------
        g : Tensor of shape (batch, d_x)
            :math:`g(x)` (:meth:`encode`).
        y : Tensor of shape (batch,) or (batch, K)
            One target or K targets per input.

        Returns
        -------
        Tensor of the shape of ``y``
        """
        score = self.residual(g, y)
        if self.base_df is None:
            return score
        loc, log_scale = (v.reshape(-1, *(1,) * (y.dim() - 1)) for v in self.base_params(g))
        return (
            score + student_t_log_prob((y - loc) * torch.exp(-log_scale), self.base_df) - log_scale
        )

    def base_params(self, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Location :math:`m(x)` and log-scale :math:`l(x)` of the base density.

        Parameters
        ----------
        g : Tensor of shape (batch, d_x)
            :math:`g(x)` (:meth:`encode`).

        Returns
        -------
        loc, log_scale : Tensor of shape (batch,)
            Zeros without a base.
        """
        if self.location_scale is None:
            zeros = g.new_zeros(g.shape[0])
            return zeros, zeros
        out = self.location_scale(g)
        return out[:, 0], out[:, 1]

    def residual(self, g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The residual energy :math:`r(x, y)` (the score without the base's log-density).

        Parameters
        ----------
        g : Tensor of shape (batch, d_x)
            :math:`g(x)` (:meth:`encode`).
        y : Tensor of shape (batch,) or (batch, K)
            One target or K targets per input.

        Returns
        -------
        Tensor of the shape of ``y``
        """
        if self.support is not None:
            y = y.clamp(*self.support)
        flat = y.reshape(y.shape[0], -1)
        k = flat.shape[1]
        phi = self.y_net(flat.reshape(-1, 1)).reshape(y.shape[0], k, -1)
        pair = torch.cat([g.unsqueeze(1).expand(-1, k, -1), phi], dim=2)
        return self.head(pair).reshape(y.shape)


def student_t_log_prob(z: torch.Tensor, df: float) -> torch.Tensor:
    """Log-density of the standard Student-t distribution with ``df`` degrees of freedom.

    Parameters
    ----------
    z : Tensor
        Points.
    df : float
        Degrees of freedom, positive.

    Returns
    -------
    Tensor of the shape of ``z``
    """
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return log_norm - (df + 1) / 2 * torch.log1p(z.square() / df)


#: Terms of the continued fraction of :func:`student_t_cdf`, where it converges fastest
#: (``x`` below the mean of the beta distribution): 16 give a relative error below 2e-8
#: against ``scipy.stats.t.cdf`` in float64 (below float32's rounding), for df from 1
#: to 1e4 and |z| up to 1e3.
_BETA_TERMS = 16


def _beta_continued_fraction(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The continued fraction of the regularised incomplete beta function, by Lentz's
    method (Numerical Recipes, ``betacf``), unrolled over :data:`_BETA_TERMS` terms."""
    tiny = 1e-30

    def floor(v: torch.Tensor) -> torch.Tensor:
        return torch.where(v.abs() < tiny, tiny, v)

    c = torch.ones_like(x)
    d = 1.0 / floor(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, _BETA_TERMS + 1):
        for aa in (
            m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m)),
        ):
            d = 1.0 / floor(1.0 + aa * d)
            c = floor(1.0 + aa / c)
            h = h * d * c
    return h


def _incomplete_beta(
    x: torch.Tensor, log_x: torch.Tensor, log_y: torch.Tensor, a: float, b: float
) -> torch.Tensor:
    """The regularised incomplete beta function :math:`I_x(a, b)` for ``x`` in [0, 1],
    given ``log x`` and ``log(1 - x)`` computed without cancellation."""
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    front = torch.exp(a * log_x + b * log_y - log_beta)
    # The fraction converges fast below the mean of Beta(a, b); above it, it gives
    # I_y(b, a) = 1 - I_x(a, b): one fraction, of the parameters of each element's side.
    below = x < (a + 1.0) / (a + b + 2.0)
    p = torch.where(below, torch.tensor(a, dtype=x.dtype), torch.tensor(b, dtype=x.dtype))
    fraction = _beta_continued_fraction(torch.where(below, x, -torch.expm1(log_x)), p, a + b - p)
    side = front * fraction / p
    return torch.where(below, side, 1.0 - side)


def student_t_cdf(z: torch.Tensor, df: float) -> torch.Tensor:
    """Distribution function of the standard Student-t distribution, in torch.

    ``scipy.stats.t.cdf`` of points ``z`` (a tensor, returned in its shape and dtype)
    for ``df`` degrees of freedom, as :func:`student_t_log_prob` takes them; through the
    regularised incomplete beta function :math:`I_{df/(df+z^2)}(df/2, 1/2)`, computed by
    its continued fraction so that an exported model needs no special function.
    """
    # In float64 whatever z's dtype: near the mean of a beta of large parameters (large
    # df), the fraction's terms nearly cancel, which float32 cannot carry.
    wide = z.to(torch.float64)
    ratio = wide.square() / df  # x = 1 / (1 + ratio), 1 - x = ratio / (1 + ratio)
    log_x = -torch.log1p(ratio)
    half = 0.5 * _incomplete_beta(torch.exp(log_x), log_x, torch.log(ratio) + log_x, df / 2, 0.5)
    return torch.where(wide < 0, half, 1.0 - half).to(z.dtype)
