"""The step strategy of the training engine, and the miner between sampler and scorer.

One skorch loop trains every estimator (:mod:`sknce._engine`); *how* a batch
updates the parameters is a strategy the net holds:

* :class:`AutogradStep` (the default): skorch's step, forward through the
  scorer, the objective of :mod:`sknce.losses`, backward, optimizer step;
* :class:`KernelStep`: a compiled CPU kernel that updates the parameters in
  place with SGD at the optimizer's current learning rate, over ``n_jobs``
  Hogwild threads. A family subclasses it (ACE's word2vec kernel is the first);
  where it does not apply (a GPU, another optimizer) the engine falls back to
  :class:`AutogradStep`.

A :class:`Miner` (pytorch-metric-learning's word) chooses model-dependent
negatives between the sampler, which draws fixed ones, and the scorer: a torch
module with its own optimizer (``net.optimizer_miner_``), which the autograd
step calls before the scorer's update (ACE's generator is the first miner).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch
from skorch import NeuralNet
from skorch.history import History

from sknce._data import Batch, Targets
from sknce._untraced import UntracedSGD

__all__ = ["AutogradStep", "KernelStep", "Miner", "PendingLoss", "TrainStep"]


class TrainStep:
    """The strategy of one training step of an :class:`~sknce._engine.NCENet`.

    The net calls :meth:`begin` and :meth:`end` around each skorch
    ``fit``/``partial_fit`` call, and the step once per training batch.
    """

    def applies(self, net) -> bool:
        """Whether this step can train ``net`` as it is configured (device, optimizer)."""
        return True

    def begin(self, net) -> None:
        """Acquire what the steps of one fit call share (threads); ``net`` is initialised."""

    def end(self, net) -> None:
        """Release what :meth:`begin` acquired (also when the fit raised)."""

    def pipelines(self, net) -> bool:
        """Whether a batch's step may return before its update is done.

        The engine then ends batch ``b`` (its loss recorded, ``on_batch_end``) once
        the step of batch ``b + 1`` has returned, and the returned ``"loss"`` is a
        :class:`PendingLoss`.
        """
        return False

    def __call__(self, net, batch: Batch, **fit_params) -> dict:
        """Update the parameters on ``batch``.

        Returns
        -------
        dict
            ``"loss"``: the batch's mean loss per example (a scalar tensor, or a
            :class:`PendingLoss` when :meth:`pipelines`); ``"y_pred"``: the scores,
            or ``None``.
        """
        raise NotImplementedError


class AutogradStep(TrainStep):
    """skorch's step: the miner (if any), then forward, objective, backward, optimizer step."""

    def __call__(self, net, batch: Batch, **fit_params) -> dict:
        if net.miner is not None:
            inputs, targets = net.miner.mine(net, dict(batch.inputs), batch.targets)
            net.miner.update(net, inputs, targets)
            batch = Batch(inputs, targets, size=batch.size)
        # skorch's own step (not the net's train_step, which delegates here), with the
        # net's overrides of train_step_single and _step_optimizer.
        return NeuralNet.train_step(net, batch, **fit_params)


class PendingLoss:
    """The loss of a batch whose kernel threads may still run.

    Parameters
    ----------
    futures : list of Future
        Each returns the summed loss of its share of the batch.
    n : int
        Examples of the batch.
    """

    def __init__(self, futures: list[Future], n: int) -> None:
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


class KernelStep(TrainStep):
    """A compiled CPU step: SGD in place on the parameters, over Hogwild threads.

    Subclasses implement :meth:`prepare` (per-batch work in the calling thread)
    and :meth:`kernel` (the update of a share of the batch, releasing the GIL), and
    may implement :meth:`overlap` (work of the calling thread while the kernel
    threads run). With ``n_jobs > 1`` the threads update shared rows without locks,
    as word2vec does, and batch ``b + 1`` is prepared while ``b``'s threads still
    run (:meth:`pipelines`): faster, not bit-reproducible.

    Parameters
    ----------
    n_jobs : int, default=1
        Threads of the kernel.

    Attributes
    ----------
    optimizer : type
        The optimizer whose update the kernel implements (plain SGD, at its
        ``lr``); the step applies only when the net's optimizer is this class with
        no options.
    """

    optimizer: type = torch.optim.SGD

    def __init__(self, n_jobs: int = 1) -> None:
        self.n_jobs = n_jobs
        self._pool = None
        self._in_flight = None
        self._torch_threads = None

    def __getstate__(self) -> dict:
        # A pickled net keeps the strategy, not the threads of a fit in progress.
        return {**vars(self), "_pool": None, "_in_flight": None, "_torch_threads": None}

    def runs(self, device, optimizer: type, options: dict) -> bool:
        """Whether the kernel trains on ``device`` with ``optimizer`` and its ``options``:
        on the CPU, with :attr:`optimizer` and no options.

        An estimator reads it before building its net, to choose what the autograd
        step needs where the kernel does not run.
        """
        return torch.device(device).type == "cpu" and optimizer is self.optimizer and not options

    def applies(self, net) -> bool:
        """Where it :meth:`runs`, in one process or with local SGD.

        Several processes train a kernel only when the net averages their
        parameters itself (``net.averages_parameters``): in-place updates leave
        no gradient for data-parallel training to average.
        """
        return self.runs(net.device, net.optimizer, net.get_params_for("optimizer")) and (
            net.n_processes == 1 or getattr(net, "averages_parameters", False)
        )

    def begin(self, net) -> None:
        """The thread pool; torch single-threaded, as the kernel holds the cores."""
        self._torch_threads = torch.get_num_threads()
        torch.set_num_threads(1)
        self._pool = ThreadPoolExecutor(self.n_jobs) if self.n_jobs > 1 else None
        self._in_flight = None

    def end(self, net) -> None:
        pool, self._pool, self._in_flight = self._pool, None, None
        if pool is not None:
            pool.shutdown()
        if self._torch_threads is not None:
            torch.set_num_threads(self._torch_threads)
            self._torch_threads = None

    def pipelines(self, net) -> bool:
        """With threads, in one process, into skorch's plain history."""
        return self._pool is not None and net.n_processes == 1 and type(net.history) is History

    def prepare(self, net, inputs: dict, targets: Targets):
        """Per-batch work in the calling thread (e.g. a compiled miner); returns the state."""
        raise NotImplementedError

    def kernel(self, net, state, lo: int, hi: int, lr: float) -> float:
        """Update the parameters on examples ``lo:hi``; return their SUMMED loss."""
        raise NotImplementedError

    def overlap(self, net, state) -> None:
        """Work of the calling thread while the kernel threads run (after them with one)."""

    def __call__(self, net, batch: Batch, **fit_params) -> dict:
        state = self.prepare(net, dict(batch.inputs), batch.targets)
        lr = float(net.optimizer_.param_groups[0]["lr"])
        n = batch.size
        if self._pool is None:
            futures = [_done(self.kernel(net, state, 0, n, lr))]
            self.overlap(net, state)
        else:
            # A thread's share of this batch starts once its share of the previous
            # batch (still running when pipelined) is done.
            bounds = np.linspace(0, n, self.n_jobs + 1).astype(int)
            futures = [
                self._pool.submit(self.kernel, net, state, lo, hi, lr)
                for lo, hi in zip(bounds[:-1], bounds[1:])
                if hi > lo
            ]
            self.overlap(net, state)
        # The in-place update is this batch's step: call the optimizer's (a no-op, no
        # parameter has a gradient) so that a learning-rate scheduler sees a step
        # before its own, as after a torch step.
        net.optimizer_.step()
        pending = PendingLoss(futures, n)
        if not self.pipelines(net):
            return {"loss": pending.result(), "y_pred": None}
        # At most two batches in flight: wait for the previous one before returning.
        previous, self._in_flight = self._in_flight, pending
        if previous is not None:
            previous.wait()
        return {"loss": pending, "y_pred": None}


def _done(value: float) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


class Miner(torch.nn.Module):
    """Model-dependent negatives between the sampler and the scorer.

    A torch module that learns with its own optimizer (``net.optimizer_miner_``,
    built by :meth:`make_optimizer` in the net's ``initialize_optimizer``); its
    parameters (those of :meth:`module`) are left out of the scorer's optimizer.
    :class:`AutogradStep` calls :meth:`mine` then :meth:`update` before the
    scorer's update; a :class:`KernelStep` of the family runs the miner's compiled
    counterpart in its ``prepare``/``overlap``. A sampler may hand the miner draws
    of its own in the batch's inputs, which :meth:`mine` removes.

    Parameters
    ----------
    lr : float
        Learning rate of the miner's optimizer.
    """

    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = lr

    def module(self, net) -> torch.nn.Module:
        """The module whose parameters the miner learns: itself by default.

        A miner whose module is part of the net's (ACE's generator is
        ``net.module_.generator``) returns it from there, so that it moves to the
        device, pickles and is restored with the net's module.
        """
        return self

    def make_optimizer(self, net) -> torch.optim.Optimizer:
        """The miner's optimizer: SGD on the parameters of :meth:`module` at :attr:`lr`
        (torch's, without its import of ``torch._dynamo``)."""
        return UntracedSGD(self.module(net).parameters(), lr=self.lr)

    def mine(self, net, inputs: dict, targets: Targets) -> tuple[dict, Targets]:
        """The batch's inputs and targets with the miner's negatives in place."""
        raise NotImplementedError

    def update(self, net, inputs: dict, targets: Targets) -> None:
        """The miner's learning step on the batch :meth:`mine` returned last."""
        raise NotImplementedError
