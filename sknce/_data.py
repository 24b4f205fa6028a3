"""Batching of sparse and dense inputs without densifying them whole.

skorch's default dataset densifies CSR rows one at a time; sknce's datasets
instead receive a whole batch of row indices (``__getitems__``), slice the
matrix once and hand the network a sparse COO tensor or a dense block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset

__all__ = ["BatchDataset", "as_csr_or_dense", "passthrough_collate", "rows_to_tensor"]


def as_csr_or_dense(X, dtype=np.float32):
    """Return ``X`` as a float CSR matrix (if sparse) or a C-contiguous array.

    skorch and torch need CSR (not ``csr_array``, COO or CSC), and torch needs
    writeable memory (read-only memmaps warn).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=dtype)
        if not X.has_canonical_format:
            # Sorted, duplicate-free indices let batches skip torch's coalescing.
            X = X.copy()
            X.sum_duplicates()
        return X
    return np.require(X, dtype=dtype, requirements=["C", "W"])


def rows_to_tensor(X, rows: Sequence[int] | np.ndarray | slice, device="cpu") -> torch.Tensor:
    """Slice ``rows`` of a CSR matrix or array into a sparse or dense tensor."""
    block = X[rows]
    if sp.issparse(block):
        return csr_to_tensor(block, device=device)
    return torch.from_numpy(np.ascontiguousarray(block)).to(device)


def csr_to_tensor(block: sp.csr_matrix, device="cpu") -> torch.Tensor:
    """Convert a CSR block into a coalesced-order sparse COO tensor."""
    coo = block.tocoo()
    indices = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(coo.data.astype(np.float32, copy=False))
    return torch.sparse_coo_tensor(
        indices, values, size=coo.shape, check_invariants=False, is_coalesced=True
    ).to(device)


def passthrough_collate(batch):
    """Collate function for :class:`BatchDataset`: the batch is already built."""
    return batch


class BatchDataset(Dataset):
    """A map-style dataset whose batches are built in one call per batch.

    The DataLoader hands ``__getitems__`` the whole list of indices of a batch
    (torch >= 2.0), so ``make_batch`` can slice a sparse matrix once and draw
    the batch's negatives in vectorised form. Use it with
    ``collate_fn=passthrough_collate``.

    Parameters
    ----------
    n_samples : int
        Number of examples (rows) the dataset indexes.
    make_batch : callable
        ``make_batch(indices: ndarray) -> (X_batch, y_batch)`` where ``X_batch``
        is a dict of tensors passed to the module as keyword arguments and
        ``y_batch`` is ``None`` or a tensor.
    """

    def __init__(self, n_samples: int, make_batch: Callable) -> None:
        self.n_samples = int(n_samples)
        self.make_batch = make_batch

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, index: int):
        return self.make_batch(np.asarray([index]))

    def __getitems__(self, indices):
        return self.make_batch(np.asarray(indices))
