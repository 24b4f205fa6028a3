"""ACENet: the training step of ACEWord2Vec inside the engine's skorch loop.

A step takes a batch of the skip-gram sampler (pairs, noise negatives and, in
adversarial epochs, the draws of the generator's samples) and

1. fills the generator's slots from the current generator
   (:func:`~sknce.words._generator.complete_proposal`);
2. updates the generator by REINFORCE, the reward of a sample being the
   discriminator's belief that it is a true context (Bose et al., 2018, Eq. 7);
3. updates the discriminator on the batch's objective: with the compiled kernel
   (:func:`~sknce.words._kernels.sgd_pairs`, word2vec's per-pair SGD over
   ``n_jobs`` threads, on the CPU with plain SGD), or by autograd of the core
   objective with any torch optimizer.

Everything else (epochs, validation, early stopping, history, callbacks,
progress) is the engine's. Under a multi-process ``accelerator`` the processes
train on their shards of the corpus and average their parameters periodically
(local SGD, :class:`~sknce._distributed.ParameterAveraging`): the kernel's
in-place updates leave no gradient for DDP to synchronise.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from skorch.history import History
from skorch.utils import TeeGenerator

from sknce._distributed import ParameterAveraging, merge_batch_records, process_shard
from sknce._engine import NCENet
from sknce.noise import CategoricalNoise
from sknce.words._generator import (
    CompiledGenerator,
    complete_proposal,
    normalize_rewards,
    reinforce_loss,
)
from sknce.words._kernels import sgd_cbow, sgd_pairs

__all__ = ["ACEConfig", "ACENet"]


@dataclass
class ACEConfig:
    """The discriminator's objective and the generator's settings of one fit.

    The adversarial warm-up is the first ``int(adversarial_warmup * planned)``
    epochs of the net, with ``planned`` the epochs its schedule spans:
    ``schedule_epochs`` when set (``partial_fit``), else the epochs in the net's
    history when a call's first epoch begins (after a checkpoint is loaded) plus
    the call's ``max_epochs``.
    """

    objective: str
    n_negatives: int
    adversarial: bool
    adversarial_warmup: float
    schedule_epochs: int | None
    reward_temperature: float
    reward_baseline: bool
    entropy_weight: float
    mask_false_negatives: bool
    importance_weighting: bool
    max_importance_weight: float
    generator_lr: float


class _PendingLoss:
    """The loss of a batch whose kernel threads may still run (pipelined training)."""

    def __init__(self, futures: list, n: int) -> None:
        self.futures = futures
        self.n = n
        self._value = None

    def wait(self) -> None:
        """Wait for the threads (and raise what they raised)."""
        if self._value is None:
            total = sum(f.result() for f in self.futures)
            self._value = torch.tensor(total / max(self.n, 1))

    def result(self) -> torch.Tensor:
        """The batch's mean loss per example."""
        self.wait()
        return self._value


class ACENet(NCENet):
    """The skorch net of :class:`~sknce.ACEWord2Vec` (discriminator and generator).

    Parameters
    ----------
    noise : CategoricalNoise
        The fixed noise :math:`p_N` over the vocabulary.
    config : ACEConfig
    kernel : bool
        Train the discriminator with the compiled kernel (CPU, plain SGD).
    n_jobs : int
        Threads of the kernel.
    accelerator : accelerate.Accelerator or None, default=None
        With several processes, each trains on its shard of the documents and the
        processes average their parameters every
        :data:`~sknce._distributed.LOCAL_SGD_PERIOD` batches and at the end of each
        epoch; the accelerator gives the device (its mixed precision is not used).
    **kwargs
        Passed to :class:`~sknce._engine.NCENet`.
    """

    def __init__(
        self,
        *args,
        noise: CategoricalNoise,
        config: ACEConfig,
        kernel: bool,
        n_jobs: int,
        accelerator=None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.noise = noise
        self.config = config
        self.kernel = kernel
        self.n_jobs = n_jobs
        self.accelerator = accelerator

    #: It trains data-parallel itself, by local SGD.
    averages_parameters = True

    @property
    def n_processes(self) -> int:
        """Processes training this net together."""
        shard = process_shard(self.accelerator)
        return 1 if shard is None else shard[1]

    def initialize_optimizer(self, triggered_directly=None):
        """``optimizer_`` for the discriminator, ``optimizer_generator_`` (SGD) for the other."""
        named = list(self.module_.discriminator.named_parameters())
        args, kwargs = self.get_params_for_optimizer("optimizer", named)
        self.optimizer_ = self.optimizer(*args, **kwargs)
        if self.module_.generator is not None:
            self.optimizer_generator_ = torch.optim.SGD(
                self.module_.generator.parameters(), lr=self.config.generator_lr
            )
        return self

    def set_noise(self, noise: CategoricalNoise) -> None:
        """Use a new noise (after the vocabulary grew); drop what was derived from the old."""
        self.noise = noise
        for name in ("log_kpn_", "log_kpn_tensor_", "compiled_generator_"):
            if hasattr(self, name):
                delattr(self, name)

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.warmup_epochs_ = None  # planned at the first epoch, see on_epoch_begin

    def on_train_end(self, net, **kwargs) -> None:
        super().on_train_end(net, **kwargs)
        # A device copy: the fitted estimator pickles without device tensors.
        if hasattr(self, "log_kpn_tensor_"):
            del self.log_kpn_tensor_

    def on_epoch_begin(self, net, **kwargs) -> None:
        """Plan the warm-up at a call's first epoch.

        Not at ``on_train_begin``, which runs before the callbacks' (``LoadInitState``
        loads a checkpoint's history there): a fit resumed from a checkpoint then
        plans the warm-up of the fit it resumes.
        """
        if getattr(self, "warmup_epochs_", None) is None:
            config = self.config
            planned = config.schedule_epochs or len(self.history) + self.max_epochs
            self.warmup_epochs_ = int(config.adversarial_warmup * planned)
        super().on_epoch_begin(net, **kwargs)

    def batch_options(self, training: bool) -> dict:
        """Adversarial draws in training epochs after the warm-up; no autograd targets
        for the kernel's training batches; each process's shard of the documents."""
        epoch = len(self.history)
        adversarial = training and self.config.adversarial and epoch > (self.warmup_epochs_ or 0)
        # The kernel's training batches need no autograd targets (it computes them).
        options = {
            "adversarial": adversarial,
            "targets": not (training and self.kernel),
        }
        shard = process_shard(self.accelerator)
        if training and shard is not None:
            options["shard"] = shard
        return options

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """The engine's epoch; with several processes, a training pass is local SGD.

        The processes average their parameters during the pass and at its end, then
        merge their batch records, so every process ends the epoch with the same
        parameters and history.
        """
        if training and iterator is not None and self._pipelined():
            return self._pipelined_epoch(iterator, prefix, step_fn, **fit_params)
        if not (training and iterator is not None and self.n_processes > 1):
            return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
        averaging = ParameterAveraging(self.module_.parameters())
        super().run_single_epoch(
            averaging.iterate(iterator), training, prefix, step_fn, **fit_params
        )
        merge_batch_records(self.history)
        return None

    def _pipelined(self) -> bool:
        """Whether training batches overlap: kernel threads, one process, a plain history."""
        return (
            self.kernel
            and getattr(self, "_pool", None) is not None
            and self.n_processes == 1
            and type(self.history) is History
        )

    def _pipelined_epoch(self, iterator, prefix, step_fn, **fit_params) -> None:
        """A training pass whose batch ``b + 1`` is prepared while ``b``'s kernel runs.

        :meth:`train_step` of batch ``b + 1`` draws the generator's negatives, scores
        them and updates the generator while the kernel threads still train on batch
        ``b`` (the previous design's overlap: on two cores that work otherwise leaves
        a core idle), then waits for ``b``. So ``b`` ends, with its loss recorded in its
        own history row and ``on_batch_end`` called, after ``b + 1`` has begun; every
        batch still begins and ends once, in order, and the learning rate of each
        batch is set when it begins. Only multi-threaded fits, which are not
        bit-reproducible anyway, train this way.
        """
        batch_count = 0
        previous = None
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=True)
            step = step_fn(batch, **fit_params)
            if previous is not None:
                self._end_batch(*previous, prefix, row=-2)
            previous = (batch, step)
            batch_count += 1
        if previous is not None:
            self._end_batch(*previous, prefix, row=-1)
        self.history.record(prefix + "_batch_count", batch_count)

    def _end_batch(self, batch, step, prefix: str, row: int) -> None:
        step = {**step, "loss": step["loss"].result()}
        record = self.history[-1]["batches"][row]
        record[prefix + "_loss"] = step["loss"].item()
        record[prefix + "_batch_size"] = batch.size
        self.notify("on_batch_end", batch=batch, training=True, **step)

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """skorch's ``partial_fit``, with the kernel's threads alive while it runs."""
        with self._threads():
            return super().partial_fit(X, y, classes, **fit_params)

    @contextlib.contextmanager
    def _threads(self):
        """The kernel's thread pool; torch single-threaded, as the kernel holds the cores."""
        before = torch.get_num_threads()
        pool = None
        if self.kernel:
            torch.set_num_threads(1)
            if self.n_jobs > 1:
                pool = ThreadPoolExecutor(self.n_jobs)
        self._pool = pool
        self._in_flight = None
        try:
            yield
        finally:
            del self._pool, self._in_flight
            if pool is not None:
                pool.shutdown()
            torch.set_num_threads(before)

    # --- one step -------------------------------------------------------------------
    def train_step(self, batch, **fit_params):
        """The generator step (adversarial epochs) and the discriminator step of a batch."""
        self._set_training(True)
        inputs, targets = dict(batch[0]), dict(batch[1])
        draws = inputs.pop("adversarial", None)
        if self.kernel:
            loss = self._kernel_step(inputs, draws)
            # The kernel's in-place update is this batch's step: call the optimizer's
            # (a no-op, no parameter has a gradient) so that a learning-rate scheduler
            # sees a step before its own, as after a torch step.
            self.optimizer_.step()
        else:
            loss = self._autograd_step(batch, inputs, targets, draws)
        return {"loss": loss, "y_pred": None}

    def _log_kpn(self) -> np.ndarray:
        """``log(K p_N(w))`` per word for the NCE objective; zeros for negative sampling."""
        if not hasattr(self, "log_kpn_"):
            log_kpn = np.zeros(self.noise.n_categories, dtype=np.float32)
            if self.config.objective == "nce":
                k = self.config.n_negatives
                log_kpn += np.log(self.noise.probs * k).astype(np.float32)
            self.log_kpn_ = log_kpn
        return self.log_kpn_

    def _log_kpn_on(self, device: torch.device) -> torch.Tensor:
        """:meth:`_log_kpn` as a tensor on ``device``, copied there once per fit."""
        cached = getattr(self, "log_kpn_tensor_", None)
        if cached is None or cached.device != torch.device(device):
            self.log_kpn_tensor_ = torch.from_numpy(self._log_kpn()).to(device)
        return self.log_kpn_tensor_

    def _compiled_generator(self) -> CompiledGenerator:
        if not hasattr(self, "compiled_generator_"):
            self.compiled_generator_ = CompiledGenerator(
                self.module_.generator, self.noise, self.noise.n_categories
            )
        return self.compiled_generator_

    def _proposal_options(self) -> dict:
        config = self.config
        return {
            "mask_false_negatives": config.mask_false_negatives,
            "importance_weighting": config.importance_weighting,
            "max_importance_weight": config.max_importance_weight,
        }

    def _generator_lr(self) -> float:
        return float(self.optimizer_generator_.param_groups[0]["lr"])

    def _kernel_step(self, inputs, draws) -> torch.Tensor:
        discriminator = self.module_.discriminator
        w_in = discriminator.input_embeddings.weight.detach().numpy()
        w_out = discriminator.output_embeddings.weight.detach().numpy()
        words = inputs["words"].numpy()
        positives = inputs["positives"].numpy()
        negatives = inputs["negatives"].numpy()
        offsets = inputs.get("offsets")
        ptr = None if offsets is None else np.append(offsets.numpy(), words.shape[0])
        weights = np.empty((0, negatives.shape[1]), dtype=np.float32)  # all 1
        log_kpn = self._log_kpn()
        proposal = rewards = None
        if draws is not None:
            generator = self._compiled_generator()
            proposal = generator.propose(
                words, positives, negatives, draws, ptr=ptr, **self._proposal_options()
            )
            negatives = proposal["negatives"]
            if proposal["weights"] is not None:
                weights = proposal["weights"]
            # Rewards from the discriminator before its update on this batch, as on
            # the autograd path.
            rewards = generator.rewards(
                proposal,
                w_in,
                w_out,
                words,
                ptr,
                log_kpn,
                self.config.reward_temperature,
                self.config.reward_baseline,
            )
        lr = float(self.optimizer_.param_groups[0]["lr"])
        n = positives.shape[0]

        def run(lo: int, hi: int) -> float:
            chunk_weights = weights[lo:hi] if weights.shape[0] else weights
            if ptr is None:
                return sgd_pairs(
                    w_in,
                    w_out,
                    words[lo:hi],
                    positives[lo:hi],
                    negatives[lo:hi],
                    chunk_weights,
                    log_kpn,
                    lr,
                    lr,
                )
            return sgd_cbow(
                w_in,
                w_out,
                ptr[lo : hi + 1],
                words,
                positives[lo:hi],
                negatives[lo:hi],
                chunk_weights,
                log_kpn,
                lr,
                lr,
            )

        pool = self._pool
        if pool is None:
            loss = run(0, n)
            if proposal is not None:
                self._compiled_generator().update(
                    proposal, rewards, self._generator_lr(), self.config.entropy_weight
                )
            return torch.tensor(loss / max(n, 1))
        # Hogwild: the threads update shared rows without locks while this thread
        # updates the generator. A thread's chunk of this batch starts once its chunk
        # of the previous batch (still running when pipelined) is done.
        bounds = np.linspace(0, n, self.n_jobs + 1).astype(int)
        futures = [pool.submit(run, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        if proposal is not None:
            self._compiled_generator().update(
                proposal, rewards, self._generator_lr(), self.config.entropy_weight
            )
        pending = _PendingLoss(futures, n)
        if not self._pipelined():
            return pending.result()
        # At most two batches in flight: wait for the previous one before returning.
        previous, self._in_flight = getattr(self, "_in_flight", None), pending
        if previous is not None:
            previous.wait()
        return pending

    def _rewards(self, words: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """Normalised rewards of generated negatives from the discriminator's scores."""
        logits = scores - self._log_kpn_on(scores.device)[words]
        return normalize_rewards(
            torch.sigmoid(logits),
            self.config.reward_temperature,
            baseline=self.config.reward_baseline,
        )

    def _autograd_step(self, batch, inputs, targets, draws) -> torch.Tensor:
        if draws is not None:
            self._autograd_generator_step(inputs, targets, draws)
        self.optimizer_.zero_grad()
        loss = self.get_loss(self.infer(inputs), targets)
        loss.backward()
        self.notify(
            "on_grad_computed",
            named_parameters=TeeGenerator(self.module_.discriminator.named_parameters()),
            batch=batch,
            training=True,
        )
        self.optimizer_.step()
        return loss.detach()

    def _autograd_generator_step(self, inputs, targets, draws) -> None:
        """Fill the generator's slots (in ``inputs`` and ``targets``), then REINFORCE."""
        positives = inputs["positives"]
        proposal = complete_proposal(
            self.module_.generator,
            self.noise,
            inputs["words"],
            positives,
            inputs["negatives"],
            draws,
            offsets=inputs.get("offsets"),
            **self._proposal_options(),
        )
        negatives = proposal.negatives
        inputs["negatives"] = negatives
        targets["neg_weights"] = proposal.weights
        targets["neg_log_noise"] = self.noise.log_prob(negatives.to(self.noise.device)).to(
            negatives.device
        )
        targets["neg_mask"] = negatives != positives.unsqueeze(1)
        if not proposal.log_q.numel():
            return
        rows, slots = proposal.from_generator.nonzero(as_tuple=True)
        sampled = negatives[rows, slots]
        discriminator = self.module_.discriminator
        with torch.no_grad():
            h = discriminator.encode(inputs["words"], inputs.get("offsets"))[rows]
            scores = (h * discriminator.output_embeddings(sampled)).sum(dim=-1)
        rewards = self._rewards(sampled, scores)
        loss = reinforce_loss(
            proposal.log_q, rewards, proposal.entropy, self.config.entropy_weight
        )
        self.optimizer_generator_.zero_grad()
        loss.backward()
        self.optimizer_generator_.step()
