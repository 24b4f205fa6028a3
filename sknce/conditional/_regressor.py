"""ConditionalNCERegressor: an energy-based p(y | x) for a continuous target, learned by NCE."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.metrics import r2_score

from sknce._base import ENCODER_CONSTRAINT, BaseNCE, common_params
from sknce._compat import Interval, StrOptions, _fit_context, check_is_fitted, validate_data
from sknce._data import SampledDataset, as_csr_or_dense, rows_to_tensor
from sknce.conditional._sampler import TargetSampler
from sknce.losses import BinaryNCELoss, RankingNCELoss
from sknce.nn import MLP, TargetEnergy
from sknce.noise import GaussianMixtureNoise

__all__ = ["ConditionalNCERegressor"]

#: Gradient steps that refine the grid's argmax for ``predict_method="mode"``.
_REFINE_STEPS = 25


def _check_1d_target(y) -> None:
    """Reject multi-output targets with a message that says what is supported."""
    # np.asarray, not np.shape: array-likes may implement __array__ only.
    shape = tuple(y.shape) if hasattr(y, "shape") else np.asarray(y, dtype=object).shape
    if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        raise ValueError(
            f"ConditionalNCERegressor supports 1-D targets only; got y of shape {shape}. "
            "Fit one regressor per output column (e.g. with "
            "sklearn.multioutput.MultiOutputRegressor)."
        )


class ConditionalNCERegressor(RegressorMixin, BaseNCE):
    r"""Energy-based regression: a density :math:`p(y \mid x)` learned by NCE.

    The model is :math:`p(y \mid x) \propto \exp s(x, y)` with
    :math:`s(x, y) = f([g(x), \phi(y)])`: an MLP :math:`g` of the input, an MLP
    embedding :math:`\phi` of the (standardised) target and an MLP head :math:`f`
    (:class:`~sknce.nn.TargetEnergy`). It is trained as Gustafsson et al. (2020)
    train energy-based regressors: each observed :math:`y_i` is contrasted with
    ``n_negatives`` targets drawn from a Gaussian mixture centred at :math:`y_i`
    with standard deviations ``noise_scales``, by the ranking (or binary) NCE
    objective of Ma & Collins (2018) with the mixture's log-density as the noise
    correction. The density can be multi-modal and heteroscedastic.

    The density is normalised numerically on a grid of ``n_grid`` points covering
    the training targets widened by half a standard deviation on each side
    (``target_range_``); ``predict``, ``predict_interval`` and ``score_samples``
    all use that grid.

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
        target, in units of the target's standard deviation (``y`` is standardised
        internally). A narrow and a wide component, as in Gustafsson et al.
    predict_method : {"mode", "mean"}, default="mode"
        ``"mode"``: the grid's most probable target, refined by gradient ascent on
        :math:`s(x, \cdot)`. ``"mean"``: the mean of the grid density.
    n_grid : int, default=256
        Grid points used to normalise the density.
    hidden_layer_sizes : tuple of int, default=(64, 64)
        Hidden layers of the input network :math:`g`.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own input network :math:`g` replacing the MLP: it maps a dense float32
        batch of shape (batch, n_features) to (batch, d) (sparse input is densified
        one batch at a time). A class is built with ``n_features``; an instance is
        copied at each fit. ``hidden_layer_sizes`` is then unused.
    embedding_dim : int, default=32
        Width of :math:`g(x)`, :math:`\phi(y)` and of the head's hidden layer.
    max_epochs : int, default=100
        Passes over the training data.
    batch_size : int, default=128
        Examples per gradient step.
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
        optimizer state, for ``max_epochs`` more epochs instead of starting over.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, shuffling, noise targets and the validation split. An int
        makes a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=False
        Stop when the validation NCE loss (on ``validation_fraction`` of the data,
        with fixed noise targets) stops improving; restores the best weights.
    validation_fraction : float, default=0.1
        Share of the training examples held out for early stopping.
    patience : int, default=10
        Epochs without improvement of the validation loss before training stops.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    y_mean_ : float
        Mean of the training targets (subtracted before training).
    y_scale_ : float
        Standard deviation of the training targets (divided out before training).
    target_range_ : tuple of float
        Interval of targets, in original units, on which the density is normalised.
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
    sklearn.ensemble.GradientBoostingRegressor : Quantile regression with ``loss="quantile"``.

    Notes
    -----
    Two of scikit-learn's common checks are expected to fail, for one reason:
    ``check_methods_sample_order_invariance`` and ``check_methods_subset_invariance``
    call ``score_samples(X)`` with ``X`` alone, while this estimator's
    ``score_samples(X, y)`` is the log-density of a target ``y`` given ``X`` and
    needs both. ``predict`` passes both checks, and sknce's own tests check that
    ``score_samples`` and ``predict_interval`` do not depend on the batch.

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
    >>> reg = ConditionalNCERegressor(hidden_layer_sizes=(16,), n_negatives=16,
    ...                               max_epochs=40, lr=1e-2, random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.9
    True
    >>> reg.predict_interval(X[:1], coverage=0.9).shape
    (1, 2)
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "objective": [StrOptions({"ranking", "binary"})],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "noise_scales": ["array-like", Interval(Real, 0, None, closed="neither")],
        "predict_method": [StrOptions({"mode", "mean"})],
        "n_grid": [Interval(Integral, 8, None, closed="left")],
        "hidden_layer_sizes": [tuple, list],
        "encoder": ENCODER_CONSTRAINT,
        "embedding_dim": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        objective: str = "ranking",
        n_negatives: int = 64,
        noise_scales=(0.1, 0.8),
        predict_method: str = "mode",
        n_grid: int = 256,
        hidden_layer_sizes: tuple[int, ...] = (64, 64),
        encoder=None,
        embedding_dim: int = 32,
        max_epochs: int = 100,
        batch_size: int = 128,
        lr: float = 1e-3,
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 10,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.objective = objective
        self.n_negatives = n_negatives
        self.noise_scales = noise_scales
        self.predict_method = predict_method
        self.n_grid = n_grid
        self.hidden_layer_sizes = hidden_layer_sizes
        self.encoder = encoder
        self.embedding_dim = embedding_dim

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _fit(self, X, y, partial: bool) -> None:
        continues = self._continues(partial)
        _check_1d_target(y)
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            y_numeric=True,
            reset=not continues,
        )
        self._check_training_params()
        hidden = self._check_hidden()
        y = np.asarray(y, dtype=np.float64)
        if not continues:
            self._set_target_scale(y)
        y_std = (y - self.y_mean_) / self.y_scale_
        noise = GaussianMixtureNoise(np.atleast_1d(np.asarray(self.noise_scales, float)))
        device = self.net_.device if continues else self._resolve_device()
        sampler = TargetSampler(
            as_csr_or_dense(X),
            torch.as_tensor(y_std, dtype=torch.float32),
            noise,
            self.n_negatives,
            device,
        )

        def build(device: str):
            def default() -> MLP:
                return MLP(X.shape[1], hidden, self.embedding_dim)

            encoder, width = self._make_encoder(X.shape[1], default)
            objective = RankingNCELoss() if self.objective == "ranking" else BinaryNCELoss()
            return TargetEnergy(encoder, width, self.embedding_dim), objective

        self._train(SampledDataset(sampler), build, partial=partial)

    def _set_target_scale(self, y: np.ndarray) -> None:
        """Standardisation of the target and the range the density is normalised on."""
        self.y_mean_ = float(y.mean())
        scale = float(y.std())
        self.y_scale_ = scale if scale > 0 else 1.0
        y_std = (y - self.y_mean_) / self.y_scale_
        lo, hi = float(y_std.min()) - 0.5, float(y_std.max()) + 0.5
        self.target_range_ = (
            lo * self.y_scale_ + self.y_mean_,
            hi * self.y_scale_ + self.y_mean_,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y) -> ConditionalNCERegressor:
        """Fit the energy model by NCE against Gaussian-mixture noise around ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Continuous 1-D target.

        Returns
        -------
        self : ConditionalNCERegressor
        """
        with self._fitting():
            self._fit(X, y, partial=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y) -> ConditionalNCERegressor:
        """One pass of training over a chunk, continuing the fitted network.

        The first call fixes the target's standardisation and the density's range
        (``y_mean_``, ``y_scale_``, ``target_range_``) from its chunk; later calls
        keep the network and the optimizer's state. No validation split is held out
        and ``max_epochs`` is ignored: each call is one epoch over the chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : ConditionalNCERegressor
        """
        with self._fitting():
            self._fit(X, y, partial=True)
        return self

    # --- inference ------------------------------------------------------------------
    def _grid(self, device) -> torch.Tensor:
        """The grid of standardised targets on which the density is normalised."""
        lo, hi = ((v - self.y_mean_) / self.y_scale_ for v in self.target_range_)
        return torch.linspace(lo, hi, self.n_grid, device=device)

    def _grid_scores(self, X):
        """Yield ``(rows, g, s)``: encodings and scores s(x, grid) of validated ``X``."""
        energy = self.net_.module_
        grid = self._grid(self.net_.device)
        for rows in self._batches(X.shape[0], batch_size=256):
            with torch.no_grad():
                g = energy.encode(rows_to_tensor(X, rows, self.net_.device))
                s = energy.score(g, grid.expand(g.shape[0], -1))
            yield rows, g, s

    def _validated(self, X):
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        return as_csr_or_dense(X)

    def _log_step(self) -> float:
        """Log of the grid spacing (standardised units)."""
        return float(
            np.log((self.target_range_[1] - self.target_range_[0]) / self.y_scale_)
            - np.log(self.n_grid - 1)
        )

    def predict(self, X) -> np.ndarray:
        """Predicted target: the density's mode (refined) or its mean.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._validated(X)
        energy = self.net_.module_
        parts = []
        for _, g, s in self._grid_scores(X):
            grid = self._grid(g.device)
            if self.predict_method == "mean":
                parts.append((torch.softmax(s, dim=1) * grid).sum(1).cpu().numpy())
            else:
                parts.append(self._refine_mode(energy, g, grid, s.argmax(1)))
        y_std = np.concatenate(parts).astype(np.float64)
        return y_std * self.y_scale_ + self.y_mean_

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
        """Central interval of the grid density with probability ``coverage``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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
        X = self._validated(X)
        levels = np.array([(1 - coverage) / 2, (1 + coverage) / 2])
        grid = self._grid("cpu").double().numpy()
        parts = []
        for _, _, s in self._grid_scores(X):
            cdf = np.cumsum(torch.softmax(s.double(), dim=1).cpu().numpy(), axis=1)
            cdf /= cdf[:, -1:]
            parts.append(np.vstack([np.interp(levels, row, grid) for row in cdf]))
        return np.vstack(parts) * self.y_scale_ + self.y_mean_

    def score(self, X, y) -> float:
        """Coefficient of determination R² of :meth:`predict` on ``X`` against ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
        """
        return float(r2_score(y, self.predict(X)))

    def score_samples(self, X, y) -> np.ndarray:
        """Log-density :math:`\\log p(y \\mid x)`, normalised numerically on the grid.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Targets, in the units of the training ``y``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Log-density per unit of ``y`` (comparable with other models' log-likelihoods).
        """
        X = self._validated(X)
        _check_1d_target(y)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"X and y have different numbers of samples: {X.shape[0]} != {y.shape[0]}."
            )
        energy = self.net_.module_
        y_std = torch.as_tensor((y - self.y_mean_) / self.y_scale_, dtype=torch.float32)
        log_step = self._log_step()
        parts = []
        for rows, g, s in self._grid_scores(X):
            with torch.no_grad():
                log_z = torch.logsumexp(s, dim=1) + log_step
                s_y = energy.score(g, y_std[rows].to(g.device))
            parts.append((s_y - log_z).double().cpu().numpy())
        return np.concatenate(parts) - np.log(self.y_scale_)
