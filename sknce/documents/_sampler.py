"""Positive and negative pairs of document halves, the contrastive task of Tosh et al. (2021).

A positive pair is the two halves of one document (split afresh at every draw,
see :func:`~sknce.documents.split_documents`); a negative pair joins a
document's first half with the second half of another document of the batch.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sknce._bags import normalize_bags
from sknce._data import Batch, csr_to_tensor, to_device
from sknce.documents._split import split_documents

__all__ = ["DocumentPairSampler"]


class DocumentPairSampler:
    """Builds batches of split documents and their negative partners.

    Document ``i`` of a batch gives the positive pair ``(x1[i], x2[i])`` and
    ``n_negatives`` negative pairs ``(x1[i], x2[partners[i, j]])``, the partners
    drawn uniformly among the other documents of the batch. A batch of a single
    document draws its partners from the whole training matrix instead (their
    second halves are appended to ``x2``), so any batch size works.

    Parameters
    ----------
    X : csr_matrix of shape (n_documents, n_words)
        Integer word counts; every row has at least two tokens.
    split : {"both", "partition", "resample", "word"}
    bag : {"log1p-idf", "tf", "log1p", "counts"}
        Representation of each half fed to the scorer
        (:func:`~sknce.documents._split.normalize_bags`).
    n_negatives : int
    device : str
    idf : ndarray of shape (n_words,) or None, default=None
        Inverse document frequencies of the fit, for ``bag="log1p-idf"``.
    """

    def __init__(
        self,
        X: sp.csr_matrix,
        split: str,
        bag: str,
        n_negatives: int,
        device: str,
        idf: np.ndarray | None = None,
    ) -> None:
        self.X = X
        self.split = split
        self.bag = bag
        self.n_negatives = n_negatives
        self.device = device
        self.idf = idf

    def __len__(self) -> int:
        return self.X.shape[0]

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        n = len(rows)
        if n < 2:
            extra = rng.choice(np.setdiff1d(np.arange(len(self)), rows), self.n_negatives)
            rows = np.concatenate([rows, extra])
        block = self.X[rows]
        first, second = split_documents(block, self.split, rng)
        b = block.shape[0]
        partners = (np.arange(n)[:, None] + rng.integers(1, b, size=(n, self.n_negatives))) % b
        inputs = {
            "x1": csr_to_tensor(normalize_bags(first[:n], self.bag, self.idf), self.device),
            "x2": csr_to_tensor(normalize_bags(second, self.bag, self.idf), self.device),
            "partners": to_device(partners, self.device),
        }
        return Batch(inputs, None, size=n)
