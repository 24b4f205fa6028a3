"""Training data as batches drawn by a sampler, without densifying sparse inputs.

A *sampler* (one per estimator family) turns the rows of a batch into a
:class:`Batch`: the inputs of the scorer (positives and negatives already drawn)
and the targets of the NCE objective (the noise's log-probabilities, masks,
weights). A :class:`SampledDataset` holds the rows a sampler draws from, splits
them into training and validation rows, and yields an epoch's batches from a
given numpy Generator, so the training engine decides which random stream each
epoch uses. A :class:`ChunkedDataset` does the same over a stream of chunks
larger than memory, one chunk in memory at a time.

Both take ``shard=(rank, n_processes)`` in ``batches``: in data-parallel training
every process draws the same permutation and keeps its share of it, padded as
:class:`torch.utils.data.DistributedSampler` pads, so that every process takes
the same number of steps, and draws its negatives from a stream of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np
import scipy.sparse as sp
import torch
from torch.utils.data import Dataset

from sknce._jit import njit

__all__ = [
    "Batch",
    "Targets",
    "ChunkedDataset",
    "SampledDataset",
    "Sampler",
    "as_csr_or_dense",
    "check_batch",
    "check_stream_pass",
    "chunk_errors",
    "first_chunk",
    "csr_to_tensor",
    "is_chunk_stream",
    "process_stream",
    "rows_to_tensor",
    "restartable",
    "scan_chunks",
    "shard_rows",
    "to_device",
]


def as_csr_or_dense(X, dtype=np.float32):
    """Return ``X`` as a float CSR matrix (if sparse) or a C-contiguous array.

    torch needs CSR (not ``csr_array``, COO or CSC) and writeable memory
    (read-only memmaps warn). Duplicate entries of a non-canonical CSR are summed.
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=dtype)
        if not X.has_canonical_format:
            # Sorted, duplicate-free indices let batches skip torch's coalescing.
            X = X.copy()
            X.sum_duplicates()
        return X
    return np.require(X, dtype=dtype, requirements=["C", "W"])


def to_device(data: np.ndarray | torch.Tensor, device="cpu") -> torch.Tensor:
    """A host array or tensor on ``device``, copied without making the host wait.

    A copy from ordinary (pageable) host memory to a GPU first waits for the work
    queued on the device, so a batch built on the host would stall every step.
    From page-locked memory the copy is queued like a kernel and the host goes on
    building the next batch; torch keeps the page-locked buffer until the copy
    has run. On the CPU the tensor is returned as it is (an array is wrapped).
    """
    tensor = torch.as_tensor(data)
    target = torch.device(device)
    if target.type != "cuda" or tensor.device.type != "cpu":
        return tensor.to(target)
    return tensor.pin_memory().to(target, non_blocking=True)


def rows_to_tensor(X, rows: Sequence[int] | np.ndarray | slice, device="cpu") -> torch.Tensor:
    """Slice ``rows`` of a CSR matrix or array into a sparse or dense tensor on ``device``."""
    if sp.issparse(X) and X.format == "csr" and _row_indices(rows, X.shape[0]):
        # what X[rows] then csr_to_tensor build, gathered in one compiled pass
        indices, values = _gather_csr_rows(X.indptr, X.indices, X.data, rows)
        return torch.sparse_coo_tensor(
            to_device(indices, device),
            to_device(values.astype(np.float32, copy=False), device),
            size=(len(rows), X.shape[1]),
            check_invariants=False,
            is_coalesced=True,
        )
    block = X[rows]
    if sp.issparse(block):
        return csr_to_tensor(block, device=device)
    return to_device(np.ascontiguousarray(block), device)


def _row_indices(rows, n_rows: int) -> bool:
    """Whether ``rows`` is an array of integer indices in ``[0, n_rows)`` (others go
    through scipy's indexing, and its errors)."""
    return (
        isinstance(rows, np.ndarray)
        and rows.ndim == 1
        and rows.dtype.kind in "iu"
        and (rows.size == 0 or (rows.min() >= 0 and rows.max() < n_rows))
    )


@njit(cache=True, nogil=True)
def _gather_csr_rows(indptr, indices, data, rows):
    """The ``(2, nnz)`` COO indices (row in the block, column) and the values of
    ``rows`` of a CSR matrix, in order."""
    nnz = 0
    for i in rows:
        nnz += indptr[i + 1] - indptr[i]
    coo = np.empty((2, nnz), dtype=np.int64)
    values = np.empty(nnz, dtype=data.dtype)
    out = 0
    for t in range(rows.shape[0]):
        i = rows[t]
        for r in range(indptr[i], indptr[i + 1]):
            coo[0, out] = t
            coo[1, out] = indices[r]
            values[out] = data[r]
            out += 1
    return coo, values


def csr_to_tensor(block: sp.csr_matrix, device="cpu") -> torch.Tensor:
    """Convert a canonical CSR block into a coalesced-order sparse COO tensor on ``device``."""
    coo = block.tocoo()
    indices = to_device(np.vstack([coo.row, coo.col]).astype(np.int64), device)
    values = to_device(coo.data.astype(np.float32, copy=False), device)
    return torch.sparse_coo_tensor(
        indices, values, size=coo.shape, check_invariants=False, is_coalesced=True
    )


@dataclasses.dataclass(frozen=True)
class Targets(Mapping):
    r"""What the NCE objective of a batch needs besides the scores: the seam's typed half.

    A sampler (or a :class:`~sknce._steps.Miner`) builds it; the objectives of
    :mod:`sknce.losses` read it by attribute, so a misspelt name is an error, never
    a silently absent correction. Every field defaults to ``None`` (absent). It is
    also a read-only mapping of the fields that are set (``targets["neg_mask"]``,
    ``dict(targets)``).

    Parameters
    ----------
    pos_log_noise : Tensor of shape (batch,) or None
        :math:`\log p_N` of each example's positive.
    pos_mask : bool Tensor of shape (batch, P) or None
        ``False`` marks the padding of examples with several positives each (the
        label sets of multi-label rows, padded to ``P``).
    neg_log_noise : Tensor of shape (batch, K) or None
        :math:`\log p_N` of each negative.
    neg_mask : bool Tensor of shape (batch, K) or None
        ``False`` drops a negative (e.g. an accidental hit of the positive).
    neg_weights : Tensor of shape (batch, K) or None
        Weight of each negative's term (importance weights).
    norm_log_noise : Tensor of shape (batch, m) or None
        :math:`\log p_N` of the extra noise samples of the self-normalisation penalty.
    labels : LongTensor of shape (batch,) or None
        The class of each example, for the full softmax.
    sample_weight : Tensor of shape (batch,) or None
        The weight of each example's loss (``fit(..., sample_weight=...)``, scaled to
        mean 1 over the training set).
    """

    pos_log_noise: torch.Tensor | None = None
    pos_mask: torch.Tensor | None = None
    neg_log_noise: torch.Tensor | None = None
    neg_mask: torch.Tensor | None = None
    neg_weights: torch.Tensor | None = None
    norm_log_noise: torch.Tensor | None = None
    labels: torch.Tensor | None = None
    sample_weight: torch.Tensor | None = None

    @classmethod
    def of(cls, targets: Targets | Mapping | None) -> Targets:
        """``targets`` as a :class:`Targets`: itself, built from a mapping, or empty.

        Raises
        ------
        TypeError
            For a name that is not a field (the error lists the fields).
        """
        if isinstance(targets, cls):
            return targets
        if targets is None:
            return cls()
        if not isinstance(targets, Mapping):
            raise TypeError(
                f"a batch's targets must be a sknce._data.Targets (or a dict of its fields), "
                f"got {type(targets).__name__}."
            )
        unknown = sorted(set(targets) - set(cls.names()))
        if unknown:
            raise TypeError(
                f"targets {unknown} are not fields of sknce._data.Targets; its fields are "
                f"{list(cls.names())}. Check the spelling in the sampler."
            )
        return cls(**targets)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The field names."""
        return tuple(field.name for field in dataclasses.fields(cls))

    def replace(self, **changes) -> Targets:
        """A copy with ``changes`` (field names) applied."""
        return dataclasses.replace(self, **changes)

    # Read-only mapping of the fields that are set, for code that inspects a batch.
    def __getitem__(self, name: str) -> torch.Tensor:
        value = getattr(self, name) if name in self.names() else None
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in self.names() if getattr(self, name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Batch(tuple):
    """One batch: ``(inputs, targets)`` as skorch unpacks it, and its number of examples.

    Parameters
    ----------
    inputs : dict of str to Tensor
        Keyword arguments of the scorer's ``forward``.
    targets : Targets, dict of its fields, or None, default=None
        What the NCE objective needs besides the scores; stored as a
        :class:`Targets` (a dict is converted, an unknown name is a ``TypeError``).
    size : int
        Number of examples (positive pairs) of the batch: the weight of its loss in
        the epoch's mean. Tensors of a batch need not have ``size`` rows (a document
        batch of one carries extra documents to draw its negatives from).
    """

    size: int

    def __new__(
        cls, inputs: dict, targets: Targets | Mapping | None = None, *, size: int
    ) -> Batch:
        batch = super().__new__(cls, (inputs, Targets.of(targets)))
        batch.size = int(size)
        return batch

    @property
    def inputs(self) -> dict:
        """The scorer's keyword arguments."""
        return self[0]

    @property
    def targets(self) -> Targets:
        """The objective's targets."""
        return self[1]


def check_batch(batch, source: str) -> None:
    """Check what a sampler returned, once per fit (as pytorch-metric-learning checks a miner).

    Parameters
    ----------
    batch : object
        The first training batch of a fit.
    source : str
        Who built it, named in the error.

    Raises
    ------
    TypeError
        If ``batch`` is not a :class:`Batch` of a dict of inputs.
    ValueError
        If it holds no example, or its targets disagree in shape or type.
    """
    if not isinstance(batch, Batch):
        raise TypeError(
            f"{source} returned a {type(batch).__name__}; a sampler returns a "
            "sknce._data.Batch(inputs, targets, size=n_examples)."
        )
    if not isinstance(batch.inputs, dict) or not all(isinstance(k, str) for k in batch.inputs):
        raise TypeError(
            f"{source} returned inputs of type {type(batch.inputs).__name__}; a batch's "
            "inputs are a dict of the scorer's keyword arguments."
        )
    if batch.size < 1:
        raise ValueError(
            f"{source} returned a batch of {batch.size} examples; it needs 1 or more."
        )
    targets = dict(batch.targets)
    mask = targets.get("neg_mask")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"{source}: targets.neg_mask must be a bool tensor, got {mask.dtype}.")
    shapes = {
        name: tuple(targets[name].shape)
        for name in ("neg_log_noise", "neg_mask", "neg_weights")
        if name in targets
    }
    if len(set(shapes.values())) > 1:
        raise ValueError(
            f"{source}: the per-negative targets disagree in shape, {shapes}; each is "
            "(batch, K) for the same negatives."
        )
    pos = targets.get("pos_log_noise")
    if pos is not None and pos.dim() != 1:
        raise ValueError(
            f"{source}: targets.pos_log_noise must be 1-D (one per example), got shape "
            f"{tuple(pos.shape)}."
        )


class Sampler(Protocol):
    """The protocol every family's sampler follows.

    A sampler holds the examples of a fit; called with some of them (row indices)
    and the epoch's numpy Generator, it draws their negatives and returns the
    :class:`Batch` of the scorer's inputs and the objective's :class:`Targets`.
    """

    def __len__(self) -> int:
        """Number of examples."""

    def __call__(self, rows: np.ndarray, rng: np.random.Generator) -> Batch:
        """The batch of examples ``rows``, every draw from ``rng``."""


class SampledDataset(Dataset):
    """The example rows of a fit and the sampler that turns rows into batches.

    Parameters
    ----------
    sampler : Sampler
        ``sampler(rows, rng) -> Batch``, with ``len(sampler)`` examples.
    rows : ndarray of int or None, default=None
        The examples of this dataset (all of the sampler's when ``None``).
    """

    def __init__(self, sampler, rows: np.ndarray | None = None) -> None:
        self.sampler = sampler
        self.rows = np.arange(len(sampler)) if rows is None else np.asarray(rows)

    def __len__(self) -> int:
        return len(self.rows)

    def split(
        self, fraction: float, rng: np.random.Generator, keep_classes: bool = False
    ) -> tuple[SampledDataset, SampledDataset]:
        """A random ``ceil(fraction * n)`` of the rows for validation, the rest for training.

        With ``keep_classes``, the rows of the same random order that would leave their
        class (the sampler's ``y``) no training row are held out last, after every row
        whose class keeps one: the split is the plain one wherever that empties no
        class, and holds out as many rows.
        """
        order = rng.permutation(self.rows)
        n_valid = int(np.ceil(fraction * len(order)))
        if keep_classes:
            keeps = _keeps_a_row(self._labels()[order])
            held = np.concatenate([order[keeps], order[~keeps]])[:n_valid]
            return (
                SampledDataset(self.sampler, np.setdiff1d(self.rows, held)),
                SampledDataset(self.sampler, np.sort(held)),
            )
        return (
            SampledDataset(self.sampler, np.sort(order[n_valid:])),
            SampledDataset(self.sampler, np.sort(order[:n_valid])),
        )

    def _labels(self) -> np.ndarray:
        """The class of each of the sampler's examples (its 1-D ``y``)."""
        labels = getattr(self.sampler, "y", None)
        if not isinstance(labels, torch.Tensor) or labels.dim() != 1:
            raise TypeError(
                f"keep_classes needs a sampler with one class per example (a 1-D tensor "
                f"y); {type(self.sampler).__name__} has none."
            )
        return labels.cpu().numpy()

    def batches(
        self,
        batch_size: int,
        rng: np.random.Generator,
        shuffle: bool,
        shard: tuple[int, int] | None = None,
    ) -> Iterator[Batch]:
        """One pass over the rows in batches of ``batch_size``, drawn from ``rng``.

        With ``shard=(rank, n_processes)``, this process's share of the pass
        (see :func:`shard_rows`).
        """
        rows = rng.permutation(self.rows) if shuffle else self.rows
        if shard is not None:
            rows, rng = shard_rows(rows, rng, *shard)
        for start in range(0, len(rows), batch_size):
            yield self.sampler(rows[start : start + batch_size], rng)


def _keeps_a_row(labels: np.ndarray) -> np.ndarray:
    """Whether each of ``labels`` (in order) is followed by another of its class: the
    rows that can be held out, in this order, while their class keeps a row."""
    by_class = np.argsort(labels, kind="stable")
    sorted_labels = labels[by_class]
    rank = np.empty(len(labels), dtype=np.int64)
    rank[by_class] = np.arange(len(labels)) - np.searchsorted(sorted_labels, sorted_labels)
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return rank < counts[inverse] - 1


def shard_rows(
    rows: np.ndarray, rng: np.random.Generator, rank: int, n_processes: int
) -> tuple[np.ndarray, np.random.Generator]:
    """One process's share of an epoch's rows, and its own random stream.

    Every process holds the same ``rows`` (drawn from the same epoch stream);
    as :class:`torch.utils.data.DistributedSampler`, the rows are padded with
    their first ones to a multiple of ``n_processes`` and process ``rank`` takes
    every ``n_processes``-th from ``rank``, so all processes take the same number
    of steps (a process that stops early would leave the others waiting in the
    gradient all-reduce). The negatives are then drawn from a child of the epoch
    stream keyed by ``rank``.
    """
    if n_processes == 1:
        return rows, rng
    padding = -len(rows) % n_processes
    if padding:
        rows = np.concatenate([rows, np.resize(rows, padding)])
    return rows[rank::n_processes], process_stream(rng, rank)


def process_stream(rng: np.random.Generator, rank: int) -> np.random.Generator:
    """The child of an epoch's stream that process ``rank`` draws its negatives from."""
    entropy = int(rng.integers(2**63))
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(rank,)))


def is_chunk_stream(X) -> bool:
    """Whether ``X`` is an iterable of chunks rather than one array-like.

    A chunk stream is an iterable (not an array, a sparse matrix or a data frame)
    whose first item is a 2-D block (a sparse matrix or an array with
    ``ndim == 2``), or a ``(block, y)`` pair. A list of lists, an ordinary 2-D
    array-like, is not one. A one-shot iterator (or an object whose ``__iter__``
    returns the same iterator every time) is taken for a stream here, so that
    :func:`scan_chunks` can reject it with an error naming the fix.
    """
    if sp.issparse(X) or hasattr(X, "shape") or isinstance(X, (str, bytes, dict)):
        return False
    if not isinstance(X, Iterable):
        return False
    if not restartable(X):
        return True
    first = next(iter(X), None)
    if isinstance(first, tuple) and len(first) == 2:
        first = first[0]
    return sp.issparse(first) or getattr(first, "ndim", None) == 2


class ChunkedDataset(Dataset):
    """A stream of chunks as the training engine's dataset, one chunk in memory at a time.

    An epoch visits the chunks (in an order shuffled from the epoch's stream when
    ``chunks`` is a sequence, else in the stream's order), loads one, turns it
    into a :class:`SampledDataset` with ``make_dataset`` and yields that chunk's
    batches (rows shuffled within the chunk, negatives drawn from the chunk)
    before it loads the next. ``split`` holds out the last chunk.

    Parameters
    ----------
    chunks : sequence or restartable iterable
        The chunks, in whatever form ``make_dataset`` takes (a block, or a
        ``(block, y)`` pair). Read once per epoch; never held whole in memory.
    make_dataset : callable
        ``make_dataset(chunk, index) -> SampledDataset``: validates chunk number
        ``index`` and builds its sampler.
    sizes : sequence of int
        Examples of each chunk (counted by a first pass over the stream).
    indices : ndarray of int or None, default=None
        The chunks of this dataset (all when ``None``).
    """

    def __init__(
        self,
        chunks: Iterable,
        make_dataset: Callable[[object, int], SampledDataset],
        sizes: Sequence[int],
        indices: np.ndarray | None = None,
    ) -> None:
        self.chunks = chunks
        self.make_dataset = make_dataset
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.indices = np.arange(len(self.sizes)) if indices is None else np.asarray(indices)

    def __len__(self) -> int:
        return int(self.sizes[self.indices].sum())

    @property
    def random_access(self) -> bool:
        """Whether chunks can be read in any order (a sequence), hence shuffled."""
        return isinstance(self.chunks, Sequence)

    def n_held_out(self, fraction: float) -> int:
        """Examples that :meth:`split` holds out: those of the last chunk."""
        return int(self.sizes[self.indices[-1]]) if len(self.indices) > 1 else len(self)

    def split(
        self, fraction: float, rng: np.random.Generator
    ) -> tuple[ChunkedDataset, ChunkedDataset]:
        """The last chunk for validation, the others for training (``fraction`` is unused)."""
        return (
            ChunkedDataset(self.chunks, self.make_dataset, self.sizes, self.indices[:-1]),
            ChunkedDataset(self.chunks, self.make_dataset, self.sizes, self.indices[-1:]),
        )

    def _datasets(self, order: np.ndarray) -> Iterator[SampledDataset]:
        """The chunks of ``order``, each loaded when the previous one is done with.

        Every pass must read the chunks of the first pass (:func:`scan_chunks`):
        a stream that yields fewer or more chunks, or a chunk of another size, is
        an error rather than an epoch over other data than the fit planned.
        """
        if self.random_access:
            check_stream_pass(len(self.chunks), len(self.sizes))
            for index in order.tolist():
                with chunk_errors(index):
                    dataset = self._load(self.chunks[index], index)
                yield dataset
                del dataset  # before the next chunk is read
            return
        wanted = set(order.tolist())
        n_read = 0
        for index, chunk in enumerate(self.chunks):
            n_read = index + 1
            check_stream_pass(n_read, len(self.sizes), complete=False)
            if index in wanted:
                with chunk_errors(index):
                    dataset = self._load(chunk, index)
                del chunk  # only the chunk's sampler stays in memory while it is trained on
                yield dataset
                del dataset
        check_stream_pass(n_read, len(self.sizes))

    def _load(self, chunk, index: int) -> SampledDataset:
        """Chunk ``index`` as a dataset, checked to hold the examples of the first pass."""
        dataset = self.make_dataset(chunk, index)
        if len(dataset) != self.sizes[index]:
            raise ValueError(
                f"it holds {len(dataset)} example(s) on this pass but held "
                f"{self.sizes[index]} on the first pass. Every pass over a stream must "
                "yield the same chunks, in the same order."
            )
        return dataset

    def batches(
        self,
        batch_size: int,
        rng: np.random.Generator,
        shuffle: bool,
        shard: tuple[int, int] | None = None,
    ) -> Iterator[Batch]:
        """One pass over the chunks, in batches drawn within each chunk from ``rng``."""
        order = self.indices
        if shuffle and self.random_access and len(order) > 1:
            # (one chunk draws nothing here, so its batches are those of the array itself)
            order = rng.permutation(order)
        for dataset in self._datasets(order):
            yield from dataset.batches(batch_size, rng, shuffle, shard=shard)
            del dataset  # before the next chunk is read


@contextlib.contextmanager
def chunk_errors(index: int) -> Iterator[None]:
    """Prefix a ValueError or TypeError raised on chunk ``index`` with its number."""
    try:
        yield
    except (ValueError, TypeError) as error:
        raise type(error)(f"chunk {index} of the stream: {error}") from error


_END = object()


def scan_chunks(chunks: Iterable, check: Callable[[object, int], int]) -> list[int]:
    """The first pass over a chunk stream: validate every chunk and count its examples.

    Parameters
    ----------
    chunks : sequence or restartable iterable
    check : callable
        ``check(chunk, index) -> n_examples``; raises on an invalid chunk (the
        error is prefixed with the chunk's number).

    Returns
    -------
    list of int
        Examples of each chunk.
    """
    if not restartable(chunks):
        raise TypeError(
            "X is a one-shot iterator (e.g. a generator, or an object whose __iter__ returns "
            "the same generator each time) of chunks, but fitting reads the chunks once per "
            "epoch. Pass a restartable iterable: a list of chunks, "
            "sknce.datasets.NpzChunks over .npz files, or an object whose __iter__ starts "
            "a new pass."
        )
    sizes: list[int] = []
    iterator = iter(chunks)
    while True:
        index = len(sizes)
        # read inside chunk_errors too, so that a chunk failing to load is named by its number
        with chunk_errors(index):
            chunk = next(iterator, _END)
            if chunk is _END:
                break
            sizes.append(int(check(chunk, index)))
        del chunk
    if not sizes:
        raise ValueError("X is an empty stream of chunks; it must hold at least one chunk.")
    return sizes


def restartable(chunks: Iterable) -> bool:
    """Whether each ``iter(chunks)`` starts a new pass (not one iterator handed out twice)."""
    first = iter(chunks)
    return first is not chunks and iter(chunks) is not first


def first_chunk(chunks: Iterable):
    """The first chunk of a new pass over a stream that :func:`scan_chunks` has read.

    A stream that yields nothing on this later pass is a ValueError naming the fix
    (not a ``StopIteration``).
    """
    first = chunks[0] if isinstance(chunks, Sequence) and len(chunks) else _END
    if not isinstance(chunks, Sequence):
        first = next(iter(chunks), _END)
    if first is _END:
        raise ValueError(
            "the stream of chunks yielded no chunk on a later pass, though its first pass "
            "yielded some. Every iter(X) must yield the same chunks in the same order; "
            "store them (sknce.datasets.save_npz_chunks) or make __iter__ start the same "
            "pass again."
        )
    return first


def check_stream_pass(n_read: int, n_first: int, complete: bool = True) -> None:
    """A ValueError when a pass over a stream reads other chunks than its first pass.

    Parameters
    ----------
    n_read : int
        Chunks this pass has read so far (all of them when ``complete``).
    n_first : int
        Chunks of the first pass.
    complete : bool, default=True
        Whether the pass is over: then fewer chunks are an error too.
    """
    if n_read > n_first or (complete and n_read < n_first):
        more = "more" if n_read > n_first else "fewer"
        raise ValueError(
            f"the stream of chunks yielded {more} chunks on a later pass ({n_read}"
            f"{'+' if not complete else ''}) than on its first pass ({n_first}): an epoch "
            "would train on other data than the fit planned. Every iter(X) must yield the "
            "same chunks in the same order; store them (sknce.datasets.save_npz_chunks) or "
            "make __iter__ start the same pass again."
        )
