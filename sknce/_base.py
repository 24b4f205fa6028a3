"""BaseNCE: the base of sknce's neural estimators.

It declares the training parameters every estimator shares (once, with their
constraints, as scikit-learn's ``BaseMultilayerPerceptron`` does: subclasses
list them in their signature and pass them on) and writes the fit once:
``fit``, ``partial_fit``, ``_fit(X, y, partial)`` and the stream fit
``_fit_stream`` decide once whether the fit continues, draw the seeds and
resolve the device (a frozen :class:`FitPlan` that the steps read), resolve the
schedule (one rule, :meth:`BaseNCE._schedule`, with per-class constants) and
train through the engine (:mod:`sknce._engine`, via :meth:`BaseNCE._train`).
An estimator fills named hooks: it validates its data, sets what a new fit
learns from it, makes the sampler's dataset, the scorer (a pure function), the
objective, and optionally a step strategy and a miner (:mod:`sknce._steps`).
The user guide's "The NCE core" page lists the hooks.

What it guarantees to every estimator:

* ``callbacks``, ``optimizer_kwargs``, ``warm_start`` and (through
  :meth:`BaseNCE._make_encoder`) ``encoder`` mean the same everywhere;
* reproducible fits from ``random_state`` with no global random state: every
  draw, module initialisation included, comes from the fit's own generators
  (see :mod:`sknce._random`);
* input validated through :func:`sknce._compat.validate_data` (finite, within
  what float32 arithmetic carries) and outputs checked for finiteness
  (:meth:`BaseNCE._finite_output`), so bad input is an error, never NaN output;
* a failed fit (an exception, a diverging loss) leaves the estimator exactly as it
  was before the call: unfitted, or every attribute and the previous network
  (weights, optimizer state, history, settings) as they were; an interrupted fit
  (``KeyboardInterrupt`` while training) keeps the network trained so far, as
  skorch does, with an interrupted epoch kept in ``history_`` and counted in
  ``n_iter_`` (:meth:`sknce._engine.NCENet.fit_loop`), provided its weights are
  finite;
* a continued fit (``warm_start``, ``partial_fit``) checks what a fit checks, then
  applies or refuses each changed parameter as the estimator declares it
  (``_param_roles``, :meth:`BaseNCE._continued_roles`), never ignoring one;
* a fitted estimator exports the methods it lists in ``_exported_methods`` through
  the one hook :meth:`BaseNCE._inference_module` (:mod:`sknce.export`);
* a diverging fit raises :class:`~sknce.exceptions.TrainingDivergedError`
  naming the fix, instead of returning NaN outputs
  (:class:`~sknce._callbacks.DivergenceGuard`);
* ``accelerator`` (a Hugging Face ``accelerate.Accelerator``) trains data-parallel
  over the processes of a launch, with its device and mixed precision
  (:mod:`sknce._distributed`);
* ``n_jobs`` sets the threads of a fit and of inference, across torch, BLAS and
  the compiled kernels, resolved once per call (:mod:`sknce._threads`); the
  caller's thread settings are put back afterwards, also when the call raises.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from skorch.callbacks import Callback, EarlyStopping, ProgressBar

from sknce._callback_params import callback_params, set_callback_params
from sknce._callbacks import (
    ChanceAwareEarlyStopping,
    DivergenceGuard,
    EpochTable,
    RecordChance,
    beats_chance,
)
from sknce._checkpoints import checkpoint_guards
from sknce._checks import (
    APPLIED,
    FIXED,
    Fixed,
    apply_common_params,
    built_params,
    check_accelerator,
    check_continued_params,
    check_optimizer_step,
    undeclared_params,
)
from sknce._compat import HasMethods, Interval, StrOptions, _fit_context
from sknce._data import ChunkedDataset, is_chunk_stream, scan_chunks
from sknce._engine import HoldOut, NCENet, resolve_device
from sknce._random import Seeds, seeded_init
from sknce._steps import AutogradStep, Miner, TrainStep
from sknce._threads import ThreadPlan, inference_work, thread_scope
from sknce._untraced import built_class
from sknce._validation import check_sortable_labels
from sknce._warnings import warn_caller
from sknce._weights import WeightedSampler, check_weighted_examples, row_weights, unit_mean
from sknce.nn import DenseInput, output_dim
from sknce.nn._mlp import build_encoder

__all__ = [
    "APPLIED",
    "ENCODER_CONSTRAINT",
    "FIXED",
    "Fixed",
    "BaseNCE",
    "FitPlan",
    "auto_batch_size",
    "auto_epochs",
    "check_sortable_labels",
    "common_params",
]

#: Rows of an inference batch, at least (more when the network trained on larger ones).
INFERENCE_ROWS = 1024

#: The methods that run a fitted network; each runs under the estimator's threads
#: (:meth:`BaseNCE._inference_threads`).
_INFERENCE_METHODS = (
    "transform",
    "predict",
    "predict_proba",
    "predict_log_proba",
    "predict_topk",
    "predict_interval",
    "decision_function",
    "score",
    "score_samples",
)


@dataclass(frozen=True)
class FitPlan:
    """What the fit skeleton decides once per ``fit``/``partial_fit`` call.

    The skeleton decides it after validating the data and hands it down; the steps
    read it and decide none of it again.

    Attributes
    ----------
    partial : bool
        A ``partial_fit`` call: one pass over the data, no validation split.
    continues : bool
        The call continues the fitted network (``partial_fit``, or ``fit`` with
        ``warm_start=True``, on a fitted estimator).
    seeds : Seeds or None
        The random streams of a new network; ``None`` when the call continues (the
        network keeps its own).
    device : str
        Where the network trains: the fitted network's when the call continues,
        else the accelerator's, or ``device`` resolved.
    """

    partial: bool
    continues: bool
    seeds: Seeds | None
    device: str


class BaseNCE(BaseEstimator):
    """Base class of sknce's neural estimators (not public).

    Parameters
    ----------
    max_epochs, batch_size, lr, optimizer, optimizer_kwargs, callbacks, warm_start,
    device, random_state, verbose, early_stopping, validation_fraction, patience,
    accelerator, n_jobs
        The common training parameters; see any estimator's docstring.
    """

    _parameter_constraints: dict = {
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "optimizer": [type],
        "optimizer_kwargs": [dict, None],
        "callbacks": [list, tuple, None],
        "warm_start": ["boolean"],
        "device": [StrOptions({"cpu", "cuda", "auto"}), str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "patience": [Interval(Integral, 1, None, closed="left")],
        "accelerator": [None, HasMethods(["prepare", "unwrap_model"])],
        "n_jobs": [Integral, None],
    }

    #: What a continued fit (``fit`` with ``warm_start=True``, a later ``partial_fit``)
    #: does with a changed value of each constructor parameter, ``{name: role}``.
    #:
    #: * :data:`~sknce._checks.APPLIED`: the continued fit honours the new value, because
    #:   every fit (or every call of the method that uses it) reads it from ``self``, or
    #:   :meth:`_update_net` sets it on the fitted network;
    #: * ``Fixed("why")`` (:class:`~sknce._checks.Fixed`): the network or the fitted state
    #:   was built with it, so a change is refused before any work with a ``ValueError``
    #:   naming the parameter, its old and new values, ``why`` (completing "it ..."), and
    #:   the fix (refit from scratch, or set it back).
    #:
    #: A new estimator declares every parameter its ``__init__`` adds, merged with its
    #: base's as ``_parameter_constraints`` are::
    #:
    #:     _param_roles = {
    #:         **BaseNCE._param_roles,
    #:         "n_negatives": APPLIED,  # the sampler reads it at each fit
    #:         "n_components": Fixed("fixed the embedding's width"),
    #:     }
    #:
    #: A parameter without a role makes the class definition raise ``TypeError``
    #: (:meth:`__init_subclass__`). ``tests/test_continued_params.py`` changes each
    #: parameter of each registry entry in each of its modes before a continued fit: a
    #: ``Fixed`` one must be refused, the estimator unchanged; an ``APPLIED`` one must
    #: change the result (or a fit started with the new value must not differ either).
    #: A role that depends on the fitted regime is given by :meth:`_continued_roles`.
    _param_roles: dict = {
        "max_epochs": APPLIED,
        "batch_size": APPLIED,
        "lr": APPLIED,
        "optimizer": APPLIED,
        "optimizer_kwargs": APPLIED,
        "callbacks": APPLIED,
        "warm_start": APPLIED,
        "device": Fixed("placed the network on its device"),
        "random_state": Fixed(
            "seeded the network and the random streams a continued fit draws from"
        ),
        "verbose": APPLIED,
        "early_stopping": Fixed("fixed the validation split"),
        "validation_fraction": Fixed("fixed the validation split"),
        "patience": APPLIED,
        "accelerator": Fixed("placed the network on the processes of its launch"),
        "n_jobs": APPLIED,  # every fit and inference call sets its threads from it
    }

    #: Fewest training examples a fit needs once the validation ones are held out.
    _min_train_examples = 1

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        missing = undeclared_params(cls, cls._param_roles)
        if missing:
            raise TypeError(
                f"{cls.__name__} does not declare what a continued fit does with the "
                f"parameter(s) {missing}: add each to {cls.__name__}._param_roles as "
                "APPLIED (every fit reads it) or Fixed(why) (the network is built with it), "
                "from sknce._checks."
            )
        # As sklearn's _SetOutputMixin wraps transform: every inference method a class
        # defines runs under the estimator's threads, so no estimator repeats it.
        for name in _INFERENCE_METHODS:
            method = cls.__dict__.get(name)
            if callable(method) and not hasattr(method, "_sknce_threads"):
                setattr(cls, name, _under_inference_threads(method))

    def __init__(
        self,
        *,
        max_epochs: int,
        batch_size: int,
        lr: float,
        optimizer: type,
        optimizer_kwargs: dict | None,
        callbacks: list | None,
        warm_start: bool,
        device: str,
        random_state,
        verbose: int,
        early_stopping: bool,
        validation_fraction: float,
        patience: int,
        accelerator,
        n_jobs: int | None,
    ) -> None:
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.optimizer_kwargs = optimizer_kwargs
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.accelerator = accelerator
        self.n_jobs = n_jobs

    # --- nested parameters of the callbacks (skorch's callbacks__<name>__<param>) --------
    def get_params(self, deep: bool = True) -> dict:
        """The estimator's parameters; with ``deep``, its callbacks' as ``callbacks__<name>__*``.

        Parameters
        ----------
        deep : bool, default=True
            Also the parameters of the callbacks, named as in skorch (a
            ``(name, callback)`` pair's name, else the callback's class name).

        Returns
        -------
        dict
        """
        params = super().get_params(deep=deep)
        if deep:
            params.update(callback_params(self.callbacks))
        return params

    def set_params(self, **params) -> BaseNCE:
        """Set parameters, ``callbacks__<name>__<param>`` routed to the named callback.

        Parameters
        ----------
        **params
            Estimator parameters, ``callbacks__<name>`` (replaces that callback) and
            ``callbacks__<name>__<param>`` (a parameter of it, e.g. a scheduler's
            ``step_size`` for :class:`~sklearn.model_selection.GridSearchCV`).

        Returns
        -------
        self
        """
        nested = {key: params.pop(key) for key in list(params) if key.startswith("callbacks__")}
        super().set_params(**params)
        if nested:
            self.callbacks = set_callback_params(self.callbacks, nested)
        return self

    # --- hooks of the subclasses --------------------------------------------------------
    def _chance_loss(self) -> float | None:
        """Validation loss of the best constant prediction, when the objective has one."""
        return None

    def _divergence_hint(self) -> str:
        """What a user can change when a fit diverges."""
        return (
            "Lower lr (this call ran at {lr}); if the inputs have a very large range, scale them "
            "(e.g. with sklearn.preprocessing.StandardScaler)."
        )

    def _sparse_gradients(self) -> bool:
        """Whether the user asked for sparse gradients (``sparse_embeddings=True``).

        An ``"auto"`` setting resolves to a combination that trains: nothing to check.
        """
        value = getattr(self, "sparse_embeddings", False)
        return not isinstance(value, str) and bool(value)

    def _optimizer_class(self) -> type:
        """The optimizer class of a new network: ``optimizer``."""
        return self.optimizer

    def _optimizer_options(self) -> dict:
        """The options of the network's optimizer: ``optimizer_kwargs``."""
        return dict(self.optimizer_kwargs or {})

    def _progress_bar(self) -> ProgressBar:
        return ProgressBar()

    def _fit_lr(self) -> float:
        """The learning rate of a fit: ``lr`` (a subclass resolves an ``"auto"`` setting)."""
        return self.lr

    def _make_step(self) -> TrainStep:
        """The step strategy of a new network: :class:`~sknce._steps.AutogradStep`.

        A family with a compiled step returns its :class:`~sknce._steps.KernelStep`;
        the net falls back to the autograd step where the kernel does not apply.
        """
        return AutogradStep()

    def _make_miner(self) -> Miner | None:
        """The miner of a new network (model-dependent negatives): none."""
        return None

    def _continued_roles(self) -> dict:
        """The role of each parameter in a fit that continues this fitted network.

        Returns
        -------
        dict
            ``_param_roles`` by default. Override it when the fitted regime fixes more
            than the class declares, reading the fitted state (the classifier after a
            fit in fastText's regime fixes ``optimizer``: its compiled step trains by
            plain SGD only; ACE fixes ``min_lr_ratio`` when the fit planned no decay);
            return ``{**super()._continued_roles(), name: Fixed("why"), ...}``.
        """
        return self._param_roles

    def _update_net(self, net) -> None:
        """A continued fit: bring the network up to date with the applied parameters.

        Called after the common training settings are applied
        (:func:`~sknce._checks.apply_common_params`) and after the net's snapshot,
        which a failed fit restores. By default the step strategy is made anew (its
        threads, ``n_jobs``) and sknce's callbacks read the parameters again (the
        divergence hint, the chance loss). An estimator whose network or callbacks hold
        a value derived from an :data:`~sknce._checks.APPLIED` parameter (ACE's rate
        schedule and generator) overrides it, calls ``super()._update_net(net)`` and
        sets those values from ``self``'s current parameters; without that, declare the
        parameter ``Fixed``.
        """
        net.step = self._make_step()
        callbacks = dict(net.callbacks_)
        chance = self._chance_loss()
        guard = callbacks.get("divergence")
        if guard is not None:
            guard.hint, guard.chance = self._divergence_hint(), chance
        for name in ("chance", "early_stopping"):
            if hasattr(callbacks.get(name), "chance"):
                callbacks[name].chance = chance

    # --- parameter checks ---------------------------------------------------------------
    def _check_training_params(self) -> None:
        """Errors naming the fix for an optimizer, its options or callbacks that cannot work,
        and for a count given as a bool."""
        for name, constraints in self._parameter_constraints.items():
            value = getattr(self, name, None)
            if isinstance(value, (bool, np.bool_)) and _counts_only(constraints):
                raise TypeError(
                    f"{name} must be an int, got {value!r}: scikit-learn's validation lets "
                    "a bool pass as an int, but a count given as True or False is a mistake. "
                    f"Pass a number, e.g. {name}={int(value) or 1}."
                )
        optimizer = self.optimizer
        if not (isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer)):
            raise TypeError(
                f"optimizer must be a torch optimizer class such as torch.optim.Adam, got "
                f"{optimizer!r}; pass the class itself and its options in optimizer_kwargs."
            )
        if issubclass(optimizer, torch.optim.SparseAdam):
            raise ValueError(
                "optimizer=torch.optim.SparseAdam updates sparse gradients only, and this "
                "estimator's network has dense parameters. Use sknce.optim.LazyAdam (Adam on "
                "the rows present for sparse gradients, ordinary Adam for dense ones)."
            )
        if self._sparse_gradients() and issubclass(
            optimizer, (torch.optim.Adam, torch.optim.AdamW)
        ):
            raise ValueError(
                f"sparse_embeddings=True needs an optimizer that accepts sparse gradients; "
                f"{optimizer.__name__} does not. Use optimizer=sknce.optim.LazyAdam (Adam on "
                "the rows present), torch.optim.SGD or torch.optim.Adagrad."
            )
        accelerator = self.accelerator
        check_accelerator(accelerator)
        if self._sparse_gradients() and (
            accelerator is not None and accelerator.num_processes > 1
        ):
            raise ValueError(
                "sparse_embeddings=True cannot train on several processes: "
                "DistributedDataParallel averages dense gradients only. Set "
                "sparse_embeddings=False (dense gradients, e.g. with torch.optim.Adam), or "
                "train in one process."
            )
        self._check_optimizer_kwargs(optimizer)
        if accelerator is None and resolve_device(self.device) == "cpu":
            check_optimizer_step(
                optimizer, self.optimizer_kwargs or {}, self._fit_lr(), self._sparse_gradients()
            )
        for callback in self.callbacks or ():
            named = isinstance(callback, tuple) and len(callback) == 2
            instance = callback[1] if named else callback
            if not isinstance(instance, Callback) or (named and not isinstance(callback[0], str)):
                raise TypeError(
                    "callbacks must be a list of skorch callback instances (e.g. "
                    "skorch.callbacks.EpochScoring(...)) or (name, callback) pairs; got "
                    f"{callback!r}."
                )

    def _check_optimizer_kwargs(self, optimizer: type) -> None:
        kwargs = self.optimizer_kwargs or {}
        if "lr" in kwargs:
            raise ValueError(
                "optimizer_kwargs must not contain 'lr': set the estimator's lr parameter."
            )
        parameters = inspect.signature(optimizer.__init__).parameters
        if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            return
        accepted = [name for name in parameters if name not in ("self", "params")]
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise ValueError(
                f"optimizer_kwargs has {unknown} which {optimizer.__name__} does not accept; "
                f"its options are {accepted}."
            )
        # The optimizer checks its values when built: build one on a stand-in parameter,
        # so that a bad value is named here rather than deep inside the fit.
        try:
            built_class(optimizer)(
                [torch.zeros(1, requires_grad=True)], lr=self._fit_lr(), **kwargs
            )
        except (ValueError, TypeError) as error:
            raise ValueError(
                f"optimizer_kwargs={kwargs!r} with lr={self._fit_lr()} are not valid options of "
                f"{optimizer.__name__}: {error}"
            ) from None

    def _check_hidden(self, name: str = "hidden_layer_sizes") -> tuple[int, ...]:
        """A layer-size parameter as a tuple, or a ValueError naming the expected form."""
        sizes = tuple(getattr(self, name))
        if not all(isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in sizes):
            raise ValueError(
                f"{name} must be a tuple of positive ints (e.g. (256,), or () for none), "
                f"got {sizes!r}."
            )
        return sizes

    def _make_encoder(self, n_features: int, default: Callable[[], torch.nn.Module]):
        """The user's ``encoder`` (a copy, or the class built with ``n_features``) or the default.

        Returns the module and the width of its output.
        """
        encoder = self.encoder
        if encoder is None:
            module = default()
        elif isinstance(encoder, torch.nn.Module):
            module = DenseInput(copy.deepcopy(encoder))
        elif isinstance(encoder, type) and issubclass(encoder, torch.nn.Module):
            module = DenseInput(build_encoder(encoder, n_features))
        else:
            raise TypeError(
                "encoder must be None, a torch.nn.Module instance, or a torch.nn.Module class "
                "(built with the number of input features if its constructor takes an "
                f"argument); got {encoder!r}."
            )
        return module, output_dim(module, n_features)

    # --- fitting ----------------------------------------------------------------------
    @contextlib.contextmanager
    def _fitting(self) -> Iterator[None]:
        """Run a fit that leaves the estimator as it was if the fit raises.

        Every attribute is put back (the same objects); a continued network is
        restored by :meth:`BaseNCE._train`.
        """
        before = dict(vars(self))
        try:
            yield
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise

    def _fit_threads(self) -> contextlib.AbstractContextManager:
        """The threads of a fit, from ``n_jobs``: one until the first training step is
        measured (:func:`sknce._threads.raise_threads`), the caller's put back after."""
        self._validate_params()  # scikit-learn's words for an n_jobs of another type first
        return thread_scope(ThreadPlan.from_n_jobs(self.n_jobs))

    def _inference_threads(self, X) -> contextlib.AbstractContextManager:
        """The threads of an inference call on ``X``, from ``n_jobs`` and its batches' work
        (:func:`sknce._threads.inference_work`)."""
        # getattr: estimators pickled before n_jobs was a common parameter.
        plan = ThreadPlan.from_n_jobs(getattr(self, "n_jobs", None))
        module = getattr(getattr(self, "net_", None), "module_", None)
        if module is None:  # unfitted: the method raises NotFittedError
            return thread_scope(plan, work=0)
        rows = min(_n_rows(X), max(self.net_.batch_size, INFERENCE_ROWS))
        looked_up = getattr(self, "n_features_in_", None) if sp.issparse(X) else None
        return thread_scope(plan, work=inference_work(module.parameters(), rows, looked_up))

    def _resolve_device(self) -> str:
        """The device of a new network: the accelerator's, or ``device`` resolved."""
        if self.accelerator is not None:
            device = self.accelerator.device
            # Multi-process CPU accelerators say "cpu:0": tensors saved from there would
            # carry a location that torch.load cannot restore in another process.
            return "cpu" if torch.device(device).type == "cpu" else str(device)
        return resolve_device(self.device)

    def _new_seeds(self) -> Seeds:
        """The random streams of a new fit, the same in every process of a launch."""
        seeds = Seeds.from_random_state(self.random_state)
        if self.accelerator is not None and self.accelerator.num_processes > 1:
            from sknce._distributed import broadcast_seeds

            seeds = broadcast_seeds(seeds, self.accelerator)
        return seeds

    def _continues(self, partial: bool) -> bool:
        """Whether this fit continues from the fitted network."""
        return (partial or self.warm_start) and hasattr(self, "net_")

    def _fit_batch_size(self, n_samples: int, continues: bool, divisor: int = 8) -> int:
        """The network's batch size when the fit continues, else ``batch_size`` resolved.

        ``"auto"`` is :func:`auto_batch_size` of ``n_samples`` and ``divisor``.
        """
        if continues:
            return self.net_.batch_size
        if self.batch_size == "auto":
            return auto_batch_size(n_samples, divisor)
        return self.batch_size

    @property
    def n_components_(self) -> int:
        """Width of the learned embedding, as the fitted network's scorer states it."""
        module = getattr(getattr(self, "net_", None), "module_", None)
        width = getattr(getattr(module, "module", module), "n_components", None)
        if width is None:  # an estimator pickled before its scorer stated the width
            width = vars(self).get("n_components_")
        if width is None:
            raise AttributeError(f"{type(self).__name__} has no attribute 'n_components_'")
        return width

    # --- the fit skeleton ---------------------------------------------------------------
    #
    # ``fit`` and ``partial_fit`` decide once whether the fit continues, validate,
    # draw the seeds and resolve the device (the call's FitPlan, handed down), resolve
    # the schedule, and train; the estimators fill the hooks below (sklearn's
    # BaseMultilayerPerceptron._fit, skorch's initialize_* steps).

    #: Whether ``fit`` also takes a stream of chunks (:meth:`_fit_stream`).
    _fits_streams = False
    #: ``max_epochs="auto"``: about this many gradient steps, within ``_epoch_range``.
    _target_steps = 400
    _epoch_range = (5, 200)
    #: ``batch_size="auto"``: ``clip(n_examples // _batch_divisor, 16, 256)``.
    _batch_divisor = 8

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None, **options):
        """Fit the model; see the estimator's docstring for ``X`` and ``y``.

        ``sample_weight`` is in the signature, so that scikit-learn sees that every
        estimator weighs its examples (``has_fit_parameter``, ``set_fit_request``): the
        weights reach each batch's ``targets.sample_weight`` and the objectives of
        :mod:`sknce.losses` weigh by them. An estimator that cannot weigh its examples
        overrides ``fit`` without it.

        Parameters
        ----------
        X, y
            The training data; see the estimator's docstring.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example, scaled to mean 1. ``None``: 1.
        **options
            The estimator's own options of a fit.

        Returns
        -------
        self
            The fitted estimator.
        """
        with self._fit_threads(), self._fitting():
            if self._fits_streams and is_chunk_stream(X):
                if sample_weight is not None or getattr(self, "class_weight", None):
                    raise ValueError(
                        "sample_weight and class_weight weigh the rows of an array; X is a "
                        "stream of chunks. Fit on an array, or repeat the examples to weigh "
                        "in the chunks."
                    )
                self._fit_stream(X, y)
            else:
                self._fit(X, y, partial=False, sample_weight=sample_weight, **options)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None, **options):
        """One pass of training over ``X``, continuing the fitted network.

        It takes the arguments of :meth:`fit`; ``**options`` are the estimator's own
        (e.g. a classifier's ``classes``).

        Returns
        -------
        self
            The estimator, trained one more pass.
        """
        with self._fit_threads(), self._fitting():
            self._fit(X, y, partial=True, sample_weight=sample_weight, **options)
        return self

    def _check_settings(self, continues: bool, partial: bool) -> None:
        """The parameters' checks of every fit; a continued fit's refusal of changed
        fixed ones (:meth:`_continued_roles`)."""
        if partial and continues:
            # scikit-learn's _fit_context skips the constraints for a fitted partial_fit;
            # a continued fit checks what a fit checks
            self._validate_params()
        if continues:  # before the other checks: a refused parameter needs none
            check_continued_params(
                self,
                getattr(self.net_, "built_params", None),
                self._continued_roles(),
                "partial_fit" if partial else "fit",
            )
        self._check_training_params()
        self._check_params()

    def _plan(self, partial: bool, continues: bool) -> FitPlan:
        """The fit call's plan: a new network's seeds and device, or the fitted one's device."""
        if continues:
            return FitPlan(partial, continues=True, seeds=None, device=self.net_.device)
        return FitPlan(
            partial, continues=False, seeds=self._new_seeds(), device=self._resolve_device()
        )

    def _fit(self, X, y, partial: bool, sample_weight=None, **options) -> None:
        """The one fit of arrays: ``fit`` (``partial=False``) and ``partial_fit``."""
        continues = self._continues(partial)
        self._check_settings(continues, partial)
        data = self._validate_fit_data(X, y, reset=not continues, partial=partial, **options)
        class_weight = getattr(self, "class_weight", None)
        weights = row_weights(sample_weight, X, y, class_weight)
        if weights is not None:
            weights = unit_mean(self._example_weights(X, weights))
        data = self._with_weights(data, weights)
        plan = self._plan(partial, continues)
        data = self._continue_fit(data) if continues else self._start_fit(data, plan.seeds)
        dataset = self._make_dataset(data, plan.device)
        if weights is not None:
            dataset.sampler = WeightedSampler(dataset.sampler, weights)
            check_weighted_examples(dataset)
        self._run(dataset, data, plan)

    def _fit_stream(self, chunks, y) -> None:
        """The one fit of a stream of chunks, one chunk in memory at a time.

        A first pass validates every chunk (:meth:`_scan_chunk`) and gathers what a
        new fit needs from all of them; each epoch then reads the chunks again
        (:class:`~sknce._data.ChunkedDataset`).
        """
        if y is not None and self._stream_carries_y:
            raise ValueError(
                "X is a stream of (X_chunk, y_chunk) pairs, which carries the labels; "
                "y must be None."
            )
        continues = self._continues(False)
        self._check_settings(continues, partial=False)
        summary: dict = {}
        sizes = scan_chunks(
            chunks,
            lambda chunk, index: self._scan_chunk(
                chunk, index, summary, reset=index == 0 and not continues
            ),
        )
        plan = self._plan(False, continues)
        if continues:
            data = self._continue_stream(chunks, summary)
        else:
            data = self._start_stream(chunks, summary, plan.seeds)
        dataset = ChunkedDataset(
            chunks, lambda chunk, index: self._chunk_dataset(chunk, plan.device), sizes
        )
        self._run(dataset, data, plan)

    def _run(self, dataset, data, plan: FitPlan) -> None:
        """Schedule and train on ``dataset``; then the fitted attributes of the network."""
        n = len(dataset)
        validates = not plan.partial and self._holds_out()
        n_train = n - self._n_held_out(dataset) if validates else n
        batch_size, max_epochs = self._schedule(n, n_train, plan.continues)

        def build():
            return self._make_module(data, plan.seeds), self._make_objective()

        with self._training(data, plan.device):
            self._train(
                dataset,
                build,
                plan,
                max_epochs=max_epochs,
                batch_size=batch_size,
                **self._net_options(data),
            )
        self._after_fit(data)

    def _schedule(self, n_examples: int, n_train: int, continues: bool) -> tuple[int, int]:
        """Batch size and epochs of a fit: the one rule, with per-class constants.

        ``batch_size="auto"``: ``clip(n_examples // _batch_divisor, 16, 256)``; a
        continued fit keeps its network's. ``max_epochs="auto"``: about
        ``_target_steps`` gradient steps over the ``n_train`` training examples
        (those not held out for early stopping), within ``_epoch_range``.
        """
        batch_size = self._fit_batch_size(n_examples, continues, self._batch_divisor)
        max_epochs = self.max_epochs
        if max_epochs == "auto":
            max_epochs = auto_epochs(n_train, batch_size, self._target_steps, self._epoch_range)
        return batch_size, max_epochs

    def _n_held_out(self, dataset) -> int:
        """Examples early stopping holds out: the last chunk of a stream of two or more,
        ``ceil(validation_fraction * n)`` of an array."""
        n = len(dataset)
        if hasattr(dataset, "n_held_out"):
            held_out = dataset.n_held_out(self.validation_fraction)
            return held_out if held_out < n else 0
        return math.ceil(self.validation_fraction * n)

    # --- hooks of the fit skeleton --------------------------------------------------------
    def _check_params(self) -> None:
        """Errors naming the fix for the estimator's own parameters (e.g. layer sizes)."""

    def _validate_fit_data(self, X, y, *, reset: bool, partial: bool, **options):
        """The validated training data of a fit, in whatever form the other hooks take."""
        raise NotImplementedError

    def _start_fit(self, data, seeds: Seeds):
        """A new fit: set the fitted attributes that depend on the data; return the data."""
        return data

    def _continue_fit(self, data):
        """A continued fit: check the data against the fitted state; return the data."""
        return data

    def _example_weights(self, X, weights: np.ndarray) -> np.ndarray:
        """The weights of the dataset's examples, from those of the rows of ``X``
        (one per row; an estimator that drops rows drops their weights)."""
        return weights

    def _with_weights(self, data, weights: np.ndarray | None):
        """The data with the examples' weights (mean 1; ``None``: unweighted), for an
        estimator whose fitted state (e.g. a scaling or a base model fitted before the
        network) is weighted too; the batches carry the weights in any case."""
        return data

    def _make_dataset(self, data, device: str):
        """The engine's dataset of the data: a sampler's rows (see :mod:`sknce._data`)."""
        raise NotImplementedError

    def _make_module(self, data, seeds: Seeds | None) -> torch.nn.Module:
        """The scorer of a new network (called under seeded initialisation).

        A pure function of its arguments and the parameters: it sets no attribute.
        """
        raise NotImplementedError

    def _make_objective(self) -> torch.nn.Module:
        """The NCE objective of a new network (a module of :mod:`sknce.losses`)."""
        raise NotImplementedError

    def _net_options(self, data) -> dict:
        """Options of :meth:`_train` for a new network: ``net_class``,
        ``extra_callbacks`` (sknce's callbacks of this estimator) and the net's own
        keyword arguments (none by default)."""
        return {}

    @contextlib.contextmanager
    def _training(self, data, device: str) -> Iterator[None]:
        """Around training: what must hold while the engine trains (nothing by default)."""
        yield

    def _after_fit(self, data) -> None:
        """Fitted attributes read from the trained network (nothing by default)."""

    #: Whether a stream's chunks are ``(X, y)`` pairs (then ``fit``'s ``y`` must be None).
    _stream_carries_y = False

    def _scan_chunk(self, chunk, index: int, summary: dict, reset: bool) -> int:
        """Validate chunk ``index`` of a stream, add what a new fit needs to ``summary``;
        return its number of examples."""
        raise NotImplementedError

    def _start_stream(self, chunks, summary: dict, seeds: Seeds):
        """A new fit on a stream: the fitted attributes from the scan; return the data."""
        raise NotImplementedError

    def _continue_stream(self, chunks, summary: dict):
        """A continued fit on a stream: check the scan; return the data."""
        return None

    def _chunk_dataset(self, chunk, device: str):
        """The engine's dataset of one chunk, loaded during an epoch."""
        raise NotImplementedError

    def _train(
        self,
        dataset,
        build: Callable[[], tuple[torch.nn.Module, torch.nn.Module]],
        plan: FitPlan,
        *,
        net_class: type[NCENet] = NCENet,
        extra_callbacks: list | None = None,
        max_epochs: int | None = None,
        batch_size: int | None = None,
        validation: bool | None = None,
        **net_kwargs,
    ) -> NCENet:
        """Train on ``dataset``; set ``net_``, ``history_`` and ``n_iter_``.

        Parameters
        ----------
        dataset : SampledDataset or a dataset with the same interface
        build : callable
            ``build() -> (module, criterion)`` of a new net, called under seeded
            initialisation.
        plan : FitPlan
            Whether the call is a ``partial_fit`` (one pass over ``dataset`` without
            validation) and continues the fitted net; a new net's seeds and device.
        net_class : type, default=NCENet
        extra_callbacks : list of (str, Callback) or None, default=None
            sknce callbacks of this estimator, placed before the user's.
        max_epochs, batch_size : int or None, default=None
            The values of this fit when they depend on the data (an ``"auto"``
            parameter resolved by the estimator); ``None``: the parameters. A
            continued fit keeps the net's batch size.
        validation : bool or None, default=None
            Whether a new net holds out validation examples; ``None``:
            :meth:`_holds_out` where the data allow it (not for ``partial``).
        **net_kwargs
            Passed to ``net_class`` when a new net is built.
        """
        max_epochs = self.max_epochs if max_epochs is None else max_epochs
        batch_size = self.batch_size if batch_size is None else batch_size
        partial, seeds, device = plan.partial, plan.seeds, plan.device
        restore = None
        if plan.continues:
            net = self.net_
            restore = net.snapshot()
            net.set_params(
                max_epochs=max_epochs, verbose=int(bool(self.verbose)), lr=self._fit_lr()
            )
            apply_common_params(self, net)
            self._update_net(net)
        else:
            if self.accelerator is not None:
                from sknce._distributed import data_parallel_class, require_accelerate

                require_accelerate()
                net_class = data_parallel_class(net_class)
                net_kwargs = {**net_kwargs, "accelerator": self.accelerator}
            with seeded_init(seeds):
                module, criterion = build()
            if validation is None:
                validation = not partial and self._holds_out() and self._can_validate(dataset)
            callbacks = self._callbacks(validation, extra_callbacks or [])
            net_kwargs = {
                "max_epochs": max_epochs,
                "batch_size": batch_size,
                "step": self._make_step(),
                "miner": self._make_miner(),
                **net_kwargs,
            }
            net = self._make_net(
                module, criterion, seeds, device, validation, callbacks, net_class, net_kwargs
            )
            net.initialize()
            net.built_params = built_params(self)
        n_before = len(net.history)
        net.estimator = self
        self.net_ = net
        split = net.train_split
        if partial:
            net.train_split = None
        try:
            net.partial_fit(dataset, epochs=1 if partial else max_epochs)
        except BaseException:
            if restore is not None:
                restore()
            raise
        finally:
            net.train_split = split
        net.module_.eval()
        self.history_ = [{k: v for k, v in row.items() if k != "batches"} for row in net.history]
        self.n_iter_ = len(self.history_)
        self._warn_if_at_chance(self.history_[n_before:])
        return net

    def _holds_out(self) -> bool:
        """Whether a new fit holds out examples for early stopping: ``early_stopping``."""
        return self.early_stopping

    def _can_validate(self, dataset) -> bool:
        """Whether holding out validation examples leaves enough training examples.

        An array holds out ``validation_fraction`` of its examples; a chunk stream
        (a dataset with ``n_held_out``) its last chunk.
        """
        n = len(dataset)
        if hasattr(dataset, "n_held_out"):
            n_train = n - dataset.n_held_out(self.validation_fraction)
            held_out = "the last chunk of the stream"
            fix = "Provide a stream of two chunks or more, or set early_stopping=False."
        else:
            n_train = n - int(np.ceil(self.validation_fraction * n))
            held_out = f"validation_fraction={self.validation_fraction}"
            fix = "Provide more data, lower validation_fraction, or set early_stopping=False."
        if n_train >= self._min_train_examples:
            return True
        warn_caller(
            f"{held_out} of {n} examples leaves {n_train} for training (at least "
            f"{self._min_train_examples} needed): early stopping is off for this fit. {fix}",
            UserWarning,
        )
        return False

    def _callbacks(self, validation: bool, extra: list) -> list:
        """sknce's callbacks (divergence, early stopping, extra, progress), then the user's."""
        callbacks: list = [
            ("divergence", DivergenceGuard(self._divergence_hint(), self._chance_loss()))
        ]
        if self._chance_loss() is not None:  # recorded before early stopping may end the fit
            callbacks.append(("chance", RecordChance(self._chance_loss())))
        if validation:
            callbacks.append(("early_stopping", self._early_stopping()))
        callbacks.extend(extra)
        if self.verbose:
            callbacks.append(("progress", self._progress_bar()))
        callbacks.extend(checkpoint_guards(self.callbacks, type(self).__name__))
        return callbacks + list(self.callbacks or ())

    def _early_stopping(self) -> EarlyStopping:
        """The early-stopping callback of a fit that holds out validation examples."""
        return ChanceAwareEarlyStopping(
            patience=self.patience, load_best=True, chance=self._chance_loss()
        )

    def _hold_out(self, seeds) -> HoldOut:
        """The ``train_split`` of a fit that holds out validation examples."""
        return HoldOut(self.validation_fraction, seeds)

    def _make_net(
        self, module, criterion, seeds, device, validation, callbacks, net_class, net_kwargs
    ):
        """The skorch net of a new fit (``net_kwargs`` hold its epochs and batch size)."""
        options = {f"optimizer__{k}": v for k, v in self._optimizer_options().items()}
        return net_class(
            module=module,
            criterion=criterion,
            optimizer=self._optimizer_class(),
            lr=self._fit_lr(),
            device=device,
            train_split=self._hold_out(seeds) if validation else None,
            callbacks=callbacks,
            verbose=int(bool(self.verbose)),
            callbacks__print_log=EpochTable(),
            seeds=seeds,
            **options,
            **net_kwargs,
        )

    def _warn_if_at_chance(self, rows: list[dict]) -> None:
        """ConvergenceWarning when no validation loss of a fit beat chance."""
        chance = self._chance_loss()
        losses = [row["valid_loss"] for row in rows if "valid_loss" in row]
        if chance is None or not losses or beats_chance(min(losses), chance):
            return
        warn_caller(
            f"The validation loss never fell 1% below the loss of a constant guess "
            f"({chance:.4f}) in {len(rows)} epoch(s): the fitted model has not learned "
            "to tell positive pairs from negative ones and its output is uninformative. "
            "Raise max_epochs, provide more data, or check that the pairs share structure.",
            ConvergenceWarning,
        )

    # --- inference helpers --------------------------------------------------------------
    #: The methods :mod:`sknce.export` exports, each built by :meth:`_inference_module`;
    #: the first is the default ``method`` of the export functions. A new estimator lists
    #: at least one (``tests/test_export_parity.py`` fails for a registry entry that
    #: exports nothing), e.g. ``("transform",)`` or ``("predict_proba",
    #: "predict_log_proba")``.
    _exported_methods: tuple[str, ...] = ()

    def _inference_module(self, method: str) -> torch.nn.Module:
        """The inference path of ``method`` of this fitted estimator, as one torch module.

        The one hook :mod:`sknce.export` asks (it knows no estimator by name). A new
        estimator returns ``InferenceModule(body, n_features)``
        (:class:`~sknce.nn._inference.InferenceModule`): ``body`` maps a batch of dense
        float32 rows (``n_features = self.n_features_in_``; a sparse ``X`` arrives
        densified) or of word ids padded with ``-1`` (``n_features=None``) to exactly
        what ``method`` returns for the same inputs, in every mode the fitted estimator
        can be in (its scaling of the input, multi-label outputs, ...). Build ``body``
        from the fitted network (``self.net_.module_``) and fitted statistics as buffers,
        reusing the parts of :mod:`sknce.nn._inference` (which the estimator's own
        method should call too, so the two cannot drift); it may share them with the
        estimator: the exporter copies and freezes the module. Only
        torch operations that ``torch.export`` and the ONNX exporter trace (no numpy, no
        data-dependent Python branches). ``tests/test_export_parity.py`` compares the
        module, the exported program and the ONNX file in onnxruntime with the
        estimator's output for every method, registry entry and mode.

        Parameters
        ----------
        method : str
            One of :attr:`_exported_methods`; the estimator is fitted (the exporter
            checks both before the call).

        Returns
        -------
        InferenceModule

        Raises
        ------
        ValueError
            When the fitted mode cannot be exported, saying why and the setting that
            can (the regressor's ``predict_method="mode"``: set ``"mean"``).
        """
        raise NotImplementedError(
            f"{type(self).__name__} lists {method!r} in _exported_methods without "
            "implementing _inference_module."
        )

    def _finite_output(self, out, method: str):
        """``out`` (one row per sample), or a ValueError naming the fix if it is not finite.

        Inputs are checked before inference (:func:`~sknce._compat.check_float32_range`),
        but inputs within float32's range can still overflow in the network (many
        large features summed): the output is checked rather than returned as NaN.
        """
        finite = torch.isfinite(out) if torch.is_tensor(out) else np.isfinite(out)
        if bool(finite.all()):
            return out
        finite = finite.cpu().numpy() if torch.is_tensor(finite) else np.asarray(finite)
        bad = int((~finite.reshape(finite.shape[0], -1).all(axis=1)).sum())
        raise ValueError(
            f"{type(self).__name__}.{method} gave non-finite values for {bad} of "
            f"{finite.shape[0]} sample(s): float32 arithmetic overflowed on their inputs, "
            "which are far larger than the training data. Scale X as the training data "
            "were scaled (e.g. with the StandardScaler fitted on them)."
        )

    def _score_rng(self) -> np.random.Generator:
        """The random stream of ``score``: the same draws at every call, in any thread."""
        return self.net_.seeds.numpy("score")

    def _batches(self, n_samples: int, batch_size: int | None = None) -> Iterator[slice]:
        """Slices covering ``range(n_samples)`` in inference batches."""
        step = batch_size or max(self.net_.batch_size, INFERENCE_ROWS)
        for start in range(0, n_samples, step):
            yield slice(start, min(start + step, n_samples))


def _counts_only(constraints: list) -> bool:
    """Whether a parameter's constraints take integers (an ``Interval`` of ``Integral``)
    and no boolean."""
    integral = any(isinstance(c, Interval) and issubclass(c.type, Integral) for c in constraints)
    return integral and "boolean" not in constraints


#: Constraint of ``encoder``, declared by the estimators that accept one.
ENCODER_CONSTRAINT = [None, HasMethods(["forward"]), type]

_COMMON = tuple(inspect.signature(BaseNCE.__init__).parameters)[1:]


def _n_rows(X) -> int:
    """Rows of an inference input: an array's first dimension, a sequence's length."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    try:
        return len(X)
    except TypeError:  # an iterable of unknown length: the batches may be full
        return INFERENCE_ROWS


def _under_inference_threads(method: Callable) -> Callable:
    """``method`` run under its estimator's inference threads."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        with self._inference_threads(X):
            return method(self, X, *args, **kwargs)

    wrapper._sknce_threads = True
    return wrapper


def auto_batch_size(n_samples: int, divisor: int = 8) -> int:
    """``batch_size="auto"``: ``clip(n_samples // divisor, 16, 256)``."""
    return int(np.clip(n_samples // divisor, 16, 256))


def auto_epochs(n_train: int, batch_size: int, target_steps: int, epoch_range) -> int:
    """``max_epochs="auto"``: about ``target_steps`` gradient steps, within ``epoch_range``."""
    steps = max(1, -(-n_train // batch_size))
    return int(np.clip(round(target_steps / steps), *epoch_range))


def common_params(values: dict) -> dict:
    """The common training parameters among a constructor's arguments.

    A subclass's ``__init__`` lists every parameter in its signature (scikit-learn
    reads them from there) and hands the common ones to :class:`BaseNCE` with
    ``super().__init__(**common_params(locals()))``.
    """
    return {name: values[name] for name in _COMMON}
