"""Data-parallel training over the processes of a launch, selected by ``accelerator=``.

Every process of ``accelerate launch`` (or ``torchrun``) runs the same script on
the same data with the same estimator; an estimator given an
``accelerate.Accelerator`` then trains one model across them:

* :class:`AcceleratedNCENet` (the five array estimators) is the engine's
  :class:`~sknce._engine.NCENet` with skorch's
  :class:`~skorch.hf.AccelerateMixin`: the accelerator wraps the scorer in
  ``DistributedDataParallel`` (gradients averaged at every step), places it on
  its device and runs the forward pass in its mixed precision. Each process takes
  its shard of every epoch's permutation of the examples
  (:func:`~sknce._data.shard_rows`: the same number of steps everywhere) and
  draws its own negatives; the validation pairs are the same in every process,
  so early stopping decides alike.
* :class:`ParameterAveraging` serves ``ACEWord2Vec``, whose compiled kernel
  updates the vectors in place without autograd, out of reach of DDP: each
  process trains on its shard of the corpus's documents and the processes
  average their parameters every :data:`LOCAL_SGD_PERIOD` batches and at the end
  of every epoch (local SGD), with ``torch.distributed.all_reduce``.

Histories are merged by :func:`merge_batch_records`: at the end of each training
pass every process gathers the batch records of all processes (in rank order),
so the epoch's ``train_loss`` and the histories are the same everywhere. This
is what skorch's :class:`~skorch.history.DistributedHistory` gives for the
sharded training batches, but that class does not fit sknce's training:

* it merges every batch record, the validation batches' too; sknce's validation
  is not sharded (every process scores the same held-out examples), so those
  would be counted once per process (``valid_batch_size`` summing to n times the
  held-out examples);
* a process waits, at each batch, for the records of that batch number from
  every other process: ACE's corpus shards give the processes unequal batch
  counts, and the process with more batches stops with a store timeout;
* it needs a ``torch.distributed.Store`` besides the process group (a second
  ``TCPStore`` on a port of the user's choosing, since the group's own store is
  private API), and makes one store round trip per record and process; the
  merge here is one ``all_gather_object`` per epoch;
* the net holding it cannot continue training after unpickling (the store is
  dropped), where sknce's fitted estimators pickle and continue.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from skorch.hf import AccelerateMixin
from skorch.net import NeuralNet

from sknce._engine import NCENet
from sknce._random import Seeds

__all__ = [
    "data_parallel_class",
    "LOCAL_SGD_PERIOD",
    "AcceleratedNCENet",
    "ParameterAveraging",
    "broadcast_seeds",
    "merge_batch_records",
    "process_shard",
    "require_accelerate",
]

#: Batches between two parameter averages of ACE's local SGD. An average all-reduces
#: both embedding tables (2 x V x d floats: 24 MB at V = 30,000, d = 100), about as long
#: as one kernel batch of 10,000 pairs on two CPU cores; every 8 batches keeps the
#: averaging a small share of an epoch while the processes drift apart for only
#: 80,000 pairs each.
LOCAL_SGD_PERIOD = 8

#: How to install the ``distributed`` extra (sknce is not on PyPI yet).
_EXTRA = (
    'in a clone of sknce, pip install ".[distributed]" (or, from a wheel, '
    'pip install "sknce-<version>-py3-none-any.whl[distributed]"; once sknce is on PyPI, '
    'pip install "sknce[distributed]")'
)


def _silent(text: str) -> None:
    """The print sink of the processes other than the main one."""


def require_accelerate():
    """Import ``accelerate``, or raise an ImportError naming the extra that installs it."""
    try:
        import accelerate
    except ImportError as error:
        raise ImportError(
            "accelerator= trains through Hugging Face Accelerate, which is not installed. "
            f"Install sknce's distributed extra: {_EXTRA}"
        ) from error
    return accelerate


def data_parallel_class(net_class: type[NCENet]) -> type[NCENet]:
    """The net class that trains ``net_class``'s model data-parallel under an accelerator.

    A net that averages the processes' parameters itself (``averages_parameters``,
    e.g. local SGD around a compiled step) is its own; any other trains as an
    :class:`AcceleratedNCENet` (DDP on the gradients).
    """
    if getattr(net_class, "averages_parameters", False):
        return net_class
    return AcceleratedNCENet


def process_shard(accelerator) -> tuple[int, int] | None:
    """``(rank, n_processes)`` of this process, or None when there is one process."""
    if accelerator is None or accelerator.num_processes <= 1:
        return None
    return int(accelerator.process_index), int(accelerator.num_processes)


def broadcast_seeds(seeds: Seeds, accelerator) -> Seeds:
    """The seeds of process 0 in every process (``random_state=None`` draws differ)."""
    import torch.distributed as dist

    box = [seeds.seed]
    dist.broadcast_object_list(box, src=0)
    return Seeds(box[0])


def merge_batch_records(history) -> None:
    """Replace the current epoch's batch records by those of all processes, in rank order.

    Call it in every process at the same point (a collective), after the
    training batches of the epoch and before the epoch's scores are computed.
    """
    import torch.distributed as dist

    row = history[-1]
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, row.get("batches", []))
    row["batches"] = [record for records in gathered for record in records]


class ParameterAveraging:
    """Local SGD: processes train apart and average their parameters periodically.

    Parameters
    ----------
    parameters : iterable of Tensor
        The parameters averaged (in place, so numpy views of them stay valid).
    period : int, default=LOCAL_SGD_PERIOD
        Batches between two averages.
    """

    def __init__(self, parameters: Iterable[torch.Tensor], period: int = LOCAL_SGD_PERIOD):
        self.parameters = list(parameters)
        self.period = period

    def _average(self, active: bool) -> int:
        """Average the parameters over the processes; return how many are still active."""
        import torch.distributed as dist

        device = self.parameters[0].device
        flag = torch.tensor([float(active)], device=device)
        dist.all_reduce(flag)
        n_processes = dist.get_world_size()
        with torch.no_grad():
            for param in self.parameters:
                dist.all_reduce(param.data)
                param.data.div_(n_processes)
        return int(flag.item())

    def iterate(self, batches: Iterable) -> Iterator:
        """Yield ``batches``, averaging after every ``period`` of them and at the end.

        Processes may have different numbers of batches: one that has run out keeps
        joining the averages of the others (as inactive) until none is left, so
        every process makes the same number of collective calls and all end the
        pass with the same parameters.
        """
        for count, batch in enumerate(batches, 1):
            yield batch
            if count % self.period == 0:
                self._average(active=True)
        while self._average(active=False):
            pass


class AcceleratedNCENet(AccelerateMixin, NCENet):
    """The engine's net trained data-parallel by an ``accelerate.Accelerator``.

    skorch's :class:`~skorch.hf.AccelerateMixin` with these changes:

    * the net's ``device`` is the accelerator's (the samplers build batches on it
      and the estimator reads ``net_.device`` at inference);
    * criteria without parameters are left unwrapped (DDP refuses modules with
      nothing to synchronise) and an optimizer is prepared once, so a warm start
      can wrap the modules again;
    * the modules are unwrapped when ``partial_fit`` returns, after the
      callbacks' ``on_train_end`` (early stopping restores the best weights into
      the wrapped module), so the fitted estimator pickles; the next fit wraps
      them again;
    * validation and inference are not sharded, so their outputs are not gathered;
    * only the main process prints the epoch table, and only with ``verbose``.

    Parameters
    ----------
    accelerator : accelerate.Accelerator
    **kwargs
        Passed to :class:`~sknce._engine.NCENet`.
    """

    def __init__(self, *args, accelerator, **kwargs) -> None:
        # The mixin's default sink (accelerator.print) prints the epoch table whatever
        # the net's verbose; print honours it, and only the main process prints.
        sink = print if accelerator.is_main_process else _silent
        super().__init__(
            *args,
            accelerator=accelerator,
            unwrap_after_train=False,
            callbacks__print_log__sink=sink,
            **kwargs,
        )

    @property
    def n_processes(self) -> int:
        """Processes training this net together."""
        return int(self.accelerator.num_processes)

    def _validate_params(self):
        # The mixin asks for device=None when the accelerator places tensors; this net's
        # device is the accelerator's own, so only the base checks apply.
        NeuralNet._validate_params(self)
        mine, theirs = torch.device(self.device), torch.device(self.accelerator.device)
        if mine != theirs and not (mine.type == theirs.type == "cpu"):
            raise ValueError(
                f"the net's device {self.device!r} is not the accelerator's "
                f"{str(self.accelerator.device)!r}."
            )

    def _initialize_accelerator(self):
        if self._wrapped_with_accelerator:
            return self
        for name in self._criteria + self._modules:
            module = getattr(self, name + "_")
            if isinstance(module, torch.nn.Module) and any(
                p.requires_grad for p in module.parameters()
            ):
                setattr(self, name + "_", self.accelerator.prepare(module))
        from accelerate.optimizer import AcceleratedOptimizer

        for name in self._optimizers:
            optimizer = getattr(self, name + "_")
            if not isinstance(optimizer, AcceleratedOptimizer):
                setattr(self, name + "_", self.accelerator.prepare(optimizer))
        self._wrapped_with_accelerator = True
        return self

    def batch_options(self, training: bool) -> dict:
        """This process's shard of the training epochs."""
        options = super().batch_options(training)
        shard = process_shard(self.accelerator)
        if training and shard is not None:
            options["shard"] = shard
        return options

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """The engine's epoch; a training pass then merges the batch records of all processes."""
        super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
        if training and iterator is not None and self.n_processes > 1:
            merge_batch_records(self.history)

    def evaluation_step(self, batch, training=False):
        # Inference batches are the same in every process (not sharded): nothing to gather.
        return NCENet.evaluation_step(self, batch, training=training)

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """skorch's ``partial_fit`` with the modules wrapped, unwrapped when it returns."""
        self._initialize_accelerator()
        try:
            return super().partial_fit(X, y, classes, **fit_params)
        finally:
            self._unwrap_accelerator()
