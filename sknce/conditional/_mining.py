"""Hard negative labels of multi-label rows: the top-scoring labels that are not positives.

The sampled one-vs-all loss (:func:`sknce.losses.multilabel_one_vs_all`) estimates the
sum of ``softplus(s(x, y))`` over a row's non-positive labels from ``K`` labels drawn
from :math:`p_N`, each weighted by ``1 / (K p_N(y))``. The terms that matter most to the
ranking, and whose gradients ``sigmoid(s)`` are the largest, are those of the labels
the model ranks highest; drawn by their frequency they are rare and, when drawn, get a
large importance weight. :func:`mine_hard_labels` splits the sum in two:

* the ``M`` highest-scoring non-positive labels of the row (its *hard* negatives,
  scored by the current model with one matrix product per batch), whose terms enter
  exactly, with weight 1;
* every other non-positive label, estimated by the ``K`` drawn labels as before, those
  among the hard ones or the positives masked.

Drawing from :math:`p_N` and masking a fixed set gives an unbiased estimate of the sum
over its complement, so the loss is still an unbiased estimate of the full one-vs-all
loss, with its largest terms exact. The batch it returns is an ordinary batch of the
loss (the hard labels first among the negatives, each with the ``log p_N`` that gives it
weight 1), which the compiled step and autograd train alike.
"""

from __future__ import annotations

import math

import torch

from sknce._data import Targets
from sknce.conditional._sampler import _outside

__all__ = ["hard_labels", "mine_hard_labels"]

#: Label scores held at once while mining (16 MiB of float32).
SCORES_PER_BLOCK = 1 << 22


@torch.no_grad()
def hard_labels(
    scorer, x: torch.Tensor, positives: torch.Tensor, pos_mask: torch.Tensor, n_hard: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``n_hard`` highest-scoring labels of each row that are not its positives.

    Parameters
    ----------
    scorer : LabelScorer
        Scores every label of a batch (``scorer(x)["logits"]``).
    x : Tensor of shape (n, n_features)
        The rows.
    positives, pos_mask : Tensors of shape (n, P)
        Each row's positive labels, padded, and the mask of the real ones.
    n_hard : int
        Labels per row (at most the number of labels).

    Returns
    -------
    labels : LongTensor of shape (n, n_hard)
        Each row's hard labels, highest score first.
    mask : bool Tensor of shape (n, n_hard)
        False where a row has fewer non-positive labels than ``n_hard``.
    """
    h, bias = scorer.encode(x)
    n = h.shape[0]
    n_labels = scorer.label_embedding.weight.shape[0]
    labels = torch.empty((n, n_hard), dtype=torch.int64)
    found = torch.empty((n, n_hard), dtype=torch.bool)
    # blocks of rows: a block's scores of every label stay within SCORES_PER_BLOCK
    step = max(SCORES_PER_BLOCK // n_labels, 1)
    for lo in range(0, n, step):
        hi = min(lo + step, n)
        logits = scorer.score_range(h[lo:hi], None if bias is None else bias[lo:hi])
        mask = pos_mask[lo:hi]
        rows = torch.arange(hi - lo).unsqueeze(1).expand_as(mask)
        logits[rows[mask], positives[lo:hi][mask]] = -math.inf
        scores, labels[lo:hi] = logits.topk(n_hard, dim=1)
        found[lo:hi] = scores > -math.inf
    return labels, found


def mine_hard_labels(scorer, inputs: dict, targets: Targets, n_hard: int) -> tuple[dict, Targets]:
    """A batch of :class:`~sknce.conditional._sampler.LabelSetSampler` with each row's
    ``n_hard`` hard negatives put before its drawn ones (see the module's docstring).

    Parameters
    ----------
    scorer : LabelScorer
        The model that ranks the labels.
    inputs : dict
        ``x``, ``labels`` (the positives, ``(n, P)``) and ``negatives`` (``(n, K)`` or a
        shared ``(K,)``).
    targets : Targets
        ``pos_mask``, ``neg_log_noise`` and ``neg_mask`` of the drawn labels.
    n_hard : int
        Hard negatives per row (capped at the number of labels).

    Returns
    -------
    inputs, targets
        The batch with ``(n, n_hard + K)`` negatives: the hard ones (their
        ``neg_log_noise`` is ``-log(n_hard + K)``, an importance weight of 1), then the
        drawn ones (their weights ``1 / (K p_N)`` kept, masked where they are hard).
    """
    n_labels = scorer.label_embedding.weight.shape[0]
    positives = inputs["labels"]
    n = positives.shape[0]
    hard, hard_mask = hard_labels(
        scorer, inputs["x"], positives, targets.pos_mask, min(n_hard, n_labels)
    )
    drawn = inputs["negatives"]
    drawn_log_noise = targets.neg_log_noise
    k = drawn.shape[-1]
    drawn = drawn.expand(n, k)
    counts = hard_mask.sum(dim=1).numpy()
    # a drawn label among the row's hard ones leaves the estimate: its term is exact
    not_hard = torch.from_numpy(_outside(drawn.numpy(), hard.numpy(), counts))
    total = hard.shape[1] + k
    hard_log_noise = torch.full(hard.shape, -math.log(total), dtype=drawn_log_noise.dtype)
    inputs = {**inputs, "negatives": torch.cat([hard, drawn], dim=1)}
    targets = targets.replace(
        neg_log_noise=torch.cat([hard_log_noise, drawn_log_noise + math.log(k / total)], dim=1),
        neg_mask=torch.cat([hard_mask, targets.neg_mask & not_hard], dim=1),
    )
    return inputs, targets
