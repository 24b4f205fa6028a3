"""LatentClassNCEEmbedder: unit-norm representations from latent-class pairs and k negatives.

Awasthi, Dikkala and Kamath (2022) study contrastive learning where a positive
pair is two points of one latent class and the ``k`` negatives are drawn from
the marginal (Section 2); the representation maps to the unit sphere and is
trained with the logistic or hinge k-negative loss (Definition 2.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from sknce._base import APPLIED, ENCODER_CONSTRAINT, FIXED, BaseNCE, Fixed, common_params
from sknce._compat import Interval, StrOptions, check_is_fitted, validate_data
from sknce._data import as_csr_or_dense, rows_to_tensor
from sknce._random import Seeds
from sknce._warnings import warn_caller
from sknce.contrastive._sampler import LatentClassDataset, LatentClassSampler, encode_groups
from sknce.contrastive._scaling import SCALINGS, fit_scaling, resolve_scaling, scale_input
from sknce.contrastive._start import principal_start
from sknce.contrastive._stopping import NeighbourStopping
from sknce.losses import KNegativeLoss
from sknce.nn import MLP, LatentClassScorer, LinearSkipEncoder, SphereEncoder
from sknce.nn._contrastive import OffsetEncoder
from sknce.nn._inference import BagInput, Encoded, InferenceModule, StandardInput

__all__ = ["LatentClassNCEEmbedder"]


class _Points(NamedTuple):
    """A fit's points, their group codes and groups, and (new fit) the built-in encoder."""

    X: object
    codes: np.ndarray
    groups: np.ndarray
    default_encoder: Callable[[], torch.nn.Module] | None = None


#: Widest representation ``n_components="auto"`` gives.
_MAX_COMPONENTS = 128

#: Gradient steps that ``max_epochs="auto"`` allows at most.
_TARGET_STEPS = 1000


class LatentClassNCEEmbedder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    r"""Contrastive embedding from latent classes with ``k`` negatives (Awasthi et al., 2022).

    ``y`` names each point's latent class (group): two points with the same id
    are semantically similar. Each training example is a tuple
    :math:`(x, x^+, x^-_1, \dots, x^-_k)`: :math:`x` and :math:`x^+` are two
    distinct points of one class and the negatives are points of the marginal,
    whatever their class (collisions with the anchor's class are allowed, as in
    the theory; ``exclude_collisions=True`` drops them). An encoder :math:`f`
    maps to the unit sphere :math:`\mathbb{S}^{d-1}` and minimises

    .. math::

        \mathcal{L}^{(k)}_{\mathrm{NCE}}(f) = \mathbb{E}\,
        \ell^\beta\bigl(\langle f(x)^\top (f(x^+) - f(x^-_i)) \rangle_{i=1}^k\bigr)
        \qquad \text{(Definition 2.1)},

    with the logistic :math:`\log(1 + \sum_i e^{-\beta v_i})` or hinge
    :math:`\max\{0, \max_i (1 - \beta v_i)\}` loss of the core
    (:func:`sknce.losses.k_negative`). For well-separated, equally likely classes
    the optimum is a simplex ETF (Theorem 3.8): class means at cosine
    :math:`-1/(C-1)`; see :func:`~sknce.contrastive.simplex_etf_report`.

    By default the embedder is set up for the data it is given rather than for
    the paper's experiments: the input is scaled inside the estimator
    (``scaling``), the encoder is an MLP whose width follows the data
    (``n_components="auto"``), and training stops when held-out points stop
    finding their nearest training point in their own class more often, keeping
    the best weights. ``init="pca"`` starts instead from the input's principal
    components, with a linear map of the input plus a residual network. The
    paper's setting (Section 5), an MLP on the raw input trained for a fixed
    number of epochs, is
    ``LatentClassNCEEmbedder(scaling="none", init="random", n_components=128,
    hidden_layer_sizes=(256, 256), batch_size=256, max_epochs=100, lr=1e-3,
    early_stopping=False)``.

    Negatives are taken from the batch's other encoded points (``2B - 2`` of them
    for a batch of ``B`` anchors and their positives) when ``n_negatives`` is at
    most that number: no extra forward pass, O(B k d) per step. Otherwise, or with
    ``negatives="marginal"``, they are drawn uniformly from all training points
    and encoded separately.

    Read more in the :ref:`User Guide <contrastive>`.

    Parameters
    ----------
    n_components : int or "auto", default="auto"
        Dimension ``d`` of the representation. ``"auto"``:
        ``min(128, max(n_features + 1, n_groups))``, with ``n_groups`` the distinct
        ids of ``y``: room for the principal-component start (one coordinate more
        than the input) and for a simplex ETF of the classes, at most 128 (the
        paper's width).
    n_negatives : int, default=16
        Number ``k`` of negatives per positive pair.
    loss : {"logistic", "hinge"}, default="logistic"
        The loss :math:`\ell` of Definition 2.1.
    beta : float, default=1.0
        Inverse temperature :math:`\beta`. With the hinge loss, choose
        :math:`\beta` below :math:`(C-1)/C` for the ETF to be the unique optimum
        (above it every representation whose classes are :math:`1 - 1/\beta`
        apart in cosine has zero loss).
    negatives : {"batch", "marginal"}, default="batch"
        Where the negatives come from: the batch's other points (drawn with
        replacement; falls back to ``"marginal"`` for a batch with fewer than
        ``n_negatives`` other points) or exact draws from all training points.
    exclude_collisions : bool, default=False
        Drop negatives that belong to the anchor's class.
    scaling : {"auto", "standard", "log1p-idf", "none"}, default="auto"
        How the estimator scales its input, with statistics of the training points
        (fixed at the first fit; ``transform`` and ``score`` apply them):
        ``"standard"``: each column centred and divided by its standard deviation,
        as :class:`~sklearn.preprocessing.StandardScaler` does (sparse input is
        only divided, not centred, so that it stays sparse); ``"log1p-idf"``:
        ``log(1 + x)`` times the smooth inverse document frequency of the column,
        each row scaled to unit norm (sublinear tf-idf; for non-negative counts such
        as :class:`~sklearn.feature_extraction.text.CountVectorizer` gives);
        ``"none"``: the input as it comes (the paper's). ``"auto"``:
        ``"log1p-idf"`` for sparse non-negative input, ``"standard"`` otherwise.
    init : {"random", "pca"}, default="random"
        ``"random"``: an :class:`~sknce.nn.MLP` with PyTorch's initialisation (the
        paper's). ``"pca"``: the encoder is :math:`f(x) = x P + b + g(x)`, a
        :class:`~sknce.nn.LinearSkipEncoder` with an offset, whose linear map
        :math:`P` starts at the top ``min(d - 1, n_features, n_samples - 1)``
        principal axes of the scaled training points, :math:`b` at their
        root-mean-square norm on the next coordinate, and whose residual branch
        :math:`g` (``hidden_layer_sizes``) at zero: the start maps each point to
        the gnomonic projection of its principal coordinates onto a hemisphere,
        a one-to-one map that keeps what the input's linear structure tells apart.
        Unused with ``encoder``.
    hidden_layer_sizes : tuple of int, default=(256,)
        Hidden layers (LayerNorm and ReLU): with ``init="random"`` those of the
        MLP (the paper's ``(256, 256)``); with ``init="pca"`` those of the
        residual branch :math:`g`. ``()`` is linear.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own encoder :math:`f` replacing the built-in one (e.g. a CNN for
        images): it maps a dense float32 batch of scaled inputs, shape (batch,
        n_features), to (batch, d); its output is normalised to the unit sphere. A
        class is built with ``n_features``; an instance is copied at each fit.
        ``n_components``, ``init`` and ``hidden_layer_sizes`` are then unused;
        ``n_components_`` is ``d``.
    max_epochs : int or "auto", default="auto"
        Passes over the training data (at most, with early stopping). ``"auto"``:
        at most about 1000 gradient steps,
        ``clip(round(1000 / steps_per_epoch), 10, 200)``, with ``steps_per_epoch``
        the batches of training anchors.
    batch_size : int or "auto", default="auto"
        Anchors per gradient step. ``"auto"``: ``clip(n_anchors // 8, 16, 256)``,
        with ``n_anchors`` the points of classes with two or more members, fixed at
        the first fit.
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
        optimizer state and input scaling, for ``max_epochs`` more epochs instead of
        starting over.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, the start's randomized SVD, pairs, negatives and the
        validation split. An int makes a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the points and stop on the share of them
        whose nearest training point (cosine) is of their own class, the held-out
        nearest-neighbour rate (on at most 2,000 held-out and 10,000 training
        points): it is smoothed over epochs by an exponential moving average
        started at 0 (weight 0.8 on the past), training stops when the average
        has not risen by more than 0.001 for ``patience`` epochs (epochs in which
        every held-out point is right do not count), and the weights of its
        highest epoch are kept (the later one on a tie). The held-out points take
        no part in training (neither as anchors, positives nor negatives); they
        are drawn first from classes that keep two training points without them.
        The NCE loss of tuples of the held-out points (positives and negatives
        from the training points) is recorded too, as ``valid_loss``; a fit in
        which it never falls 1% below the loss of a constant representation
        (:math:`\log(1 + k)` for the logistic loss, 1 for the hinge) warns with a
        ``ConvergenceWarning``.
    validation_fraction : float, default=0.1
        Share of the points (of classes with two or more members) held out for
        early stopping.
    patience : int, default=30
        Epochs without a rise of the smoothed held-out nearest-neighbour rate
        (not counting those in which every held-out point is right) before
        training stops.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.

    Attributes
    ----------
    groups_ : ndarray of shape (n_groups,)
        The distinct ids of ``y`` seen in ``fit``.
    n_components_ : int
        Width of the representation (``n_components`` resolved, or the output of
        ``encoder``).
    scaling_ : str
        The input scaling used (``scaling`` resolved): ``"standard"``,
        ``"log1p-idf"`` or ``"none"``.
    input_mean_ : ndarray of shape (n_features,) or None
        Column means subtracted by ``scaling_="standard"`` (None for sparse input).
        Only with ``scaling_="standard"``.
    input_scale_ : ndarray of shape (n_features,)
        Column standard deviations that ``scaling_="standard"`` divides by (1 for a
        constant column). Only with ``scaling_="standard"``.
    idf_ : ndarray of shape (n_features,)
        Smooth inverse document frequencies ``log((1 + n) / (1 + df)) + 1`` of the
        columns, as :class:`~sklearn.feature_extraction.text.TfidfTransformer`
        computes them. Only with ``scaling_="log1p-idf"``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the :class:`~sknce.nn.LatentClassScorer`
        and ``net_.module_.encoder`` its :class:`~sknce.nn.SphereEncoder`.
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``dur``, with
        early stopping ``valid_loss``, ``valid_nn`` (the held-out
        nearest-neighbour rate) and ``valid_nn_smoothed`` (its moving average),
        and what callbacks record.
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    sknce.contrastive.simplex_etf_report : Intra-class variance and class-mean cosines.
    sknce.contrastive.nce_optimal_gram : The population optimum for a class prior.
    sknce.datasets.make_latent_classes : Latent-class data with planted classes.

    Notes
    -----
    ``y`` is required: ``fit(X)`` raises a ``ValueError``. Points of a class with a
    single member cannot form a positive pair: ``fit`` warns and uses them as
    negatives only, and raises a ``ValueError`` if no class has two members.
    ``score(X, y)`` is minus the NCE loss on tuples drawn from ``X`` and ``y``
    from the fit's own random stream (repeatable). Two of scikit-learn's
    common checks are expected to fail,
    ``check_sample_weight_equivalence_on_dense_data`` and ``..._on_sparse_data``: a
    weight scales an example's loss in each stochastic batch, while repeating the
    example changes the batches and the negatives drawn, so the two fits differ.

    References
    ----------
    .. [1] P. Awasthi, N. Dikkala and P. Kamath, "Do more negative samples necessarily
       hurt in contrastive learning?", ICML 2022. Section 2 (the data model),
       Definition 2.1 (the loss), Theorem 3.8 (the simplex ETF), Section 5.

    Examples
    --------
    >>> from sknce import LatentClassNCEEmbedder
    >>> from sknce.datasets import make_latent_classes
    >>> data = make_latent_classes(300, n_classes=3, n_features=10, random_state=0)
    >>> emb = LatentClassNCEEmbedder(random_state=0)
    >>> emb.fit_transform(data.X, data.y).shape
    (300, 11)
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"logistic", "hinge"})],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "negatives": [StrOptions({"batch", "marginal"})],
        "exclude_collisions": ["boolean"],
        "scaling": [StrOptions(set(SCALINGS))],
        "init": [StrOptions({"pca", "random"})],
        "hidden_layer_sizes": [tuple, list],
        "encoder": ENCODER_CONSTRAINT,
        "max_epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    }

    _param_roles: dict = {
        **BaseNCE._param_roles,
        "n_negatives": APPLIED,
        "negatives": APPLIED,
        "exclude_collisions": APPLIED,
        "loss": Fixed("fixed the objective"),
        "beta": Fixed("fixed the objective"),
        "scaling": Fixed("fixed the input scaling, fitted on the first fit's points"),
        "init": Fixed("set where the network started"),
        "n_components": FIXED,
        "hidden_layer_sizes": FIXED,
        "encoder": FIXED,
    }

    def __init__(
        self,
        *,
        n_components: int | str = "auto",
        n_negatives: int = 16,
        loss: str = "logistic",
        beta: float = 1.0,
        negatives: str = "batch",
        exclude_collisions: bool = False,
        scaling: str = "auto",
        init: str = "random",
        hidden_layer_sizes: tuple[int, ...] = (256,),
        encoder=None,
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
        patience: int = 30,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.n_components = n_components
        self.n_negatives = n_negatives
        self.loss = loss
        self.beta = beta
        self.negatives = negatives
        self.exclude_collisions = exclude_collisions
        self.scaling = scaling
        self.init = init
        self.hidden_layer_sizes = hidden_layer_sizes
        self.encoder = encoder

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # --- hooks of BaseNCE -------------------------------------------------------------
    def _chance_loss(self) -> float | None:
        """The loss of a constant representation (every :math:`v_i = 0`)."""
        if self.exclude_collisions:  # the number of negatives left varies
            return None
        return math.log1p(self.n_negatives) if self.loss == "logistic" else 1.0

    def _divergence_hint(self) -> str:
        hint = f"Lower lr (now {self.lr})."
        if self.scaling == "none":
            hint += " The input is not scaled (scaling='none'): try scaling='auto'."
        return hint

    def _encoder_start(self) -> str:
        """Where the encoder starts: ``"pca"``, or ``"random"`` (also for ``encoder``)."""
        return "pca" if self.encoder is None and self.init == "pca" else "random"

    def _early_stopping(self) -> NeighbourStopping:
        return NeighbourStopping(patience=self.patience)

    # --- data ---------------------------------------------------------------------------
    def _validate(self, X, y, *, reset: bool):
        """Validated ``X`` (float32 CSR or array, not yet scaled) and the group codes of ``y``."""
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset
        )
        codes, groups = encode_groups(y)
        sizes = np.bincount(codes)
        if np.all(sizes < 2):
            raise ValueError(
                "LatentClassNCEEmbedder needs positive pairs, i.e. two points with the same "
                f"id in y; no class of y has two members (got {X.shape[0]} sample(s) in "
                f"{len(groups)} class(es)). Pass the latent-class ids as y, with at least "
                "two points per class."
            )
        if self.exclude_collisions and len(groups) < 2:
            raise ValueError(
                "exclude_collisions=True drops every negative of the anchor's class, and y "
                "has a single class: no negative is left to learn from. Pass points of "
                "several classes, or set exclude_collisions=False."
            )
        n_single = int((sizes == 1).sum())
        if n_single:
            warn_caller(
                f"{n_single} class(es) of y have a single member and cannot give positive "
                "pairs; their points serve as negatives only.",
                UserWarning,
            )
        return as_csr_or_dense(X), codes, groups

    def _fit_scaling(self, X) -> None:
        """Set ``scaling_`` and its statistics from the training points ``X``."""
        self.scaling_ = resolve_scaling(self.scaling, X)
        statistics = fit_scaling(X, self.scaling_)
        if self.scaling_ == "standard":
            self.input_mean_, self.input_scale_ = statistics["mean"], statistics["scale"]
        elif self.scaling_ == "log1p-idf":
            self.idf_ = statistics["idf"]

    _exported_methods = ("transform",)

    def _inference_module(self, method: str) -> InferenceModule:
        """``transform``: the fitted input scaling in torch, then the encoder."""
        if self.scaling_ == "standard":
            scaling = StandardInput(self.input_mean_, self.input_scale_)
        elif self.scaling_ == "log1p-idf":
            scaling = BagInput("log1p-idf", self.idf_)
        else:
            scaling = torch.nn.Identity()
        body = Encoded(scaling, self.net_.module_.encoder, row_norm=None)
        return InferenceModule(body, self.n_features_in_)

    def _scale(self, X):
        """``X`` (float32 CSR or array) scaled with the fitted statistics."""
        if self.scaling_ == "log1p-idf":
            statistics = {"idf": self.idf_}
        elif self.scaling_ == "standard":
            statistics = {"mean": self.input_mean_, "scale": self.input_scale_}
        else:
            statistics = {}
        return scale_input(X, self.scaling_, statistics)

    def _sampler(self, X, codes: np.ndarray, device: str) -> LatentClassSampler:
        return LatentClassSampler(
            X, codes, self.n_negatives, self.negatives, self.exclude_collisions, device
        )

    def _builtin_encoder(self, X, n_groups: int, seeds: Seeds):
        """A constructor of the built-in encoder, and its width."""
        hidden = self._check_hidden()
        n_features = X.shape[1]
        d = self.n_components
        if d == "auto":
            d = min(_MAX_COMPONENTS, max(n_features + 1, n_groups))
        if self._encoder_start() == "random":
            return (lambda: MLP(n_features, hidden, d)), d
        # A child of the init stream: the stream itself seeds torch's layers.
        weight, offset = principal_start(X, d, seeds.numpy("init").spawn(1)[0])
        return (
            lambda: OffsetEncoder(LinearSkipEncoder(n_features, d, hidden, weight=weight), offset)
        ), d

    # --- the hooks of the fit skeleton --------------------------------------------------
    _target_steps = _TARGET_STEPS
    _epoch_range = (10, 200)

    def _check_params(self) -> None:
        self._check_hidden()

    def _validate_fit_data(self, X, y, *, reset: bool, partial: bool) -> _Points:
        return _Points(*self._validate(X, y, reset=reset))

    def _start_fit(self, data: _Points, seeds: Seeds) -> _Points:
        """The groups, the input scaling and (built-in encoder) the start of a new fit."""
        self.groups_ = data.groups
        self._fit_scaling(data.X)
        X = self._scale(data.X)
        default = None
        if self.encoder is None:
            default, _ = self._builtin_encoder(X, len(data.groups), seeds)
        return _Points(X, data.codes, data.groups, default)

    def _continue_fit(self, data: _Points) -> _Points:
        return _Points(self._scale(data.X), data.codes, data.groups)

    def _make_dataset(self, data: _Points, device: str) -> LatentClassDataset:
        return LatentClassDataset(self._sampler(data.X, data.codes, device))

    def _make_module(self, data: _Points, seeds: Seeds) -> LatentClassScorer:
        encoder, width = self._make_encoder(data.X.shape[1], data.default_encoder)
        scorer = LatentClassScorer(SphereEncoder(encoder))
        scorer.n_components = width
        return scorer

    def _make_objective(self) -> KNegativeLoss:
        return KNegativeLoss(loss=self.loss, beta=self.beta)

    def fit(self, X, y=None, sample_weight=None):
        """Fit the encoder on tuples of latent-class pairs and negatives.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input points (scaled inside the estimator; see ``scaling``).
        y : array-like of shape (n_samples,)
            Latent-class (group) id of each point; points with the same id form
            positive pairs. Required: the default ``None`` is a ``ValueError``.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each point as an anchor: its tuple's loss is multiplied by it
            (:mod:`sknce.losses`), after scaling the weights to mean 1. ``None``: 1.

        Returns
        -------
        self
            The fitted embedder.
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y=None, sample_weight=None):
        """One pass of training over a chunk of points, continuing the fitted network.

        No validation split is held out and ``max_epochs`` is ignored: each call
        is one epoch over the anchors of ``X`` (positives and negatives come from
        the chunk). The first call fixes the input scaling, the start and an
        ``"auto"`` batch size from its chunk.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            A chunk of input points.
        y : array-like of shape (n_samples,)
            Latent-class ids of the chunk's points. Required: the default ``None``
            is a ``ValueError``.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weight of each point as an anchor: its tuple's loss is multiplied by it
            (:mod:`sknce.losses`), after scaling the weights to mean 1. ``None``: 1.

        Returns
        -------
        self
            The embedder, trained one more epoch.
        """
        return super().partial_fit(X, y, sample_weight=sample_weight)

    def transform(self, X):
        """Map points to unit vectors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input points, on the scale of the training points (the estimator applies
            its fitted scaling).

        Returns
        -------
        ndarray of shape (n_samples, `n_components_`)
            Unit-norm rows, in the dtype of ``X`` (float64 or float32).
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        dtype = X.dtype
        X = self._scale(as_csr_or_dense(X))
        encoder = self.net_.module_.encoder
        encoder.eval()
        device = self.net_.device
        out = np.empty((X.shape[0], self.n_components_), dtype=dtype)
        with torch.no_grad():
            for rows in self._batches(X.shape[0]):
                out[rows] = encoder(rows_to_tensor(X, rows, device)).cpu().numpy()
        return self._finite_output(out, "transform")

    def score(self, X, y) -> float:
        """Minus the mean NCE loss on tuples drawn from ``X`` and ``y``.

        Tuples are drawn as in training (same ``n_negatives``, ``negatives`` and
        ``exclude_collisions``, every point of a class with two or more members an
        anchor once) from the fit's own random stream, so repeated calls give the
        same value. Higher is better. Chance, the score of a constant representation,
        is :math:`-\\ln(1 + k)` for the logistic loss with ``k = n_negatives`` (-1 for
        the hinge loss), also recorded as ``history_[-1]["chance_loss"]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input points, on the scale of the training points.
        y : array-like of shape (n_samples,)
            Latent-class ids; two or more points of one class are needed.

        Returns
        -------
        float
            Minus the mean NCE loss (at most 0).
        """
        check_is_fitted(self)
        X, codes, _ = self._validate(X, y, reset=False)
        sampler = self._sampler(self._scale(X), codes, self.net_.device)
        return -self.net_.mean_loss(LatentClassDataset(sampler), self._score_rng())

    @property
    def _n_features_out(self) -> int:
        return self.n_components_
