"""The training engine every sknce estimator trains through: one skorch loop.

:class:`NCENet` is a skorch :class:`~skorch.NeuralNet` whose three parts are the
three steps of the design: the *dataset* draws batches with a family's sampler
(positives and negatives already drawn, see :mod:`sknce._data`), the *module*
scores them, and the *criterion* is an NCE objective of :mod:`sknce.losses`
that turns scores into a loss. Everything else is skorch's: the epoch loop,
callbacks (early stopping, checkpoints, learning-rate schedules, scoring,
progress), history, ``partial_fit`` and warm starts.

What the engine adds to skorch:

* each epoch's draws (shuffling, negatives) come from the fit's named random
  streams (:class:`~sknce._random.Seeds`), keyed by the epoch number, so a fit is
  reproducible with no global random state and a resumed fit repeats the draws
  of the uninterrupted one; the validation pairs are the same at every epoch;
* a batch knows its number of examples (its tensors need not share a length);
* a step strategy (:mod:`sknce._steps`): skorch's autograd step by default, or a
  family's compiled kernel step, and an optional miner of negatives between
  sampler and scorer, with its own optimizer;
* the first training batch of every fit call is checked
  (:func:`~sknce._data.check_batch`), so a sampler's mistake is named there, and
  its step measured, so that a large step gets the threads the fit's plan allows
  (:func:`~sknce._threads.raise_threads`);
* :meth:`NCENet.mean_loss`, the objective on a dataset, which ``score`` uses;
* :meth:`NCENet.snapshot`, so that a failed warm start restores the net;
* an interrupted epoch is closed in the history (:meth:`NCENet.fit_loop`).
"""

from __future__ import annotations

import copy
import itertools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import torch
from skorch import NeuralNet

from sknce._checkpoints import checkpoint_saves, save_params_atomically
from sknce._data import SampledDataset, check_batch
from sknce._random import Seeds
from sknce._steps import AutogradStep, Miner, TrainStep
from sknce._threads import raise_threads, step_work
from sknce._untraced import built_class
from sknce._weights import check_weighted_examples

__all__ = [
    "BatchIterator",
    "HoldOut",
    "NCENet",
    "host_reads_are_free",
    "prefetched",
    "resolve_device",
]


def resolve_device(device: str) -> str:
    """Map ``"auto"`` to ``"cuda"`` when available, else ``"cpu"``; reject a missing GPU.

    Parameters
    ----------
    device : {"cpu", "cuda", "auto"} or a torch device string such as ``"cuda:1"``

    Returns
    -------
    str
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was requested but this torch build sees no CUDA device "
            f"(torch {torch.__version__}). Use device='cpu', or device='auto' to use a GPU "
            "only when one is present."
        )
    return str(device)


def host_reads_are_free(device: str | torch.device) -> bool:
    """Whether reading a tensor of ``device`` back to the host costs no device stall.

    True on the CPU. On an accelerator a read-back (``.item()``, ``float()``)
    waits until the device has run everything queued before it, so the engine
    and its callbacks batch their reads instead of making one per step.
    """
    return torch.device(device).type == "cpu"


def prefetched(items: Iterable, depth: int = 2) -> Iterator:
    """Iterate over ``items`` produced ahead in a background thread.

    Building a batch (numpy and torch work that releases the GIL) then overlaps
    the training step of the previous one. The order of the items, and so every
    random draw made while producing them, is that of plain iteration.
    """
    done = object()
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    n_threads = torch.get_num_threads()

    def produce() -> None:
        # OpenMP's thread count is per thread: without this, torch ops here would use
        # every core beside the threads already training.
        torch.set_num_threads(n_threads)
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        buffer.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            buffer.put((done, None))
        except BaseException as error:  # handed to the consumer, raised there
            buffer.put((done, error))

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    try:
        while True:
            item, error = buffer.get()
            if item is done:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        worker.join()


class BatchIterator:
    """An epoch's batches of a dataset, drawn from the net's stream for that epoch.

    skorch builds it through ``iterator_train`` / ``iterator_valid`` with the
    dataset and the batch size.

    Parameters
    ----------
    dataset : SampledDataset or another dataset with ``batches(batch_size, rng, shuffle)``
    batch_size : int
    net : NCENet
        Supplies the epoch's numpy Generator.
    training : bool
        Shuffle and draw from the training stream; else the fixed validation stream.
    prefetch : bool, default=False
        Build batches ahead in a background thread (:func:`prefetched`).
    """

    def __init__(
        self, dataset, batch_size: int, net: NCENet, training: bool, prefetch: bool = False
    ) -> None:
        self.dataset = dataset
        self.batch_size = batch_size
        self.net = net
        self.training = training
        self.prefetch = prefetch

    def __iter__(self) -> Iterator:
        rng = self.net.epoch_rng(self.training)
        options = self.net.batch_options(self.training)
        batches = self.dataset.batches(self.batch_size, rng, shuffle=self.training, **options)
        return prefetched(batches) if self.prefetch else iter(batches)


class HoldOut:
    """skorch ``train_split``: a random fraction of the examples held out for validation.

    Parameters
    ----------
    fraction : float
        Share of the examples held out (``ceil(fraction * n)`` of them).
    seeds : Seeds
        The fit's streams; the split is drawn from ``seeds.numpy("split")``.
    keep_classes : bool, default=False
        Hold out no example whose class would keep none for training
        (:meth:`~sknce._data.SampledDataset.split`; a chunk stream holds out its last
        chunk whatever this says).
    """

    def __init__(self, fraction: float, seeds: Seeds, keep_classes: bool = False) -> None:
        self.fraction = fraction
        self.seeds = seeds
        self.keep_classes = keep_classes

    def __call__(self, dataset, y=None, **fit_params):
        rng = self.seeds.numpy("split")
        if self.keep_classes and isinstance(dataset, SampledDataset):
            train, valid = dataset.split(self.fraction, rng, keep_classes=True)
        else:
            train, valid = dataset.split(self.fraction, rng)
        check_weighted_examples(train, held_out=True)
        return train, valid


class NCENet(NeuralNet):
    """A skorch ``NeuralNet`` for sampler-built batches and NCE objectives.

    ``module(**inputs)`` returns the scores of a batch's positives and negatives,
    ``criterion(scores, targets)`` the loss (see :mod:`sknce.losses`).

    Parameters
    ----------
    seeds : Seeds
        The fit's random streams: training epoch ``e`` draws from
        ``seeds.numpy("train", e)``, validation from ``seeds.numpy("valid")``.
    prefetch : bool, default=False
        Build training batches in a background thread, ahead of the step.
    step : TrainStep or None, default=None
        How a batch updates the parameters; ``None``: :class:`~sknce._steps.AutogradStep`.
        A step that does not :meth:`~sknce._steps.TrainStep.applies` to the net as
        configured is replaced by the autograd step for the fit call.
    miner : Miner or None, default=None
        Model-dependent negatives between sampler and scorer, trained by their own
        optimizer ``optimizer_miner_``.
    **kwargs
        Passed to :class:`skorch.NeuralNet`.

    Attributes
    ----------
    estimator : BaseEstimator or None
        The sknce estimator being fitted, set by it: a callback can call its
        ``transform``/``predict`` to see the model of the current epoch.
    step_ : TrainStep
        The step training the current (or last) fit call.
    """

    def __init__(
        self,
        *args,
        seeds: Seeds,
        prefetch: bool = False,
        step: TrainStep | None = None,
        miner: Miner | None = None,
        **kwargs,
    ) -> None:
        # Before skorch's __init__: a miner is a torch module, which skorch would
        # register as a component of the net if set afterwards.
        self.step = step
        self.miner = miner
        # skorch's scoring callbacks cache each batch's y to concatenate at the epoch's
        # end; an NCE batch's targets are noise log-probabilities, not labels, so they
        # cannot be concatenated (issue 22): scoring callbacks call the net instead.
        kwargs.setdefault("use_caching", False)
        super().__init__(*args, **kwargs)
        self.seeds = seeds
        self.prefetch = prefetch
        self.estimator = None

    @property
    def n_processes(self) -> int:
        """Processes training this net together (1; a data-parallel net says more)."""
        return 1

    # --- checkpoints: skorch's Checkpoint saves through save_params --------------------
    def save_params(
        self,
        f_params=None,
        f_optimizer=None,
        f_criterion=None,
        f_history=None,
        use_safetensors=False,
        **kwargs,
    ):
        """skorch's ``save_params``, each file written whole or not at all.

        See ``sknce._checkpoints.save_params_atomically``.
        """
        files = dict(
            f_params=f_params,
            f_optimizer=f_optimizer,
            f_criterion=f_criterion,
            f_history=f_history,
            **kwargs,
        )
        save_params_atomically(super().save_params, self, files, use_safetensors)

    def notify(self, method_name, **cb_kwargs):
        """skorch's ``notify``; the checkpoint files its callbacks save switch in together.

        See ``sknce._checkpoints.checkpoint_saves``.
        """
        with checkpoint_saves(self, method_name):
            super().notify(method_name, **cb_kwargs)

    # --- the step strategy and the miner ----------------------------------------------
    def resolve_step(self) -> TrainStep:
        """The net's ``step`` when it applies to the net as configured, else autograd's."""
        step = self.step
        if step is None or not step.applies(self):
            return AutogradStep()
        return step

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """skorch's ``partial_fit`` between the step's ``begin`` and ``end``."""
        if not self.initialized_:
            self.initialize()
        self.step_ = self.resolve_step()
        self.batch_checked_ = False
        self.step_.begin(self)
        try:
            return super().partial_fit(X, y, classes, **fit_params)
        finally:
            self.step_.end(self)

    def train_step(self, batch, **fit_params):
        """One step of the strategy; the first of a fit call checks the sampler's batch,
        and its work sets the threads of the steps after it."""
        first = not getattr(self, "batch_checked_", True)
        if first:
            check_batch(batch, f"the sampler of {type(self).__name__}")
            self.batch_checked_ = True
        self._set_training(True)
        step = self.step_(self, batch, **fit_params)
        if first:
            raise_threads(step_work(self._trained_parameters(), batch.size))
        return step

    def _trained_parameters(self) -> Iterator[torch.Tensor]:
        """The parameters of the net's modules and criteria (the miner's included)."""
        return itertools.chain.from_iterable(
            getattr(self, name + "_").parameters() for name in self._modules + self._criteria
        )

    def initialize_optimizer(self):
        """skorch's ``optimizer_`` (less the miner's parameters), and ``optimizer_miner_``.

        As skorch's, but ``optimizer=torch.optim.SGD`` is built as its twin that does
        not import ``torch._dynamo`` (:func:`sknce._untraced.built_class`).
        """
        named_parameters = self.get_all_learnable_params()
        args, kwargs = self.get_params_for_optimizer("optimizer", named_parameters)
        self.optimizer_ = built_class(self.optimizer)(*args, **kwargs)
        if self.miner is not None:
            self.optimizer_miner_ = self.miner.make_optimizer(self)
        return self

    def get_all_learnable_params(self):
        """skorch's learnable parameters less the miner's, which its own optimizer trains."""
        miner = self.miner
        mined = set() if miner is None else {id(p) for p in miner.module(self).parameters()}
        for name, param in super().get_all_learnable_params():
            if id(param) not in mined:
                yield name, param

    def _scorer_optimizers(self) -> list:
        # The miner's optimizer is stepped by the miner's own update, not the scorer's step.
        return [
            getattr(self, name + "_") for name in self._optimizers if name != "optimizer_miner"
        ]

    def _zero_grad_optimizer(self, set_to_none=None):
        for optimizer in self._scorer_optimizers():
            if set_to_none is None:
                optimizer.zero_grad()
            else:
                optimizer.zero_grad(set_to_none=set_to_none)

    def _step_optimizer(self, step_fn):
        for optimizer in self._scorer_optimizers():
            if step_fn is None:
                optimizer.step()
            else:
                optimizer.step(step_fn)

    def epoch_rng(self, training: bool) -> np.random.Generator:
        """The numpy Generator of the current training epoch, or of validation."""
        if training:
            return self.seeds.numpy("train", len(self.history))
        return self.seeds.numpy("valid")

    def batch_options(self, training: bool) -> dict:
        """Keyword arguments of the dataset's ``batches`` for the current epoch."""
        return {}

    def get_iterator(self, dataset, training: bool = False) -> BatchIterator:
        """Batches drawn by ``dataset`` from the epoch's random stream."""
        return BatchIterator(
            dataset, self.batch_size, self, training, prefetch=self.prefetch and training
        )

    def infer(self, x, **fit_params):
        """Scores of a batch: the module called with the batch's inputs."""
        return self.module_(**x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The NCE objective (the criterion) of the scores and the batch's targets."""
        return self.criterion_(y_pred, y_true)

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """skorch's epoch, with each batch weighted by its number of examples.

        On the CPU each batch's loss enters the history when the batch ends, as in
        skorch. On an accelerator reading a loss back waits for the device's queue,
        so the losses of a pass are read back together when it ends (or is
        interrupted): the device is not stalled at every step.
        """
        if iterator is None:
            return
        if training and self.step_.pipelines(self):
            self._pipelined_epoch(iterator, prefix, step_fn, **fit_params)
            return
        batch_count = 0
        pending: list[tuple[dict, torch.Tensor]] = []
        try:
            for batch in iterator:
                self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                record = self.history[-1]["batches"][-1]
                loss = step["loss"].detach()
                if host_reads_are_free(loss.device):
                    record[prefix + "_loss"] = loss.item()
                else:
                    pending.append((record, loss))
                record[prefix + "_batch_size"] = batch.size
                self.notify("on_batch_end", batch=batch, training=training, **step)
                batch_count += 1
        finally:
            if pending:
                values = torch.stack([loss for _, loss in pending]).tolist()
                for (record, _), value in zip(pending, values):
                    record[prefix + "_loss"] = value
        self.history.record(prefix + "_batch_count", batch_count)

    def _pipelined_epoch(self, iterator, prefix, step_fn, **fit_params) -> None:
        """A training pass whose batch ``b + 1`` is prepared while ``b``'s update runs.

        For a step that :meth:`~sknce._steps.TrainStep.pipelines`: the step of batch
        ``b + 1`` (e.g. a miner's work in the calling thread) runs while kernel
        threads still train on batch ``b``, then waits for ``b``. So ``b`` ends, with
        its loss recorded in its own history row and ``on_batch_end`` called, after
        ``b + 1`` has begun; every batch still begins and ends once, in order, and
        the learning rate of each batch is set when it begins.
        """
        batch_count = 0
        previous = None
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=True)
            step = step_fn(batch, **fit_params)
            if previous is not None:
                self._end_pipelined_batch(*previous, prefix, row=-2)
            previous = (batch, step)
            batch_count += 1
        if previous is not None:
            self._end_pipelined_batch(*previous, prefix, row=-1)
        self.history.record(prefix + "_batch_count", batch_count)

    def _end_pipelined_batch(self, batch, step, prefix: str, row: int) -> None:
        step = {**step, "loss": step["loss"].result()}
        record = self.history[-1]["batches"][row]
        record[prefix + "_loss"] = step["loss"].item()
        record[prefix + "_batch_size"] = batch.size
        self.notify("on_batch_end", batch=batch, training=True, **step)

    def mean_loss(self, dataset, rng: np.random.Generator) -> float:
        """The objective on ``dataset`` (mean over its examples), without training.

        Parameters
        ----------
        dataset : SampledDataset
        rng : numpy.random.Generator
            Source of the pairs and negatives.

        Returns
        -------
        float
        """
        self._set_training(False)
        total, count = 0.0, 0
        with torch.no_grad():
            for batch in dataset.batches(self.batch_size, rng, shuffle=False):
                inputs, targets = batch
                # Summed on the device: one read-back for the whole dataset.
                total = total + self.get_loss(self.infer(inputs), targets).double() * batch.size
                count += batch.size
        return float(total) / max(count, 1)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        """skorch's loop; an interrupted epoch is closed before skorch ends the fit.

        skorch catches the ``KeyboardInterrupt`` (a user's, or early stopping's) and
        keeps the network trained so far. An epoch interrupted after one or more
        training batches keeps its row of the history, with the mean loss of those
        batches as ``train_loss`` and ``interrupted=True``; one interrupted before
        its first training batch ended is dropped. So every row of the history
        holds a ``train_loss`` and counts the epochs that changed the weights.
        """
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        except KeyboardInterrupt:
            self._close_interrupted_epoch()
            raise

    def _close_interrupted_epoch(self) -> None:
        if not len(self.history) or "train_loss" in self.history[-1]:
            return
        row = self.history[-1]
        done = [b for b in row.get("batches", []) if "train_loss" in b]
        if not done:
            self.history.pop()
            return
        sizes = [b.get("train_batch_size", 1) for b in done]
        row["train_loss"] = float(np.average([b["train_loss"] for b in done], weights=sizes))
        row["interrupted"] = True

    def snapshot(self) -> Callable[[], None]:
        """Copy the trainable state and the settings; the returned function puts them back.

        Modules and optimizers are restored in place, which keeps arrays that view
        the parameters (word vectors) valid; the history and every attribute of the
        net (``lr``, ``max_epochs``, ``verbose``, what a fit cached), of sknce's callbacks
        and of its miner are put back as they were.
        """
        modules = {
            name: copy.deepcopy(getattr(self, name + "_").state_dict())
            for name in self._modules + self._criteria
        }
        optimizers = {
            name: copy.deepcopy(getattr(self, name + "_").state_dict())
            for name in self._optimizers
        }
        history = copy.deepcopy(self.history)
        attributes = dict(vars(self))
        # a continued fit sets attributes of sknce's callbacks (patience, the chance loss)
        # and of the miner (its settings); the user's callbacks keep what they saw
        parts = [c for _, c in self.callbacks_ if type(c).__module__.startswith("sknce.")]
        parts += [] if self.miner is None else [self.miner]
        settings = [(part, dict(vars(part))) for part in parts]

        def restore() -> None:
            for name, state in modules.items():
                getattr(self, name + "_").load_state_dict(state)
            for name, state in optimizers.items():
                getattr(self, name + "_").load_state_dict(state)
            for name in set(vars(self)) - set(attributes):
                delattr(self, name)
            vars(self).update(attributes)
            self.history = history
            for part, state in settings:
                vars(part).clear()
                vars(part).update(state)

        return restore
