"""LatentClassNCEEmbedder: unit-norm representations from latent-class pairs and k negatives.

Awasthi, Dikkala and Kamath (2022) study contrastive learning where a positive
pair is two points of one latent class and the ``k`` negatives are drawn from
the marginal (Section 2); the representation maps to the unit sphere and is
trained with the logistic or hinge k-negative loss (Definition 2.1).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from sknce._base import ENCODER_CONSTRAINT, BaseNCE, common_params
from sknce._compat import Interval, StrOptions, _fit_context, check_is_fitted, validate_data
from sknce._data import SampledDataset, as_csr_or_dense, rows_to_tensor
from sknce.contrastive._sampler import LatentClassSampler, encode_groups
from sknce.losses import KNegativeLoss
from sknce.nn import MLP, LatentClassScorer, SphereEncoder

__all__ = ["LatentClassNCEEmbedder"]


class LatentClassNCEEmbedder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    r"""Contrastive embedding from latent classes with ``k`` negatives (Awasthi et al., 2022).

    ``y`` names each point's latent class (group): two points with the same id
    are semantically similar. Each training example is a tuple
    :math:`(x, x^+, x^-_1, \dots, x^-_k)`: :math:`x` and :math:`x^+` are two
    distinct points of one class and the negatives are points of the marginal,
    whatever their class (collisions with the anchor's class are allowed, as in
    the theory; ``exclude_collisions=True`` drops them). An MLP encoder
    :math:`f` maps to the unit sphere :math:`\mathbb{S}^{d-1}` and minimises

    .. math::

        \mathcal{L}^{(k)}_{\mathrm{NCE}}(f) = \mathbb{E}\,
        \ell^\beta\bigl(\langle f(x)^\top (f(x^+) - f(x^-_i)) \rangle_{i=1}^k\bigr)
        \qquad \text{(Definition 2.1)},

    with the logistic :math:`\log(1 + \sum_i e^{-\beta v_i})` or hinge
    :math:`\max\{0, \max_i (1 - \beta v_i)\}` loss of the core
    (:func:`sknce.losses.k_negative`). For well-separated, equally likely classes
    the optimum is a simplex ETF (Theorem 3.8): class means at cosine
    :math:`-1/(C-1)`; see :func:`~sknce.contrastive.simplex_etf_report`.

    Negatives are taken from the batch's other encoded points (``2B - 2`` of them
    for a batch of ``B`` anchors and their positives) when ``n_negatives`` is at
    most that number: no extra forward pass, O(B k d) per step. Otherwise, or with
    ``negatives="marginal"``, they are drawn uniformly from all training points
    and encoded separately.

    Read more in the :ref:`User Guide <contrastive>`.

    Parameters
    ----------
    n_components : int, default=128
        Dimension ``d`` of the representation.
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
    hidden_layer_sizes : tuple of int, default=(256, 256)
        Hidden layers of the encoder (LayerNorm and ReLU); ``()`` is linear.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own encoder :math:`f` replacing the MLP (e.g. a CNN for images): it maps a
        dense float32 batch of shape (batch, n_features) to (batch, d); its output is
        normalised to the unit sphere. A class is built with ``n_features``; an
        instance is copied at each fit. ``n_components`` and ``hidden_layer_sizes``
        are then unused; ``n_components_`` is ``d``.
    max_epochs : int, default=100
        Passes over the training data.
    batch_size : int, default=256
        Anchors per gradient step.
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
        Seeds the weights, pairs, negatives and the validation split. An int makes a
        CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the anchors and stop when the NCE loss
        on them (with fixed tuples) stops improving, restoring the best weights.
        Off by default: the paper trains for a fixed number of epochs.
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
    groups_ : ndarray of shape (n_groups,)
        The distinct ids of ``y`` seen in ``fit``.
    n_components_ : int
        Width of the representation (``n_components``, or the output of ``encoder``).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the :class:`~sknce.nn.LatentClassScorer`
        and ``net_.module_.encoder`` its :class:`~sknce.nn.SphereEncoder`.
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``valid_loss`` with
        early stopping, ``dur``, and what callbacks record.
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
    from the fit's own random stream (repeatable). All of scikit-learn's
    common checks pass; none is expected to fail.

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
    >>> emb = LatentClassNCEEmbedder(n_components=8, n_negatives=4, hidden_layer_sizes=(32,),
    ...                              max_epochs=5, random_state=0)
    >>> emb.fit_transform(data.X, data.y).shape
    (300, 8)
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"logistic", "hinge"})],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "negatives": [StrOptions({"batch", "marginal"})],
        "exclude_collisions": ["boolean"],
        "hidden_layer_sizes": [tuple, list],
        "encoder": ENCODER_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        n_components: int = 128,
        n_negatives: int = 16,
        loss: str = "logistic",
        beta: float = 1.0,
        negatives: str = "batch",
        exclude_collisions: bool = False,
        hidden_layer_sizes: tuple[int, ...] = (256, 256),
        encoder=None,
        max_epochs: int = 100,
        batch_size: int = 256,
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
        self.n_components = n_components
        self.n_negatives = n_negatives
        self.loss = loss
        self.beta = beta
        self.negatives = negatives
        self.exclude_collisions = exclude_collisions
        self.hidden_layer_sizes = hidden_layer_sizes
        self.encoder = encoder

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _validate(self, X, y, *, reset: bool):
        """Validated ``X`` (float32 CSR or array) and the group codes of ``y``."""
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
            warnings.warn(
                f"{n_single} class(es) of y have a single member and cannot give positive "
                "pairs; their points serve as negatives only.",
                UserWarning,
                stacklevel=5,
            )
        return as_csr_or_dense(X), codes, groups

    def _sampler(self, X, codes: np.ndarray, device: str) -> LatentClassSampler:
        return LatentClassSampler(
            X, codes, self.n_negatives, self.negatives, self.exclude_collisions, device
        )

    def _fit(self, X, y, partial: bool) -> None:
        continues = self._continues(partial)
        self._check_training_params()
        hidden = self._check_hidden()
        X, codes, groups = self._validate(X, y, reset=not continues)
        if not continues:
            self.groups_ = groups
        device = self.net_.device if continues else self._resolve_device()

        def build(device: str):
            def default() -> MLP:
                return MLP(X.shape[1], hidden, self.n_components)

            encoder, self.n_components_ = self._make_encoder(X.shape[1], default)
            scorer = LatentClassScorer(SphereEncoder(encoder))
            return scorer, KNegativeLoss(loss=self.loss, beta=self.beta)

        dataset = SampledDataset(self._sampler(X, codes, device))
        self._train(dataset, build, partial=partial)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the encoder on tuples of latent-class pairs and negatives.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input points.
        y : array-like of shape (n_samples,)
            Latent-class (group) id of each point; points with the same id form
            positive pairs.

        Returns
        -------
        self
            The fitted embedder.
        """
        with self._fitting():
            self._fit(X, y, partial=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """One pass of training over a chunk of points, continuing the fitted network.

        No validation split is held out and ``max_epochs`` is ignored: each call
        is one epoch over the anchors of ``X`` (positives and negatives come from
        the chunk).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Latent-class ids.

        Returns
        -------
        self
        """
        with self._fitting():
            self._fit(X, y, partial=True)
        return self

    def transform(self, X):
        """Map points to unit vectors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            Unit-norm rows, in the dtype of ``X`` (float64 or float32).
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False
        )
        dtype = X.dtype
        X = as_csr_or_dense(X)
        encoder = self.net_.module_.encoder
        encoder.eval()
        device = self.net_.device
        out = np.empty((X.shape[0], self.n_components_), dtype=dtype)
        with torch.no_grad():
            for rows in self._batches(X.shape[0]):
                out[rows] = encoder(rows_to_tensor(X, rows, device)).cpu().numpy()
        return out

    def score(self, X, y) -> float:
        """Minus the mean NCE loss on tuples drawn from ``X`` and ``y``.

        Tuples are drawn as in training (same ``n_negatives``, ``negatives`` and
        ``exclude_collisions``, every point of a class with two or more members an
        anchor once) from the fit's own random stream, so repeated calls give the
        same value. Higher is better.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Latent-class ids.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        X, codes, _ = self._validate(X, y, reset=False)
        dataset = SampledDataset(self._sampler(X, codes, self.net_.device))
        return -self.net_.mean_loss(dataset, self._score_rng())

    @property
    def _n_features_out(self) -> int:
        return self.n_components_
