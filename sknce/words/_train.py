"""The training loop of ACEWord2Vec: streamed pair batches, discriminator and generator steps.

Two discriminator back ends share every other step (batching, negatives, the
generator, the schedule):

* the compiled kernel :func:`~sknce.words._kernels.sgd_pairs` (CPU with
  ``optimizer=torch.optim.SGD``): word2vec's per-pair SGD on the numpy views of
  the torch parameters, over ``n_jobs`` threads;
* torch autograd on the core losses (any other optimiser, or CUDA), one step
  per batch.

The learning rate decays linearly from ``lr`` to ``lr * min_lr_ratio`` over the
whole training, as word2vec and gensim do: progress is the number of pairs seen
over the expected number (updated to the exact count after the first epoch).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch

from sknce.losses import negative_sampling
from sknce.nn import ACESkipGram
from sknce.noise import CategoricalNoise, remove_accidental_hits
from sknce.words._generator import normalize_rewards, propose_negatives, reinforce_loss
from sknce.words._kernels import pair_scores, sgd_pairs

__all__ = ["ACEConfig", "SkipGramTrainer"]


@dataclass
class ACEConfig:
    """The objective and the negatives of one fit (see :class:`~sknce.ACEWord2Vec`)."""

    n_negatives: int
    objective: str
    adversarial: bool
    noise_mixture: float
    n_candidates: int
    reward_temperature: float
    reward_baseline: bool
    entropy_weight: float
    mask_false_negatives: bool
    importance_weighting: bool
    max_importance_weight: float
    generator_lr: float


@contextlib.contextmanager
def _one_torch_thread():
    """Run torch ops single-threaded: the kernel's threads already occupy the cores.

    Measured on 2 busy cores: drawing 10000 x 5 negatives took 6.6 ms with torch's
    2 intra-op threads and 2.0 ms with one.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SkipGramTrainer:
    """Run epochs of ACE (or plain NCE / negative sampling) on an :class:`~sknce.nn.ACESkipGram`.

    Parameters
    ----------
    module : ACESkipGram
        The networks, on ``device``.
    noise : CategoricalNoise
        The fixed noise :math:`p_N` over the vocabulary.
    config : ACEConfig
    lr : float
        Initial learning rate of the discriminator.
    min_lr_ratio : float
        Final learning rate as a fraction of ``lr``.
    optimizer : type
        Torch optimiser class of the discriminator; ``torch.optim.SGD`` on the CPU
        selects the compiled kernel.
    n_jobs : int
        Threads running the compiled kernel.
    device : str
    rng : torch.Generator
        Source of the negatives and the generator's draws (on the CPU).
    """

    def __init__(
        self,
        module: ACESkipGram,
        noise: CategoricalNoise,
        config: ACEConfig,
        *,
        lr: float,
        min_lr_ratio: float,
        optimizer: type,
        n_jobs: int,
        device: str,
        rng: torch.Generator,
    ) -> None:
        self.module = module
        self.noise = noise
        self.config = config
        self.lr = lr
        self.min_lr_ratio = min_lr_ratio
        self.n_jobs = n_jobs
        self.device = device
        self.rng = rng
        log_kpn = np.zeros(noise.n_categories, dtype=np.float32)
        if config.objective == "nce":
            log_kpn += np.log(noise.probs * config.n_negatives).astype(np.float32)
        self.log_kpn = log_kpn
        self._log_kpn_t = torch.as_tensor(log_kpn, device=device)
        d = module.discriminator
        self.compiled = device == "cpu" and optimizer is torch.optim.SGD
        if self.compiled:
            self._w_in = d.input_embeddings.weight.detach().numpy()
            self._w_out = d.output_embeddings.weight.detach().numpy()
        else:
            self._optimizer = optimizer(d.parameters(), lr=lr)
        if config.adversarial:
            self._g_optimizer = torch.optim.SGD(
                module.generator.parameters(), lr=config.generator_lr
            )

    # --- one batch --------------------------------------------------------------
    def _negatives(self, centres: torch.Tensor, contexts: torch.Tensor, use_generator: bool):
        """Negatives and weights of a batch; a REINFORCE step when adversarial."""
        cfg = self.config
        if not (cfg.adversarial and use_generator):
            neg = self.noise.sample((centres.shape[0], cfg.n_negatives), generator=self.rng)
            return neg.to(self.device), None
        proposal = propose_negatives(
            self.module.generator,
            self.noise,
            centres,
            contexts,
            n_negatives=cfg.n_negatives,
            noise_mixture=cfg.noise_mixture,
            n_candidates=cfg.n_candidates,
            mask_false_negatives=cfg.mask_false_negatives,
            importance_weighting=cfg.importance_weighting,
            max_importance_weight=cfg.max_importance_weight,
            rng=self.rng,
        )
        self._generator_step(centres, proposal)
        return proposal.negatives, proposal.weights

    def _generator_step(self, centres: torch.Tensor, proposal) -> None:
        """REINFORCE on the generator; the reward is the discriminator's D(w̃ | w_t)."""
        rows, slots = proposal.from_generator.nonzero(as_tuple=True)
        if rows.numel() == 0:
            return
        words = proposal.negatives[rows, slots]
        with torch.no_grad():
            if self.compiled:
                scores = torch.from_numpy(
                    pair_scores(self._w_in, self._w_out, centres[rows].numpy(), words.numpy())
                )
            else:
                scores = self.module.discriminator(centres[rows], words)
            logits = scores - self._log_kpn_t[words]
            rewards = normalize_rewards(
                torch.sigmoid(logits),
                self.config.reward_temperature,
                baseline=self.config.reward_baseline,
            )
        loss = reinforce_loss(
            proposal.log_q, rewards, proposal.entropy, self.config.entropy_weight
        )
        self._g_optimizer.zero_grad()
        loss.backward()
        self._g_optimizer.step()

    def _loss(self, centres, contexts, negatives, weights=None) -> torch.Tensor:
        """The discriminator's summed loss on a batch (the kernel's objective, in torch)."""
        d = self.module.discriminator
        # Scores corrected by log(K p_N) for the NCE objective (zero correction for
        # negative sampling): negative_sampling of them is then binary_nce as well.
        pos = d(centres, contexts) - self._log_kpn_t[contexts]
        neg = d(centres, negatives) - self._log_kpn_t[negatives]
        neg = remove_accidental_hits(neg, contexts, negatives)
        return negative_sampling(pos, neg, neg_weights=weights, reduction="sum")

    def _torch_step(self, centres, contexts, negatives, weights, lr: float) -> float:
        """One autograd step of the discriminator on the core loss; the summed loss."""
        for group in self._optimizer.param_groups:
            group["lr"] = lr
        loss = self._loss(centres, contexts, negatives, weights)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return float(loss.detach())

    # --- epochs -----------------------------------------------------------------
    def _lr_at(self, progress: float) -> float:
        return self.lr * (1.0 - (1.0 - self.min_lr_ratio) * min(progress, 1.0))

    def train_epoch(
        self, batches, pairs_done: int, total_pairs: float, *, use_generator: bool = True
    ) -> tuple[float, int]:
        """Train on every batch of one pass; return (summed loss, number of pairs).

        Parameters
        ----------
        batches : iterable of (ndarray, ndarray)
            int64 ``(centres, contexts)`` pairs.
        pairs_done : int
            Pairs seen in earlier epochs (for the learning-rate schedule).
        total_pairs : float
            Expected pairs over the whole training.
        use_generator : bool, default=True
            With ``False`` an adversarial trainer draws this epoch's negatives from
            the noise alone and leaves the generator untouched (warm-up).
        """
        self.module.train()
        run = partial(self._run, batches, pairs_done, total_pairs, use_generator=use_generator)
        if not self.compiled:
            return run(None)
        if self.n_jobs == 1:
            with _one_torch_thread():
                return run(None)
        with _one_torch_thread(), ThreadPoolExecutor(self.n_jobs) as pool:
            return run(pool)

    def _run(
        self, batches, pairs_done, total_pairs, pool, *, use_generator: bool
    ) -> tuple[float, int]:
        loss, n_pairs = 0.0, 0
        pending = []
        for centres_np, contexts_np in batches:
            batch = centres_np.shape[0]
            lr0 = self._lr_at((pairs_done + n_pairs) / total_pairs)
            lr1 = self._lr_at((pairs_done + n_pairs + batch) / total_pairs)
            n_pairs += batch
            centres = torch.from_numpy(centres_np).to(self.device)
            contexts = torch.from_numpy(contexts_np).to(self.device)
            negatives, weights = self._negatives(centres, contexts, use_generator)
            if not self.compiled:
                loss += self._torch_step(centres, contexts, negatives, weights, lr0)
                continue
            neg_np = negatives.numpy()
            w_np = (
                np.ones(neg_np.shape, dtype=np.float32)
                if weights is None
                else weights.numpy().astype(np.float32, copy=False)
            )
            args = (centres_np, contexts_np, neg_np, w_np)
            if pool is None:
                loss += self._kernel(*args, lr0, lr1)
                continue
            # Hogwild: the threads update shared rows without locks, while this
            # thread has prepared the next batch (negatives, generator step).
            loss += sum(f.result() for f in pending)
            bounds = np.linspace(0, batch, self.n_jobs + 1).astype(int)
            pending = [
                pool.submit(self._kernel, *(a[lo:hi] for a in args), lr0, lr1)
                for lo, hi in zip(bounds[:-1], bounds[1:])
                if hi > lo
            ]
        loss += sum(f.result() for f in pending)
        return loss, n_pairs

    def _kernel(self, centres, contexts, negatives, weights, lr0, lr1) -> float:
        return sgd_pairs(
            self._w_in, self._w_out, centres, contexts, negatives, weights, self.log_kpn, lr0, lr1
        )

    def evaluation_loss(self, batches, seed: int) -> float:
        """Mean loss per pair on ``batches`` with negatives from :math:`p_N` drawn from ``seed``.

        The discriminator's objective against the fixed noise, without any update;
        the same seed at every epoch gives the same negatives.
        """
        self.module.eval()
        rng = torch.Generator(self.device).manual_seed(seed)
        total, n_pairs = 0.0, 0
        with torch.no_grad():
            for centres_np, contexts_np in batches:
                centres = torch.from_numpy(centres_np).to(self.device)
                contexts = torch.from_numpy(contexts_np).to(self.device)
                negatives = self.noise.sample(
                    (centres.shape[0], self.config.n_negatives), generator=rng
                ).to(self.device)
                total += float(self._loss(centres, contexts, negatives))
                n_pairs += centres.shape[0]
        return total / max(n_pairs, 1)
