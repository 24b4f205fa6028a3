"""Data sets larger than memory as chunks of rows in ``.npz`` files, read one at a time.

``DirectNCEEmbedder``, ``LandmarkNCEEmbedder`` and ``ConditionalNCEClassifier``
fit on a restartable iterable of chunks; :class:`NpzChunks` is one, over files
written by :func:`save_npz_chunks` (or by :func:`scipy.sparse.save_npz`).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from sknce._checks import check_sparse_structure
from sknce._files import atomic_write, describe_file, remove_stale

__all__ = ["NpzChunks", "save_npz_chunks"]


class NpzChunks:
    """Chunks of rows stored in ``.npz`` files, each loaded only when it is read.

    A sequence: ``len`` is the number of files and ``chunks[i]`` loads file ``i``,
    so an estimator can read the chunks in a shuffled order at each epoch while
    only one is in memory. A file holds a CSR matrix in the layout of
    :func:`scipy.sparse.save_npz` (``data``, ``indices``, ``indptr``, ``shape``,
    ``format``) or a dense array ``X``, and optionally the targets ``y`` of its rows;
    :func:`save_npz_chunks` writes them.

    Parameters
    ----------
    files : iterable of str or path-like
        The chunk files, in the stream's order.

    Attributes
    ----------
    files : list of pathlib.Path

    See Also
    --------
    save_npz_chunks : Write chunks in this layout.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> from sknce.datasets import NpzChunks, save_npz_chunks
    >>> blocks = [np.ones((3, 4)), np.zeros((2, 4))]
    >>> chunks = save_npz_chunks(blocks, tempfile.mkdtemp())
    >>> len(chunks), chunks[1].shape
    (2, (2, 4))
    """

    def __init__(self, files: Iterable[str | os.PathLike]) -> None:
        self.files = [Path(f) for f in files]
        missing = [str(f) for f in self.files if not f.is_file()]
        if missing:
            raise FileNotFoundError(f"chunk file(s) not found: {missing[:3]}")

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index):
        """Load chunk ``index``: its block, or ``(block, y)`` when the file holds ``y``."""
        if isinstance(index, slice):
            return NpzChunks(self.files[index])
        return load_npz_chunk(self.files[index])

    def __iter__(self):
        """Load the chunks one after the other."""
        for index in range(len(self)):
            yield self[index]

    def __repr__(self) -> str:
        return f"NpzChunks({len(self)} files)"


def load_npz_chunk(path: Path):
    """The block (and ``y``) of one chunk file, or a ValueError naming the file and the fault.

    Parameters
    ----------
    path : pathlib.Path
        A ``.npz`` file in the layout of :func:`save_npz_chunks`.

    Returns
    -------
    ndarray or csr_matrix, or (block, ndarray)
    """
    fix = "rewrite it with sknce.datasets.save_npz_chunks"
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:
        raise ValueError(
            f"chunk file {path} is not a readable .npz file (truncated or damaged?): it is "
            f"{describe_file(path)} ({type(error).__name__}: {error}); {fix}."
        ) from error
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(
            f"chunk file {path} holds a single .npy array, not an .npz archive; {fix} "
            "(np.savez(path, X=block) for a dense block)."
        )
    try:
        with data:
            _check_members(data.zip, path.stat().st_size)
            if "format" in data.files:
                X = _csr_from(data, path, fix)
            elif "X" in data.files:
                X = data["X"]
            else:
                raise ValueError(
                    f"chunk file {path} holds neither a CSR matrix nor an array 'X' "
                    f"(keys: {data.files}); {fix}."
                )
            return (X, data["y"]) if "y" in data.files else X
    except ValueError as error:
        if str(path) in str(error):
            raise
        # numpy refuses pickled object arrays, a damaged member fails to decompress, ...
        raise ValueError(f"chunk file {path} cannot be read: {error}; {fix}.") from error
    except (OSError, EOFError, zipfile.BadZipFile, KeyError) as error:
        raise ValueError(
            f"chunk file {path} is damaged or truncated: {type(error).__name__}: {error}; {fix}."
        ) from error


def _check_members(archive: zipfile.ZipFile, size: int) -> None:
    """Raise a ValueError unless each array's header agrees with its member's size.

    Checked before numpy allocates an array from its header: a damaged header
    announcing a huge shape is an error, not a huge allocation.
    """
    for info in archive.infolist():
        # Deflate expands at most about 1032 times; stored members not at all.
        ratio = 1 if info.compress_type == zipfile.ZIP_STORED else 1100
        if info.compress_size > size or info.file_size > info.compress_size * ratio + 64:
            raise ValueError(
                f"its member {info.filename} announces {info.file_size} bytes from "
                f"{info.compress_size} compressed, in a {size}-byte file"
            )
        if not info.filename.endswith(".npy"):
            continue
        with archive.open(info) as member:
            try:
                version = np.lib.format.read_magic(member)
                if version not in ((1, 0), (2, 0)):
                    continue  # numpy's reader checks the rarer versions itself
                read = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, _, dtype = read(member)
                start = member.tell()
            except ValueError as error:
                raise ValueError(f"the header of {info.filename} is damaged ({error})") from None
        if dtype.hasobject:
            continue  # refused by np.load without allow_pickle
        needed = start + int(np.prod(shape, dtype=object)) * dtype.itemsize
        if needed != info.file_size:
            raise ValueError(
                f"the array {info.filename[:-4]!r} announces shape {shape} of {dtype} "
                f"({needed} bytes) but its member holds {info.file_size} bytes"
            )


def _csr_from(data, path: Path, fix: str) -> sp.csr_matrix:
    """The CSR matrix of an archive in :func:`scipy.sparse.save_npz`'s layout, checked."""
    form = data["format"].item()
    if form not in ("csr", b"csr"):
        raise ValueError(
            f"{path} holds a sparse matrix in format {form!r}; save CSR matrices (X.tocsr())."
        )
    missing = sorted({"data", "indices", "indptr", "shape"} - set(data.files))
    if missing:
        raise ValueError(f"chunk file {path} lacks the CSR array(s) {missing}; {fix}.")
    X = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
    try:
        check_sparse_structure(X)
    except ValueError as error:
        raise ValueError(f"chunk file {path}: {error}") from None
    return X


# A sequence (estimators shuffle the chunks of sequences) without inheriting the
# count/index mixins, whose docstrings are not numpydoc.
Sequence.register(NpzChunks)


def save_npz_chunks(
    chunks: Iterable, directory: str | os.PathLike, *, prefix: str = "chunk"
) -> NpzChunks:
    """Write chunks of rows to ``.npz`` files and return them as :class:`NpzChunks`.

    Parameters
    ----------
    chunks : iterable
        Blocks of rows (a sparse matrix, written as CSR, or an array), or
        ``(block, y)`` pairs. A generator is fine: each chunk is written and
        released before the next is drawn.
    directory : str or path-like
        Created if missing.
    prefix : str, default="chunk"
        Files are named ``{prefix}-00000.npz``, ``{prefix}-00001.npz``, ...

    Returns
    -------
    NpzChunks
        The written files, in the order of ``chunks``.

    Notes
    -----
    Each file is written to a temporary file in ``directory``, verified, and renamed
    over its target only once complete (``sknce._files.atomic_write``), so an
    error, a full disk or a killed process never leaves a truncated chunk, nor
    damages an existing file of the same name; a full disk is an ``OSError`` naming
    the file. The temporary files of killed saves into ``directory`` are removed.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # Once for the directory, not at each file: the temporaries of killed saves.
    remove_stale(directory, targets=None)
    files = []
    for index, chunk in enumerate(chunks):
        X, y = chunk if isinstance(chunk, tuple) else (chunk, None)
        arrays = {} if y is None else {"y": np.asarray(y)}
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            arrays.update(
                data=X.data,
                indices=X.indices,
                indptr=X.indptr,
                shape=np.asarray(X.shape),
                format=np.asarray("csr"),
            )
        else:
            arrays["X"] = np.asarray(X)
        path = directory / f"{prefix}-{index:05d}.npz"
        with atomic_write(path, clean=False) as stream:
            np.savez(stream, **arrays)
        files.append(path)
    return NpzChunks(files)
