"""Tuples (x, x+, x-_1..x-_k) of the latent-class model, Awasthi et al. (2022), Section 2.

An anchor ``x`` and its positive ``x+`` are two distinct points of one latent
class; the ``k`` negatives are points of the marginal, whatever their class
(collisions with the anchor's class are allowed, as in the theory).
"""

from __future__ import annotations

import numpy as np

from sknce._data import Batch, SampledDataset, rows_to_tensor, to_device
from sknce._validation import check_sortable_labels

__all__ = ["LatentClassDataset", "LatentClassSampler", "encode_groups"]


def encode_groups(y) -> tuple[np.ndarray, np.ndarray]:
    """Group ids as integer codes ``0..C-1``, and the sorted distinct ids."""
    groups, codes = np.unique(check_sortable_labels(y), return_inverse=True)
    return codes.ravel(), groups


class LatentClassSampler:
    """Builds batches of latent-class tuples (the family's sampler).

    The dataset's indices enumerate the *anchors*: by default the points of the
    ``pool`` whose class has at least two members there. The positive of an
    anchor is another pool point of its class, drawn uniformly, so positives are
    marginal draws over those classes too.

    Negatives come from one of two sources:

    * ``"batch"``: the batch's other encoded points (its anchors and positives,
      ``2B - 2`` of them besides the anchor's own pair), drawn with replacement.
      No extra forward pass is needed; gathering costs O(B k d). Used when
      ``n_negatives`` <= ``2B - 2``;
    * ``"marginal"`` (or a batch too small for the above): ``k`` points drawn
      uniformly from the pool, encoded separately (exact sampling).

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
        Float32 features (sliced per batch, never densified whole).
    codes : ndarray of shape (n_samples,)
        Latent-class code of each row.
    n_negatives : int
        Negatives ``k`` per anchor.
    negatives : {"batch", "marginal"}
        Where the negatives come from (see above).
    exclude_collisions : bool
        Mask negatives of the anchor's class.
    device : str
        Device of the batch's tensors.
    pool : ndarray of int or None, default=None
        Sorted rows that positives and marginal negatives are drawn from; ``None``:
        all rows.
    anchors : ndarray of int or None, default=None
        Rows used as anchors; each needs a pool point of its class other than
        itself. ``None``: the pool points of classes with two or more pool points.
    """

    def __init__(
        self,
        X,
        codes: np.ndarray,
        n_negatives: int,
        negatives: str,
        exclude_collisions: bool,
        device: str,
        *,
        pool: np.ndarray | None = None,
        anchors: np.ndarray | None = None,
    ) -> None:
        self.X = X
        self.codes = codes
        self.n_negatives = n_negatives
        self.negatives = negatives
        self.exclude_collisions = exclude_collisions
        self.device = device
        self.pool = np.arange(len(codes)) if pool is None else np.asarray(pool)
        sizes = np.bincount(codes[self.pool], minlength=int(codes.max(initial=-1)) + 1)
        self.order = self.pool[np.argsort(codes[self.pool], kind="stable")]
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.sizes = sizes
        rank = np.full(len(codes), -1, dtype=np.int64)  # -1: not in the pool
        rank[self.order] = np.arange(len(self.order)) - self.starts[codes[self.order]]
        self.rank = rank
        if anchors is None:
            anchors = self.pool[sizes[codes[self.pool]] >= 2]
        self.anchors = np.asarray(anchors)

    def __len__(self) -> int:
        return len(self.anchors)

    def positives(self, anchors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniformly drawn pool point of each anchor's class, never the anchor itself."""
        c = self.codes[anchors]
        size = self.sizes[c]
        rank = self.rank[anchors]
        in_pool = rank >= 0
        # 1..size-1 steps past a pool anchor (never itself); any of the size for others.
        shift = rng.integers(in_pool.astype(np.int64), size)
        return self.order[self.starts[c] + np.where(in_pool, (rank + shift) % size, shift)]

    def held_out(self, fraction: float, rng: np.random.Generator) -> np.ndarray:
        """Sorted anchors to hold out for validation: ``ceil(fraction * n_anchors)`` at most.

        They are drawn at random first among the points whose class keeps two
        training points without them, then among those whose class keeps one
        (a positive for the held-out anchors); at least one class keeps a pair.
        """
        anchors = self.anchors
        codes = self.codes[anchors]
        key = rng.random(len(anchors))
        order = np.lexsort((key, codes))
        sorted_codes = codes[order]
        rank = np.empty(len(anchors), dtype=np.int64)
        rank[order] = np.arange(len(anchors)) - np.searchsorted(sorted_codes, sorted_codes)
        left = np.bincount(codes, minlength=len(self.sizes))[codes] - 1 - rank
        tier = np.where(left >= 2, 0, np.where(left == 1, 1, 2))  # 2: never held out
        ranked = np.lexsort((key, tier))
        pairs_lost = np.cumsum(tier[ranked] == 1)  # classes left with one training point
        usable = (tier[ranked] < 2) & (pairs_lost < len(np.unique(codes)))
        n_valid = min(int(np.ceil(fraction * len(anchors))), int(usable.sum()))
        return np.sort(anchors[ranked[:n_valid]])

    def restricted(self, pool: np.ndarray, anchors: np.ndarray | None = None):
        """This sampler on the rows ``pool`` (positives, marginal negatives) and ``anchors``."""
        return LatentClassSampler(
            self.X,
            self.codes,
            self.n_negatives,
            self.negatives,
            self.exclude_collisions,
            self.device,
            pool=pool,
            anchors=anchors,
        )

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
            batch["neg_index"] = to_device(neg_index, self.device)
        else:
            draws = rng.integers(0, len(self.pool), size=(n_anchors, self.n_negatives))
            neg_rows = self.pool[draws]
            block = self.X[neg_rows.T.ravel()]  # negative j of every anchor, j = 0..k-1
            batch["x_neg"] = [
                rows_to_tensor(block, slice(j * n_anchors, (j + 1) * n_anchors), self.device)
                for j in range(self.n_negatives)
            ]
        targets = None
        if self.exclude_collisions:
            mask = self.codes[neg_rows] != self.codes[anchors][:, None]
            targets = {"neg_mask": to_device(mask, self.device)}
        return Batch(batch, targets, size=n_anchors)


class LatentClassDataset(SampledDataset):
    """The anchors of a :class:`LatentClassSampler`, split by holding out whole points.

    Holding out anchors alone would leave the held-out points in training as
    positives and negatives of the other anchors, so the validation loss would
    measure points the network was trained on. Here the held-out points
    (:meth:`LatentClassSampler.held_out`) leave the training tuples entirely; the
    validation tuples take their positives and marginal negatives from the
    training points.

    Parameters
    ----------
    sampler : LatentClassSampler
        The sampler of all the fit's points.
    """

    def __init__(self, sampler: LatentClassSampler) -> None:
        super().__init__(sampler)

    def split(self, fraction: float, rng: np.random.Generator):
        """Training and validation datasets, ``ceil(fraction * n)`` anchors held out at most."""
        sampler = self.sampler
        held = sampler.held_out(fraction, rng)
        pool = np.setdiff1d(sampler.pool, held, assume_unique=True)
        return (
            LatentClassDataset(sampler.restricted(pool)),
            LatentClassDataset(sampler.restricted(pool, anchors=held)),
        )
