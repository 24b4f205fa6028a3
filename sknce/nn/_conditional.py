"""Scorers and training objectives of the conditional NCE family (Ma & Collins, 2018).

* :class:`LabelScorer` scores (input, label) pairs, ``s(x, y) = h(x)ᵀ e_y + b_y``;
  :class:`LabelNCELoss` wraps it with a noise distribution over labels and one of
  the objectives of :mod:`sknce.losses` (ranking, binary, or the full softmax).
* :class:`TargetEnergy` scores (input, continuous target) pairs;
  :class:`TargetNCELoss` wraps it with Gaussian-mixture noise around the observed
  target (Gustafsson et al., 2020).

The losses themselves are the core's; these modules only draw negatives, score
them and hand scores and noise log-probabilities to :mod:`sknce.losses`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sknce.losses import binary_nce, ranking_nce, self_normalization_penalty
from sknce.nn._mlp import MLP
from sknce.noise import CategoricalNoise, GaussianMixtureNoise, remove_accidental_hits

__all__ = ["LabelNCELoss", "LabelScorer", "LazyAdam", "TargetEnergy", "TargetNCELoss"]


class _Identity(nn.Module):
    """``h(x) = x``; a sparse batch is densified (one batch only, never the whole X)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to_dense() if x.is_sparse else x


class LabelScorer(nn.Module):
    r"""Score of an input and a label, :math:`s(x, y) = h(x)^\top e_y + b_y (+ b(x))`.

    Parameters
    ----------
    n_features : int
        Width of the input.
    n_classes : int
        Number of labels.
    hidden_layer_sizes : tuple of int
        Hidden layers of the encoder :math:`h`. With ``()`` and ``embedding_dim=None``,
        :math:`h(x) = x` and the model is the log-linear :math:`x^\top\theta_y + b_y`.
    embedding_dim : int or None
        Width of :math:`h(x)` and :math:`e_y`; ``None`` means ``n_features`` when
        ``hidden_layer_sizes=()`` (identity encoder), else 64.
    label_bias : bool, default=True
        Learn the label bias :math:`b_y`.
    input_bias_layer_sizes : tuple of int or None, default=None
        If not ``None``, add an input-dependent scalar :math:`b(x)`, an MLP head with
        these hidden layers (Ma & Collins' :math:`b_x`, Section 5.1).
    sparse : bool, default=False
        :meth:`score` gives the label embeddings and biases sparse gradients (only
        the rows of the scored labels), for optimisers such as :class:`LazyAdam`.
    """

    def __init__(
        self,
        n_features: int,
        n_classes: int,
        hidden_layer_sizes: tuple[int, ...],
        embedding_dim: int | None = None,
        label_bias: bool = True,
        input_bias_layer_sizes: tuple[int, ...] | None = None,
        sparse: bool = False,
    ) -> None:
        super().__init__()
        self.sparse = bool(sparse)
        hidden_layer_sizes = tuple(hidden_layer_sizes)
        if not hidden_layer_sizes and embedding_dim is None:
            self.encoder: nn.Module = _Identity()
            dim = n_features
        else:
            dim = 64 if embedding_dim is None else int(embedding_dim)
            self.encoder = MLP(n_features, hidden_layer_sizes, dim)
        self.embedding_dim = dim
        self.n_classes = n_classes
        self.label_embedding = nn.Embedding(n_classes, dim)
        nn.init.normal_(self.label_embedding.weight, std=dim**-0.5)
        # Shape (n_classes, 1), so that it is an embedding table like e_y.
        self.label_bias = nn.Parameter(torch.zeros(n_classes, 1)) if label_bias else None
        self.input_bias = (
            None
            if input_bias_layer_sizes is None
            else MLP(n_features, tuple(input_bias_layer_sizes), 1)
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return :math:`h(x)` of shape (batch, dim) and :math:`b(x)` (batch,) or None."""
        h = self.encoder(x)
        b = None if self.input_bias is None else self.input_bias(x).squeeze(1)
        return h, b

    def score(self, h: torch.Tensor, b: torch.Tensor | None, labels: torch.Tensor) -> torch.Tensor:
        """Scores of given labels: ``labels`` of shape (batch,) or (batch, K)."""
        if self.sparse:
            e = F.embedding(labels, self.label_embedding.weight, sparse=True)
        else:
            # index_select: its backward is an index_add, about twice as fast on the
            # CPU as nn.Embedding's (which sorts the indices) for (batch, K) blocks.
            flat = labels.reshape(-1)
            e = self.label_embedding.weight.index_select(0, flat).reshape(*labels.shape, -1)
        s = (h * e).sum(1) if labels.dim() == 1 else torch.bmm(e, h.unsqueeze(2)).squeeze(2)
        if self.label_bias is not None and self.sparse:
            s = s + F.embedding(labels, self.label_bias, sparse=True).squeeze(-1)
        elif self.label_bias is not None:
            s = s + self.label_bias.index_select(0, labels.reshape(-1)).reshape(labels.shape)
        if b is not None:
            s = s + (b if labels.dim() == 1 else b.unsqueeze(1))
        return s

    def score_range(
        self, h: torch.Tensor, b: torch.Tensor | None, start: int = 0, stop: int | None = None
    ) -> torch.Tensor:
        """Scores of the contiguous labels ``start..stop-1``, shape (batch, stop - start)."""
        stop = self.n_classes if stop is None else stop
        s = h @ self.label_embedding.weight[start:stop].T
        if self.label_bias is not None:
            s = s + self.label_bias[start:stop, 0]
        if b is not None:
            s = s + b.unsqueeze(1)
        return s


class LazyAdam(torch.optim.Optimizer):
    """Adam that updates only the rows present in a sparse gradient.

    Dense gradients get the ordinary Adam update (:class:`torch.optim.Adam`'s
    formula, without weight decay or amsgrad). For a sparse gradient (a label
    embedding scored on sampled labels only) the moments and parameters of the
    rows present are updated and the others left untouched ("lazy" Adam, as
    :class:`torch.optim.SparseAdam` and TensorFlow's ``LazyAdamOptimizer``), so a
    step costs O(rows touched) instead of O(number of labels).

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float, default=1e-3
    betas : tuple of float, default=(0.9, 0.999)
    eps : float, default=1e-8
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        """Perform one update; ``closure`` re-evaluates the loss, as in torch."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = group["lr"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                step_size = lr / (1 - beta1 ** state["step"])
                correction2 = 1 - beta2 ** state["step"]
                grad = p.grad
                if grad.is_sparse:
                    grad = grad.coalesce()
                    rows, values = grad.indices()[0], grad.values()
                    m_rows = m.index_select(0, rows).mul_(beta1).add_(values, alpha=1 - beta1)
                    v_rows = v.index_select(0, rows).mul_(beta2)
                    v_rows.addcmul_(values, values, value=1 - beta2)
                    m.index_copy_(0, rows, m_rows)
                    v.index_copy_(0, rows, v_rows)
                    denom = (v_rows / correction2).sqrt_().add_(eps)
                    p.index_add_(0, rows, m_rows.div_(denom).mul_(-step_size))
                else:
                    m.mul_(beta1).add_(grad, alpha=1 - beta1)
                    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                    denom = (v / correction2).sqrt_().add_(eps)
                    p.addcdiv_(m, denom, value=-step_size)
        return loss


class LabelNCELoss(nn.Module):
    """A :class:`LabelScorer` trained by ranking NCE, binary NCE or the full softmax.

    ``forward(x, y)`` draws ``n_negatives`` labels per example from ``noise``
    (torch's global generator), scores them and returns the loss of
    :mod:`sknce.losses`, plus the self-normalisation penalty when ``alpha > 0``.

    Parameters
    ----------
    scorer : LabelScorer
    noise : CategoricalNoise
        Noise over the labels (kept on the CPU; samples are moved to the batch's device).
    objective : {"ranking", "binary", "mle"}
    n_negatives : int
        K.
    alpha : float, default=0.0
        Weight of :func:`~sknce.losses.self_normalization_penalty`.
    n_norm_samples : int, default=64
        Noise labels m drawn per example for the penalty.
    remove_hits : bool, default=False
        Drop negatives equal to the true label (:func:`~sknce.noise.remove_accidental_hits`).
    """

    def __init__(
        self,
        scorer: LabelScorer,
        noise: CategoricalNoise,
        objective: str,
        n_negatives: int,
        alpha: float = 0.0,
        n_norm_samples: int = 64,
        remove_hits: bool = False,
    ) -> None:
        super().__init__()
        self.scorer = scorer
        self.noise = noise
        self.objective = objective
        self.n_negatives = int(n_negatives)
        self.alpha = float(alpha)
        self.n_norm_samples = int(n_norm_samples)
        self.remove_hits = bool(remove_hits)
        # γ of the binary objective: a learned estimate of the (constant) log Z.
        self.gamma = nn.Parameter(torch.zeros(())) if objective == "binary" else None

    def _log_noise(self, labels: torch.Tensor) -> torch.Tensor:
        return self.noise.log_prob(labels.cpu()).to(labels.device)

    def _sample(self, shape: tuple[int, ...], device) -> torch.Tensor:
        return self.noise.sample(shape).to(device)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h, b = self.scorer.encode(x)
        if self.objective == "mle":
            loss = F.cross_entropy(self.scorer.score_range(h, b), y)
        else:
            neg_ids = self._sample((y.shape[0], self.n_negatives), y.device)
            pos = self.scorer.score(h, b, y)
            neg = self.scorer.score(h, b, neg_ids)
            if self.remove_hits:
                neg = remove_accidental_hits(neg, y, neg_ids)
            pos_ln, neg_ln = self._log_noise(y), self._log_noise(neg_ids)
            if self.objective == "ranking":
                loss = ranking_nce(pos, neg, pos_ln, neg_ln)
            else:
                loss = binary_nce(pos, neg, pos_ln, neg_ln, gamma=self.gamma)
        if self.alpha > 0:
            norm_ids = self._sample((y.shape[0], self.n_norm_samples), y.device)
            norm_scores = self.scorer.score(h, b, norm_ids)
            loss = loss + self_normalization_penalty(
                norm_scores, self._log_noise(norm_ids), alpha=self.alpha
            )
        return loss


class TargetEnergy(nn.Module):
    r"""Score of an input and a scalar target, :math:`s(x, y) = f([g(x), \phi(y)])`.

    :math:`g` is an MLP of the input, :math:`\phi` an MLP embedding of the target
    and :math:`f` an MLP head on their concatenation, the architecture of
    Gustafsson et al. (2020) for energy-based regression. The density is
    :math:`p(y \mid x) \propto \exp s(x, y)`.

    Parameters
    ----------
    n_features : int
    hidden_layer_sizes : tuple of int
        Hidden layers of :math:`g`.
    embedding_dim : int
        Width of :math:`g(x)`, of :math:`\phi(y)` and of the head's hidden layer.
    """

    def __init__(
        self, n_features: int, hidden_layer_sizes: tuple[int, ...], embedding_dim: int
    ) -> None:
        super().__init__()
        d = int(embedding_dim)
        self.x_net = MLP(n_features, tuple(hidden_layer_sizes), d)
        self.y_net = MLP(1, (d,), d)
        self.head = MLP(2 * d, (d,), 1)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """:math:`g(x)`, shape (batch, d)."""
        return self.x_net(x)

    def score(self, g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Scores of targets ``y`` of shape (batch,) or (batch, K) given ``g = encode(x)``."""
        flat = y.reshape(y.shape[0], -1)
        k = flat.shape[1]
        phi = self.y_net(flat.reshape(-1, 1)).reshape(y.shape[0], k, -1)
        pair = torch.cat([g.unsqueeze(1).expand(-1, k, -1), phi], dim=2)
        return self.head(pair).reshape(y.shape)


class TargetNCELoss(nn.Module):
    """A :class:`TargetEnergy` trained by NCE against Gaussian-mixture noise around y.

    Parameters
    ----------
    energy : TargetEnergy
    noise : GaussianMixtureNoise
    objective : {"ranking", "binary"}
    n_negatives : int
    """

    def __init__(
        self, energy: TargetEnergy, noise: GaussianMixtureNoise, objective: str, n_negatives: int
    ) -> None:
        super().__init__()
        self.energy = energy
        self.noise = noise
        self.objective = objective
        self.n_negatives = int(n_negatives)
        self.gamma = nn.Parameter(torch.zeros(())) if objective == "binary" else None

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        g = self.energy.encode(x)
        neg_y = self.noise.sample(y.cpu(), self.n_negatives).to(y.device)
        pos = self.energy.score(g, y)
        neg = self.energy.score(g, neg_y)
        pos_ln = self.noise.log_prob(y.unsqueeze(1), y).squeeze(1)
        neg_ln = self.noise.log_prob(neg_y, y)
        if self.objective == "ranking":
            return ranking_nce(pos, neg, pos_ln, neg_ln)
        return binary_nce(pos, neg, pos_ln, neg_ln, gamma=self.gamma)
