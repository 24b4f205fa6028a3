"""ConditionalNCERegressor: an energy-based p(y | x) for a continuous target, learned by NCE."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import RegressorMixin
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from sknce._base import APPLIED, ENCODER_CONSTRAINT, FIXED, BaseNCE, Fixed, common_params
from sknce._compat import Interval, StrOptions, check_is_fitted, validate_data
from sknce._data import SampledDataset, as_csr_or_dense, rows_to_tensor
from sknce._random import Seeds
from sknce._warnings import warn_caller
from sknce._weights import WeightedSampler, score_weights
from sknce.conditional._density import GridDensity
from sknce.conditional._linear_base import LinearBase
from sknce.conditional._sampler import TargetSampler
from sknce.conditional._stopping import LikelihoodStopping
from sknce.losses import BinaryNCELoss, RankingNCELoss
from sknce.nn import MLP, TargetEnergy
from sknce.nn._inference import InferenceModule, RegressionMean, StandardInput
from sknce.noise import GaussianMixtureNoise

__all__ = ["ConditionalNCERegressor"]


class _Examples(NamedTuple):
    """A fit's inputs (standardised once the fit has started), targets and weights."""

    X: object
    y: np.ndarray
    #: The examples' weights, mean 1 (``None``: unweighted).
    weight: np.ndarray | None = None


#: Gradient steps that refine the grid's argmax for ``predict_method="mode"``.
_REFINE_STEPS = 25

#: ``batch_size="auto"`` is the number of examples over this, within [16, 256].
_BATCH_DIVISOR = 32

#: Gradient steps that ``max_epochs="auto"`` aims at.
_TARGET_STEPS = 4000

#: Confidence of the test by which early stopping lets the energy leave the base density.
_LEAVE_BASE_LEVEL = 0.95

#: Examples from which ``hidden_layer_sizes="auto"`` gives two hidden layers.
_DEEP_FROM = 10_000

#: Most held-out examples whose log-likelihood early stopping measures at each epoch.
_MAX_VALID = 10_000

#: Residual units added on each side of the training residuals' range to make the grid.
_GRID_MARGIN = 0.5

_FINITE_FIX = "Drop those examples, or impute their targets."


def _check_target(y) -> None:
    """Reject multi-output and non-finite targets with a message naming the fix."""
    # np.asarray, not np.shape: array-likes may implement __array__ only.
    shape = tuple(y.shape) if hasattr(y, "shape") else np.asarray(y, dtype=object).shape
    if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        raise ValueError(
            f"ConditionalNCERegressor supports 1-D targets only; got y of shape {shape}. "
            "Fit one regressor per output column (e.g. with "
            "sklearn.multioutput.MultiOutputRegressor)."
        )
    values = np.asarray(y)
    if values.dtype.kind == "O" and values.ndim:
        try:
            values = values.astype(np.float64)  # a None among the targets becomes NaN
        except (TypeError, ValueError):
            return  # not numbers: validate_data names the problem
    if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
        bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
        raise ValueError(
            f"y contains NaN or infinity ({bad} of {np.size(values)} value(s)); "
            f"ConditionalNCERegressor needs a finite target for every example. {_FINITE_FIX}"
        )


def _target_scale(y: np.ndarray, weight: np.ndarray | None = None) -> tuple[float, float]:
    """Mean and standard deviation of ``y``, or a ValueError if float64 cannot hold them.

    They are computed on ``y`` divided by its largest magnitude, so that targets of any
    finite scale (1e200 too) are standardised without overflowing; what still
    overflows is a spread beyond float64's range. With ``weight``, the weighted mean
    and standard deviation of the targets of positive weight.
    """
    if weight is not None:
        y, weight = y[weight > 0], weight[weight > 0]
    largest = float(np.max(np.abs(y)))
    unit = largest if largest > 0 else 1.0
    z = y / unit
    if weight is None:
        mean, std = float(z.mean()) * unit, float(z.std()) * unit
    else:
        z_mean = float(np.average(z, weights=weight))
        z_std = math.sqrt(float(np.average((z - z_mean) ** 2, weights=weight)))
        mean, std = z_mean * unit, z_std * unit
    spread = (float(z.max()) - float(z.min()) + 2 * _GRID_MARGIN * float(z.std())) * unit
    if not np.all(np.isfinite([mean, std, spread])):
        raise ValueError(
            f"y has values as large as {largest:.3g} in magnitude and a spread beyond "
            "float64's range (about 1.8e308), so it cannot be standardised. Divide y by a "
            "constant (e.g. 1e300) and multiply the predictions and intervals back."
        )
    return mean, std if std > 0 else 1.0


class ConditionalNCERegressor(RegressorMixin, BaseNCE):
    r"""Energy-based regression: a density :math:`p(y \mid x)` learned by NCE.

    The model is :math:`p(y \mid x) \propto b(y \mid x) \exp r(x, y)`: a base density
    :math:`b` fitted in closed form, refined by a residual energy
    :math:`r(x, y) = f([g(x), \phi(z)])` (:class:`~sknce.nn.TargetEnergy`) of an MLP
    :math:`g` of the input, an MLP embedding :math:`\phi` of the target's residual
    :math:`z = (y - \mu(x)) / \tau(x)` under the base, and an MLP head :math:`f`. The
    energy is trained as Gustafsson et al. (2020) train energy-based regressors: each
    observed :math:`y_i` is contrasted with ``n_negatives`` targets drawn from a
    Gaussian mixture centred at :math:`y_i` with standard deviations ``noise_scales``,
    by the ranking (or binary) NCE objective of Ma & Collins (2018) with the mixture's
    log-density as the noise correction. The density can be multi-modal, skewed and
    heteroscedastic.

    With ``base="linear"`` (the default), :math:`b` is a ridge regression's predictive
    Student-t density: :math:`\mu(x)` is ridge regression on the standardised inputs
    (penalty chosen by exact leave-one-out error, as :class:`~sklearn.linear_model.RidgeCV`
    does), :math:`\tau(x) = \sigma \sqrt{1 + h(x)}` with :math:`\sigma` the root mean
    squared leave-one-out residual and :math:`h(x)` the leverage of :math:`x`, and
    :math:`n - p_{\mathrm{eff}}` degrees of freedom (the effective number of parameters,
    at least 3); with more than 256 features the ridge regresses on their 256 leading
    principal directions. The energy's output layer starts at zero, so training starts
    from the base density, and the energy learns from the base's leave-one-out
    residuals. Early stopping (on by default) measures the held-out NCE loss of that
    start too and keeps it unless training beats it: on data too small or too linear
    for the network, the fit stays the ridge's Student-t. ``base=None`` is the paper's
    model, :math:`p(y \mid x) \propto \exp r(x, y)` on the standardised target.

    The density is normalised numerically on a grid of ``n_grid`` residuals covering
    the training residuals widened by 0.5 on each side (``grid_range_``). Beyond the
    grid, the energy is held at its value at the grid's end, so the density follows
    the base's Student-t tail there (with an exact normaliser): a target far from
    every training target gets a correspondingly tiny density. With ``base=None`` the
    density is zero beyond the grid (``score_samples`` gives ``-inf``).

    **Input scaling is done inside**: the features are standardised with a
    :class:`~sklearn.preprocessing.StandardScaler` fitted in ``fit`` (sparse input is
    scaled without centring, and stays sparse; a model fitted on dense inputs densifies
    sparse ones), and the target is standardised
    (``y_mean_``, ``y_scale_``), so ``X`` and ``y`` can be passed in their own units;
    there is no need for a scaler in a pipeline. An ``encoder`` receives the
    standardised features.

    Read more in the :ref:`User Guide <conditional>`.

    Parameters
    ----------
    objective : {"ranking", "binary"}, default="ranking"
        NCE objective of :mod:`sknce.losses`. The binary one learns a single
        log-normaliser and is consistent only if the energy can self-normalise.
    n_negatives : int, default=64
        Noise targets K per training example.
    noise_scales : array-like of float, default=(0.1, 0.8)
        Standard deviations of the Gaussian-mixture noise around each observed
        target, in units of the base's scale :math:`\tau(x)` (with ``base=None``, of
        the target's standard deviation). A narrow and a wide component, as in
        Gustafsson et al.
    predict_method : {"mean", "mode"}, default="mean"
        ``"mean"``: the mean of the density, which minimises the expected squared
        error (``score`` is R²). ``"mode"``: the most probable target (the grid's
        argmax refined by gradient ascent on :math:`s(x, \cdot)`), for multi-modal
        targets where the mean falls between the modes.
    base : {"linear"} or None, default="linear"
        The base density the energy refines (see above); ``None``: no base, the
        setting of Gustafsson et al.
    n_grid : int, default=256
        Grid points used to normalise the density.
    hidden_layer_sizes : tuple of int or "auto", default="auto"
        Hidden layers of the input network :math:`g`. ``"auto"``: a network sized to
        the data, one layer of width
        :math:`w = \mathrm{clip}(2^{\mathrm{round}(\log_2 \sqrt{n})}, 16, 128)` for
        :math:`n` training examples, two such layers from 10,000 examples.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own input network :math:`g` replacing the MLP: it maps a dense float32
        batch of standardised inputs of shape (batch, n_features) to (batch, d)
        (sparse input is densified one batch at a time). A class is built with
        ``n_features``; an instance is copied at each fit. ``hidden_layer_sizes`` is
        then unused.
    embedding_dim : int or "auto", default="auto"
        Width of :math:`g(x)`, :math:`\phi(z)` and of the head's hidden layer.
        ``"auto"``: :math:`\max(w / 2, 16)`.
    max_epochs : int or "auto", default="auto"
        Passes over the training data. ``"auto"``: about 4000 gradient steps,
        ``clip(round(4000 / steps_per_epoch), 5, 200)``; early stopping usually
        ends the fit before.
    batch_size : int or "auto", default="auto"
        Examples per gradient step. ``"auto"``: ``clip(n_samples // 32, 16, 256)``,
        fixed at the first fit.
    lr : float, default=1e-3
        Learning rate of the optimizer.
    optimizer : torch optimizer class, default=torch.optim.Adam
        Any :class:`torch.optim.Optimizer` subclass, built on the network's parameters.
    optimizer_kwargs : dict or None, default=None
        Further options of the optimizer, e.g. ``{"weight_decay": 1e-4}`` (not ``lr``);
        a keyword the optimizer does not take is a ``ValueError``.
    callbacks : list of skorch callbacks or None, default=None
        :mod:`skorch.callbacks` (or ``(name, callback)`` pairs) run after sknce's own
        (divergence guard, early stopping, progress bar): e.g. ``Checkpoint`` with
        ``LoadInitState`` to resume a fit, ``LRScheduler``, ``EpochScoring``. A
        callback receives the skorch net; ``net.estimator`` is this estimator, whose
        outputs reflect the current epoch. See :ref:`customising`.
    warm_start : bool, default=False
        When already fitted, ``fit`` continues training the fitted network, with its
        optimizer state, for ``max_epochs`` more epochs instead of starting over; the
        input scaling, target standardisation and base density are kept.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, shuffling, noise targets and the validation split. An int
        makes a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the examples and stop when their
        log-likelihood (exact: the density is normalised; ``valid_nll`` in the
        history) has not improved for ``patience`` epochs, then restore the best
        weights. The weights the fit starts from count as epoch 0; with
        ``base="linear"`` training leaves that start (the base density) only for an
        epoch whose per-example gain over it passes a one-sided paired t-test at the
        95% level on 10 held-out examples or more, so that on small data the fit
        stays the base unless the energy is clearly better. The held-out NCE loss is
        recorded too (``valid_loss``). ``False`` trains for ``max_epochs`` (the
        paper's setting).
    validation_fraction : float, default=0.1
        Share of the training examples held out for early stopping.
    patience : int, default=20
        Epochs without improvement of the held-out log-likelihood before training
        stops.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.
    n_jobs : int or None, default=None
        Threads of torch and of the BLAS libraries while fitting (the base model and
        the network) and predicting. ``None``: one for the small steps of the
        defaults, where more threads wait for each other on a shared machine, and up
        to ``torch.get_num_threads()`` for large steps; ``-1``: every core. Your
        own thread settings come back after each call. See :ref:`threads`.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    input_scaler_ : sklearn.preprocessing.StandardScaler
        The scaling of the inputs, fitted on the training inputs.
    y_mean_ : float
        Mean of the training targets (subtracted before training).
    y_scale_ : float
        Standard deviation of the training targets (divided out before training).
    base_ : LinearBase or None
        The fitted base density (on standardised inputs and targets): ``alpha_``
        (ridge penalty), ``sigma_``, ``df_`` (degrees of freedom); ``None`` with
        ``base=None``.
    grid_range_ : tuple of float
        Interval of residuals :math:`z` covered by the normalisation grid.
    target_range_ : tuple of float
        Interval spanned by the training targets widened by half their standard
        deviation, in the units of ``y``; with ``base=None``, the support of the
        density.
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the :class:`~sknce.nn.TargetEnergy`.
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``valid_loss`` with
        early stopping, ``dur``, and what callbacks record.
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    ConditionalNCEClassifier : Conditional NCE over a discrete label set.
    sklearn.linear_model.RidgeCV : The linear model of the base density.
    sklearn.ensemble.GradientBoostingRegressor : Quantile regression with ``loss="quantile"``.

    Notes
    -----
    Three of scikit-learn's common checks are expected to fail for one reason:
    ``check_methods_sample_order_invariance``, ``check_methods_subset_invariance`` and
    ``check_array_api_input`` (run with ``SCIPY_ARRAY_API=1``) call
    ``score_samples(X)`` with ``X`` alone, while this estimator's
    ``score_samples(X, y)`` is the log-density of a target ``y`` given ``X`` and
    needs both. ``predict`` passes both checks, and sknce's own tests check that
    ``score_samples`` and ``predict_interval`` do not depend on the batch.

    Two more are expected to fail, ``check_sample_weight_equivalence_on_dense_data``
    and ``..._on_sparse_data``: a weight scales an example's loss in each stochastic
    batch, while repeating the example changes the batches and the noise targets
    drawn, so the two fits differ; and the base density's leave-one-out choice of the
    ridge penalty leaves an example out with its whole weight, not one repeat. An
    example of weight 0 counts in nothing the fit computes.

    The settings of Gustafsson et al. (2020), this estimator's former defaults:
    ``base=None, early_stopping=False, hidden_layer_sizes=(64, 64), embedding_dim=32,
    max_epochs=100, batch_size=128, predict_method="mode"``.

    References
    ----------
    .. [1] F. K. Gustafsson, M. Danelljan, R. Timofte and T. B. Schön, "How to Train
       Your Energy-Based Model for Regression", BMVC 2020 (NCE with a Gaussian-mixture
       noise distribution around the observed target).
    .. [2] Z. Ma and M. Collins, "Noise Contrastive Estimation and Negative Sampling
       for Conditional Models: Consistency and Statistical Efficiency", EMNLP 2018,
       Figure 1 (the ranking and binary objectives).

    Examples
    --------
    >>> import numpy as np
    >>> from sknce import ConditionalNCERegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 1))
    >>> y = 2 * X[:, 0] + 0.1 * rng.normal(size=300)
    >>> reg = ConditionalNCERegressor(random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.9
    True
    >>> reg.predict_interval(X[:1], coverage=0.9).shape
    (1, 2)
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "max_epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "objective": [StrOptions({"ranking", "binary"})],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "noise_scales": ["array-like", Interval(Real, 0, None, closed="neither")],
        "predict_method": [StrOptions({"mode", "mean"})],
        "base": [StrOptions({"linear"}), None],
        "n_grid": [Interval(Integral, 8, None, closed="left")],
        "hidden_layer_sizes": [tuple, list, StrOptions({"auto"})],
        "encoder": ENCODER_CONSTRAINT,
        "embedding_dim": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    }

    _param_roles: dict = {
        **BaseNCE._param_roles,
        "n_negatives": APPLIED,
        "noise_scales": APPLIED,
        "predict_method": APPLIED,
        "n_grid": APPLIED,
        "objective": Fixed("fixed the objective"),
        "base": Fixed("fixed the base density, fitted on the first fit's data"),
        "hidden_layer_sizes": FIXED,
        "encoder": FIXED,
        "embedding_dim": FIXED,
    }

    def __init__(
        self,
        *,
        objective: str = "ranking",
        n_negatives: int = 64,
        noise_scales=(0.1, 0.8),
        predict_method: str = "mean",
        base: str | None = "linear",
        n_grid: int = 256,
        hidden_layer_sizes: tuple[int, ...] | str = "auto",
        encoder=None,
        embedding_dim: int | str = "auto",
        max_epochs: int | str = "auto",
        batch_size: int | str = "auto",
        lr: float = 1e-3,
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 20,
        accelerator=None,
        n_jobs: int | None = None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.objective = objective
        self.n_negatives = n_negatives
        self.noise_scales = noise_scales
        self.predict_method = predict_method
        self.base = base
        self.n_grid = n_grid
        self.hidden_layer_sizes = hidden_layer_sizes
        self.encoder = encoder
        self.embedding_dim = embedding_dim

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # --- the hooks of the fit skeleton --------------------------------------------------
    _target_steps = _TARGET_STEPS
    _batch_divisor = _BATCH_DIVISOR

    def _validate_fit_data(self, X, y, *, reset: bool, partial: bool) -> _Examples:
        _check_target(y)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            y_numeric=True,
            reset=reset,
        )
        self._sizes(X.shape[0])  # checks hidden_layer_sizes
        y = np.asarray(y, dtype=np.float64)
        self._warn_beyond_first_chunk(y, partial, continues=not reset)
        return _Examples(X, y)

    def _with_weights(self, data: _Examples, weights: np.ndarray | None) -> _Examples:
        return data._replace(weight=weights)

    def _start_fit(self, data: _Examples, seeds: Seeds) -> _Examples:
        return data._replace(X=self._prepare(data.X, data.y, seeds, data.weight))

    def _continue_fit(self, data: _Examples) -> _Examples:
        return data._replace(X=self._standardised_inputs(data.X))

    def _make_dataset(self, data: _Examples, device: str) -> SampledDataset:
        z = self._fitted_residuals(data.X, self._standardised_targets(data.y), data.weight)
        noise = GaussianMixtureNoise(np.atleast_1d(np.asarray(self.noise_scales, float)))
        sampler = TargetSampler(
            as_csr_or_dense(data.X),
            torch.as_tensor(z, dtype=torch.float32),
            noise,
            self.n_negatives,
            device,
        )
        return SampledDataset(sampler)

    def _make_module(self, data: _Examples, seeds: Seeds) -> TargetEnergy:
        n_samples, n_features = data.X.shape
        hidden, embedding_dim = self._sizes(n_samples)
        encoder, width = self._make_encoder(
            n_features, lambda: MLP(n_features, hidden, embedding_dim)
        )
        base_df = None if self.base_ is None else self.base_.df_
        support = None if self.base_ is None else self.grid_range_
        return TargetEnergy(encoder, width, embedding_dim, base_df, support)

    def _make_objective(self) -> RankingNCELoss | BinaryNCELoss:
        return RankingNCELoss() if self.objective == "ranking" else BinaryNCELoss()

    def _prepare(self, X, y: np.ndarray, seeds, weight: np.ndarray | None):
        """Fit the input scaling, the target's standardisation, the base and the grid.

        With ``weight``, all four are weighted: an example of weight 0 counts in none.
        Returns the standardised inputs.
        """
        scaler = StandardScaler(with_mean=not sp.issparse(X))
        self.input_scaler_ = scaler.fit(X, sample_weight=weight)
        X = self._standardised_inputs(X)
        self.y_mean_, self.y_scale_ = _target_scale(y, weight)
        y_std = self._standardised_targets(y)
        self.base_ = None
        if self.base == "linear":
            self.base_ = LinearBase(seeds.int("prepare")).fit(X, y_std, weight)
        z = self._fitted_residuals(X, y_std, weight)
        if weight is not None:  # the grid and the range span the examples that count
            z, y_std = z[weight > 0], y_std[weight > 0]
        self.grid_range_ = (float(z.min()) - _GRID_MARGIN, float(z.max()) + _GRID_MARGIN)
        self.target_range_ = tuple(
            self._original_targets(float(v))
            for v in (y_std.min() - _GRID_MARGIN, y_std.max() + _GRID_MARGIN)
        )
        return X

    def _warn_beyond_first_chunk(self, y, partial: bool, continues: bool) -> None:
        """Warn when ``partial_fit`` meets targets the first call's scaling cannot learn.

        The first call fixes the target's standardisation, the base density and the
        grid from its chunk; targets of a later chunk beyond the grid are clipped to
        its ends, and a constant first chunk fixes a scale of 1 and a grid one unit
        wide. Streaming regression learns only the range its first chunk spans
        (``target_range_``).
        """
        fix = (
            "Give partial_fit a first chunk that spans the targets' range (e.g. a random "
            "sample of all the data), or fit on the whole data with fit."
        )
        if partial and not continues and np.ptp(y) == 0:
            warn_caller(
                f"the first partial_fit chunk has a constant target ({y[0]:.4g}): the "
                "target scaling, base density and grid fixed from it span one unit around "
                "it, and later chunks' targets beyond that cannot be learned. " + fix,
                UserWarning,
            )
        if not continues:
            return
        low, high = self.target_range_
        outside = int(np.count_nonzero((y < low) | (y > high)))
        if outside:
            warn_caller(
                f"{outside} of {len(y)} targets of this chunk lie beyond the range fixed by "
                f"the first call (targets about {self.target_range_[0]:.4g} to "
                f"{self.target_range_[1]:.4g}): the model's density lives on that range, "
                "so these targets are clipped to its ends and cannot be learned; expect "
                "poor predictions for them. " + fix,
                UserWarning,
            )

    def _fitted_residuals(self, X, y_std: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """Residuals :math:`z` of examples the base was fitted on (LinearBase.loc_scale).

        A function of ``(x, y)`` and the weights only, so that passes of
        ``partial_fit`` over the training data are the epochs of ``fit``.
        """
        loc, scale = self._frame(X, fitted=True, weight=weight)
        return (y_std - loc) / scale

    def _sizes(self, n_samples: int) -> tuple[tuple[int, ...], int]:
        """Hidden layers and embedding width of a network for ``n_samples`` examples."""
        width = int(np.clip(2 ** round(math.log2(math.sqrt(n_samples))), 16, 128))
        if self.hidden_layer_sizes == "auto":
            hidden = (width,) if n_samples < _DEEP_FROM else (width, width)
        else:
            hidden = self._check_hidden()
        embedding_dim = max(width // 2, 16) if self.embedding_dim == "auto" else self.embedding_dim
        return hidden, embedding_dim

    def _early_stopping(self) -> LikelihoodStopping:
        # A base density is a sound start, to be left on evidence; a random one is not.
        level = None if self.base is None else _LEAVE_BASE_LEVEL
        return LikelihoodStopping(self._held_out_log_likelihood, self.patience, level)

    def _held_out_log_likelihood(
        self, net, dataset: SampledDataset
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Log-likelihoods of (at most 10,000 of) the held-out residuals and their
        weights (``None``: unweighted), for early stopping."""
        rows = dataset.rows[:_MAX_VALID]
        sampler = dataset.sampler
        z = sampler.y[torch.as_tensor(rows)].double().cpu().numpy()
        weight = None
        if isinstance(sampler, WeightedSampler):
            weight = sampler.weights[torch.as_tensor(rows)].double().cpu().numpy()
        return self._log_density(sampler.X[rows], z), weight

    def _divergence_hint(self) -> str:
        return "Lower lr (this call ran at {lr})."

    def _standardised_targets(self, y: np.ndarray) -> np.ndarray:
        return (y - self.y_mean_) / self.y_scale_

    def _original_targets(self, y_std):
        return y_std * self.y_scale_ + self.y_mean_

    def _frame(
        self, X, fitted: bool = False, weight: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The base's location and scale at rows of standardised ``X`` (0 and 1 without).

        ``fitted``: for examples the base was fitted on, of weights ``weight``
        (:meth:`LinearBase.loc_scale`).
        """
        if self.base_ is None:
            return np.zeros(X.shape[0]), np.ones(X.shape[0])
        return self.base_.loc_scale(X, fitted=fitted, sample_weight=weight)

    def fit(self, X, y, sample_weight=None) -> ConditionalNCERegressor:
        """Fit the base density, then the energy by NCE against noise around ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs, in their own units (they are standardised inside).
        y : array-like of shape (n_samples,)
            Continuous 1-D target, finite, in its own units (standardised inside).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example, finite and non-negative, scaled to mean 1 over the
            training set; ``None``: 1. It multiplies the example's NCE loss and weighs
            the example in the input scaling, the target's standardisation, the base
            density's ridge regression, the grid and the held-out log-likelihood of
            early stopping: an example of weight 0 counts in none of them.

        Returns
        -------
        self : ConditionalNCERegressor
            The fitted estimator.
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y, sample_weight=None) -> ConditionalNCERegressor:
        """One pass of training over a chunk, continuing the fitted network.

        The first call fixes the input scaling, the target's standardisation, the
        base density and the grid (``input_scaler_``, ``y_mean_``, ``y_scale_``,
        ``base_``, ``grid_range_``) from its chunk; later calls keep them, the network
        and the optimizer's state. No validation split is held out and ``max_epochs``
        is ignored: each call is one epoch over the chunk. So streaming regression
        learns only the target range of the first chunk: a later chunk with targets
        beyond it, or a first chunk with a constant target, gives a ``UserWarning``;
        start with a chunk that spans the range (e.g. a random sample of the data).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            A chunk of training inputs.
        y : array-like of shape (n_samples,)
            Their continuous 1-D targets, finite.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each example of this chunk (as in :meth:`fit`), scaled to mean 1
            over the chunk; ``None``: 1. The first call weighs the scaling, the base
            and the grid with them.

        Returns
        -------
        self : ConditionalNCERegressor
            The fitted estimator.
        """
        return super().partial_fit(X, y, sample_weight=sample_weight)

    # --- inference ------------------------------------------------------------------
    _exported_methods = ("predict",)

    def _inference_module(self, method: str) -> InferenceModule:
        """``predict`` with ``predict_method="mean"``: the density's mean on the grid and in
        the base's tails (the Student-t distribution function in torch)."""
        if self.predict_method != "mean":
            raise ValueError(
                f"predict_method={self.predict_method!r} refines each mode by gradient ascent "
                "on the score inside predict, which an exported module cannot run. To export "
                "predict, set predict_method='mean' (the density's mean; no refit needed)."
            )
        scaler = self.input_scaler_
        scaling = StandardInput(scaler.mean_ if scaler.with_mean else None, scaler.scale_)
        base = self.base_
        frame = None
        if base is not None:
            frame = {
                "projection": base.projection_,
                "coef": base.coef_,
                "intercept": base.intercept_,
                "mean": base.mean_,
                "precision": base.precision_,
                "sigma": base.sigma_,
                "n_samples": base.n_samples_,
            }
        body = RegressionMean(
            scaling,
            frame,
            self._energy(),
            self._grid(),
            None if base is None else base.df_,
            self.y_mean_,
            self.y_scale_,
        )
        return InferenceModule(body, self.n_features_in_)

    def _inputs(self, X):
        """Validated, standardised ``X`` and the base's location and scale at each row."""
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        X = self._standardised_inputs(X)
        loc, scale = self._frame(X)
        return as_csr_or_dense(X), loc, scale

    def _standardised_inputs(self, X):
        """``X`` standardised as the training inputs were.

        A model fitted on dense inputs centres them, so it densifies sparse ones.
        """
        if sp.issparse(X) and self.input_scaler_.with_mean:
            X = X.toarray()
        return self.input_scaler_.transform(X)

    def _energy(self) -> TargetEnergy:
        """The scorer, unwrapped from data-parallel training while a fit runs."""
        module = self.net_.module_
        return module if self.accelerator is None else self.accelerator.unwrap_model(module)

    def _grid(self) -> np.ndarray:
        """The residuals on which the density is normalised."""
        return np.linspace(*self.grid_range_, self.n_grid)

    def _densities(self, X):
        """Yield ``(rows, g, density)``: encodings and :class:`GridDensity` of blocks of ``X``."""
        energy = self._energy()
        grid = self._grid()
        on_device = torch.as_tensor(grid, dtype=torch.float32, device=self.net_.device)
        df = None if self.base_ is None else self.base_.df_
        for rows in self._batches(X.shape[0], batch_size=256):
            with torch.no_grad():
                g = energy.encode(rows_to_tensor(X, rows, self.net_.device))
                r = energy.residual(g, on_device.expand(g.shape[0], -1))
                loc, log_scale = (v.double().cpu().numpy() for v in energy.base_params(g))
            yield rows, g, GridDensity(grid, r.double().cpu().numpy(), df, loc, log_scale)

    def predict(self, X) -> np.ndarray:
        """Predicted target: the density's mean, or its mode (``predict_method``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs, in the units of the training inputs.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions, in the units of ``y``.
        """
        X, loc, scale = self._inputs(X)
        energy = self._energy()
        grid = torch.as_tensor(self._grid(), dtype=torch.float32, device=self.net_.device)
        z = np.empty(X.shape[0])
        for rows, g, density in self._densities(X):
            if self.predict_method == "mean":
                z[rows] = density.mean()
            else:
                best = torch.as_tensor(density.mode(), device=g.device)
                z[rows] = self._refine_mode(energy, g, grid, best)
        return self._finite_output(self._original_targets(loc + scale * z), "predict")

    @staticmethod
    def _refine_mode(energy, g, grid, best) -> np.ndarray:
        """Gradient ascent on s(x, ·) from the grid's argmax, kept within one grid step."""
        step = float(grid[1] - grid[0])
        start = grid[best]
        y = start.clone().requires_grad_(True)
        opt = torch.optim.Adam([y], lr=step / 5)
        with torch.enable_grad():
            for _ in range(_REFINE_STEPS):
                opt.zero_grad()
                (-energy.score(g, y).sum()).backward()
                opt.step()
                with torch.no_grad():
                    y.copy_(torch.clamp(y, start - step, start + step))
        return y.detach().cpu().numpy()

    def predict_interval(self, X, coverage: float = 0.9) -> np.ndarray:
        """Central interval of the density with probability ``coverage``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs, in the units of the training inputs.
        coverage : float, default=0.9
            Probability mass between the bounds, in (0, 1): the bounds are the
            ``(1 - coverage) / 2`` and ``(1 + coverage) / 2`` quantiles.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Lower and upper bounds, in the units of ``y``.
        """
        if not 0 < coverage < 1:
            raise ValueError(f"coverage must be in (0, 1), got {coverage!r}.")
        X, loc, scale = self._inputs(X)
        levels = np.array([(1 - coverage) / 2, (1 + coverage) / 2])
        z = np.empty((X.shape[0], 2))
        for rows, _, density in self._densities(X):
            z[rows] = density.quantiles(levels)
        bounds = self._original_targets(loc[:, None] + scale[:, None] * z)
        return self._finite_output(bounds, "predict_interval")

    def score(self, X, y, sample_weight=None) -> float:
        """Coefficient of determination R² of :meth:`predict` on ``X`` against ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs, in the units of the training inputs.
        y : array-like of shape (n_samples,)
            True targets.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights of the examples in R² (:func:`~sklearn.metrics.r2_score`).

        Returns
        -------
        float
            R² of the predictions.
        """
        y_pred = self.predict(X)
        _check_target(y)
        # R² is unchanged when both sides are divided by one number: dividing by their
        # largest magnitude keeps the squares of targets of any finite scale finite.
        y = np.asarray(y, dtype=np.float64)
        unit = max(float(np.max(np.abs(y), initial=0.0)), 1e-300)
        unit = max(unit, float(np.max(np.abs(y_pred))))
        sample_weight = score_weights(sample_weight, len(y_pred))
        return float(r2_score(y / unit, y_pred / unit, sample_weight=sample_weight))

    def score_samples(self, X, y) -> np.ndarray:
        """Log-density :math:`\\log p(y \\mid x)` of each target given its input.

        Normalised over the whole real line: numerically on the grid and exactly in
        the base's tails beyond it, so a target far from every training target gets a
        correspondingly low log-density. With ``base=None`` the density is zero beyond
        the grid, and a target there gets ``-inf``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs, in the units of the training inputs.
        y : array-like of shape (n_samples,)
            Finite targets, in the units of the training ``y``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log-density per unit of ``y`` (comparable with other models' log-likelihoods).
        """
        X, loc, scale = self._inputs(X)
        _check_target(y)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and y have different numbers of samples: {X.shape[0]} != {y.shape[0]}."
            )
        z = (self._standardised_targets(y) - loc) / scale
        return self._log_density(X, z) - np.log(scale) - np.log(self.y_scale_)

    def _log_density(self, X, z: np.ndarray) -> np.ndarray:
        """:math:`\\log p(z \\mid x)` of residuals ``z`` at standardised inputs ``X``."""
        energy = self._energy()
        # The energy sees residuals clipped to the grid (beyond it, its value at the end).
        inside = torch.as_tensor(np.clip(z, *self.grid_range_), dtype=torch.float32)
        log_p = np.empty(X.shape[0])
        for rows, g, density in self._densities(X):
            with torch.no_grad():
                r = energy.residual(g, inside[rows].to(g.device))
            log_p[rows] = density.log_prob(z[rows], r.double().cpu().numpy())
        return log_p
