"""Inference modules: a fitted estimator's ``transform`` or ``predict_proba`` as torch.

Each estimator builds the module of each method it exports from its own fitted
network and statistics (``BaseNCE._inference_module``); :mod:`sknce.export`
freezes, traces and writes it. An :class:`InferenceModule` states the input it
takes (dense float32 rows of ``n_features`` values, or padded word ids), so that
the exporter needs to know nothing of the estimator. The parts here are the
estimators' own inference steps in torch: the input scalings of the document and
latent-class embedders, the output forms of the landmark embedder (which its
``transform`` calls too), class probabilities, word-vector means.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "BagInput",
    "Encoded",
    "InferenceModule",
    "LabelProbabilities",
    "LandmarkLogOdds",
    "LeftEncoder",
    "RegressionMean",
    "StandardInput",
    "WordMean",
    "landmark_output_",
]


def _eager() -> bool:
    """Whether the module runs on values (not traced by torch.export or the ONNX exporter)."""
    return not (torch.compiler.is_exporting() or torch.compiler.is_compiling())


def _buffer(values) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, dtype=np.float32))


class InferenceModule(nn.Module):
    """The inference path of one method of a fitted estimator, and the input it takes.

    Parameters
    ----------
    body : nn.Module
        Maps a batch of inputs to the method's output.
    n_features : int or None
        Columns of the input: dense float32 rows of ``n_features`` values; ``None``:
        word ids of any length (int64, padded with ``-1``).
    """

    def __init__(self, body: nn.Module, n_features: int | None) -> None:
        super().__init__()
        self.body = body
        self.n_features = n_features

    @property
    def input_dtype(self) -> torch.dtype:
        """``torch.float32`` for rows of features, ``torch.int64`` for word ids."""
        return torch.float32 if self.n_features is not None else torch.int64

    def example(self) -> torch.Tensor:
        """A batch of two inputs (zeros), to trace the module with."""
        return torch.zeros((2, self.n_features or 3), dtype=self.input_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The method's output for a batch ``x`` (see :meth:`example`).

        Rows of features may come in any real dtype (they are cast to float32). Run
        eagerly (not traced), the values are checked too: finite features, word ids
        from ``-1`` to the vocabulary's size; an exported program or ONNX model does
        not check them.

        Raises
        ------
        TypeError
            If ``x`` is not a tensor, or has a dtype the module cannot take.
        ValueError
            If ``x`` has another shape than ``(batch, n_features)`` (``(batch, length)``
            for word ids), or (eagerly) values it cannot take.
        """
        if not torch.is_tensor(x):
            raise TypeError(
                f"the module takes a torch tensor, got {type(x).__name__}; e.g. "
                "torch.as_tensor(X, dtype=torch.float32)."
            )
        if self.n_features is None:
            return self.body(self._checked_ids(x))
        if x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"the module takes real features, got a tensor of {x.dtype}.")
        if x.dim() != 2 or x.shape[1] != self.n_features:
            raise ValueError(
                f"the module takes rows of {self.n_features} features, shape (batch, "
                f"{self.n_features}); got shape {tuple(x.shape)}."
            )
        x = x.to(torch.float32)
        if _eager() and not bool(torch.isfinite(x).all()):
            raise ValueError(
                "the input holds NaN or infinite values; the estimator refuses them too."
            )
        return self.body(x)

    def _checked_ids(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise TypeError(
                f"the module takes integer word ids (sknce.export.word_ids), got {ids.dtype}."
            )
        if ids.dim() != 2:
            raise ValueError(
                f"the module takes word ids of shape (n_documents, length), padded with -1; "
                f"got shape {tuple(ids.shape)}."
            )
        ids = ids.to(torch.int64)
        n_words = self.body.vectors.shape[0]
        if _eager() and ids.numel() and not bool(((ids >= -1) & (ids < n_words)).all()):
            raise ValueError(
                f"word ids run from -1 (no word) to {n_words - 1} (the vocabulary's size "
                f"minus one); got {int(ids.min())} to {int(ids.max())}. Build them with "
                "sknce.export.word_ids."
            )
        return ids


class BagInput(nn.Module):
    """The network's input from counts: ``sknce._bags.normalize_bags`` in torch.

    Parameters
    ----------
    bag : {"log1p-idf", "tf", "log1p", "counts"}
        The representation (see ``sknce._bags.normalize_bags``).
    idf : ndarray of shape (n_words,) or None
        The fitted inverse document frequencies (``"log1p-idf"`` only).
    """

    def __init__(self, bag: str, idf: np.ndarray | None) -> None:
        super().__init__()
        self.bag = bag
        self.register_buffer("idf", None if idf is None else _buffer(idf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bag == "tf":
            total = x.sum(dim=1, keepdim=True)
            return torch.where(total > 0, x / torch.where(total > 0, total, 1.0), 0.0)
        if self.bag == "log1p":
            return torch.log1p(x)
        if self.bag == "log1p-idf":
            # sklearn's normalize: an empty row stays zero
            return F.normalize(torch.log1p(x) * self.idf, dim=1, eps=1e-30)
        return x


class StandardInput(nn.Module):
    """``(x - mean) / scale``, as ``sknce.contrastive._scaling.scale_input`` computes it.

    Parameters
    ----------
    mean : ndarray of shape (n_features,) or None
        ``None``: not centred (a sparse training ``X``).
    scale : ndarray of shape (n_features,)
    """

    def __init__(self, mean: np.ndarray | None, scale: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("mean", None if mean is None else _buffer(mean))
        self.register_buffer("inverse", _buffer(1.0 / np.asarray(scale)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x if self.mean is None else x - self.mean) * self.inverse


class LeftEncoder(nn.Module):
    """``scorer.encode_left`` as a module's forward (a document embedder's encoder)."""

    def __init__(self, scorer: nn.Module) -> None:
        super().__init__()
        self.scorer = scorer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scorer.encode_left(x)


class Encoded(nn.Module):
    """An input scaling, then an encoder, then an optional row norm.

    Parameters
    ----------
    scaling : nn.Module
    encoder : nn.Module
    row_norm : float or None
        Each output row rescaled to this Euclidean norm; ``None``: as encoded.
    """

    def __init__(self, scaling: nn.Module, encoder: nn.Module, row_norm: float | None) -> None:
        super().__init__()
        self.scaling = scaling
        self.encoder = encoder
        self.row_norm = row_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.encoder(self.scaling(x))
        if self.row_norm is not None:
            z = F.normalize(z, dim=1) * self.row_norm
        return z


def landmark_output_(
    f: torch.Tensor,
    output: str,
    mean: torch.Tensor | None,
    scale: torch.Tensor | None,
    norm: float,
) -> torch.Tensor:
    """The landmark embedder's output from capped log-odds ``f``, computed in place.

    Parameters
    ----------
    f : Tensor of shape (n_documents, n_landmarks)
        Capped log-odds against the landmarks (overwritten).
    output : {"exp", "log-odds", "standardized", "normalized"}
    mean, scale : Tensor of shape (n_landmarks,) or None
        The column statistics (``"standardized"`` and ``"normalized"``).
    norm : float
        The row norm of ``"normalized"``.

    Returns
    -------
    Tensor
        ``f``.
    """
    if output == "exp":
        return f.exp_()
    if output == "log-odds":
        return f
    f.sub_(mean).div_(scale)
    if output == "normalized":
        f.div_(torch.linalg.vector_norm(f, dim=1, keepdim=True).clamp_(min=1e-12)).mul_(norm)
    return f


class LandmarkLogOdds(nn.Module):
    """Log-odds against cached landmark encodings, capped, in the landmark embedder's output.

    Parameters
    ----------
    scorer : nn.Module
        A ``BilinearScorer`` or ``PairScorer`` (``encode_left`` and ``combine``).
    bilinear : bool
        Whether the scorer is bilinear: the log-odds are then one matrix product.
    right : Tensor of shape (n_landmarks, width)
        The landmarks' right encodings.
    cap : float
        Largest log-odds.
    output : str
        See :func:`landmark_output_`.
    mean, scale : ndarray of shape (n_landmarks,) or None
        The column statistics of the standardised outputs.
    norm : float
        The row norm of ``"normalized"``.
    """

    def __init__(
        self,
        scorer: nn.Module,
        bilinear: bool,
        right: torch.Tensor,
        cap: float,
        output: str,
        mean: np.ndarray | None,
        scale: np.ndarray | None,
        norm: float,
    ) -> None:
        super().__init__()
        self.scorer = scorer
        self.bilinear = bilinear
        self.register_buffer("right", right)
        self.cap = cap
        self.output = output
        self.register_buffer("mean", None if mean is None else _buffer(mean))
        self.register_buffer("scale", None if scale is None else _buffer(scale))
        self.norm = norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left = self.scorer.encode_left(x)
        if self.bilinear:
            f = left @ self.right.T
        else:
            f = self.scorer.combine(left.unsqueeze(1), self.right.unsqueeze(0))
        f = f.clamp(max=self.cap)
        return landmark_output_(f, self.output, self.mean, self.scale, self.norm)


class LabelProbabilities(nn.Module):
    """A label scorer's scores of every class, as probabilities.

    Parameters
    ----------
    scorer : LabelScorer
    log : bool
        Log-probabilities (``predict_log_proba``) rather than probabilities.
    multilabel : bool
        Each label's own probability :math:`\\sigma(s(x, y))` (one-vs-all), rather
        than the softmax over the labels.
    offset : nn.Module or None, default=None
        Maps ``x`` to a term (batch, n_classes) added to the scores (a multi-label
        fit's co-occurrence term); None: none.
    """

    def __init__(
        self, scorer: nn.Module, log: bool, multilabel: bool, offset: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.scorer = scorer
        self.log = log
        self.multilabel = multilabel
        self.offset = offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, b = self.scorer.encode(x)
        scores = self.scorer.score_range(h, b)
        if self.offset is not None:
            scores = scores + self.offset(x)
        # one-vs-all labels are independent; classes exclude each other
        log_proba = F.logsigmoid(scores) if self.multilabel else torch.log_softmax(scores, dim=1)
        return log_proba if self.log else log_proba.exp()


class WordMean(nn.Module):
    """Weighted mean of word vectors of padded word ids (``-1``: no word).

    Parameters
    ----------
    vectors : ndarray of shape (n_words, dim)
    weights : ndarray of shape (n_words,) or None
        Each word's weight; ``None``: 1.
    weighting : {"mean", "tfidf", "sif"}
        ``"tfidf"`` divides by the sum of the weights, the others by the number of
        words; ``"sif"`` then removes ``component``.
    component : ndarray of shape (dim,) or None
        SIF's common component.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        weights: np.ndarray | None,
        weighting: str,
        component: np.ndarray | None,
    ) -> None:
        super().__init__()
        self.register_buffer("vectors", _buffer(vectors))
        self.register_buffer("weights", None if weights is None else _buffer(weights))
        self.weighting = weighting
        self.register_buffer("component", None if component is None else _buffer(component))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        present = ids >= 0
        safe = ids.clamp(min=0)
        count = present.sum(dim=1, keepdim=True).to(self.vectors.dtype)
        w = present.to(self.vectors.dtype)
        if self.weights is not None:
            w = w * self.weights[safe]
        total = (w.unsqueeze(2) * self.vectors[safe]).sum(dim=1)
        denominator = w.sum(dim=1, keepdim=True) if self.weighting == "tfidf" else count
        out = torch.where(count > 0, total / torch.where(count > 0, denominator, 1.0), 0.0)
        if self.component is not None:
            out = out - (out * self.component).sum(dim=1, keepdim=True) * self.component
        return out


class RegressionMean(nn.Module):
    """The conditional density regressor's mean prediction (``predict_method="mean"``).

    The density of the standardised target's residual :math:`z` given :math:`x` is
    :math:`\\exp r(x, z)` times the Student-t base (or 1 without one), normalised on
    the grid by the trapezoid rule plus the base's tails beyond it; the prediction is
    its mean, in the target's units: ``y_mean + y_scale * (loc + scale * E[z | x])``,
    as ``sknce.conditional._density.GridDensity.mean``.

    Parameters
    ----------
    scaling : nn.Module
        The inputs' standardisation.
    frame : dict or None
        The linear base's fitted arrays (``projection``, ``coef``, ``intercept``,
        ``mean``, ``precision``, ``sigma``, ``n_samples``), which give the frame
        ``loc(x)``, ``scale(x)``; ``None``: 0 and 1.
    energy : TargetEnergy
    grid : ndarray of shape (n_grid,)
        Evenly spaced residuals.
    df : float or None
        Degrees of freedom of the Student-t base; ``None``: no base.
    y_mean, y_scale : float
        The target's standardisation.
    """

    def __init__(
        self,
        scaling: nn.Module,
        frame: dict | None,
        energy: nn.Module,
        grid: np.ndarray,
        df: float | None,
        y_mean: float,
        y_scale: float,
    ) -> None:
        super().__init__()
        self.scaling = scaling
        self.energy = energy
        self.has_frame = frame is not None
        for key in ("projection", "coef", "mean", "precision"):
            value = None if frame is None else frame[key]
            self.register_buffer(key, None if value is None else _buffer(value))
        self.intercept = 0.0 if frame is None else float(frame["intercept"])
        self.sigma = 1.0 if frame is None else float(frame["sigma"])
        self.inverse_n = 0.0 if frame is None else 1.0 / float(frame["n_samples"])
        self.register_buffer("grid", _buffer(grid))
        weights = np.full(grid.size, grid[1] - grid[0])
        weights[[0, -1]] /= 2  # the trapezoid rule
        self.register_buffer("log_weights", _buffer(np.log(weights)))
        self.step = float(grid[1] - grid[0])
        self.df = None if df is None else float(df)
        self.register_buffer("sides", torch.tensor([-1.0, 1.0]))  # below, above the grid
        self.y_mean, self.y_scale = float(y_mean), float(y_scale)

    def _frame(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.has_frame:
            return torch.zeros_like(x[:, 0]), torch.ones_like(x[:, 0])
        z = x if self.projection is None else x @ self.projection
        centred = z - self.mean
        leverage = ((centred @ self.precision) * centred).sum(dim=1)
        return z @ self.coef + self.intercept, self.sigma * torch.sqrt(
            1.0 + self.inverse_n + leverage
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from sknce.nn._conditional import student_t_cdf, student_t_log_prob

        x = self.scaling(x)
        loc, scale = self._frame(x)
        g = self.energy.encode(x)
        r = self.energy.residual(g, self.grid.expand(g.shape[0], -1))
        base_loc, log_scale = self.energy.base_params(g)
        grid = self.grid.unsqueeze(0)
        if self.df is None:
            log_p = r
            log_tails = torch.full_like(r[:, :2], -torch.inf)
        else:
            inverse = torch.exp(-log_scale).unsqueeze(1)
            standard = (grid - base_loc.unsqueeze(1)) * inverse
            log_p = r + student_t_log_prob(standard, self.df) - log_scale.unsqueeze(1)
            ends = standard[:, [0, -1]]
            # the base's mass below the grid's lower end and above its upper end
            tails = student_t_cdf(-ends * self.sides, self.df)
            log_tails = r[:, [0, -1]] + torch.log(tails)
        log_z = torch.logsumexp(torch.cat([log_p + self.log_weights, log_tails], dim=1), dim=1)
        zp = torch.exp(log_p - log_z.unsqueeze(1)) * grid
        mean = ((zp[:, 1:] + zp[:, :-1]) * (self.step / 2)).sum(dim=1)
        if self.df is not None:
            # a tail's mean: loc + scale * (df + a^2) / (df - 1) * f(a) / (its base mass)
            density = torch.exp(student_t_log_prob(ends, self.df))
            first = (self.df + ends.square()) / (self.df - 1) * density
            first = torch.where(tails > 0, first / torch.where(tails > 0, tails, 1.0), 0.0)
            spread = torch.exp(log_scale).unsqueeze(1) * first * self.sides
            tail_means = base_loc.unsqueeze(1) + spread
            mean = mean + (torch.exp(log_tails - log_z.unsqueeze(1)) * tail_means).sum(dim=1)
        return (loc + scale * mean) * self.y_scale + self.y_mean
