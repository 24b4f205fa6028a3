"""Noise distributions for noise-contrastive estimation.

Discrete noise (:class:`CategoricalNoise`, :class:`UnigramNoise`,
:class:`UniformNoise`) samples in O(1) per draw whatever the number of
categories, with Walker's alias method (Vose's O(n) table construction), so
drawing K negatives over a vocabulary of 10^6 words costs what it costs over
10^3. :class:`GaussianMixtureNoise` draws continuous noise around observed
targets (Gustafsson et al., 2020). Every distribution exposes
``sample(...)`` and ``log_prob(...)``; the log-probabilities are the
:math:`\\log p_N` corrections of the objectives in :mod:`sknce.losses`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "CategoricalNoise",
    "GaussianMixtureNoise",
    "UniformNoise",
    "UnigramNoise",
    "alias_tables",
    "remove_accidental_hits",
]


def alias_tables(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Build Walker alias tables with Vose's stable O(n) algorithm.

    Parameters
    ----------
    probs : ndarray of shape (n,)
        A probability vector (non-negative, summing to 1).

    Returns
    -------
    accept : ndarray of shape (n,), float64
    alias : ndarray of shape (n,), int64
        Draw a column ``i`` uniformly, keep it with probability ``accept[i]``,
        else return ``alias[i]``.
    """
    n = probs.shape[0]
    scaled = probs * n
    accept = np.ones(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int64)
    small = list(np.flatnonzero(scaled < 1.0))
    large = list(np.flatnonzero(scaled >= 1.0))
    while small and large:
        s = small.pop()
        g = large.pop()
        accept[s] = scaled[s]
        alias[s] = g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        (small if scaled[g] < 1.0 else large).append(g)
    # Leftovers are 1 up to rounding error: they always accept themselves.
    return accept, alias


def _validate_probs(probs: np.ndarray) -> np.ndarray:
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 1 or probs.shape[0] == 0:
        raise ValueError(
            f"Noise probabilities must be a non-empty 1-D array; got shape {probs.shape}."
        )
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError("Noise probabilities must be finite and non-negative.")
    total = probs.sum()
    if total <= 0:
        raise ValueError("Noise probabilities sum to zero: give at least one positive weight.")
    return probs / total


class CategoricalNoise:
    """Noise over ``n_categories`` labels with given probabilities.

    Parameters
    ----------
    probs : array-like of shape (n_categories,)
        Non-negative weights, normalised to sum to one.

    Attributes
    ----------
    probs : ndarray of shape (n_categories,)
        The normalised probabilities.
    n_categories : int

    Examples
    --------
    >>> import torch
    >>> from sknce.noise import CategoricalNoise
    >>> noise = CategoricalNoise([0.5, 0.25, 0.25])
    >>> noise.sample((2, 3), generator=torch.Generator().manual_seed(0)).shape
    torch.Size([2, 3])
    >>> float(noise.log_prob(torch.tensor([0])).exp()[0])
    0.5
    """

    def __init__(self, probs) -> None:
        self.probs = _validate_probs(probs)
        self.n_categories = self.probs.shape[0]
        accept, alias = alias_tables(self.probs)
        # 8 bytes a category (float32 + int32): at 10^6 categories the random gathers
        # are memory-bound, so the narrower alias table is the faster one (figures in
        # benchmarks/README.md, "Figures moved out of the code").
        self._accept = torch.as_tensor(accept, dtype=torch.float32)
        self._alias = torch.as_tensor(alias, dtype=torch.int32)
        with np.errstate(divide="ignore"):
            self._log_probs = torch.as_tensor(np.log(self.probs), dtype=torch.float32)

    @property
    def device(self) -> torch.device:
        """The device the sampling tables live on."""
        return self._alias.device

    def to(self, device: str | torch.device) -> CategoricalNoise:
        """Move the tables to ``device`` (in place) and return ``self``.

        Parameters
        ----------
        device : str or torch.device
            Where :meth:`sample` draws and :meth:`log_prob` looks up, e.g. ``"cuda"``.

        Returns
        -------
        self
        """
        self._accept = self._accept.to(device)
        self._alias = self._alias.to(device)
        self._log_probs = self._log_probs.to(device)
        return self

    def sample(
        self, shape: tuple[int, ...], generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Draw category indices in O(1) per draw.

        Parameters
        ----------
        shape : tuple of int
            Shape of the returned tensor.
        generator : torch.Generator or None, default=None
            Source of randomness (on the tables' device); ``None`` uses torch's
            global generator.

        Returns
        -------
        LongTensor of shape ``shape``
        """
        columns, coins = self.alias_draws(shape, generator)
        return torch.where(coins < self._accept[columns], columns, self._alias[columns].long())

    def alias_draws(
        self, shape: tuple[int, ...], generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The uniform draws behind :meth:`sample`: for each draw a column of the alias
        tables and a coin; the draw is the column where its coin is below the column's
        ``accept``, else the column's ``alias`` (:attr:`tables`).

        Parameters
        ----------
        shape : tuple of int
            Shape of the draws.
        generator : torch.Generator or None, default=None
            As :meth:`sample`'s: the same generator state gives the draws it gives.

        Returns
        -------
        columns : LongTensor of shape ``shape``
        coins : Tensor of shape ``shape``, float32
        """
        columns = torch.randint(self.n_categories, shape, generator=generator, device=self.device)
        coins = torch.rand(shape, generator=generator, device=self.device)
        return columns, coins

    @property
    def tables(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``accept`` (float32), ``alias`` (int32) and ``log p_N`` (float32) of each
        category, on :attr:`device`: what :meth:`sample` and :meth:`log_prob` read."""
        return self._accept, self._alias, self._log_probs

    def log_prob(self, index: torch.Tensor) -> torch.Tensor:
        """Log-probability of each index (``-inf`` for zero-probability ones).

        Parameters
        ----------
        index : LongTensor of any shape
            Category indices, on the tables' device.

        Returns
        -------
        Tensor of the same shape, float32
        """
        return self._log_probs[index]


class UnigramNoise(CategoricalNoise):
    """Unigram noise: probabilities proportional to ``counts ** ns_exponent``.

    With ``ns_exponent=0.75`` this is word2vec's negative-sampling distribution;
    ``1.0`` is the empirical marginal, ``0.0`` uniform over seen categories.

    Parameters
    ----------
    counts : array-like of shape (n_categories,)
        Non-negative occurrence counts.
    ns_exponent : float, default=0.75
        The power applied to the counts.

    Attributes
    ----------
    counts : ndarray of shape (n_categories,)
    ns_exponent : float
    probs : ndarray of shape (n_categories,)
    """

    def __init__(self, counts, ns_exponent: float = 0.75) -> None:
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim != 1 or np.any(counts < 0) or not np.all(np.isfinite(counts)):
            raise ValueError("counts must be a 1-D array of finite, non-negative numbers.")
        self.counts = counts
        self.ns_exponent = float(ns_exponent)
        weights = np.where(counts > 0, counts, 0.0) ** self.ns_exponent
        weights[counts == 0] = 0.0
        super().__init__(weights)


class UniformNoise(CategoricalNoise):
    """Uniform noise over ``n_categories`` labels.

    Parameters
    ----------
    n_categories : int
        Number of labels; each has probability ``1 / n_categories``.
    """

    def __init__(self, n_categories: int) -> None:
        if int(n_categories) < 1:
            raise ValueError(f"n_categories must be at least 1, got {n_categories}.")
        self.n_categories = int(n_categories)
        self.probs = np.full(self.n_categories, 1.0 / self.n_categories)
        self._log_value = -math.log(self.n_categories)
        self._alias = torch.empty(0, dtype=torch.int32)
        self._accept = torch.empty(0)
        self._log_probs = torch.empty(0)

    def sample(
        self, shape: tuple[int, ...], generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Draw indices uniformly.

        Parameters
        ----------
        shape : tuple of int
            Shape of the returned tensor.
        generator : torch.Generator or None, default=None
            Source of randomness; ``None`` uses torch's global generator.

        Returns
        -------
        LongTensor of shape ``shape``
        """
        return torch.randint(self.n_categories, shape, generator=generator, device=self.device)

    @property
    def tables(self) -> None:
        """None: no alias tables, every category is drawn directly."""
        return None

    def log_prob(self, index: torch.Tensor) -> torch.Tensor:
        """Return ``-log(n_categories)`` for every index.

        Parameters
        ----------
        index : LongTensor of any shape
            Category indices.

        Returns
        -------
        Tensor of the same shape, float32
        """
        return torch.full(index.shape, self._log_value, device=index.device)


class GaussianMixtureNoise:
    r"""Continuous noise around observed targets, a mixture of Gaussians.

    :math:`p_N(\tilde y \mid y) = \sum_m w_m \, \mathcal{N}(\tilde y; y, \sigma_m^2)`,
    the proposal of Gustafsson et al. (2020) for training energy-based regression
    models with NCE.

    Parameters
    ----------
    scales : array-like of shape (n_components,)
        Standard deviations :math:`\sigma_m > 0`.
    weights : array-like of shape (n_components,) or None, default=None
        Mixture weights (uniform when ``None``).
    """

    def __init__(self, scales, weights=None) -> None:
        scales = np.atleast_1d(np.asarray(scales, dtype=np.float64))
        if scales.ndim != 1 or np.any(scales <= 0) or not np.all(np.isfinite(scales)):
            raise ValueError("scales must be a 1-D array of positive, finite numbers.")
        self.scales = scales
        self.weights = (
            np.full(scales.shape[0], 1.0 / scales.shape[0])
            if weights is None
            else _validate_probs(weights)
        )
        if self.weights.shape != self.scales.shape:
            raise ValueError("weights and scales must have the same length.")
        self._components = CategoricalNoise(self.weights)

    def sample(
        self,
        centers: torch.Tensor,
        n_samples: int,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Draw ``n_samples`` noise targets around each centre.

        Parameters
        ----------
        centers : Tensor of shape (batch,)
            The observed targets :math:`y` the noise is centred on.
        n_samples : int
            Number of noise targets drawn per centre.
        generator : torch.Generator or None, default=None
            Source of randomness; ``None`` uses torch's global generator.

        Returns
        -------
        Tensor of shape (batch, n_samples)
        """
        shape = (centers.shape[0], n_samples)
        component = self._components.sample(shape, generator=generator).to(centers.device)
        scales = torch.as_tensor(self.scales, dtype=centers.dtype, device=centers.device)
        eps = torch.randn(shape, generator=generator, dtype=centers.dtype, device=self.device)
        return centers.unsqueeze(1) + eps.to(centers.device) * scales[component]

    @property
    def device(self) -> torch.device:
        """The device of the component sampler."""
        return self._components.device

    def log_prob(self, samples: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
        """Log-density of ``samples`` (batch, n) under the mixture centred at ``centers``.

        Parameters
        ----------
        samples : Tensor of shape (batch, n)
            Noise targets, ``n`` per row.
        centers : Tensor of shape (batch,)
            The centre :math:`y` of each row's mixture.

        Returns
        -------
        Tensor of shape (batch, n)
        """
        scales = torch.as_tensor(self.scales, dtype=samples.dtype, device=samples.device)
        log_w = torch.as_tensor(np.log(self.weights), dtype=samples.dtype, device=samples.device)
        z = (samples - centers.unsqueeze(1)).unsqueeze(-1) / scales
        comp = -0.5 * z.square() - torch.log(scales) - 0.5 * math.log(2 * math.pi) + log_w
        return torch.logsumexp(comp, dim=-1)


def remove_accidental_hits(
    neg_scores: torch.Tensor,
    positive_ids: torch.Tensor,
    negative_ids: torch.Tensor,
) -> torch.Tensor:
    """Drop sampled negatives that equal the positive, as TensorFlow's
    ``tf.nn.compute_accidental_hits`` + ``remove_accidental_hits`` do.

    The score of every negative equal to its row's positive becomes ``-inf``,
    which every loss in :mod:`sknce.losses` treats as an absent negative (zero
    contribution, zero gradient).

    Parameters
    ----------
    neg_scores : Tensor of shape (batch, K)
        Scores of the sampled negatives.
    positive_ids : LongTensor of shape (batch,)
        The positive (true) label of each row.
    negative_ids : LongTensor of shape (batch, K)
        The sampled negative labels, aligned with ``neg_scores``.

    Returns
    -------
    Tensor of shape (batch, K)
    """
    hits = negative_ids == positive_ids.unsqueeze(1)
    return neg_scores.masked_fill(hits, float("-inf"))
