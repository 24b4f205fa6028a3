"""The skorch plumbing shared by every sknce estimator.

An sknce estimator is a plain scikit-learn estimator: ``__init__`` stores
parameters, ``fit`` builds a torch module and trains it inside a skorch
:class:`NCENet` stored as ``net_``. The module's ``forward`` receives a batch
built by a :class:`~sknce._data.BatchDataset` (positives and freshly drawn
negatives) and returns the NCE loss itself, so one training loop serves every
sampler/scorer/objective combination.

What this module guarantees to every estimator:

* the common training parameters of the design contract and their validation;
* a fit that is reproducible on the CPU: every random draw made while fitting
  (weights, shuffling, negatives) comes from torch's generator seeded from
  ``random_state`` inside :func:`torch.random.fork_rng`, so the caller's global
  random state is left untouched;
* validation negatives that are the same at every epoch, so the validation NCE
  loss that early stopping watches is not noisy;
* early stopping that restores the best weights and, for objectives with a known
  loss of chance, waits until the validation loss beats it (see
  :class:`ChanceAwareEarlyStopping`), a progress bar and per-epoch table with
  ``verbose=1``, ``history_``;
* pickling of the fitted estimator, including onto a CPU-only machine after
  training on CUDA (skorch maps the tensors).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from skorch import NeuralNet
from skorch.callbacks import EarlyStopping, ProgressBar
from skorch.dataset import ValidSplit

from sknce._compat import HasMethods, Interval, StrOptions
from sknce._data import passthrough_collate

__all__ = ["BaseNCE", "ChanceAwareEarlyStopping", "NCENet", "resolve_device", "seeded"]

_SEED_HIGH = np.iinfo(np.int32).max


def _beats_chance(loss: float, chance: float) -> bool:
    """Whether ``loss`` is 1% below ``chance``, the loss of a constant guess.

    Epochs on the plateau at chance wander a few tenths of a percent around it.
    """
    return loss < chance * 0.99


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


@contextlib.contextmanager
def seeded(seed: int, device: str = "cpu") -> Iterator[None]:
    """Run a block with torch's global generators seeded, restoring them afterwards."""
    devices = [torch.device(device).index or 0] if str(device).startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


class _LossIsOutput(torch.nn.Module):
    """Placeholder criterion: sknce modules return their NCE loss from ``forward``."""

    def forward(self, y_pred, y_true=None):  # pragma: no cover - never called
        return y_pred


class NCENet(NeuralNet):
    """A skorch ``NeuralNet`` whose module computes its own NCE loss.

    The module's ``forward(**batch)`` draws what negatives it needs and returns
    a scalar loss. Validation epochs run under a fixed seed (``valid_seed``), so
    the validation pairs and negatives are identical from epoch to epoch and the
    validation loss measures the model, not the sampling noise.

    Parameters
    ----------
    valid_seed : int, default=0
        Seed of torch's generator during validation epochs.
    **kwargs
        Passed to :class:`skorch.NeuralNet`.
    """

    def __init__(self, *args, valid_seed: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.valid_seed = valid_seed

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Return the loss the module computed (``y_pred``)."""
        return y_pred

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """Run an epoch; validation epochs draw their negatives from a fixed seed."""
        if training:
            return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
        with seeded(self.valid_seed, self.device):
            return super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)


class ChanceAwareEarlyStopping(EarlyStopping):
    """Early stopping that starts counting once the monitored loss beats chance.

    A contrastive loss can sit at the loss of a constant guess for many epochs
    before the network finds the interaction between the two sides of a pair
    (10-30 epochs for documents split into a single word and the rest). Counting
    those epochs against ``patience`` stopped such fits before they had learned
    anything, and returned an uninformative model. Until the monitored loss falls
    1% below ``chance``, epochs are neither counted as misses nor kept as best.

    Parameters
    ----------
    monitor : str, default="valid_loss"
    patience : int, default=5
    load_best : bool, default=False
        Restore the weights of the best epoch at the end of training.
    chance : float or None, default=None
        Loss of the best constant prediction; ``None`` makes this plain
        :class:`skorch.callbacks.EarlyStopping`.
    """

    def __init__(
        self,
        monitor: str = "valid_loss",
        patience: int = 5,
        load_best: bool = False,
        chance: float | None = None,
    ) -> None:
        super().__init__(monitor=monitor, patience=patience, load_best=load_best)
        self.chance = chance

    def on_train_begin(self, net, **kwargs) -> None:
        super().on_train_begin(net, **kwargs)
        self.beat_chance_ = self.chance is None

    def on_epoch_end(self, net, **kwargs) -> None:
        if not self.beat_chance_:
            if not _beats_chance(net.history[-1, self.monitor], self.chance):
                return
            self.beat_chance_ = True
        super().on_epoch_end(net, **kwargs)


class BaseNCE(BaseEstimator):
    """Base class of sknce's neural estimators (not public).

    Subclasses declare the common training parameters of the design contract
    in their own ``__init__`` (scikit-learn needs explicit signatures), build a
    module and a :class:`~sknce._data.BatchDataset` in ``fit``, and call
    :meth:`_fit_module`.
    """

    _parameter_constraints: dict = {
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "optimizer": [HasMethods(["step", "zero_grad"]), type],
        "device": [StrOptions({"cpu", "cuda", "auto"}), str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "patience": [Interval(Integral, 1, None, closed="left")],
    }

    def _check_hidden(self) -> tuple[int, ...]:
        """``hidden_layer_sizes`` as a tuple, or a ValueError naming the expected form."""
        sizes = tuple(self.hidden_layer_sizes)
        if not all(isinstance(s, Integral) and s >= 1 for s in sizes):
            raise ValueError(
                f"hidden_layer_sizes must be a tuple of positive ints, got {sizes!r}."
            )
        return sizes

    def _chance_loss(self) -> float | None:
        """Validation loss of the best constant prediction, when the objective has one."""
        return None

    def _check_sparse_optimizer(self) -> None:
        """ValueError when ``sparse_embeddings=True`` meets an optimizer of dense gradients."""
        dense_only = (torch.optim.Adam, torch.optim.AdamW)
        if (
            self.sparse_embeddings
            and isinstance(self.optimizer, type)
            and issubclass(self.optimizer, dense_only)
        ):
            raise ValueError(
                f"sparse_embeddings=True needs an optimizer that accepts sparse "
                f"gradients; {self.optimizer.__name__} does not. Use "
                "optimizer=sknce.nn.LazyAdam (Adam on the rows present), "
                "torch.optim.SGD or torch.optim.Adagrad."
            )

    def _fit_seed(self) -> int:
        """Draw this fit's torch seed from ``random_state``."""
        return int(check_random_state(self.random_state).randint(_SEED_HIGH))

    def _make_net(self, module: torch.nn.Module, seed: int, device: str, **net_kwargs) -> NCENet:
        """Build the skorch net with sknce's callbacks, split and optimiser."""
        callbacks = []
        train_split = None
        if self.early_stopping:
            train_split = ValidSplit(self.validation_fraction, random_state=seed)
            callbacks.append(
                ChanceAwareEarlyStopping(
                    patience=self.patience, load_best=True, chance=self._chance_loss()
                )
            )
        if self.verbose:
            callbacks.append(ProgressBar())
        params = {
            "module": module,
            "criterion": _LossIsOutput,
            "optimizer": self.optimizer,
            "lr": self.lr,
            "max_epochs": self.max_epochs,
            "batch_size": self.batch_size,
            "device": device,
            "train_split": train_split,
            "callbacks": callbacks,
            "verbose": int(bool(self.verbose)),
            "iterator_train__shuffle": True,
            "iterator_train__collate_fn": passthrough_collate,
            "iterator_valid__collate_fn": passthrough_collate,
            "valid_seed": seed + 1,
        }
        params.update(net_kwargs)
        return NCENet(**params)

    def _fit_module(
        self, module: torch.nn.Module, dataset, seed: int, device: str, **net_kwargs
    ) -> NCENet:
        """Train ``module`` on ``dataset``; set ``net_`` and ``history_``.

        Call this inside :func:`seeded` (``with seeded(seed, device): ...``) together
        with the module's construction, so that initial weights are reproducible too.
        """
        if self.early_stopping and len(dataset) * self.validation_fraction < 1:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} of {len(dataset)} "
                "training examples leaves no validation example for early stopping. "
                "Provide more data, raise validation_fraction, or set early_stopping=False."
            )
        net = self._make_net(module, seed, device, **net_kwargs)
        net.fit(dataset, y=None)
        net.module_.eval()
        self.net_ = net
        self.history_ = [
            {k: row[k] for k in ("epoch", "train_loss", "valid_loss", "dur") if k in row}
            for row in net.history
        ]
        self.n_iter_ = len(self.history_)
        self._warn_if_at_chance()
        return net

    def _warn_if_at_chance(self) -> None:
        """ConvergenceWarning when no validation loss of the fit beat chance."""
        chance = self._chance_loss()
        losses = [row["valid_loss"] for row in self.history_ if "valid_loss" in row]
        if chance is None or not losses or _beats_chance(min(losses), chance):
            return
        warnings.warn(
            f"The validation loss never fell 1% below the loss of a constant guess "
            f"({chance:.4f}) in {self.n_iter_} epoch(s): the fitted model has not learned "
            "to tell positive pairs from negative ones and its output is uninformative. "
            "Raise max_epochs, provide more data, or check that the pairs share structure.",
            ConvergenceWarning,
            stacklevel=5,  # the caller of ``fit``
        )

    def _seed_and_device(self) -> tuple[int, str]:
        """The seed and resolved device of this fit."""
        return self._fit_seed(), resolve_device(self.device)

    def _batches(self, n_samples: int, batch_size: int | None = None) -> Iterator[slice]:
        """Slices covering ``range(n_samples)`` in inference batches."""
        step = batch_size or max(self.batch_size, 1024)
        for start in range(0, n_samples, step):
            yield slice(start, min(start + step, n_samples))
