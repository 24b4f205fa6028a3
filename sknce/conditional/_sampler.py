"""Samplers of the conditional NCE family: noise labels and noise targets for each example.

* :class:`LabelSampler` draws ``K`` labels per example (or one set of ``K`` for
  the whole batch) from a noise distribution over the classes (Ma & Collins, 2018,
  Figure 1), with their ``log p_N``;
* :class:`LabelSetSampler` does the same for multi-label data, where an example is a
  row with its set of positive labels, and the row's positives are excluded from its
  noise;
* :class:`TargetSampler` draws ``K`` targets per example from a Gaussian mixture
  centred at the observed target (Gustafsson et al., 2020), with their log-density.
"""

from __future__ import annotations

import numpy as np
import torch

from sknce._data import Batch, rows_to_tensor, to_device
from sknce._jit import njit
from sknce._random import torch_generator
from sknce.noise import CategoricalNoise, GaussianMixtureNoise

__all__ = ["LabelSampler", "LabelSetSampler", "TargetSampler"]


class LabelSampler:
    """Batches of inputs, their labels and noise labels.

    The labels, the noise tables and every draw stay on ``device``: building a
    batch copies only its rows of ``X`` and their indices to the device (the
    indices without waiting for it), and never reads a value back to the host.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features), float32
        The inputs.
    y : LongTensor of shape (n_samples,)
        Encoded labels ``0..n_classes-1`` (moved to ``device`` once).
    noise : CategoricalNoise
        The noise :math:`p_N` over the labels, on ``device``.
    n_negatives : int
        Noise labels ``K`` per example; 0 draws none (the full softmax).
    n_norm_samples : int
        Noise labels per example for the self-normalisation penalty (0: none).
    remove_hits : bool
        Mask noise labels equal to the example's label (``targets["neg_mask"]``).
    device : str
        Where the batches are built.
    shared : bool, default=False
        Draw one set of ``K`` noise labels (and of ``n_norm_samples``) for the whole
        batch, of shape ``(K,)``, instead of ``(batch, K)``: the scorer scores them
        with one matrix product. Each example still meets ``K`` labels drawn i.i.d.
        from :math:`p_N`, so its objective and its correction are unchanged.
    exhaustive : bool, default=False
        Every class is each example's noise, once (a shared ``(n_classes,)`` set, its
        own label masked, every ``log p_N`` 0): the ranking loss is then exactly the
        softmax cross-entropy. ``n_negatives`` and ``shared`` are ignored.
    """

    def __init__(
        self,
        X,
        y: torch.Tensor,
        noise: CategoricalNoise,
        n_negatives: int,
        n_norm_samples: int,
        remove_hits: bool,
        device: str,
        shared: bool = False,
        exhaustive: bool = False,
    ) -> None:
        self.X = X
        self.y = y.to(device)
        self.noise = noise
        self.n_negatives = n_negatives
        self.n_norm_samples = n_norm_samples
        self.remove_hits = remove_hits
        self.device = device
        self.shared = shared
        self.exhaustive = exhaustive

    def __len__(self) -> int:
        return self.X.shape[0]

    def _draw(self, n: int, k: int, generator: torch.Generator):
        """Noise labels, ``(n, k)`` or shared ``(k,)``, and their ``log p_N`` as ``(n, k)``."""
        ids = self.noise.sample((k,) if self.shared else (n, k), generator=generator)
        log_noise = self.noise.log_prob(ids)
        if self.shared:
            log_noise = log_noise.expand(n, k)  # a view: the same K corrections for every row
        return ids, log_noise

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        index = to_device(np.asarray(rows, dtype=np.int64), self.device)
        labels = self.y[index]
        n = len(rows)
        x = rows_to_tensor(self.X, rows, self.device)
        if not self.n_negatives:
            inputs, targets = {"x": x}, {"labels": labels}
        else:
            inputs, targets = {"x": x, "labels": labels}, {}
        if self.exhaustive:
            return self._every_class(inputs, targets, labels, n)
        generator = torch_generator(rng, self.noise.device)
        if self.n_negatives:
            negatives, targets["neg_log_noise"] = self._draw(n, self.n_negatives, generator)
            inputs["negatives"] = negatives
            targets["pos_log_noise"] = self.noise.log_prob(labels)
            if self.remove_hits:
                # (batch, K) in both forms: a shared (K,) set broadcasts against each label.
                targets["neg_mask"] = negatives != labels.unsqueeze(1)
        if self.n_norm_samples:
            inputs["norm"], targets["norm_log_noise"] = self._draw(
                n, self.n_norm_samples, generator
            )
        return Batch(inputs, targets, size=n)

    def _every_class(self, inputs: dict, targets: dict, labels: torch.Tensor, n: int) -> Batch:
        """The batch of :attr:`exhaustive`: every class a negative, the label's masked."""
        every = torch.arange(self.noise.n_categories, device=labels.device)
        inputs["negatives"] = every
        # Any constant log p_N cancels in the ranking loss; 0 keeps scores as they are.
        targets["neg_log_noise"] = torch.zeros(1, 1, device=labels.device).expand(n, len(every))
        targets["pos_log_noise"] = torch.zeros(n, device=labels.device)
        targets["neg_mask"] = every != labels.unsqueeze(1)
        return Batch(inputs, targets, size=n)


class LabelSetSampler:
    """Batches of multi-label rows: their inputs, positive labels and noise labels.

    An example is a row of ``X`` with its set of positive labels (the row's nonzero
    columns of the indicator ``Y``, none for an unlabelled row). Its ``K`` noise
    labels are drawn from :math:`p_N` and those among the row's positives are
    excluded from its noise (``targets.neg_mask``), so that the sampled one-vs-all
    loss (:func:`sknce.losses.multilabel_one_vs_all`) estimates the sum over the
    row's non-positive labels. The positives are padded to the batch's largest label
    set (``targets.pos_mask``).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features), float32
        The inputs.
    Y : csr_matrix of shape (n_samples, n_classes)
        The label indicator: sorted, without duplicates or explicit zeros.
    noise : CategoricalNoise
        The noise :math:`p_N` over the labels, on ``device``.
    n_negatives : int
        Noise labels ``K`` per row.
    device : str
        Where the batches are built.
    shared : bool, default=False
        Draw one set of ``K`` noise labels for the whole batch, of shape ``(K,)``.
    """

    def __init__(
        self,
        X,
        Y,
        noise: CategoricalNoise,
        n_negatives: int,
        device: str,
        shared: bool = False,
    ) -> None:
        self.X = X
        self.device = device
        # each row's noise: K draws of its own, or one set of K shared by the batch
        self.noise, self.n_negatives, self.shared = noise, n_negatives, shared
        self.n_classes = Y.shape[1]
        self.indptr = Y.indptr.astype(np.int64)
        # a padding slot reads the sentinel after the last label
        self.indices = np.append(Y.indices.astype(np.int64), 0)
        # (row, label) pairs as sorted keys row * n_classes + label: a drawn label is a
        # positive of its row when its key is among them
        rows = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(self.indptr))
        self._keys = to_device(rows * self.n_classes + self.indices[:-1], device)

    def __len__(self) -> int:
        return self.X.shape[0]

    def positives(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The positive labels of ``rows``, ``(n, P)`` padded with 0, and the ``(n, P)``
        mask of the real ones (``P``: the largest set among them, at least 1)."""
        first = self.indptr[rows]
        counts = self.indptr[rows + 1] - first
        width = max(int(counts.max(initial=0)), 1)
        mask = np.arange(width) < counts[:, None]
        slots = np.where(mask, first[:, None] + np.arange(width), len(self.indices) - 1)
        return self.indices[slots], mask

    def _not_positive(
        self, negatives: torch.Tensor, rows: np.ndarray, positives: np.ndarray, counts: np.ndarray
    ) -> torch.Tensor:
        """``(n, K)``: True where a noise label is none of its row's positives.

        On the CPU a compiled scan of each row's positives; on another device a sorted
        search of the (row, label) keys, where the draws are.
        """
        if negatives.device.type == "cpu":
            return torch.from_numpy(_outside(negatives.numpy(), positives, counts))
        rows = to_device(rows, self.device)
        return _outside_keys(self._keys, rows, negatives, self.n_classes)

    def _noise(
        self, rows: np.ndarray, positives: np.ndarray, counts: np.ndarray, generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The noise labels of ``rows``, ``(n, K)`` or shared ``(K,)``, their ``(n, K)``
        ``log p_N`` and the ``(n, K)`` mask of those that are none of the row's positives.

        Own draws from alias tables on the CPU are looked up, scored and checked in one
        compiled pass over the sampler's uniform draws: the draws and values of
        ``noise.sample``, ``noise.log_prob`` and :meth:`_not_positive`, to the bit.
        """
        n, k = len(rows), self.n_negatives
        noise, tables = self.noise, self.noise.tables
        if not self.shared and tables is not None and noise.device.type == "cpu":
            columns, coins = noise.alias_draws((n, k), generator)
            drawn = _draw_outside(
                columns.numpy(), coins.numpy(), *(t.numpy() for t in tables), positives, counts
            )
            return tuple(torch.from_numpy(a) for a in drawn)
        negatives = noise.sample((k,) if self.shared else (n, k), generator=generator)
        neg_log_noise = noise.log_prob(negatives)
        if self.shared:
            neg_log_noise = neg_log_noise.expand(n, k)
        return negatives, neg_log_noise, self._not_positive(negatives, rows, positives, counts)

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        rows = np.asarray(rows, dtype=np.int64)
        positives, pos_mask = self.positives(rows)
        generator = torch_generator(rng, self.noise.device)
        negatives, neg_log_noise, neg_mask = self._noise(
            rows, positives, pos_mask.sum(axis=1), generator
        )
        inputs = {
            "x": rows_to_tensor(self.X, rows, self.device),
            "labels": to_device(positives, self.device),
            "negatives": negatives,
        }
        targets = {
            "pos_mask": to_device(pos_mask, self.device),
            "neg_log_noise": neg_log_noise,
            "neg_mask": neg_mask,
        }
        return Batch(inputs, targets, size=len(rows))


class TargetSampler:
    """Batches of inputs, their (standardised) targets and noise targets around them.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features), float32
    y : Tensor of shape (n_samples,), float32
    noise : GaussianMixtureNoise
    n_negatives : int
    device : str
    """

    def __init__(
        self, X, y: torch.Tensor, noise: GaussianMixtureNoise, n_negatives: int, device: str
    ) -> None:
        self.X = X
        self.y = y
        self.noise = noise
        self.n_negatives = n_negatives
        self.device = device

    def __len__(self) -> int:
        return self.X.shape[0]

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        y = self.y[to_device(np.asarray(rows, dtype=np.int64), self.y.device)]
        noise_y = self.noise.sample(
            y, self.n_negatives, generator=torch_generator(rng, self.noise.device)
        )
        # The observed and the noise targets in one call: the same values per element.
        log_noise = self.noise.log_prob(torch.cat([y.unsqueeze(1), noise_y], dim=1), y)
        targets = {"pos_log_noise": log_noise[:, 0], "neg_log_noise": log_noise[:, 1:]}
        inputs = {
            "x": rows_to_tensor(self.X, rows, self.device),
            "y": y.to(self.device),
            "noise_y": noise_y.to(self.device),
        }
        return Batch(inputs, {k: v.to(self.device) for k, v in targets.items()}, size=len(rows))


@njit(cache=True)
def _outside(negatives: np.ndarray, positives: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``(n, K)``: whether each of row ``i``'s noise labels (``negatives[i]``, or the
    shared ``(K,)`` set) is none of its first ``counts[i]`` ``positives[i]``."""
    n = positives.shape[0]
    k = negatives.shape[-1]
    out = np.ones((n, k), dtype=np.bool_)
    flat = negatives.reshape(-1, k)
    for i in range(n):
        drawn = flat[0] if flat.shape[0] == 1 else flat[i]
        for j in range(k):
            for p in range(counts[i]):
                if positives[i, p] == drawn[j]:
                    out[i, j] = False
                    break
    return out


@njit(cache=True)
def _draw_outside(columns, coins, accept, alias, log_probs, positives, counts):
    """The alias draws of ``(n, K)`` uniform ``columns`` and ``coins`` (a column where
    its coin is below its ``accept``, else its ``alias``), their ``log_probs`` and
    whether each is none of its row's first ``counts[i]`` ``positives[i]``."""
    n, k = columns.shape
    drawn = np.empty((n, k), dtype=np.int64)
    log_noise = np.empty((n, k), dtype=log_probs.dtype)
    for i in range(n):
        for j in range(k):
            column = columns[i, j]
            drawn[i, j] = column if coins[i, j] < accept[column] else alias[column]
            log_noise[i, j] = log_probs[drawn[i, j]]
    return drawn, log_noise, _outside(drawn, positives, counts)


def _outside_keys(
    keys: torch.Tensor, rows: torch.Tensor, negatives: torch.Tensor, n_classes: int
) -> torch.Tensor:
    """``(n, K)``: whether each noise label of row ``rows[i]`` (``negatives[i]``, or the
    shared ``(K,)`` set) is none of its positives, given as the sorted ``keys``
    ``row * n_classes + label`` of every (row, positive) pair."""
    drawn = rows.unsqueeze(1) * n_classes + negatives
    if not keys.numel():
        return torch.ones_like(drawn, dtype=torch.bool)
    found = torch.searchsorted(keys, drawn).clamp(max=keys.numel() - 1)
    return keys[found] != drawn
