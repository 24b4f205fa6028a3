"""ACE's adversarial negatives: the generator's proposal and its REINFORCE update.

The generator :math:`G(\\cdot \\mid t) = \\operatorname{softmax}(g_t^\\top H)` spans
the whole vocabulary, and scoring every word for every example of a batch
costs :math:`O(B V d)`. Instead each batch shares one set of ``n_candidates``
words drawn from the unigram noise :math:`p_N`; the batch's queries :math:`g_t`
(skip-gram: the generator's input vector of each distinct input word; CBOW: the
mean input vector of each example's context words) are scored against them in
one matrix product, and the generator's samples are drawn by
sampling-importance-resampling (SIR): candidate :math:`j` is picked with
probability :math:`q_t(j) \\propto \\exp(g_t^\\top h_{w_j} - \\log p_N(w_j))`, which
approximates :math:`G(\\cdot \\mid t)` over the whole vocabulary and equals it
as ``n_candidates`` grows. REINFORCE (Bose et al., 2018, Eq. 7) is applied to
:math:`q_t`, the distribution the samples actually come from, so its gradient
estimate is unbiased for the sampler in use.

The random draws (which slots the generator fills, the candidates, one uniform
number per slot) are the sampler's (:class:`AdversarialDraws`); given them, the
words are picked by inverse-CDF sampling of the current generator's :math:`q_t`,
a deterministic function. Two implementations give the same draws and updates:

* :func:`complete_proposal` and :func:`reinforce_loss`, in torch with autograd
  (any device; the reference, used with the autograd discriminator);
* :class:`CompiledGenerator`, torch matrix products and the numba kernels of
  :mod:`sknce.words._kernels` for the rest, on the CPU beside the compiled
  discriminator kernel (cheaper a batch than the torch path there; figures in
  ``benchmarks/README.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from sknce.nn import SharedCentreGenerator, SkipGram
from sknce.noise import CategoricalNoise
from sknce.words._kernels import (
    bag_means,
    isin_keys,
    reinforce_logit_grads,
    sample_softmax,
    scatter_bags,
    slot_scores,
    unique_inverse,
)

__all__ = [
    "AdversarialDraws",
    "CompiledGenerator",
    "Proposal",
    "complete_proposal",
    "normalize_rewards",
    "reinforce_loss",
]


def normalize_rewards(
    rewards: torch.Tensor, temperature: float, baseline: bool = False
) -> torch.Tensor:
    """Standardise rewards over the batch, then squash them with a tempered sigmoid.

    Section 3 of Bose et al. (2018): subtract the mean, divide by the standard
    deviation, pass through a sigmoid with temperature ``temperature`` (0.5 in
    the paper): :math:`\\sigma((r - \\bar r) / (s_r \\tau))`. These are all
    positive, so REINFORCE raises the probability of every sample and only the
    differences between samples steer the generator; with ``baseline=True`` their
    batch mean is subtracted (a REINFORCE baseline), so that samples with
    below-average reward are made less likely.

    Parameters
    ----------
    rewards : Tensor of shape (n,)
    temperature : float
    baseline : bool, default=False

    Returns
    -------
    Tensor of shape (n,), values in (0, 1), or in (-1, 1) with ``baseline``
    """
    if rewards.numel() < 2:
        return torch.full_like(rewards, 0.0 if baseline else 0.5)
    z = (rewards - rewards.mean()) / (rewards.std(correction=0) + 1e-8)
    squashed = torch.sigmoid(z / temperature)
    return squashed - squashed.mean() if baseline else squashed


def reinforce_loss(
    log_probs: torch.Tensor,
    rewards: torch.Tensor,
    entropies: torch.Tensor,
    entropy_weight: float,
) -> torch.Tensor:
    r"""Surrogate loss whose gradient is the REINFORCE estimate of Eq. (7).

    :math:`-\sum_i [r_i \nabla \log q(\tilde w_i \mid w_{t_i}) + \beta \nabla H(q_{t_i})]`:
    minimising it raises the probability of negatives with a high reward (those the
    discriminator mistakes for true contexts) and, with :math:`\beta > 0`, keeps the
    generator's distribution spread out.

    Parameters
    ----------
    log_probs : Tensor of shape (n,)
        :math:`\log q` of each sampled negative, with a graph to the generator.
    rewards : Tensor of shape (n,)
        Rewards (treated as constants).
    entropies : Tensor of shape (n,)
        Entropy of the generator's distribution given each sample's query, so
        that :math:`\beta` weighs the entropy against the reward of one sample.
    entropy_weight : float
        :math:`\beta`.

    Returns
    -------
    Tensor
        Scalar loss.
    """
    loss = -(rewards.detach() * log_probs).sum()
    if entropy_weight:
        loss = loss - entropy_weight * entropies.sum()
    return loss


@dataclass
class AdversarialDraws:
    """The random draws of a batch's generator samples, made by the sampler.

    Attributes
    ----------
    from_generator : BoolTensor of shape (batch, K)
        Slots filled by the generator (each with probability ``1 - noise_mixture``).
    candidates : LongTensor of shape (n_candidates,)
        The batch's shared candidate words, drawn from :math:`p_N`.
    uniforms : DoubleTensor of shape (n_from_generator,)
        One uniform number in (0, 1) per generator slot, in row-major slot order.
    slots : tuple of two int64 arrays or None, default=None
        The (example, column) of each generator slot, in that order
        (``numpy.nonzero(from_generator)``): computed beside the sampler, off the
        training thread.
    """

    from_generator: torch.Tensor
    candidates: torch.Tensor
    uniforms: torch.Tensor
    slots: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class Proposal:
    """Negatives of a batch drawn from the mixture, and what REINFORCE needs.

    Attributes
    ----------
    negatives : LongTensor of shape (batch, K)
    weights : Tensor of shape (batch, K)
        Weight of each negative's term in the discriminator's loss: 0 for masked
        false negatives, the importance weight for generator samples when
        importance weighting is on, else 1.
    from_generator : BoolTensor of shape (batch, K)
        The slots drawn from the generator (and not masked).
    log_q : Tensor of shape (n_from_generator,)
        :math:`\\log q` of those samples, with a graph to the generator.
    entropy : Tensor of shape (n_from_generator,)
        Entropy of :math:`q_t` given each of those samples' query, with a graph.
    """

    negatives: torch.Tensor
    weights: torch.Tensor
    from_generator: torch.Tensor
    log_q: torch.Tensor
    entropy: torch.Tensor


def _queries(generator, words: torch.Tensor, offsets: torch.Tensor | None):
    """The generator's query vectors, the query of each example, and its masking key.

    Skip-gram (``offsets`` is None): one query per distinct input word, keyed by the
    word. CBOW: one query per example (its context bag), keyed by the example.
    """
    if offsets is None:
        unique, rows = torch.unique(words, return_inverse=True)
        return generator.encode(unique), rows, words
    rows = torch.arange(offsets.shape[0], device=words.device)
    return generator.encode(words, offsets), rows, rows


def complete_proposal(
    generator: SkipGram | SharedCentreGenerator,
    noise: CategoricalNoise,
    words: torch.Tensor,
    positives: torch.Tensor,
    negatives: torch.Tensor,
    draws: AdversarialDraws,
    *,
    offsets: torch.Tensor | None = None,
    mask_false_negatives: bool,
    importance_weighting: bool,
    max_importance_weight: float = math.inf,
) -> Proposal:
    """Fill the generator's slots of ``negatives`` (noise draws) from the generator's ``q_t``.

    Parameters
    ----------
    generator : SkipGram or SharedCentreGenerator
        The generator network (its ``encode`` and ``candidate_logits`` are used).
    noise : CategoricalNoise
        The fixed noise :math:`p_N` (the proposal of the candidates).
    words : LongTensor of shape (batch,), or (n_words,) with ``offsets``
        The examples' input words: one a pair (skip-gram) or context bags (CBOW).
    positives : LongTensor of shape (batch,)
        The examples' true output words.
    negatives : LongTensor of shape (batch, K)
        Negatives drawn from :math:`p_N`; the generator's slots are replaced (a copy).
    draws : AdversarialDraws
    offsets : LongTensor of shape (batch,) or None, default=None
        Start of each example's bag in ``words`` (CBOW).
    mask_false_negatives : bool
        Give weight 0 (and no REINFORCE term) to generator samples that are a true
        output word of their query in this batch: a word paired with the input word
        (skip-gram), the example's centre word (CBOW).
    importance_weighting : bool
        Weight generator samples by :math:`p_N(\\tilde w) / G(\\tilde w \\mid t)`,
        normalised to mean 1 over the batch, so that the negative term of the
        discriminator's loss keeps the expectation it has under :math:`p_N` while
        the samples concentrate where the discriminator is wrong.
    max_importance_weight : float, default=inf
        Truncation of the normalised importance weights (truncated importance
        sampling, Ionides 2008): bias traded for a bounded SGD step per negative.

    Returns
    -------
    Proposal
    """
    device = negatives.device
    negatives = negatives.clone()
    batch, n_negatives = negatives.shape
    weights = torch.ones((batch, n_negatives), device=device)
    from_gen = draws.from_generator.to(device)
    candidates = draws.candidates.to(device)
    n_candidates = candidates.shape[0]

    h, query_of, keys = _queries(generator, words, offsets)
    log_pn = noise.log_prob(candidates.to(noise.device)).to(device)
    log_q_all = torch.log_softmax(generator.candidate_logits(h, candidates) - log_pn, dim=1)
    entropy = -(log_q_all.exp() * log_q_all).sum(dim=1)

    examples = torch.arange(batch, device=device).unsqueeze(1).expand(batch, n_negatives)
    examples = examples[from_gen]
    rows = query_of[examples]
    if rows.numel() == 0:
        empty = log_q_all.new_zeros(0)
        return Proposal(negatives, weights, from_gen, empty, empty)
    # Inverse-CDF sampling of every slot in one 1-D search: row r's CDF is shifted
    # to (r, r + 1] and the rows are concatenated, so the whole table is sorted and
    # slot i searches r_i + u_i. float64 keeps 1e-12 resolution at r ~ 10^4.
    # (torch.multinomial or a padded per-row search costs far more: benchmarks/README.md).
    n_rows = h.shape[0]
    with torch.no_grad():
        q = log_q_all.detach().double().exp()
        cdf = torch.cumsum(q, dim=1)
        cdf = cdf / cdf[:, -1:]
        offsets_cdf = torch.arange(n_rows, device=device, dtype=torch.float64).unsqueeze(1)
        table = (cdf + offsets_cdf).reshape(-1)
        u = draws.uniforms.to(device).clamp(min=1e-9)
        flat = torch.searchsorted(table, rows.double() + u)
        picks = (flat - rows * n_candidates).clamp_(0, n_candidates - 1)
    sampled = candidates[picks]
    negatives[from_gen] = sampled
    log_q = log_q_all[rows, picks]

    keep = torch.ones_like(sampled, dtype=torch.bool)
    if mask_false_negatives:
        n_words = noise.n_categories
        true_pairs = torch.unique(keys * n_words + positives)
        keep = ~torch.isin(keys[examples] * n_words + sampled, true_pairs)
    slot_weights = torch.where(keep, 1.0, 0.0)
    if importance_weighting:
        slot_weights = _importance_weights(log_q.detach(), slot_weights, n_candidates)
        slot_weights = slot_weights.clamp(max=max_importance_weight)
    weights[from_gen] = slot_weights
    mask = from_gen.clone()
    mask[from_gen] = keep
    return Proposal(negatives, weights, mask, log_q[keep], entropy[rows][keep])


def _importance_weights(log_q, slot_weights, n_candidates: int):
    """Self-normalised ``p_N(w) / G(w | t)`` of the generator's slots (numpy or torch).

    ``p_N(w) / G(w | t) = 1 / (n_candidates * q_t(w))`` under the SIR estimate of G's
    normaliser; normalised so that the generator's slots keep their total weight.
    """
    exp = torch.exp if torch.is_tensor(log_q) else np.exp
    ratio = exp(-log_q - math.log(n_candidates)) * slot_weights
    total = ratio.sum()
    if total > 0:
        return ratio * (slot_weights.sum() / total)
    return slot_weights


class CompiledGenerator:
    """The generator's proposal and REINFORCE step on the CPU, compiled.

    The same draws and the same SGD update as :func:`complete_proposal` followed by
    :func:`reinforce_loss` and ``torch.optim.SGD`` (tested), without autograd: the
    gradient of the surrogate loss with respect to the candidate logits is written
    out (:func:`~sknce.words._kernels.reinforce_logit_grads`), the matrix products
    run in torch, the rest in numba.

    A step is :meth:`propose` (before the discriminator's update), :meth:`rewards`
    (the discriminator's view of the samples, also before its update) and
    :meth:`update`, which may run while the discriminator kernel trains.

    Parameters
    ----------
    generator : SkipGram or SharedCentreGenerator
        Its CPU parameters are updated in place.
    noise : CategoricalNoise
    n_words : int
    """

    def __init__(self, generator, noise: CategoricalNoise, n_words: int) -> None:
        self.own_centres = isinstance(generator, SkipGram)
        encoder = generator.input_embeddings if self.own_centres else generator._centres[0]
        self.w_in = encoder.weight.detach().numpy()
        self.w_out = generator.output_embeddings.weight.detach().numpy()
        self.log_probs = np.log(noise.probs).astype(np.float32)
        self.n_words = n_words
        self._scratch = np.full(n_words, -1, dtype=np.int64)

    def propose(
        self,
        words: np.ndarray,
        positives: np.ndarray,
        negatives: np.ndarray,
        draws: AdversarialDraws,
        *,
        ptr: np.ndarray | None = None,
        mask_false_negatives: bool,
        importance_weighting: bool,
        max_importance_weight: float = math.inf,
    ) -> dict:
        """The batch's negatives with the generator's slots filled, and their weights.

        Parameters are those of :func:`complete_proposal`, as numpy arrays; ``ptr``
        (CBOW) is the bags' CSR pointer (``offsets`` and the number of words).

        Returns
        -------
        dict
            ``negatives`` (a copy), ``weights`` (float32, or ``None`` when all are
            1), and the state :meth:`rewards` and :meth:`update` read.
        """
        from_gen = draws.from_generator.numpy()
        candidates = draws.candidates.numpy()
        slot_examples, slot_columns = draws.slots or np.nonzero(from_gen)
        batch = positives.shape[0]
        if ptr is None:  # skip-gram: one query per distinct input word
            query_words, query_of = unique_inverse(words, self._scratch)
            starts = np.arange(query_words.shape[0], dtype=np.int64)
            ends = starts + 1
            h = self.w_in[query_words]
            keys = words
        else:  # CBOW: one query per example with a generator slot
            chosen = np.flatnonzero(from_gen.any(axis=1))
            query_of = np.full(batch, -1, dtype=np.int64)
            query_of[chosen] = np.arange(chosen.shape[0])
            starts, ends, query_words = ptr[chosen], ptr[chosen + 1], words
            h = bag_means(self.w_in, starts, ends, words)
            keys = np.arange(batch, dtype=np.int64)
        cand_vectors = self.w_out[candidates]
        logits = (torch.from_numpy(h) @ torch.from_numpy(cand_vectors).T).numpy()
        slot_rows = query_of[slot_examples]
        picks, q, log_q, log_q_picks, entropy = sample_softmax(
            logits, self.log_probs[candidates], slot_rows, draws.uniforms.numpy()
        )
        sampled = candidates[picks]
        negatives = negatives.copy()
        negatives[slot_examples, slot_columns] = sampled
        keep = np.ones(sampled.shape[0], dtype=bool)
        if mask_false_negatives and sampled.shape[0]:
            true_pairs = keys * self.n_words + positives
            keep = ~isin_keys(keys[slot_examples] * self.n_words + sampled, true_pairs)
        weights = None
        if sampled.shape[0] and (importance_weighting or not keep.all()):
            slot_weights = keep.astype(np.float32)
            if importance_weighting:
                slot_weights = _importance_weights(log_q_picks, slot_weights, len(candidates))
                slot_weights = np.minimum(slot_weights, max_importance_weight)
            weights = np.ones(negatives.shape, dtype=np.float32)
            weights[slot_examples, slot_columns] = slot_weights
        return {
            "negatives": negatives,
            "weights": weights,
            "examples": slot_examples[keep],
            "sampled": sampled[keep],
            "rows": slot_rows[keep],
            "picks": picks[keep],
            "q": q,
            "log_q": log_q,
            "entropy": entropy,
            "h": h,
            "cand_vectors": cand_vectors,
            "candidates": candidates,
            "bags": (starts, ends, query_words),
        }

    def rewards(
        self,
        proposal: dict,
        w_in: np.ndarray,
        w_out: np.ndarray,
        words: np.ndarray,
        ptr: np.ndarray | None,
        log_kpn: np.ndarray,
        temperature: float,
        baseline: bool,
    ) -> np.ndarray:
        """Normalised rewards of the kept samples: the discriminator's belief they are true.

        Parameters
        ----------
        proposal : dict
            From :meth:`propose`.
        w_in, w_out : float32 arrays
            The discriminator's embeddings.
        words, ptr
            The examples' input words (and CBOW's bag pointer).
        log_kpn : float32 array
            The objective's ``log(K p_N)`` correction (zeros for negative sampling).
        temperature, baseline
            Of :func:`normalize_rewards`.
        """
        if ptr is None:
            starts = np.arange(words.shape[0], dtype=np.int64)
            ends = starts + 1
        else:
            starts, ends = ptr[:-1], ptr[1:]
        logits = slot_scores(
            w_in, w_out, starts, ends, words, proposal["examples"], proposal["sampled"], log_kpn
        )
        rewards = normalize_rewards(
            torch.sigmoid(torch.from_numpy(logits)), temperature, baseline=baseline
        )
        return rewards.numpy()

    def update(
        self, proposal: dict, rewards: np.ndarray, lr: float, entropy_weight: float
    ) -> None:
        """One SGD step of the generator on the REINFORCE surrogate loss, in place."""
        if proposal["rows"].shape[0] == 0:
            return
        grads = reinforce_logit_grads(
            proposal["q"],
            proposal["log_q"],
            proposal["entropy"],
            proposal["rows"],
            proposal["picks"],
            rewards.astype(np.float32, copy=False),
            entropy_weight,
        )
        grads_t = torch.from_numpy(grads)
        # Both gradients from the parameters before the step, as torch's SGD does.
        grad_h = (grads_t @ torch.from_numpy(proposal["cand_vectors"])).numpy()
        grad_out = (grads_t.T @ torch.from_numpy(proposal["h"])).numpy()
        candidates = proposal["candidates"]
        single = np.arange(candidates.shape[0], dtype=np.int64)
        scatter_bags(self.w_out, single, single + 1, candidates, grad_out, -lr)
        if self.own_centres:
            starts, ends, query_words = proposal["bags"]
            scatter_bags(self.w_in, starts, ends, query_words, grad_h, -lr)
