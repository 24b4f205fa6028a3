"""Tuples (x, x+, x-_1..x-_k) of the latent-class model, Awasthi et al. (2022), Section 2.

An anchor ``x`` and its positive ``x+`` are two distinct points of one latent
class; the ``k`` negatives are points of the marginal, whatever their class
(collisions with the anchor's class are allowed, as in the theory).
"""

from __future__ import annotations

import numpy as np
import torch

from sknce._data import Batch, rows_to_tensor

__all__ = ["LatentClassSampler", "encode_groups"]


def encode_groups(y) -> tuple[np.ndarray, np.ndarray]:
    """Group ids as integer codes ``0..C-1``, and the sorted distinct ids."""
    groups, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.ravel(), groups


class LatentClassSampler:
    """Builds batches of latent-class tuples (the family's sampler).

    The dataset's indices enumerate the *anchors*: the points whose class has at
    least two members. The positive of an anchor is another point of its class,
    drawn uniformly, so positives are marginal draws over those classes too.

    Negatives come from one of two sources:

    * ``"batch"``: the batch's other encoded points (its anchors and positives,
      ``2B - 2`` of them besides the anchor's own pair), drawn with replacement.
      No extra forward pass is needed; gathering costs O(B k d). Used when
      ``n_negatives`` <= ``2B - 2``;
    * ``"marginal"`` (or a batch too small for the above): ``k`` points drawn
      uniformly from all rows of ``X``, encoded separately (exact sampling).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
        Float32 features (sliced per batch, never densified whole).
    codes : ndarray of shape (n_samples,)
        Latent-class code of each row.
    n_negatives : int
    negatives : {"batch", "marginal"}
    exclude_collisions : bool
        Mask negatives of the anchor's class.
    device : str
    """

    def __init__(
        self,
        X,
        codes: np.ndarray,
        n_negatives: int,
        negatives: str,
        exclude_collisions: bool,
        device: str,
    ) -> None:
        self.X = X
        self.codes = codes
        self.n_negatives = n_negatives
        self.negatives = negatives
        self.exclude_collisions = exclude_collisions
        self.device = device
        sizes = np.bincount(codes)
        self.order = np.argsort(codes, kind="stable")
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.sizes = sizes
        rank = np.empty(len(codes), dtype=np.int64)
        rank[self.order] = np.arange(len(codes)) - self.starts[codes[self.order]]
        self.rank = rank
        self.anchors = np.flatnonzero(sizes[codes] >= 2)

    def __len__(self) -> int:
        return len(self.anchors)

    def positives(self, anchors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniformly drawn other member of each anchor's class."""
        c = self.codes[anchors]
        size = self.sizes[c]
        shift = rng.integers(1, size)  # 1..size-1: never the anchor itself
        return self.order[self.starts[c] + (self.rank[anchors] + shift) % size]

    def _batch_negatives(self, n_anchors: int, rng: np.random.Generator) -> np.ndarray:
        """Indices into the 2B encoded rows, excluding each anchor's own anchor and positive."""
        draws = rng.integers(0, 2 * n_anchors - 2, size=(n_anchors, self.n_negatives))
        own = np.arange(n_anchors)[:, None]
        draws = draws + (draws >= own)  # skip the anchor (row i)
        return draws + (draws >= own + n_anchors)  # skip its positive (row B + i)

    def __call__(self, idx: np.ndarray, rng: np.random.Generator) -> Batch:
        """The batch of anchors ``idx`` (indices into the anchors), drawn from ``rng``."""
        anchors = self.anchors[np.asarray(idx)]
        n_anchors = len(anchors)
        positives = self.positives(anchors, rng)
        batch = {
            "x": rows_to_tensor(self.X, anchors, self.device),
            "x_pos": rows_to_tensor(self.X, positives, self.device),
        }
        if self.negatives == "batch" and self.n_negatives <= 2 * n_anchors - 2:
            neg_index = self._batch_negatives(n_anchors, rng)
            neg_rows = np.concatenate([anchors, positives])[neg_index]
            batch["neg_index"] = torch.as_tensor(neg_index, device=self.device)
        else:
            neg_rows = rng.integers(0, len(self.codes), size=(n_anchors, self.n_negatives))
            block = self.X[neg_rows.T.ravel()]  # negative j of every anchor, j = 0..k-1
            batch["x_neg"] = [
                rows_to_tensor(block, slice(j * n_anchors, (j + 1) * n_anchors), self.device)
                for j in range(self.n_negatives)
            ]
        targets = None
        if self.exclude_collisions:
            mask = self.codes[neg_rows] != self.codes[anchors][:, None]
            targets = {"neg_mask": torch.as_tensor(mask, device=self.device)}
        return Batch(batch, targets, size=n_anchors)
