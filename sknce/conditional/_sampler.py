"""Samplers of the conditional NCE family: noise labels and noise targets for each example.

* :class:`LabelSampler` draws ``K`` labels per example (or one set of ``K`` for
  the whole batch) from a noise distribution over the classes (Ma & Collins, 2018,
  Figure 1), with their ``log p_N``; for multi-label data an example is a (row,
  positive label) pair, and the row's other positives are masked out of its noise;
* :class:`TargetSampler` draws ``K`` targets per example from a Gaussian mixture
  centred at the observed target (Gustafsson et al., 2020), with their log-density.
"""

from __future__ import annotations

import numpy as np
import torch

from sknce._data import Batch, rows_to_tensor, to_device
from sknce._random import torch_generator
from sknce.noise import CategoricalNoise, GaussianMixtureNoise

__all__ = ["LabelSampler", "TargetSampler"]


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
    anchors : ndarray of shape (n_examples,) or None, default=None
        Multi-label data: the row of ``X`` of each example, ``y`` then holding one
        positive label per example (a row with ``m`` positives is ``m`` examples).
        ``None``: example ``i`` is row ``i``.
    positives : LongTensor of shape (n_samples, max_positives) or None, default=None
        With ``anchors``: the positive labels of each row of ``X``, padded with -1.
        A noise label among its row's positives is masked (``targets["neg_mask"]``),
        and each example's negatives carry ``neg_weights`` ``1 / m``, its share of
        the row's negative term (see :func:`sknce.losses.one_vs_all_nce`).
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
        anchors: np.ndarray | None = None,
        positives: torch.Tensor | None = None,
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
        self.pairs = anchors is not None
        if self.pairs:
            # named as the latent-class sampler's: WeightedSampler weighs a pair by its row
            self.anchors = anchors
            self._anchors = torch.as_tensor(anchors, dtype=torch.int64).to(device)
            self.positives = positives.to(device)
            self._share = 1.0 / (self.positives >= 0).sum(dim=1).clamp(min=1)

    def __len__(self) -> int:
        return len(self.anchors) if self.pairs else self.X.shape[0]

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
        if not self.pairs:
            x = rows_to_tensor(self.X, rows, self.device)
        else:
            x = rows_to_tensor(self.X, self.anchors[rows], self.device)
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
            if self.pairs:
                owners = self._anchors[index]
                targets["neg_mask"] = self._not_positive(negatives, owners, n)
                targets["neg_weights"] = (
                    self._share[owners].unsqueeze(1).expand(n, self.n_negatives)
                )
            elif self.remove_hits:
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

    def _not_positive(self, negatives: torch.Tensor, owners: torch.Tensor, n: int) -> torch.Tensor:
        """``(batch, K)``: True where a noise label is none of its example's row's positives."""
        drawn = negatives.expand(n, -1) if negatives.dim() == 1 else negatives
        hits = drawn.unsqueeze(2) == self.positives[owners].unsqueeze(1)
        return ~hits.any(dim=2)


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
        targets = {
            "pos_log_noise": self.noise.log_prob(y.unsqueeze(1), y).squeeze(1),
            "neg_log_noise": self.noise.log_prob(noise_y, y),
        }
        inputs = {
            "x": rows_to_tensor(self.X, rows, self.device),
            "y": y.to(self.device),
            "noise_y": noise_y.to(self.device),
        }
        return Batch(inputs, {k: v.to(self.device) for k, v in targets.items()}, size=len(rows))
