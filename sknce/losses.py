"""Noise-contrastive objectives shared by every sknce estimator.

Every function takes scores batched over ``(batch,)`` for positives and
``(batch, K)`` for negatives, returns a loss to *minimise* (the papers state
objectives to maximise; we negate them) and is written with ``softplus`` and
``logsumexp`` so that scores of magnitude 1e4 give finite losses and gradients.

Accidental hits (a sampled negative equal to the positive) are removed by
setting the negative's score to ``-inf`` with
:func:`sknce.noise.remove_accidental_hits`; every loss here treats a ``-inf``
negative score as an absent negative.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from sknce import _data

__all__ = [
    "BinaryNCELoss",
    "KNegativeLoss",
    "MarginSoftmaxLoss",
    "MultilabelOneVsAllLoss",
    "NCEObjective",
    "NegativeSamplingLoss",
    "OneVsAllLoss",
    "PairLogisticLoss",
    "RankingNCELoss",
    "SelfNormalized",
    "SoftmaxLoss",
    "binary_nce",
    "k_negative",
    "multilabel_one_vs_all",
    "negative_sampling",
    "one_vs_all_nce",
    "pair_logistic",
    "ranking_nce",
    "self_normalization_penalty",
]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(
    loss: torch.Tensor, reduction: str, sample_weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Reduce per-example losses, each multiplied by its ``sample_weight`` first.

    The weighted mean divides by the batch size, not by the sum of the weights: the
    estimators scale the weights to mean 1 over the training set, so that a batch's loss
    stays an unbiased estimate of the weighted objective and a batch of zero weights
    counts as zero (not 0 / 0).
    """
    if sample_weight is not None:
        if sample_weight.shape != loss.shape[:1]:
            raise ValueError(
                f"sample_weight must have shape (batch,) = ({loss.shape[0]},), got "
                f"{tuple(sample_weight.shape)}; pass one weight per example."
            )
        weight = sample_weight.to(loss.dtype)
        loss = loss * weight.reshape(-1, *([1] * (loss.dim() - 1)))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}.")


def _check_pos_neg(pos_scores: torch.Tensor, neg_scores: torch.Tensor) -> None:
    if pos_scores.dim() != 1 or neg_scores.dim() != 2:
        raise ValueError(
            "Expected positive scores of shape (batch,) and negative scores of shape "
            f"(batch, K); got {tuple(pos_scores.shape)} and {tuple(neg_scores.shape)}."
        )
    if pos_scores.shape[0] != neg_scores.shape[0]:
        raise ValueError(
            f"Positive and negative scores disagree on the batch size: "
            f"{pos_scores.shape[0]} != {neg_scores.shape[0]}."
        )


def _corrected(scores: torch.Tensor, log_noise: torch.Tensor | None) -> torch.Tensor:
    """Return s̄ = s − log p_N(y), leaving ``-inf`` (removed) scores at ``-inf``."""
    if log_noise is None:
        return scores
    return scores - log_noise


def ranking_nce(
    pos_scores: torch.Tensor,
    neg_scores: torch.Tensor,
    pos_log_noise: torch.Tensor | None = None,
    neg_log_noise: torch.Tensor | None = None,
    *,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Ranking NCE loss, minus :math:`L_R^n` of Ma & Collins (2018), Figure 1.

    .. math::

        \ell_R = -\log \frac{\exp \bar s(x, y_0)}{\sum_{k=0}^{K} \exp \bar s(x, y_k)},
        \qquad \bar s(x, y) = s(x, y) - \log p_N(y),

    where :math:`y_0` is the true label and :math:`y_1 .. y_K` are drawn from
    :math:`p_N`. Consistent whenever the model family contains the truth
    (their Assumption 2.1, Theorem 4.2), whatever the partition function.

    Parameters
    ----------
    pos_scores : Tensor of shape (batch,)
        Scores :math:`s(x, y_0)` of the true labels.
    neg_scores : Tensor of shape (batch, K)
        Scores of the sampled negatives; ``-inf`` marks a removed negative.
    pos_log_noise, neg_log_noise : Tensor or None, default=None
        :math:`\log p_N` of the positives and negatives. ``None`` skips the
        correction (the InfoNCE / sampled-softmax-without-correction form).
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
        The loss, reduced over the batch.
    """
    _check_pos_neg(pos_scores, neg_scores)
    pos = _corrected(pos_scores, pos_log_noise)
    neg = _corrected(neg_scores, neg_log_noise)
    logits = torch.cat([pos.unsqueeze(1), neg], dim=1)
    loss = torch.logsumexp(logits, dim=1) - pos
    return _reduce(loss, reduction, sample_weight)


def binary_nce(
    pos_scores: torch.Tensor,
    neg_scores: torch.Tensor,
    pos_log_noise: torch.Tensor | None = None,
    neg_log_noise: torch.Tensor | None = None,
    gamma: torch.Tensor | float = 0.0,
    *,
    neg_weights: torch.Tensor | None = None,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Binary NCE loss, minus :math:`L_B^n` of Ma & Collins (2018), Figure 1.

    .. math::

        \ell_B = -\log g(x, y_0) - \sum_{k=1}^{K} \log\bigl(1 - g(x, y_k)\bigr),
        \qquad g(x, y) = \frac{\exp(\bar s(x, y) - \gamma)}{\exp(\bar s(x, y) - \gamma) + K},

    computed as :math:`\operatorname{softplus}(-a_0) + \sum_k \operatorname{softplus}(a_k)`
    with :math:`a = \bar s - \gamma - \log K`. :math:`\gamma` estimates the log
    partition function, which this objective assumes constant in :math:`x`
    (their Assumption 2.2); without it the estimator is inconsistent (Section 4.3).

    Parameters
    ----------
    pos_scores : Tensor of shape (batch,)
        Scores :math:`s(x, y_0)` of the true labels.
    neg_scores : Tensor of shape (batch, K)
        Scores of the sampled negatives; ``-inf`` marks a removed negative.
    pos_log_noise, neg_log_noise : Tensor or None, default=None
        :math:`\log p_N` of positives and negatives; ``None`` skips the correction.
    gamma : float or Tensor broadcastable to (batch,), default=0.0
        The (learned) log-normaliser :math:`\gamma`.
    neg_weights : Tensor of shape (batch, K) or None, default=None
        A weight multiplying each negative's term; ``None`` means 1.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    _check_pos_neg(pos_scores, neg_scores)
    log_k = math.log(neg_scores.shape[1])
    neg_gamma = gamma.reshape(-1, 1) if torch.is_tensor(gamma) and gamma.dim() else gamma
    pos = _corrected(pos_scores, pos_log_noise) - gamma - log_k
    neg = _corrected(neg_scores, neg_log_noise) - neg_gamma - log_k
    return negative_sampling(
        pos, neg, neg_weights=neg_weights, sample_weight=sample_weight, reduction=reduction
    )


def negative_sampling(
    pos_scores: torch.Tensor,
    neg_scores: torch.Tensor,
    *,
    neg_weights: torch.Tensor | None = None,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Negative-sampling loss of Mikolov et al. (2013), word2vec's objective.

    .. math::

        \ell_{NS} = -\log \sigma(s(x, y_0)) - \sum_{k=1}^{K} \log \sigma(-s(x, y_k)),

    which is :func:`binary_nce` with :math:`K p_N(y)\, e^{\gamma} \equiv 1`: the
    noise correction dropped, as Ma & Collins (2018, Section 1) describe.

    Parameters
    ----------
    pos_scores : Tensor of shape (batch,)
        Scores :math:`s(x, y_0)` of the positives.
    neg_scores : Tensor of shape (batch, K)
        Scores of the negatives; ``-inf`` marks a removed negative.
    neg_weights : Tensor of shape (batch, K) or None, default=None
        A weight :math:`w_k` multiplying each negative's term (e.g. importance
        weights of negatives drawn from another distribution); ``None`` means 1.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    _check_pos_neg(pos_scores, neg_scores)
    neg_terms = F.softplus(neg_scores)
    if neg_weights is not None:
        neg_terms = neg_weights * neg_terms
    loss = F.softplus(-pos_scores) + neg_terms.sum(dim=1)
    return _reduce(loss, reduction, sample_weight)


def one_vs_all_nce(
    pos_scores: torch.Tensor,
    neg_scores: torch.Tensor,
    neg_log_noise: torch.Tensor,
    *,
    neg_weights: torch.Tensor | None = None,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Sampled one-vs-all logistic loss: every label a binary model :math:`\sigma(s(x, y))`.

    The one-vs-all loss of a row :math:`x` with positive labels :math:`P` (fastText's
    ``loss="ova"``, scikit-learn's ``OneVsRestClassifier(LogisticRegression())``),

    .. math::

        \ell(x, P) = \sum_{p \in P} \operatorname{softplus}(-s(x, p))
            + \sum_{y \notin P} \operatorname{softplus}(s(x, y)),

    costs a pass over every label. Here each example is one positive :math:`p` and
    ``K`` labels :math:`y_k` drawn from :math:`p_N`, those in :math:`P` masked
    (``-inf`` scores); the importance-weighted sum

    .. math::

        \operatorname{softplus}(-s(x, p))
            + \frac{w}{K} \sum_{k=1}^{K} [y_k \notin P]\,
              \frac{\operatorname{softplus}(s(x, y_k))}{p_N(y_k)}

    is unbiased for :math:`\operatorname{softplus}(-s(x, p)) + w \sum_{y \notin P}
    \operatorname{softplus}(s(x, y))`: with :math:`w = 1/|P|` (the sampler's
    ``neg_weights``) the examples of a row sum to an unbiased estimate of
    :math:`\ell(x, P)`, so :math:`\sigma(s(x, y))` estimates :math:`p(y \in P \mid x)`.

    Parameters
    ----------
    pos_scores : Tensor of shape (batch,)
        Scores :math:`s(x, p)` of the positives.
    neg_scores : Tensor of shape (batch, K)
        Scores of the sampled labels; ``-inf`` marks a masked one (another positive
        of the row).
    neg_log_noise : Tensor of shape (batch, K)
        :math:`\log p_N(y_k)` of the sampled labels.
    neg_weights : Tensor of shape (batch, K) or None, default=None
        The weight :math:`w` of each negative's term, before the importance weight
        :math:`1 / (K p_N(y_k))`; ``None`` means 1.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    _check_pos_neg(pos_scores, neg_scores)
    importance = torch.exp(-neg_log_noise) / neg_scores.shape[1]
    if neg_weights is not None:
        importance = importance * neg_weights
    return negative_sampling(
        pos_scores,
        neg_scores,
        neg_weights=importance,
        sample_weight=sample_weight,
        reduction=reduction,
    )


def multilabel_one_vs_all(
    pos_scores: torch.Tensor,
    neg_scores: torch.Tensor,
    neg_log_noise: torch.Tensor,
    *,
    pos_mask: torch.Tensor | None = None,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Sampled one-vs-all logistic loss of rows that each have a set of positive labels.

    The loss of a row :math:`x` with positive labels :math:`P` and ``K`` labels
    :math:`y_k` drawn from :math:`p_N`, those in :math:`P` masked (``-inf`` scores), is

    .. math::

        \sum_{p \in P} \operatorname{softplus}(-s(x, p))
            + \frac{1}{K} \sum_{k=1}^{K} [y_k \notin P]\,
              \frac{\operatorname{softplus}(s(x, y_k))}{p_N(y_k)},

    an unbiased estimate of the full one-vs-all loss
    :math:`\sum_{p \in P} \operatorname{softplus}(-s(x, p)) + \sum_{y \notin P}
    \operatorname{softplus}(s(x, y))` (fastText's ``loss="ova"``), whose minimiser
    :math:`\sigma(s(x, y))` is :math:`p(y \in P \mid x)`. It is
    :func:`one_vs_all_nce` summed over a row's positives with every negative's share
    :math:`w = 1/|P|`, with the row's input encoded once; a row without positives
    contributes its negative term.

    Parameters
    ----------
    pos_scores : Tensor of shape (batch, P)
        Scores :math:`s(x, p)` of each row's positives, padded to ``P``.
    neg_scores : Tensor of shape (batch, K)
        Scores of the sampled labels; ``-inf`` marks a masked one (a positive of the
        row).
    neg_log_noise : Tensor of shape (batch, K)
        :math:`\log p_N(y_k)` of the sampled labels.
    pos_mask : bool Tensor of shape (batch, P) or None, default=None
        ``False`` marks the padding of ``pos_scores``; ``None``: no padding.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each row's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-row losses are combined: their mean, their sum, or none (a
        tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    if pos_scores.dim() != 2 or neg_scores.dim() != 2:
        raise ValueError(
            "Expected positive scores of shape (batch, P) and negative scores of shape "
            f"(batch, K); got {tuple(pos_scores.shape)} and {tuple(neg_scores.shape)}."
        )
    if neg_log_noise is None or neg_log_noise.shape != neg_scores.shape:
        shape = None if neg_log_noise is None else tuple(neg_log_noise.shape)
        raise ValueError(
            f"neg_log_noise must give log p_N of every sampled label, shape "
            f"{tuple(neg_scores.shape)} as the negative scores; got {shape}."
        )
    if pos_mask is not None and pos_mask.shape != pos_scores.shape:
        raise ValueError(
            f"pos_mask must have the shape of the positive scores, "
            f"{tuple(pos_scores.shape)}; got {tuple(pos_mask.shape)}."
        )
    if pos_scores.shape[0] != neg_scores.shape[0]:
        raise ValueError(
            f"Positive and negative scores disagree on the batch size: "
            f"{pos_scores.shape[0]} != {neg_scores.shape[0]}."
        )
    pos_terms = F.softplus(-pos_scores)
    if pos_mask is not None:
        pos_terms = torch.where(pos_mask, pos_terms, 0.0)
    importance = torch.exp(-neg_log_noise) / neg_scores.shape[1]
    loss = pos_terms.sum(dim=1) + (importance * F.softplus(neg_scores)).sum(dim=1)
    return _reduce(loss, reduction, sample_weight)


def pair_logistic(
    scores: torch.Tensor,
    labels: torch.Tensor,
    *,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Logistic loss on scored pairs, Tosh et al. (2021), Eq. (1).

    .. math::

        \ell(f; x^{(1)}, x^{(2)}, y) = \log\bigl(1 + \exp(-(2y - 1)\, f(x^{(1)}, x^{(2)}))\bigr),

    for a pair labelled :math:`y = 1` when both halves come from one document and
    :math:`y = 0` otherwise. Its minimiser is the log-odds
    :math:`f^\star = \log \frac{P(y=1 \mid x^{(1)}, x^{(2)})}{P(y=0 \mid x^{(1)}, x^{(2)})}`.

    Parameters
    ----------
    scores : Tensor of shape (batch,)
        :math:`f(x^{(1)}, x^{(2)})`.
    labels : Tensor of shape (batch,)
        1 for a positive pair, 0 for a negative pair.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    if scores.shape != labels.shape:
        raise ValueError(
            f"scores and labels must have the same shape, got {tuple(scores.shape)} "
            f"and {tuple(labels.shape)}."
        )
    signs = 2.0 * labels.to(scores.dtype) - 1.0
    return _reduce(F.softplus(-signs * scores), reduction, sample_weight)


def k_negative(
    anchor: torch.Tensor,
    positive: torch.Tensor,
    negatives: torch.Tensor,
    *,
    loss: str = "logistic",
    beta: float = 1.0,
    negative_mask: torch.Tensor | None = None,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""NCE loss with k negatives, Awasthi et al. (2022), Definition 2.1.

    With :math:`v_i = f(x)^\top\bigl(f(x^+) - f(x^-_i)\bigr)`, :math:`i = 1..k`,

    .. math::

        \ell^{\beta}_{\log}(v) = \log\Bigl(1 + \sum_{i=1}^{k} e^{-\beta v_i}\Bigr), \qquad
        \ell^{\beta}_{\text{hinge}}(v) = \max\bigl\{0, \max_i\, (1 - \beta v_i)\bigr\}.

    Parameters
    ----------
    anchor : Tensor of shape (batch, d)
        :math:`f(x)`.
    positive : Tensor of shape (batch, d)
        :math:`f(x^+)`.
    negatives : Tensor of shape (batch, k, d)
        :math:`f(x^-_i)`.
    loss : {"logistic", "hinge"}, default="logistic"
        Which of the two losses above.
    beta : float, default=1.0
        Inverse temperature :math:`\beta`.
    negative_mask : bool Tensor of shape (batch, k) or None, default=None
        ``False`` drops a negative (e.g. one of the anchor's own class).
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    if anchor.dim() != 2 or positive.shape != anchor.shape:
        raise ValueError(
            "anchor and positive must both have shape (batch, d); got "
            f"{tuple(anchor.shape)} and {tuple(positive.shape)}."
        )
    if negatives.dim() != 3 or negatives.shape[0] != anchor.shape[0]:
        raise ValueError(
            f"negatives must have shape (batch, k, d) = ({anchor.shape[0]}, k, "
            f"{anchor.shape[1]}); got {tuple(negatives.shape)}."
        )
    if negatives.shape[2] != anchor.shape[1]:
        raise ValueError(
            f"negatives have dimension {negatives.shape[2]} but anchor has {anchor.shape[1]}."
        )
    pos_sim = (anchor * positive).sum(dim=1, keepdim=True)
    neg_sim = torch.einsum("bd,bkd->bk", anchor, negatives)
    margins = beta * (pos_sim - neg_sim)
    if loss == "logistic":
        # log(1 + Σ exp(-βv)) = logsumexp over [0, -βv_1, ..., -βv_k]
        terms = -margins
        if negative_mask is not None:
            terms = terms.masked_fill(~negative_mask, float("-inf"))
        zeros = torch.zeros_like(terms[:, :1])
        values = torch.logsumexp(torch.cat([zeros, terms], dim=1), dim=1)
    elif loss == "hinge":
        terms = 1.0 - margins
        if negative_mask is not None:
            terms = terms.masked_fill(~negative_mask, float("-inf"))
        values = torch.clamp(terms.max(dim=1).values, min=0.0)
    else:
        raise ValueError(f"loss must be 'logistic' or 'hinge', got {loss!r}.")
    return _reduce(values, reduction, sample_weight)


def self_normalization_penalty(
    noise_scores: torch.Tensor,
    noise_log_noise: torch.Tensor | None = None,
    alpha: float = 1.0,
    *,
    sample_weight: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""Self-normalisation regulariser of Ma & Collins (2018), Section 5.2.

    .. math::

        \alpha \Bigl(\log \frac{1}{m} \sum_{j=1}^{m} \exp \bar s(x, \tilde y_j)\Bigr)^2
        \approx \alpha \bigl(\log Z(x)\bigr)^2,
        \qquad \tilde y_j \sim p_N,

    an importance-sampling estimate of :math:`\log Z(x)` pushed towards 0, so that
    :math:`\exp s(x, y)` is (approximately) normalised.

    Parameters
    ----------
    noise_scores : Tensor of shape (batch, m)
        Scores :math:`s(x, \tilde y_j)` of m labels drawn from the noise.
    noise_log_noise : Tensor of shape (batch, m) or None, default=None
        :math:`\log p_N(\tilde y_j)`; ``None`` means uniform noise over the
        labels, for which the caller must add :math:`\log |\mathcal{Y}|` itself.
    alpha : float, default=1.0
        Weight :math:`\alpha` of the penalty.
    sample_weight : Tensor of shape (batch,) or None, default=None
        A weight multiplying each example's loss before the reduction (``None``
        means 1); the ``"mean"`` divides the weighted sum by the batch size.
    reduction : {"mean", "sum", "none"}, default="mean"
        How the per-example losses are combined: their mean, their sum, or none
        (a tensor of shape (batch,)).

    Returns
    -------
    Tensor
    """
    if noise_scores.dim() != 2:
        raise ValueError(
            f"noise_scores must have shape (batch, m), got {tuple(noise_scores.shape)}."
        )
    corrected = _corrected(noise_scores, noise_log_noise)
    log_z = torch.logsumexp(corrected, dim=1) - math.log(noise_scores.shape[1])
    return _reduce(alpha * log_z.square(), reduction, sample_weight)


# --- objectives as modules: the criterion of sknce's training engine -----------------
#
# A sampler hands the scorer a batch's inputs and the objective its ``targets``
# (a :class:`sknce._data.Targets`, read by attribute). The scorer returns ``scores``
# (a dict): ``pos`` (batch,) and ``neg`` (batch, K), or ``logits``, or embeddings.


class NCEObjective(nn.Module):
    """Base of the objective modules: ``forward(scores, targets)`` returns a scalar loss.

    Subclasses implement :meth:`compute_loss`; :meth:`negatives` gives them the
    negative scores with the masked negatives removed.
    """

    def forward(self, scores: dict, targets: _data.Targets | dict | None = None) -> torch.Tensor:
        """The loss of a batch: :meth:`compute_loss` of ``scores`` and the typed targets.

        Parameters
        ----------
        scores : dict of Tensor
            The scorer's output for the batch: ``pos`` (batch,) and ``neg``
            (batch, K), or ``logits``, or embeddings (``anchor``, ``positive``,
            ``negatives``), and ``norm`` for :class:`SelfNormalized`.
        targets : Targets, dict of its fields, or None, default=None
            What the sampler drew besides the scorer's inputs (see
            ``sknce._data.Targets``; a dict is converted and an unknown name
            is a ``TypeError``); ``None``: no targets.

        Returns
        -------
        Tensor
            The scalar loss to minimise.
        """
        return self.compute_loss(scores, _data.Targets.of(targets))

    def compute_loss(  # pragma: no cover
        self, scores: dict, targets: _data.Targets
    ) -> torch.Tensor:
        """The loss of a batch, from the keys of ``scores`` and ``targets`` it reads.

        Parameters
        ----------
        scores : dict of Tensor
            The scorer's output for the batch (see :meth:`forward`).
        targets : Targets
            The sampler's targets for the batch (see :meth:`forward`).

        Returns
        -------
        Tensor
            The scalar loss to minimise.
        """
        raise NotImplementedError

    @staticmethod
    def negatives(scores: dict, targets: _data.Targets) -> torch.Tensor:
        """Negative scores with masked-out negatives at ``-inf`` (absent).

        Parameters
        ----------
        scores : dict of Tensor
            Holds ``neg``, the negatives' scores of shape (batch, K).
        targets : Targets
            May hold ``neg_mask``, a bool tensor of shape (batch, K): ``False``
            drops a negative (an accidental hit).

        Returns
        -------
        Tensor of shape (batch, K)
        """
        mask = targets.neg_mask
        neg = scores["neg"]
        return neg if mask is None else neg.masked_fill(~mask, float("-inf"))


class PairLogisticLoss(NCEObjective):
    """:func:`pair_logistic` over a batch's positive pairs and their negative pairs.

    The mean is over all ``batch * (1 + K)`` pairs (Tosh et al., 2021, Eq. 1).
    """

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        pos, neg = scores["pos"], scores["neg"].reshape(-1)
        logits = torch.cat([pos, neg])
        labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
        weight = targets.sample_weight
        if weight is not None:  # a positive pair's weight is its negative pairs' too
            k = scores["neg"].shape[1]
            weight = torch.cat([weight, weight.repeat_interleave(k)])
        return pair_logistic(logits, labels, sample_weight=weight)


class RankingNCELoss(NCEObjective):
    """:func:`ranking_nce` with the noise corrections of the batch's targets."""

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return ranking_nce(
            scores["pos"],
            self.negatives(scores, targets),
            targets.pos_log_noise,
            targets.neg_log_noise,
            sample_weight=targets.sample_weight,
        )


class BinaryNCELoss(NCEObjective):
    r""":func:`binary_nce`, with a learned log-normaliser :math:`\gamma` by default.

    Parameters
    ----------
    learn_gamma : bool, default=True
        Learn :math:`\gamma` (a parameter of this module, initialised at 0);
        ``False`` fixes it at 0 (word2vec's NCE).
    """

    def __init__(self, learn_gamma: bool = True) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(())) if learn_gamma else None

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return binary_nce(
            scores["pos"],
            self.negatives(scores, targets),
            targets.pos_log_noise,
            targets.neg_log_noise,
            gamma=0.0 if self.gamma is None else self.gamma,
            neg_weights=targets.neg_weights,
            sample_weight=targets.sample_weight,
        )


class NegativeSamplingLoss(NCEObjective):
    """:func:`negative_sampling` (word2vec's objective), with optional negative weights."""

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return negative_sampling(
            scores["pos"],
            self.negatives(scores, targets),
            neg_weights=targets.neg_weights,
            sample_weight=targets.sample_weight,
        )


class OneVsAllLoss(NCEObjective):
    """:func:`one_vs_all_nce` with the masks, noise and shares of the batch's targets."""

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return one_vs_all_nce(
            scores["pos"],
            self.negatives(scores, targets),
            targets.neg_log_noise,
            neg_weights=targets.neg_weights,
            sample_weight=targets.sample_weight,
        )


class MultilabelOneVsAllLoss(NCEObjective):
    """:func:`multilabel_one_vs_all` with the positives' padding, the masks and the noise of
    the batch's targets."""

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return multilabel_one_vs_all(
            scores["pos"],
            self.negatives(scores, targets),
            targets.neg_log_noise,
            pos_mask=targets.pos_mask,
            sample_weight=targets.sample_weight,
        )


class SoftmaxLoss(NCEObjective):
    """The full softmax (maximum likelihood): cross-entropy of ``logits`` and ``labels``."""

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        if targets.sample_weight is None:
            return F.cross_entropy(scores["logits"], targets.labels)
        loss = F.cross_entropy(scores["logits"], targets.labels, reduction="none")
        return _reduce(loss, "mean", targets.sample_weight)


class MarginSoftmaxLoss(SoftmaxLoss):
    r"""The full softmax with an additive margin in training (Wang et al., 2018).

    In training mode, the cross-entropy of the ``logits`` with ``margin``
    subtracted from each example's label,
    :math:`-\log \frac{e^{s_y - m}}{e^{s_y - m} + \sum_{k \ne y} e^{s_k}}`: the
    label must win by :math:`m` before its loss vanishes, as in a hinge loss. In
    evaluation mode (a held-out loss), the plain cross-entropy, the negative
    log-likelihood.

    With ``rival`` > 0, training adds :math:`r` times the one-vs-all logistic loss of
    the label and of its best rival :math:`c` (the highest other score, ties to the
    first), :math:`\log(1 + e^{t - s_y}) + \log(1 + e^{s_c - t})`, on the scores without
    the margin: as a one-vs-rest classifier's, it pushes the label's score above the
    ``rival_threshold`` :math:`t` and the nearest class's below, which a softmax (blind
    to a shift of every score) does not.

    Parameters
    ----------
    margin : float, default=1.0
        The margin :math:`m` (0: :class:`SoftmaxLoss`).
    rival : float, default=0.0
        The weight :math:`r` of the one-vs-all term (0: none); at least 0.
    rival_threshold : float, default=0.0
        The score :math:`t` at which that term gives even odds; finite.

    References
    ----------
    .. [1] F. Wang, J. Cheng, W. Liu and H. Liu, "Additive Margin Softmax for Face
       Verification", IEEE Signal Processing Letters 25(7), 2018.
    """

    def __init__(
        self, margin: float = 1.0, rival: float = 0.0, rival_threshold: float = 0.0
    ) -> None:
        super().__init__()
        self.margin = float(margin)
        self.rival = float(rival)
        if not (math.isfinite(self.rival) and self.rival >= 0.0):
            raise ValueError(f"rival must be a finite number >= 0, got {rival!r}.")
        try:
            self.rival_threshold = float(rival_threshold)
        except (TypeError, ValueError):
            self.rival_threshold = math.nan
        if not math.isfinite(self.rival_threshold):
            raise ValueError(f"rival_threshold must be a finite number, got {rival_threshold!r}.")

    def __setstate__(self, state: dict) -> None:
        # pickled before the rival term existed: the loss it trained with had none
        state.setdefault("rival", 0.0)
        state.setdefault("rival_threshold", 0.0)
        super().__setstate__(state)

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        if not self.training:
            return super().compute_loss(scores, targets)
        logits = scores["logits"]
        hot = F.one_hot(targets.labels, logits.shape[1])
        if self.margin:
            scores = {**scores, "logits": logits - hot.to(logits.dtype) * self.margin}
        loss = super().compute_loss(scores, targets)
        if not self.rival:
            return loss
        # Both terms are means over the batch (weighted alike), so their sum is the
        # mean of the per-example sums.
        own = logits[hot.to(torch.bool)]
        best = logits.masked_fill(hot.to(torch.bool), -torch.inf).max(dim=1).values
        t = self.rival_threshold
        term = F.softplus(t - own) + F.softplus(best - t)
        return loss + self.rival * _reduce(term, "mean", targets.sample_weight)


class KNegativeLoss(NCEObjective):
    r""":func:`k_negative` on ``anchor``, ``positive`` and ``negatives`` embeddings.

    Parameters
    ----------
    loss : {"logistic", "hinge"}, default="logistic"
        Which loss of :func:`k_negative`.
    beta : float, default=1.0
        Inverse temperature :math:`\beta`.
    """

    def __init__(self, loss: str = "logistic", beta: float = 1.0) -> None:
        super().__init__()
        self.loss = loss
        self.beta = beta

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        return k_negative(
            scores["anchor"],
            scores["positive"],
            scores["negatives"],
            loss=self.loss,
            beta=self.beta,
            negative_mask=targets.neg_mask,
            sample_weight=targets.sample_weight,
        )


class SelfNormalized(NCEObjective):
    r"""An objective plus :func:`self_normalization_penalty` on extra noise samples.

    The scorer returns the scores of ``m`` noise labels per example as
    ``scores["norm"]``, the sampler their :math:`\log p_N` as
    ``targets.norm_log_noise`` (Ma & Collins, 2018, Section 5.2).

    Parameters
    ----------
    objective : NCEObjective
        The objective the penalty is added to (e.g. :class:`BinaryNCELoss`).
    alpha : float
        Weight :math:`\alpha` of the penalty.
    """

    def __init__(self, objective: NCEObjective, alpha: float) -> None:
        super().__init__()
        self.objective = objective
        self.alpha = alpha

    def compute_loss(self, scores: dict, targets: _data.Targets) -> torch.Tensor:
        penalty = self_normalization_penalty(
            scores["norm"],
            targets.norm_log_noise,
            alpha=self.alpha,
            sample_weight=targets.sample_weight,
        )
        return self.objective(scores, targets) + penalty
