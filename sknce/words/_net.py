"""ACEWord2Vec's parts of the engine: its miner, its kernel step and its net.

A training step of :class:`~sknce.ACEWord2Vec` is the engine's, with ACE's parts
in the engine's named places:

1. :class:`ACEMiner`, the generator (Bose et al., 2018), is the miner between the
   skip-gram sampler and the discriminator: it fills the batch's generator slots
   (:func:`~sknce.words._generator.complete_proposal`) and learns by REINFORCE,
   the reward of a sample being the discriminator's belief that it is a true
   context (Eq. 7), with its own optimizer (``optimizer_miner_``, SGD);
2. the discriminator is updated by the engine's step: the autograd step on the
   core objective with any torch optimizer, or, on the CPU with plain SGD,
   :class:`ACEKernelStep` (word2vec's per-example SGD in place,
   :func:`~sknce.words._kernels.sgd_pairs`, over ``n_jobs`` threads, with the
   miner's compiled twin :class:`~sknce.words._generator.CompiledGenerator`).

:class:`ACENet` keeps what is ACE's own: the fixed noise and its ``log(K p_N)``
correction, the adversarial warm-up, and data-parallel training by local SGD
(:class:`~sknce._distributed.ParameterAveraging`): the kernel's in-place updates
leave no gradient for DDP to synchronise.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from sknce._data import Targets
from sknce._distributed import ParameterAveraging, merge_batch_records, process_shard
from sknce._engine import NCENet
from sknce._steps import KernelStep, Miner
from sknce.noise import CategoricalNoise
from sknce.words._generator import (
    CompiledGenerator,
    complete_proposal,
    normalize_rewards,
    reinforce_loss,
)
from sknce.words._kernels import sgd_cbow, sgd_pairs

__all__ = [
    "ACEConfig",
    "ACEKernelStep",
    "ACEMiner",
    "ACENet",
    "DiscriminatorOptimizer",
    "GeneratorSettings",
    "SGD_PER_ADAM_RATE",
]

#: ``lr`` over Adam's rate where plain SGD cannot train the discriminator (the autograd
#: path): Adam at 1e-2 for the default 0.025, measured in benchmarks/README.md
#: ("ACEWord2Vec trains on the autograd path at its defaults").
SGD_PER_ADAM_RATE = 2.5


@dataclass
class ACEConfig:
    """The discriminator's objective and the adversarial schedule of one fit.

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


@dataclass(frozen=True)
class DiscriminatorOptimizer:
    """The discriminator's optimizer and rate for the path it trains on (:meth:`resolve`).

    Plain SGD at ``lr`` (the defaults) is word2vec's per-example rate, which only the
    compiled kernel takes: the autograd step's one step per batch, on the batch's
    mean loss, is the kernel's per-example steps divided by ``batch_size`` and
    leaves the vectors at chance (a step on the summed loss instead diverges, the
    frequent words' rows taking thousands of examples' steps at once). Where the
    kernel does not run (a GPU), plain SGD becomes Adam at
    ``lr / SGD_PER_ADAM_RATE``, whose per-coordinate steps train from word2vec's
    start. An optimizer chosen otherwise (another class, or any options) is kept, at
    ``lr``. Resolved from the estimator's parameters and device when its net is built
    or continued, never from fitted attributes.

    Parameters
    ----------
    optimizer : type
        The torch optimizer class the net is built with.
    lr : float
        Its learning rate.
    """

    optimizer: type
    lr: float

    @classmethod
    def resolve(
        cls, kernel: KernelStep, optimizer: type, options: dict, lr: float, device
    ) -> DiscriminatorOptimizer:
        """The optimizer of a fit with these settings on ``device``.

        Parameters
        ----------
        kernel : KernelStep
            The family's compiled step (whether it :meth:`~sknce._steps.KernelStep.runs`).
        optimizer : type
            The estimator's ``optimizer``.
        options : dict
            Its ``optimizer_kwargs``.
        lr : float
            The estimator's ``lr``.
        device : str or torch.device
            Where the net trains.
        """
        plain_sgd = optimizer is torch.optim.SGD and not options
        if not plain_sgd or kernel.runs(device, optimizer, options):
            return cls(optimizer, lr)
        return cls(torch.optim.Adam, lr / SGD_PER_ADAM_RATE)


@dataclass(frozen=True)
class GeneratorSettings:
    """The generator's settings: its rewards, entropy bonus and proposal options.

    ``reward_temperature``, ``reward_baseline`` and ``entropy_weight`` are those of
    :func:`~sknce.words._generator.normalize_rewards` and
    :func:`~sknce.words._generator.reinforce_loss`; ``mask_false_negatives``,
    ``importance_weighting`` and ``max_importance_weight`` those of
    :func:`~sknce.words._generator.complete_proposal`.
    """

    reward_temperature: float
    reward_baseline: bool
    entropy_weight: float
    mask_false_negatives: bool
    importance_weighting: bool
    max_importance_weight: float

    @classmethod
    def of(cls, estimator) -> GeneratorSettings:
        """The settings of an estimator with parameters of these names."""
        return cls(**{field.name: getattr(estimator, field.name) for field in fields(cls)})

    def proposal_options(self) -> dict:
        """The options of the generator's proposal."""
        return {
            "mask_false_negatives": self.mask_false_negatives,
            "importance_weighting": self.importance_weighting,
            "max_importance_weight": self.max_importance_weight,
        }


class ACEMiner(Miner):
    """ACE's generator as the engine's miner: negatives from the noise/generator mixture.

    The generator is ``net.module_.generator`` (part of the net's module, so it
    moves, pickles and is restored with it); the miner holds its settings and its
    compiled twin.

    Parameters
    ----------
    lr : float
        The generator's learning rate (SGD on the REINFORCE objective).
    settings : GeneratorSettings
    """

    def __init__(self, lr: float, settings: GeneratorSettings) -> None:
        super().__init__(lr)
        self.settings = settings
        self._proposal = None
        self._compiled = None

    def __getstate__(self) -> dict:
        # The compiled twin views the weights of one process: rebuilt when needed.
        return {**super().__getstate__(), "_proposal": None, "_compiled": None}

    def module(self, net) -> torch.nn.Module:
        """The generator."""
        return net.module_.generator

    def lr_now(self, net) -> float:
        """The current learning rate of ``optimizer_miner_``."""
        return float(net.optimizer_miner_.param_groups[0]["lr"])

    def forget(self) -> None:
        """Drop the compiled twin (the noise or the generator's parameters changed)."""
        self._compiled = None

    def compiled(self, net) -> CompiledGenerator:
        """The compiled twin of the generator, for the kernel step."""
        if self._compiled is None:
            self._compiled = CompiledGenerator(self.module(net), net.noise, net.noise.n_categories)
        return self._compiled

    def mine(self, net, inputs: dict, targets: Targets) -> tuple[dict, Targets]:
        """Fill the generator's slots of an adversarial batch (its draws in ``inputs``)."""
        draws = inputs.pop("adversarial", None)
        self._proposal = None
        if draws is None:
            return inputs, targets
        positives = inputs["positives"]
        proposal = complete_proposal(
            self.module(net),
            net.noise,
            inputs["words"],
            positives,
            inputs["negatives"],
            draws,
            offsets=inputs.get("offsets"),
            **self.settings.proposal_options(),
        )
        negatives = proposal.negatives
        targets = targets.replace(
            neg_weights=proposal.weights,
            neg_log_noise=net.noise.log_prob(negatives.to(net.noise.device)).to(negatives.device),
            neg_mask=negatives != positives.unsqueeze(1),
        )
        self._proposal = (proposal, inputs)
        return {**inputs, "negatives": negatives}, targets

    def update(self, net, inputs: dict, targets: Targets) -> None:
        """REINFORCE on the generator's samples, rewarded by the discriminator before its step."""
        if self._proposal is None:
            return
        proposal, inputs = self._proposal
        self._proposal = None
        if not proposal.log_q.numel():
            return
        rows, slots = proposal.from_generator.nonzero(as_tuple=True)
        sampled = proposal.negatives[rows, slots]
        discriminator = net.module_.discriminator
        with torch.no_grad():
            h = discriminator.encode(inputs["words"], inputs.get("offsets"))[rows]
            scores = (h * discriminator.output_embeddings(sampled)).sum(dim=-1)
        logits = scores - net.log_kpn_on(scores.device)[sampled]
        rewards = normalize_rewards(
            torch.sigmoid(logits),
            self.settings.reward_temperature,
            baseline=self.settings.reward_baseline,
        )
        loss = reinforce_loss(
            proposal.log_q, rewards, proposal.entropy, self.settings.entropy_weight
        )
        net.optimizer_miner_.zero_grad()
        loss.backward()
        net.optimizer_miner_.step()


@dataclass
class _KernelBatch:
    """What the kernel threads of one batch read (numpy views of the batch and tables)."""

    w_in: np.ndarray
    w_out: np.ndarray
    words: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray
    ptr: np.ndarray | None
    weights: np.ndarray
    log_kpn: np.ndarray
    proposal: dict | None = None
    rewards: np.ndarray | None = None
    subword_table: tuple = ()


class ACEKernelStep(KernelStep):
    """word2vec's compiled SGD of the discriminator, with the miner's compiled twin.

    :meth:`prepare` fills the generator's slots and computes the rewards (from the
    discriminator before its update, as on the autograd path); :meth:`kernel` runs
    :func:`~sknce.words._kernels.sgd_pairs` (skip-gram) or
    :func:`~sknce.words._kernels.sgd_cbow` on a share of the batch;
    :meth:`overlap` updates the generator while the threads train.
    """

    def prepare(self, net, inputs: dict, targets: Targets) -> _KernelBatch:
        words = inputs["words"].numpy()
        negatives = inputs["negatives"].numpy()
        offsets = inputs.get("offsets")
        discriminator = net.module_.discriminator
        # The views are taken here, not in the threads: a kernel thread's Python work
        # waits for the GIL while this thread runs the loop's (up to the switch interval).
        state = _KernelBatch(
            w_in=discriminator.input_embeddings.weight.detach().numpy(),
            w_out=discriminator.output_embeddings.weight.detach().numpy(),
            words=words,
            positives=inputs["positives"].numpy(),
            negatives=negatives,
            ptr=None if offsets is None else np.append(offsets.numpy(), words.shape[0]),
            weights=np.empty((0, negatives.shape[1]), dtype=np.float32),  # all 1
            log_kpn=net.log_kpn(),
        )
        draws = inputs.get("adversarial")
        if draws is None:
            return state
        miner = net.miner
        generator = miner.compiled(net)
        proposal = generator.propose(
            words,
            state.positives,
            negatives,
            draws,
            ptr=state.ptr,
            **miner.settings.proposal_options(),
        )
        state.negatives = proposal["negatives"]
        if proposal["weights"] is not None:
            state.weights = proposal["weights"]
        state.proposal = proposal
        state.rewards = generator.rewards(
            proposal,
            state.w_in,
            state.w_out,
            *self.input_side(net, state),
            state.log_kpn,
            miner.settings.reward_temperature,
            miner.settings.reward_baseline,
        )
        return state

    def input_side(self, net, state: _KernelBatch) -> tuple[np.ndarray, np.ndarray | None]:
        """The discriminator's input side of a batch: its words (and CBOW's bag pointer)."""
        return state.words, state.ptr

    def kernel(self, net, state: _KernelBatch, lo: int, hi: int, lr: float) -> float:
        w_in, w_out = state.w_in, state.w_out
        weights = state.weights[lo:hi] if state.weights.shape[0] else state.weights
        targets = (state.positives[lo:hi], state.negatives[lo:hi], weights, state.log_kpn, lr, lr)
        if state.ptr is None:
            return sgd_pairs(w_in, w_out, state.words[lo:hi], *targets)
        return sgd_cbow(w_in, w_out, state.ptr[lo : hi + 1], state.words, *targets)

    def overlap(self, net, state: _KernelBatch) -> None:
        if state.proposal is not None:
            miner = net.miner
            miner.compiled(net).update(
                state.proposal, state.rewards, miner.lr_now(net), miner.settings.entropy_weight
            )


class ACENet(NCENet):
    """The skorch net of :class:`~sknce.ACEWord2Vec` (discriminator and generator).

    Parameters
    ----------
    noise : CategoricalNoise
        The fixed noise :math:`p_N` over the vocabulary.
    config : ACEConfig
    accelerator : accelerate.Accelerator or None, default=None
        With several processes, each trains on its shard of the documents and the
        processes average their parameters every
        :data:`~sknce._distributed.LOCAL_SGD_PERIOD` batches and at the end of each
        epoch; the accelerator gives the device (its mixed precision is not used).
    **kwargs
        Passed to :class:`~sknce._engine.NCENet` (``step``, ``miner``, ...).
    """

    #: It trains data-parallel itself, by local SGD.
    averages_parameters = True

    def __init__(
        self, *args, noise: CategoricalNoise, config: ACEConfig, accelerator=None, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.noise = noise
        self.config = config
        self.accelerator = accelerator

    @property
    def n_processes(self) -> int:
        """Processes training this net together."""
        shard = process_shard(self.accelerator)
        return 1 if shard is None else shard[1]

    @property
    def n_jobs(self) -> int:
        """Threads of the kernel step."""
        return self.step.n_jobs

    def set_noise(self, noise: CategoricalNoise) -> None:
        """Use a new noise (after the vocabulary grew); drop what was derived from the old."""
        self.noise = noise
        for name in ("log_kpn_", "log_kpn_tensor_"):
            if hasattr(self, name):
                delattr(self, name)
        if self.miner is not None:
            self.miner.forget()

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
        for a kernel step's training batches; each process's shard of the documents."""
        epoch = len(self.history)
        adversarial = training and self.config.adversarial and epoch > (self.warmup_epochs_ or 0)
        # A kernel step computes the objective's corrections itself.
        options = {
            "adversarial": adversarial,
            "targets": not (training and isinstance(self.step_, KernelStep)),
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
        if not (training and iterator is not None and self.n_processes > 1):
            return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
        averaging = ParameterAveraging(self.module_.parameters())
        super().run_single_epoch(
            averaging.iterate(iterator), training, prefix, step_fn, **fit_params
        )
        merge_batch_records(self.history)
        return None

    def log_kpn(self) -> np.ndarray:
        """``log(K p_N(w))`` per word for the NCE objective; zeros for negative sampling."""
        if not hasattr(self, "log_kpn_"):
            log_kpn = np.zeros(self.noise.n_categories, dtype=np.float32)
            if self.config.objective == "nce":
                k = self.config.n_negatives
                log_kpn += np.log(self.noise.probs * k).astype(np.float32)
            self.log_kpn_ = log_kpn
        return self.log_kpn_

    def log_kpn_on(self, device: torch.device) -> torch.Tensor:
        """:meth:`log_kpn` as a tensor on ``device``, copied there once per fit."""
        cached = getattr(self, "log_kpn_tensor_", None)
        if cached is None or cached.device != torch.device(device):
            self.log_kpn_tensor_ = torch.from_numpy(self.log_kpn()).to(device)
        return self.log_kpn_tensor_
