"""The skorch callbacks sknce adds to every fit, before the user's own.

* :class:`ChanceAwareEarlyStopping`: early stopping on the validation NCE loss
  that waits until the loss beats a constant guess;
* :class:`DivergenceGuard`: stops a diverging fit with an error that names the fix,
  instead of finishing with NaN weights;
* :class:`LinearDecay`: word2vec's linear learning-rate decay, batch by batch;
* :class:`RecordChance`: the loss of a constant guess beside each epoch's losses;
* :class:`EpochTable`: the verbose epoch table (colour on a terminal only).
"""

from __future__ import annotations

import copy
import math
import sys

import numpy as np
import torch
from skorch.callbacks import Callback, EarlyStopping, PrintLog
from skorch.utils import Ansi

from sknce._engine import host_reads_are_free
from sknce.exceptions import TrainingDivergedError

__all__ = [
    "ChanceAwareEarlyStopping",
    "DivergenceGuard",
    "EpochTable",
    "LinearDecay",
    "RecordChance",
    "beats_chance",
]

#: A training batch's loss this many times the loss at the start of the fit (at least 1)
#: is taken as divergence: an exploding but still finite loss, e.g. word vectors of 1e10
#: after a far too large learning rate.
_EXPLOSION = 1e3

#: A parameter whose magnitude grew this many times (from at least 1) is taken as
#: divergence: weights behind a normalised output (unit vectors) can run away while
#: the loss stays put.
_RUNAWAY = 1e4


def beats_chance(loss: float, chance: float) -> bool:
    """Whether ``loss`` is 1% below ``chance``, the loss of a constant guess.

    Epochs on the plateau at chance wander a few tenths of a percent around it.
    """
    return loss < chance * 0.99


class ChanceAwareEarlyStopping(EarlyStopping):
    """Early stopping that starts counting once the monitored loss beats chance.

    A contrastive loss can sit at the loss of a constant guess for many epochs
    before the network finds the interaction between the two sides of a pair
    (10-30 epochs for documents split into a single word and the rest). Until
    the monitored loss falls 1% below ``chance``, epochs are neither counted as
    misses nor kept as best.

    Parameters
    ----------
    monitor : str, default="valid_loss"
    patience : int, default=5
    load_best : bool, default=False
        Restore the weights of the best epoch at the end of training.
    chance : float or None, default=None
        Loss of the best constant prediction; ``None`` makes this plain
        :class:`skorch.callbacks.EarlyStopping`.
    threshold : float, default=1e-4
        An epoch improves on the best loss only if it lowers it by more than this
        fraction of it (skorch's relative threshold): a plateau's drift of a few
        hundredths of a percent is not progress.
    evaluate_initial : bool, default=False
        Evaluate the validation loss of the weights a fit starts from (epoch 0) before
        the first epoch, and count them as the best so far: if no epoch improves on
        them, they are restored (with ``load_best``). For a network initialised at a
        good solution, e.g. a spectral initialisation. Needs ``monitor="valid_loss"``.
    lower_is_better : bool, default=True
        Whether the monitored value is a loss (else a score, e.g. a precision).
    patient_start : bool, default=False
        With ``evaluate_initial``: until an epoch improves on the starting weights,
        an epoch that improves on the previous one (by the threshold) is not counted
        as a miss, so that a fit whose held-out loss first rises above a good start
        (e.g. the label frequencies, with few examples per class) and then falls
        steadily below it is not stopped before; a fit whose loss stops falling is
        stopped after ``patience`` such epochs and returns to the start.

    Attributes
    ----------
    initial_loss_ : float or None
        The validation loss of the starting weights (``evaluate_initial=True``).
    """

    def __init__(
        self,
        monitor: str = "valid_loss",
        patience: int = 5,
        load_best: bool = False,
        chance: float | None = None,
        threshold: float = 1e-4,
        evaluate_initial: bool = False,
        lower_is_better: bool = True,
        patient_start: bool = False,
    ) -> None:
        super().__init__(
            monitor=monitor,
            patience=patience,
            load_best=load_best,
            threshold=threshold,
            lower_is_better=lower_is_better,
        )
        self.chance = chance
        self.evaluate_initial = evaluate_initial
        self.patient_start = patient_start

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.beat_chance_ = self.chance is None
        self.initial_loss_ = None
        self.initial_pending_ = self.evaluate_initial
        self.start_is_best_ = False
        self.last_loss_ = None

    def on_epoch_begin(self, net, dataset_valid=None, **kwargs) -> None:
        if not self.initial_pending_:
            return
        self.initial_pending_ = False
        if dataset_valid is None:
            return
        loss = self._initial_loss(net, dataset_valid)
        self.initial_loss_ = loss
        if not self.beat_chance_:
            if not beats_chance(loss, self.chance):
                return
            self.beat_chance_ = True
        self.dynamic_threshold_ = self._calc_new_threshold(loss)
        self.best_epoch_ = len(net.history) - 1  # the epoch before this fit's first
        self.start_is_best_ = True
        if self.load_best:
            self.best_model_weights_ = copy.deepcopy(net.module_.state_dict())

    def _initial_loss(self, net, dataset_valid) -> float:
        """The monitored loss of the starting weights on ``dataset_valid``."""
        # The same pairs as every epoch's validation: the validation stream, no shuffling.
        return net.mean_loss(dataset_valid, net.epoch_rng(False))

    def on_epoch_end(self, net, **kwargs) -> None:
        if self.monitor not in net.history[-1]:
            return  # an epoch without validation (partial_fit)
        try:
            if not self.beat_chance_:
                if not beats_chance(net.history[-1, self.monitor], self.chance):
                    return
                self.beat_chance_ = True
            loss, last = net.history[-1, self.monitor], self.last_loss_
            self.last_loss_ = loss
            improved = self._is_score_improved(loss)
            if self.patient_start and self.start_is_best_ and not improved:
                falling = last is not None and (
                    loss < last - self.threshold * abs(last)
                    if self.lower_is_better
                    else loss > last + self.threshold * abs(last)
                )
                if falling:
                    return  # not a miss: on its way back to the start it began from
            self.start_is_best_ = self.start_is_best_ and not improved
            super().on_epoch_end(net, **kwargs)
        finally:
            # The history's (and the verbose table's) "best" is the epoch this callback
            # keeps and restores, not skorch's plain minimum: an epoch at chance, or one
            # lower by less than the threshold, is not best.
            epoch = net.history[-1, "epoch"]
            net.history.record(f"{self.monitor}_best", self.best_epoch_ == epoch)


def _running_rate(net) -> str:
    """The learning rate the net's optimizer runs at (the net's ``lr`` without one)."""
    groups = getattr(getattr(net, "optimizer_", None), "param_groups", None)
    rate = groups[0].get("lr") if groups else getattr(net, "lr", None)
    if torch.is_tensor(rate):
        rate = rate.item()
    return f"{rate:.4g}" if isinstance(rate, (int, float)) else repr(rate)


class DivergenceGuard(Callback):
    """Raise :class:`~sknce.exceptions.TrainingDivergedError` when a fit diverges.

    A fit has diverged when

    * a batch's loss is not finite;
    * a training batch's loss exceeds 1000 times the loss at the start of the fit
      (that of its first training batch, computed before any update), the
      objective's ``chance`` loss, or 1, whichever is largest: checked for every
      batch, so a fit that explodes in its first epoch, or whose loss explodes and
      then falls, is stopped too. On the CPU each batch is checked when it ends; on
      an accelerator the losses are read back every ``check_period`` batches and
      at the end of each epoch, so that no step waits for the device;
    * at the end of an epoch or of the fit (an interrupted one included), a
      parameter is not finite, or its largest magnitude exceeds 10,000 times its
      largest magnitude at the start of the fit, or 10,000 for a parameter that
      started below 1 (an output kept finite by a normalisation, while the
      weights behind it run away).

    The error names the fix (``hint``).

    Parameters
    ----------
    hint : str
        What the user can change, e.g. "Lower lr (this call ran at {lr})."; ``{lr}``
        becomes the learning rate the call was running at when it diverged (its
        optimizer's, after a schedule or a ``set_params`` before ``partial_fit``).
    chance : float or None, default=None
        Loss of the best constant prediction, when the objective has one.
    check_period : int, default=64
        On an accelerator, batches whose losses are read back and checked together.
    """

    def __init__(self, hint: str, chance: float | None = None, check_period: int = 64) -> None:
        self.hint = hint
        self.chance = chance
        self.check_period = check_period

    def on_train_begin(self, net, **kwargs) -> None:
        self.start_loss_ = None
        self.pending_: list[tuple[torch.Tensor, bool]] = []
        self.start_scale_ = {name: _magnitude(p) for name, p in net.get_all_learnable_params()}

    def _diverged(self, net, what: str):
        epoch = len(net.history)
        hint = self.hint.replace("{lr}", _running_rate(net))
        raise TrainingDivergedError(
            f"training diverged in epoch {epoch}: {what}. {hint} "
            "The estimator keeps the state it had before this fit."
        )

    def on_batch_end(self, net, batch=None, training=False, loss=None, **kwargs) -> None:
        if torch.is_tensor(loss) and not host_reads_are_free(loss.device):
            self.pending_.append((loss.detach(), training))
            if len(self.pending_) >= self.check_period:
                self._check_pending(net)
            return
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss or 0.0)
        self._check_loss(net, value, training)

    def _check_pending(self, net) -> None:
        if not self.pending_:
            return
        losses, flags = zip(*self.pending_)
        self.pending_ = []
        for value, training in zip(torch.stack(losses).tolist(), flags):
            self._check_loss(net, value, training)

    def _check_loss(self, net, value: float, training: bool) -> None:
        if not math.isfinite(value):
            self._diverged(net, f"the {'training' if training else 'validation'} loss is {value}")
        if not training:
            return
        if self.start_loss_ is None:
            self.start_loss_ = value
        reference = max(abs(self.start_loss_), self.chance or 0.0, 1.0)
        if value > _EXPLOSION * reference:
            self._diverged(
                net,
                f"a training batch's loss reached {value:.4g}, against {self.start_loss_:.4g} "
                "at the start of the fit",
            )

    def on_epoch_end(self, net, **kwargs) -> None:
        self._check_pending(net)
        self._check_parameters(net)

    def on_train_end(self, net, **kwargs) -> None:
        # After an interrupt (KeyboardInterrupt), the losses and weights of the last steps.
        self._check_pending(net)
        self._check_parameters(net)

    def _check_parameters(self, net) -> None:
        for name, param in net.get_all_learnable_params():
            size = _magnitude(param)
            if not math.isfinite(size):
                self._diverged(net, f"the parameter {name!r} has non-finite values")
            start = self.start_scale_.get(name, 0.0)
            if size > _RUNAWAY * max(start, 1.0):
                self._diverged(
                    net,
                    f"the parameter {name!r} grew to magnitude {size:.4g} (from {start:.4g} "
                    "at the start of the fit)",
                )


class RecordChance(Callback):
    r"""Record the loss of the best constant guess, ``chance_loss``, in every epoch's row.

    A contrastive loss (and a ``score``, minus that loss) is read against it: e.g.
    :math:`\ln 2 \approx 0.6931` for pairs with one negative per positive.

    Parameters
    ----------
    chance : float
        The loss of the best constant prediction.
    """

    def __init__(self, chance: float) -> None:
        self.chance = chance

    def on_epoch_end(self, net, **kwargs) -> None:
        net.history.record("chance_loss", self.chance)


class EpochTable(PrintLog):
    """skorch's epoch table, with ANSI colours only when it prints to a terminal.

    Redirected to a file or a pipe, the best epoch's value gets a ``*`` instead of a
    colour code (skorch writes the codes whatever the output).
    """

    def on_epoch_end(self, net, **kwargs) -> None:
        # skorch formats the table at every epoch, and prints it only when verbose (or
        # into another sink): a silent fit skips the formatting (a few ms an epoch)
        if self.sink is print and not net.verbose:
            return
        super().on_epoch_end(net, **kwargs)

    def format_row(self, row, key, color):
        if sys.stdout.isatty():
            return super().format_row(row, key, color)
        text = super().format_row(row, key, color="")
        return text.replace(Ansi.ENDC.value, "") + ("*" if row.get(f"{key}_best") else "")


def _magnitude(param: torch.Tensor) -> float:
    """Largest absolute value of a parameter (NaN if it holds a NaN; 0 if empty)."""
    if not param.numel():
        return 0.0
    param = param.detach()
    # two reductions, no temporary copy of |param| (fastText-sized tables hold ~1 GB)
    return float(torch.maximum(param.max(), -param.min()))


class LinearDecay(Callback):
    """Decay the learning rate linearly over the fit, batch by batch (word2vec's schedule).

    The rate of a batch is ``net.lr * (1 - (1 - end_ratio) * progress)``, with
    ``progress`` the examples trained on so far (read from the history, so a fit
    resumed from a checkpoint continues the schedule) over the examples expected
    by the end of the fit.

    Parameters
    ----------
    end_ratio : float
        Final learning rate as a fraction of ``start``.
    per_epoch : float
        Expected examples per epoch, until the first epoch has given the exact count.
    total_epochs : int or None, default=None
        Epochs the schedule spans from the net's first epoch, whatever the call
        (``partial_fit`` passes); ``None``: the epochs already trained plus the
        ``max_epochs`` of the current call (a fit, or a warm start continuing one).
    skipped_epochs : int, default=0
        Epochs of the schedule done before the net's first, by another net whose
        weights this one starts from (a refit started from a held-out fit's epoch):
        the schedule begins that far in, and ``total_epochs`` counts them.
    """

    def __init__(
        self,
        end_ratio: float,
        per_epoch: float,
        total_epochs: int | None = None,
        skipped_epochs: int = 0,
    ):
        self.end_ratio = end_ratio
        self.per_epoch = per_epoch
        self.total_epochs = total_epochs
        self.skipped_epochs = skipped_epochs

    def on_train_begin(self, net, **kwargs) -> None:
        self.done_ = None  # read from the history when the call's first epoch begins

    def on_epoch_begin(self, net, **kwargs) -> None:
        if self.done_ is not None:
            return
        # Not at on_train_begin: LoadInitState loads a checkpoint's history there, after
        # this callback's turn. The history holds the epoch that begins, still empty.
        history = list(net.history)[:-1]
        self.per_epoch_ = float(_examples(history[0])) if history else float(self.per_epoch)
        self.done_ = self._done(history)
        planned = self.skipped_epochs + len(history) + net.max_epochs
        self.total_epochs_ = self.total_epochs or planned

    def on_batch_begin(self, net, batch=None, training=False, **kwargs) -> None:
        if not training:
            return
        progress = min(self.done_ / (self.per_epoch_ * self.total_epochs_), 1.0)
        lr = net.lr * (1.0 - (1.0 - self.end_ratio) * progress)
        for group in net.optimizer_.param_groups:
            group["lr"] = lr
        # Counted when the batch begins, not when it ends: a net that starts a batch
        # before the previous one has ended (ACEWord2Vec's pipelined kernel) gets the
        # same rates. In data-parallel training the other processes advance alike.
        self.done_ += batch.size * getattr(net, "n_processes", 1)

    def on_epoch_end(self, net, **kwargs) -> None:
        if len(net.history) == 1:
            self.per_epoch_ = max(float(_examples(net.history[-1])), 1.0)
        self.done_ = self._done(net.history)

    def _done(self, history) -> float:
        """Examples of the schedule done: the skipped epochs', then the history's (which
        counts the examples of every process: merged records)."""
        return self.skipped_epochs * self.per_epoch_ + float(
            sum(_examples(row) for row in history)
        )


def _examples(row: dict) -> int:
    """Training examples of one epoch of a skorch history."""
    return int(np.sum([b.get("train_batch_size", 0) for b in row.get("batches", [])]))
