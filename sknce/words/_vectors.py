"""Trained word vectors as their own object: queries, evaluation, and their files.

:class:`WordVectors` plays the part of gensim's ``KeyedVectors``, apart from
the training code, with the same names and semantics: cosine neighbours
(``most_similar`` with positive and negative words, ``most_similar_cosmul``),
similarities and distances, mean vectors, per-word attributes such as counts,
the word-pair and word-analogy benchmarks computed as gensim computes them,
and files in the word2vec text and binary formats and in a native format
whose matrix can be memory-mapped. The file readers and writers live in
:mod:`sknce.words._io`. :func:`resolve_init_vectors` turns the accepted forms
of pretrained vectors into a :class:`WordVectors`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral

import numpy as np
from scipy.linalg import get_blas_funcs

from sknce.words import _io

# benchmarks/_words_data.py reads word-pair files with the parser of evaluate_word_pairs.
from sknce.words._io import iter_word_pairs as _iter_pairs

__all__ = ["WordVectors", "resolve_init_vectors"]

PathType = str | os.PathLike
# Elements per block when a pass over the whole matrix needs a temporary array (small
# beside any matrix worth blocking), and similarities per block of analogy questions.
_BLOCK = 1 << 18
_ANALOGY_BLOCK = 1 << 23
# gensim's unit vectors: BLAS norm and scaling in float64 (matutils.blas_nrm2, blas_scal).
_NRM2, _SCAL = get_blas_funcs(("nrm2", "scal"), (np.zeros(0, dtype=np.float64),))


def _is_key(item) -> bool:
    """A word, or a row position (gensim accepts both as keys)."""
    return isinstance(item, (str, Integral)) and not isinstance(item, bool)


def _is_real(value) -> bool:
    return isinstance(value, (float, Integral, np.floating)) and not isinstance(value, bool)


def _is_number_list(items) -> bool:
    """A list of numbers with at least one float: a vector given as a list."""
    return (
        len(items) > 0
        and all(_is_real(v) for v in items)
        and any(isinstance(v, (float, np.floating)) for v in items)
    )


def _ensure_list(value) -> list:
    """gensim's ``_ensure_list``: one key or vector, or several, as a list."""
    if value is None:
        return []
    if _is_key(value) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return [value]
    if isinstance(value, np.ndarray) and value.ndim == 2:
        return list(value)
    if isinstance(value, (list, tuple)) and _is_number_list(value):
        return [np.asarray(value, dtype=np.float64)]  # a vector written as a list
    return list(value)


def _unitvec(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit length; a zero vector is returned as is.

    gensim's ``matutils.unitvec`` step for step, so that similarities tie where
    gensim's do: the norm by BLAS ``dnrm2`` in float64 (which scales as it sums,
    so no square overflows or underflows), the vector times its reciprocal
    (BLAS ``dscal``), back in the vector's type. A float64 vector whose norm's
    reciprocal overflows is divided by its largest value first.
    """
    scaled = np.array(vector, dtype=np.float64)  # a copy: dscal works in place
    norm = _NRM2(scaled) if scaled.size else 0.0
    if not norm > 0:
        return vector
    if not np.isfinite(1.0 / norm):
        biggest = np.abs(scaled).max()
        scaled /= biggest
        norm = _NRM2(scaled)
    return _SCAL(1.0 / norm, scaled).astype(vector.dtype, copy=False)


def _pearson_spearman(gold: list[float], model: list[float]) -> tuple:
    """Pearson's and Spearman's correlations of two score lists, with their p-values.

    ``scipy.stats`` is imported here, on the first evaluation: it costs as much
    memory as numpy and ``scipy.linalg`` together, which loading and querying
    vectors do without.
    """
    from scipy import stats

    return stats.pearsonr(gold, model), stats.spearmanr(gold, model)


def _argsort_desc(values: np.ndarray, topn: int) -> np.ndarray:
    """Indices of the ``topn`` largest values, largest first (gensim's ``matutils.argsort``)."""
    x = -values
    if topn >= x.size:
        return np.argsort(x)[:topn]
    part = np.argpartition(x, topn)[:topn]
    return part.take(np.argsort(x.take(part)))


def _check_topn(topn) -> int | None:
    if topn is None:
        return None
    if not isinstance(topn, Integral):
        raise TypeError(f"topn must be an int or None, got {topn!r}.")
    return max(int(topn), 0)


def _check_restrict_vocab(restrict_vocab) -> int | None:
    if restrict_vocab is None:
        return None
    if isinstance(restrict_vocab, bool) or not isinstance(restrict_vocab, Integral):
        raise TypeError(f"restrict_vocab must be an int or None, got {restrict_vocab!r}.")
    if restrict_vocab < 0:
        raise ValueError(f"restrict_vocab must be >= 0, got {restrict_vocab}.")
    return int(restrict_vocab) or None  # gensim: 0 means no restriction


def _check_finite_rows(vectors: np.ndarray, message) -> None:
    """Raise ``ValueError(message(first, rest))`` if a row holds a NaN or inf.

    ``first`` is the first such row, ``rest`` the number of such rows after it.
    """
    bad = _first_nonfinite_row(vectors)
    if bad is not None:
        rest = int(np.count_nonzero(~np.isfinite(vectors[bad + 1 :]).all(axis=1)))
        raise ValueError(message(bad, rest))


def _first_nonfinite_row(vectors: np.ndarray) -> int | None:
    """Index of the first row with a NaN or inf, scanning in blocks (no full-size temporary).

    The pages of a read-only file mapping (``WordVectors.load(path, mmap="r")``) are
    released after each block: checking the matrix would otherwise leave all of it
    resident, where a mapping should only hold the pages that queries read.
    """
    step = max(1, _BLOCK // max(vectors.shape[1], 1))
    release = _page_releaser(vectors)
    for start in range(0, vectors.shape[0], step):
        bad = np.flatnonzero(~np.isfinite(vectors[start : start + step]).all(axis=1))
        if len(bad):
            return start + int(bad[0])
        if release is not None:
            release(vectors[start : start + step])
    return None


def _page_releaser(array: np.ndarray):
    """A function that drops the pages of a slice of ``array`` from this process, or None.

    Only for a C-contiguous array inside a read-only ``numpy.memmap`` (mode ``"r"``):
    its pages are clean and shared with the page cache, so ``MADV_DONTNEED`` only
    unmaps them and the next read maps them again. A copy-on-write mapping could
    hold the caller's private changes, which ``MADV_DONTNEED`` would discard.
    """
    if not hasattr(mmap, "MADV_DONTNEED") or not array.flags.c_contiguous or not array.size:
        return None
    owner, mapping = array, array.base
    while mapping is not None and not isinstance(mapping, mmap.mmap):
        owner, mapping = mapping, getattr(mapping, "base", None)
    if mapping is None or not isinstance(owner, np.memmap) or owner.mode != "r":
        return None
    origin = np.frombuffer(mapping, dtype=np.uint8).ctypes.data

    def release(part: np.ndarray) -> None:
        start = part.ctypes.data - origin
        aligned = start - start % mmap.PAGESIZE
        mapping.madvise(mmap.MADV_DONTNEED, aligned, start + part.nbytes - aligned)

    return release


def _vecattr_dtype(value) -> np.dtype:
    """The array type that stores values like ``value`` (gensim's ``allocate_vecattrs``)."""
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, Integral):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    return np.dtype(object)


class WordVectors:
    """Word vectors with gensim's ``KeyedVectors`` queries, evaluation and files.

    A list of words and a matrix with one row per word, kept apart from the
    model that trained them. Names and semantics follow gensim 4's
    ``KeyedVectors``: a key is a word or a row position; queries that take
    several words accept words, vectors and ``(word, weight)`` pairs.

    The norms of the rows are computed once, at the first query, and reused;
    assigning ``vectors``, :meth:`add_vectors` and :meth:`fill_norms` with
    ``force=True`` renew them. After writing into ``vectors`` in place, call
    ``fill_norms(force=True)``, as with gensim.

    Parameters
    ----------
    words : sequence of str
        Distinct words, one per row of ``vectors``.
    vectors : array-like of shape (n_words, n_dims)
        Finite word vectors.
    counts : array-like of int of shape (n_words,), default=None
        Corpus count of each word, stored as the ``"count"`` attribute
        (:meth:`get_vecattr`).
    dtype : numpy float dtype, default=numpy.float32
        Type in which the vectors are stored (float32 is the precision of the
        word2vec formats); no copy is made when ``vectors`` already has it.

    Attributes
    ----------
    index_to_key : list of str
        The words, in row order (alias ``words``).
    key_to_index : dict of str to int
        Row of each word (alias ``index``).
    vectors : ndarray of shape (n_words, n_dims)
        The vectors.
    expandos : dict of str to ndarray
        Per-word attributes (``"count"``...), one value per row.

    See Also
    --------
    sknce.words.ACEWord2Vec : trains word vectors; its ``wv_`` is a WordVectors.

    Examples
    --------
    >>> import numpy as np
    >>> from sknce.words import WordVectors
    >>> wv = WordVectors(["cat", "dog", "car"], np.array([[1.0, 0.1], [0.9, 0.2], [0.0, 1.0]]))
    >>> wv.most_similar("cat", topn=1)[0][0]
    'dog'
    >>> round(wv.similarity("cat", "car"), 3)
    0.1
    >>> wv[["cat", "car"]].shape
    (2, 2)
    """

    def __init__(
        self,
        words: Sequence[str],
        vectors,
        *,
        counts=None,
        dtype=np.float32,
    ) -> None:
        words = list(words)
        for word in words:
            if not isinstance(word, str):
                raise TypeError(f"words must be str, got {type(word).__name__} {word!r}.")
        # numpy.str_ tokens (e.g. from numpy arrays) are str subclasses: store plain str so
        # queries return what gensim returns.
        words = [str(word) for word in words]
        index = {word: i for i, word in enumerate(words)}
        if len(index) != len(words):
            seen: set[str] = set()
            duplicate = next(w for w in words if w in seen or seen.add(w))
            raise ValueError(f"words must be distinct; {duplicate!r} occurs more than once.")
        self.index_to_key = words
        self.key_to_index = index
        self.expandos: dict[str, np.ndarray] = {}
        self._vectors = self._check_matrix(vectors, np.dtype(dtype))
        self._forget_norms()
        if counts is not None:
            self.expandos["count"] = self._check_counts(counts)

    # --- validation --------------------------------------------------------------------
    def _check_matrix(self, vectors, dtype: np.dtype | None) -> np.ndarray:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:
            raise ValueError(
                f"vectors must be a 2-d array (n_words, n_dims), got shape {vectors.shape}."
            )
        if vectors.dtype.kind not in "fiu":
            raise TypeError(f"vectors must hold numbers, got dtype {vectors.dtype}.")
        if len(self.index_to_key) != vectors.shape[0]:
            raise ValueError(
                f"got {len(self.index_to_key)} words for {vectors.shape[0]} vectors; pass one "
                "word per row."
            )
        if dtype is None:
            dtype = vectors.dtype if vectors.dtype.kind == "f" else np.dtype(np.float32)
        if dtype.kind != "f":
            raise TypeError(f"dtype must be a float type, got {dtype}.")
        with np.errstate(over="ignore"):  # values beyond dtype's range are reported below
            vectors = np.ascontiguousarray(vectors, dtype=dtype)
        _check_finite_rows(
            vectors,
            lambda bad, rest: (
                f"the vector of {self.index_to_key[bad]!r}"
                f"{f' and {rest} more words' if rest else ''} has non-finite values "
                f"(NaN or inf, or beyond {dtype}'s range); fix or drop those words."
            ),
        )
        return vectors

    def _check_counts(self, counts) -> np.ndarray:
        counts = np.asarray(counts)
        if counts.shape != (len(self),):
            raise ValueError(
                f"counts must hold one count per word ({len(self)}), got shape {counts.shape}."
            )
        if counts.dtype.kind not in "iuf" or (
            counts.dtype.kind == "f" and not np.array_equal(counts, np.round(counts))
        ):
            raise ValueError(f"counts must be whole numbers, got {counts.dtype} values.")
        if len(counts) and counts.min() < 0:
            word = self.index_to_key[int(np.argmin(counts))]
            raise ValueError(f"counts must be >= 0; the count of {word!r} is {counts.min()}.")
        return counts.astype(np.int64)

    def _check_vector(self, vector, what: str = "a query vector") -> np.ndarray:
        vector = np.asarray(vector)
        if vector.shape != (self.vector_size,) or vector.dtype.kind not in "fiu":
            raise ValueError(
                f"{what} must be a vector of {self.vector_size} numbers, got shape "
                f"{vector.shape} ({vector.dtype}); pass a word (str), a vector, or a list "
                "of these."
            )
        if not np.isfinite(vector).all():
            raise ValueError(f"{what} has non-finite values (NaN or inf).")
        return vector

    # --- container ---------------------------------------------------------------------
    @property
    def vectors(self) -> np.ndarray:
        """The matrix, one row per word; assigning it renews the cached norms."""
        return self._vectors

    @vectors.setter
    def vectors(self, value) -> None:
        self._vectors = self._check_matrix(value, None)
        self._forget_norms()

    @property
    def words(self) -> list[str]:
        """The words in row order (``index_to_key``)."""
        return self.index_to_key

    @property
    def index(self) -> dict[str, int]:
        """Row of each word (``key_to_index``)."""
        return self.key_to_index

    @property
    def vector_size(self) -> int:
        """Number of dimensions of each vector."""
        return self._vectors.shape[1]

    def __len__(self) -> int:
        return len(self.index_to_key)

    def __repr__(self) -> str:
        return f"WordVectors({len(self)} words, {self.vector_size} dimensions)"

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_vectors"] = np.asarray(self._vectors)  # a memory map pickles as an array
        state["_norms"] = state["_divisor"] = None
        state["_extreme"] = state["_extreme_unit"] = None
        return state

    def get_index(self, key, default: int | None = None) -> int:
        """Row of a word, or ``key`` itself when it is a row position.

        Parameters
        ----------
        key : str or int
            A word, or a row position in ``range(len(self))``.
        default : int or None, default=None
            Returned for an unknown key instead of raising.

        Returns
        -------
        int

        Raises
        ------
        KeyError
            For an unknown key when ``default`` is None.
        """
        try:
            row = self.key_to_index.get(key, -1)
        except TypeError:  # unhashable
            row = -1
        if row >= 0:
            return row
        if _is_key(key) and not isinstance(key, str) and 0 <= key < len(self):
            return int(key)
        if default is not None:
            return default
        raise KeyError(
            f"word {key!r} is not in the vocabulary ({len(self)} words); check its "
            "spelling and case, and that it occurs at least min_count times in the "
            "training corpus."
        )

    def has_index_for(self, key) -> bool:
        """Whether ``key`` is a word of the vocabulary or a row position.

        Parameters
        ----------
        key : str or int
            A word or a row position.

        Returns
        -------
        bool
        """
        return self.get_index(key, -1) >= 0

    def __contains__(self, key) -> bool:
        return self.has_index_for(key)

    def get_vector(self, key, norm: bool = False) -> np.ndarray:
        """The vector of a word (a read-only view).

        Parameters
        ----------
        key : str or int
            A word or a row position.
        norm : bool, default=False
            Scale it to unit length (a zero vector stays zero).

        Returns
        -------
        ndarray of shape (n_dims,)

        Raises
        ------
        KeyError
            If the word is not in the vocabulary.
        """
        row = self.get_index(key)
        result = self._unit_rows(row) if norm else self._vectors[row]
        result.setflags(write=False)  # in-place edits would go unnoticed by the norms
        return result

    def __getitem__(self, key_or_keys) -> np.ndarray:
        """The vector of one key (1-d), or of a list of keys (2-d, one row per key)."""
        if _is_key(key_or_keys):
            return self.get_vector(key_or_keys)
        rows = [self.get_index(key) for key in key_or_keys]
        return self._vectors[rows]

    def __setitem__(self, keys, weights) -> None:
        """Set the vectors of words, adding the new ones (``add_vectors(replace=True)``)."""
        if not isinstance(keys, list):
            keys = [keys]
            weights = np.asarray(weights).reshape(1, -1)
        self.add_vectors(keys, weights, replace=True)

    def add_vectors(self, keys, weights, extras=None, replace: bool = False) -> None:
        """Append words and their vectors; a word already present keeps its vector.

        Parameters
        ----------
        keys : str or list of str
            Words (distinct).
        weights : array-like of shape (n_dims,) or (n_keys, n_dims)
            Their vectors.
        extras : dict of str to array-like of shape (n_keys,), default=None
            Per-word attributes of these words (e.g. ``{"count": ...}``).
        replace : bool, default=False
            Overwrite the vectors (and extras) of words already present.

        Raises
        ------
        ValueError
            For repeated keys, vectors of the wrong shape or non-finite values,
            or ``replace`` on read-only (memory-mapped) vectors.
        """
        if _is_key(keys):
            keys = [keys]
            weights = np.asarray(weights).reshape(1, -1)
        keys = [str(k) if isinstance(k, str) else k for k in keys]
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"keys must be str words, got {type(key).__name__} {key!r}.")
        if len(set(keys)) != len(keys):
            raise ValueError("keys must be distinct; a word occurs more than once.")
        weights = np.asarray(weights)
        if weights.shape != (len(keys), self.vector_size) or weights.dtype.kind not in "fiu":
            raise ValueError(
                f"weights must be {len(keys)} vectors of {self.vector_size} numbers, got "
                f"shape {weights.shape} ({weights.dtype})."
            )
        bad = _first_nonfinite_row(weights)
        if bad is not None:
            raise ValueError(f"the vector of {keys[bad]!r} has non-finite values (NaN or inf).")
        extras = {name: np.asarray(values) for name, values in (extras or {}).items()}
        for name, values in extras.items():
            if values.shape[:1] != (len(keys),):
                raise ValueError(f"extras[{name!r}] must hold one value per key ({len(keys)}).")
        present = np.array([key in self.key_to_index for key in keys], dtype=bool)
        if replace and present.any() and not self._vectors.flags.writeable:
            raise ValueError(
                "the vectors are read-only (memory-mapped with mmap='r'); load them with "
                "mmap='c' (copy-on-write) or mmap=None to change them."
            )
        new = np.flatnonzero(~present)
        old_len = len(self)
        for i in new:
            self.key_to_index[keys[i]] = len(self.index_to_key)
            self.index_to_key.append(keys[i])
        self._vectors = np.vstack((self._vectors, weights[new].astype(self._vectors.dtype)))
        for name in set(self.expandos) | set(extras):
            values = extras.get(name)
            dtype = self.expandos[name].dtype if name in self.expandos else values.dtype
            grown = np.zeros(len(self), dtype=dtype)
            if name in self.expandos:
                grown[:old_len] = self.expandos[name]
            if values is not None:
                grown[old_len:] = values[new]
            self.expandos[name] = grown
        if replace and present.any():
            rows = [self.key_to_index[keys[i]] for i in np.flatnonzero(present)]
            self._vectors[rows] = weights[present]
            for name, values in extras.items():
                self.expandos[name][rows] = values[present]
        self._forget_norms()

    def add_vector(self, key: str, vector) -> int:
        """Append one word and its vector (see :meth:`add_vectors`).

        Parameters
        ----------
        key : str
            The word (kept with its old vector if already present).
        vector : array-like of shape (n_dims,)
            Its vector.

        Returns
        -------
        int
            The word's row.
        """
        self.add_vectors([key], np.asarray(vector).reshape(1, -1))
        return self.get_index(key)

    def set_vecattr(self, key, attr: str, val) -> None:
        """Set a per-word attribute (e.g. ``"count"``) of one word.

        The first value set for ``attr`` fixes its type (int, float, bool or
        object), as in gensim; the other words get zeros.

        Parameters
        ----------
        key : str or int
            A word or a row position.
        attr : str
            The attribute's name.
        val : int, float, bool or str
            Its value for this word.

        Raises
        ------
        TypeError
            If ``val`` does not fit the type of the attribute's values.
        """
        row = self.get_index(key)
        dtype = _vecattr_dtype(val)
        if attr not in self.expandos:
            self.expandos[attr] = np.zeros(len(self), dtype=dtype)
        elif not np.issubdtype(dtype, self.expandos[attr].dtype):
            raise TypeError(
                f"can't store a {dtype} value in the attribute {attr!r}, which holds "
                f"{self.expandos[attr].dtype} values."
            )
        self.expandos[attr][row] = val

    def get_vecattr(self, key, attr: str):
        """A per-word attribute (e.g. ``"count"``) of one word.

        Parameters
        ----------
        key : str or int
            A word or a row position.
        attr : str
            The attribute's name, e.g. ``"count"``.

        Returns
        -------
        object
            The stored value (a numpy scalar for numbers).

        Raises
        ------
        KeyError
            If the word is unknown or no such attribute is stored.
        """
        row = self.get_index(key)
        if attr not in self.expandos:
            raise KeyError(
                f"no attribute {attr!r} is stored (stored: {sorted(self.expandos)}); set it "
                "with set_vecattr, or pass counts= to WordVectors for 'count'."
            )
        return self.expandos[attr][row]

    # --- norms -------------------------------------------------------------------------
    def _forget_norms(self) -> None:
        """Drop the cached norms (the vectors changed in place); the next query renews them."""
        self._norms = self._divisor = None
        self._extreme = self._extreme_unit = None

    def fill_norms(self, force: bool = False) -> None:
        """Compute and cache the norm of every vector (again if ``force``).

        Queries call this themselves; after changing ``vectors`` in place, call
        it with ``force=True``. Norms are computed as gensim computes them
        (``numpy.linalg.norm`` in the vectors' type), except for rows whose
        squares overflow or underflow that type (values beyond about ``1e19``
        or below ``1e-16`` in float32): those are divided by their largest
        value first, in float64, and their unit vectors kept in float64.

        Parameters
        ----------
        force : bool, default=False
            Recompute even if the norms are cached.
        """
        if self._norms is not None and not force:
            return
        vectors = self._vectors
        norms = np.empty(len(vectors), dtype=vectors.dtype)
        step = max(1, _BLOCK // max(self.vector_size, 1))
        with np.errstate(over="ignore", under="ignore"):  # such rows are redone below
            for start in range(0, len(vectors), step):
                block = vectors[start : start + step]
                norms[start : start + step] = np.linalg.norm(block, axis=1)
        info = np.finfo(vectors.dtype)
        # Below sqrt(tiny / eps) the sum of squares is subnormal and loses precision.
        suspect = np.flatnonzero(~np.isfinite(norms) | (norms < np.sqrt(info.tiny / info.eps)))
        rows = suspect[np.abs(vectors[suspect]).max(axis=1, initial=0) > 0]
        rows64 = vectors[rows].astype(np.float64)
        biggest = np.abs(rows64).max(axis=1, initial=0.0)[:, None]
        lengths = np.linalg.norm(rows64 / biggest, axis=1)[:, None]
        with np.errstate(over="ignore"):  # a norm beyond the type's range is stored as inf
            norms[rows] = (biggest * lengths)[:, 0]
        self._extreme, self._extreme_unit = rows, rows64 / biggest / lengths
        self._norms = norms
        # Zero vectors divide by one: their cosine with anything is 0, never NaN. The
        # extreme rows' divisor is never used (their cosines are patched).
        self._divisor = np.where((norms > 0) & np.isfinite(norms), norms, 1).astype(norms.dtype)

    def _unit_rows(self, rows) -> np.ndarray:
        """Unit vectors of ``rows`` (an int, or an array of ints, of any shape)."""
        self.fill_norms()
        rows = np.asarray(rows)
        units = self._vectors[rows] / self._divisor[rows][..., None]
        if len(self._extreme):
            hit = np.isin(rows, self._extreme)
            if hit.any():
                at = np.searchsorted(self._extreme, rows[hit])
                units[hit] = self._extreme_unit[at].astype(units.dtype)
        return units

    def _patch_extreme(self, sims: np.ndarray, query: np.ndarray, rows=None) -> np.ndarray:
        """Cosines of the extreme rows among those of ``sims``, from their float64 units.

        ``sims[..., j]`` is the cosine of row ``rows[j]`` (of row ``j`` when ``rows``
        is None) with ``query`` (a unit vector, or a matrix of them in rows).
        """
        if not len(self._extreme):
            return sims
        n = sims.shape[-1]
        if rows is None:
            cols = self._extreme[self._extreme < n]
            positions = cols
        else:
            rows = np.asarray(rows)
            cols = np.flatnonzero(np.isin(rows, self._extreme))
            positions = rows[cols]
        if len(cols):
            units = self._extreme_unit[np.searchsorted(self._extreme, positions)]
            sims[..., cols] = np.asarray(query, dtype=np.float64) @ units.T
        return sims

    @property
    def norms(self) -> np.ndarray:
        """The Euclidean norm of each vector (cached)."""
        self.fill_norms()
        return self._norms

    def get_normed_vectors(self) -> np.ndarray:
        """All vectors scaled to unit length (a new array; zero vectors stay zero).

        Returns
        -------
        ndarray of shape (n_words, n_dims)
        """
        self.fill_norms()
        normed = self._vectors / self._divisor[:, None]
        normed[self._extreme] = self._extreme_unit
        return normed

    def unit_normalize_all(self) -> None:
        """Scale every vector to unit length in place (zero vectors stay zero).

        Raises
        ------
        ValueError
            If the vectors are read-only (memory-mapped with ``mmap="r"``).
        """
        if not self._vectors.flags.writeable:
            raise ValueError(
                "the vectors are read-only (memory-mapped with mmap='r'); use "
                "get_normed_vectors(), or load with mmap='c' or None."
            )
        self.fill_norms()
        self._vectors /= self._divisor[:, None]
        self._vectors[self._extreme] = self._extreme_unit
        self.fill_norms(force=True)

    # --- queries -----------------------------------------------------------------------
    def get_mean_vector(
        self,
        keys,
        weights=None,
        pre_normalize: bool = True,
        post_normalize: bool = False,
        ignore_missing: bool = True,
    ) -> np.ndarray:
        """Weighted mean of the vectors of words (and of given vectors).

        As gensim's ``get_mean_vector``: the sum of ``weight * vector`` divided
        by the sum of the absolute weights; given vectors are used as they
        are, word vectors scaled to unit length first when ``pre_normalize``.

        Parameters
        ----------
        keys : list of (str, int or ndarray)
            Words, row positions or vectors.
        weights : array-like of shape (len(keys),), default=None
            Weight of each key (default all ones).
        pre_normalize : bool, default=True
            Use the unit vectors of words.
        post_normalize : bool, default=False
            Scale the mean to unit length.
        ignore_missing : bool, default=True
            Skip unknown words instead of raising.

        Returns
        -------
        ndarray of shape (n_dims,)

        Raises
        ------
        ValueError
            If ``keys`` is empty or ``weights`` has another length.
        KeyError
            For an unknown word when ``ignore_missing`` is False.
        """
        if len(keys) == 0:
            raise ValueError("cannot compute the mean of no keys; pass at least one.")
        if weights is None:
            weights = np.ones(len(keys), dtype=self._vectors.dtype)
        elif isinstance(weights, list):
            weights = np.array(weights, dtype=self._vectors.dtype)
        if len(keys) != np.shape(weights)[0]:
            raise ValueError(
                f"keys and weights must have the same length, got {len(keys)} and "
                f"{np.shape(weights)[0]}."
            )
        if not np.isfinite(weights).all():
            raise ValueError(
                f"weights must be finite numbers, got {np.asarray(weights).tolist()!r}."
            )
        mean = np.zeros(self.vector_size, self._vectors.dtype)
        total = 0
        for weight, key in zip(weights, keys):
            if isinstance(key, np.ndarray):
                vector = self._check_vector(key)
            elif key in self:
                vector = self.get_vector(key, norm=pre_normalize)
            elif not ignore_missing:
                self.get_index(key)  # raises the KeyError
            else:
                continue
            mean += weight * vector
            total += abs(weight)
        if total > 0:
            mean = mean / total
        if post_normalize:
            mean = _unitvec(mean).astype(np.float32)
        return mean

    def _split_weight(self, item, default: float):
        """A query item as (key or vector, weight), as gensim reads ``positive=``."""
        if _is_key(item) or isinstance(item, np.ndarray):
            return item, default
        if isinstance(item, (list, tuple)):
            if len(item) == 2 and (_is_key(item[0]) or isinstance(item[0], np.ndarray)):
                if not _is_real(item[1]):
                    raise TypeError(f"the weight in {item!r} must be a number.")
                if not np.isfinite(item[1]):
                    raise ValueError(
                        f"the weight in {item!r} is not finite; weights must be finite "
                        "numbers (1 attracts, -1 repels)."
                    )
                return item[0], float(item[1])
            if _is_number_list(item):
                return np.asarray(item, dtype=np.float64), default
        raise TypeError(
            "a query item must be a word, a vector, or a (word or vector, weight) pair; "
            f"got {item!r}."
        )

    def _query(self, keys: list, weights: np.ndarray) -> np.ndarray:
        """The unit query vector of ``most_similar``; a zero query is an error."""
        for key in keys:
            if isinstance(key, np.ndarray):
                self._check_vector(key)
        mean = self.get_mean_vector(
            keys, weights, pre_normalize=True, post_normalize=True, ignore_missing=False
        )
        if not mean.any():
            raise ValueError(
                "the query vector is zero (the positive and negative words or vectors "
                "cancel, or their vectors are zero): no direction to compare with."
            )
        return mean

    def _cosines(self, unit_query: np.ndarray, restrict_vocab: int | None) -> np.ndarray:
        """Cosine of each (of the first ``restrict_vocab``) vector with a unit vector."""
        self.fill_norms()
        end = restrict_vocab or len(self)
        sims = self._vectors[:end] @ unit_query / self._divisor[:end]
        return self._patch_extreme(sims, unit_query)

    def _top(self, sims: np.ndarray, topn: int, exclude: list[int]) -> list[tuple[str, float]]:
        best = _argsort_desc(sims, topn + len(exclude))
        excluded = set(exclude)
        found = [(self.index_to_key[i], float(sims[i])) for i in best if i not in excluded]
        return found[:topn]

    def most_similar(
        self,
        positive=None,
        negative=None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words most similar in cosine to a mean of words and vectors.

        As gensim's ``most_similar``: the query is the normalised weighted mean
        of the unit vectors of the words (and of any vectors given as they
        are), with weight 1 for each positive and -1 for each negative item
        unless a ``(item, weight)`` pair says otherwise; the query words
        themselves are left out of the answer.

        Parameters
        ----------
        positive : str, array-like, or list of these or of (item, weight), default=None
            Words, vectors, or weighted words/vectors that attract.
        negative : str, array-like, or list of these or of (item, weight), default=None
            Words or vectors that repel (analogies:
            ``most_similar(positive=["king", "woman"], negative=["man"])``).
        topn : int or None, default=10
            Number of words returned (none if ``topn < 1``); ``None`` returns the
            similarity of every word instead.
        restrict_vocab : int or None, default=None
            Search only the first ``restrict_vocab`` words (the most frequent,
            in a trained vocabulary).

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None
            Words and cosine similarities, most similar first.

        Raises
        ------
        KeyError
            If a query word is not in the vocabulary.
        ValueError
            If there is no query, a query vector is not finite or has the
            wrong length, or the query is the zero vector.
        """
        topn = _check_topn(topn)
        if topn == 0:
            return []
        if _is_key(negative) and not isinstance(negative, str):
            raise TypeError(
                f"negative={negative!r}: most_similar's second argument is the negative "
                "words; pass topn by name (most_similar(word, topn=10))."
            )
        restrict_vocab = _check_restrict_vocab(restrict_vocab)
        keys, weights = [], []
        for items, default in ((_ensure_list(positive), 1.0), (_ensure_list(negative), -1.0)):
            for item in items:
                key, weight = self._split_weight(item, default)
                keys.append(key)
                weights.append(weight)
        if not keys:
            raise ValueError("most_similar needs at least one positive or negative item.")
        query = self._query(keys, np.array(weights, dtype=np.float64))
        exclude = [self.get_index(key) for key in keys if _is_key(key) and key in self]
        sims = self._cosines(query, restrict_vocab)
        if topn is None:
            return sims
        return self._top(sims, topn, exclude)

    def similar_by_key(
        self, key, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words most similar to one word (``most_similar(positive=[key])``).

        Parameters
        ----------
        key : str or int
            A word or a row position.
        topn : int or None, default=10
            Number of words returned; ``None`` returns every similarity.
        restrict_vocab : int or None, default=None
            Search only the first ``restrict_vocab`` words.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None
        """
        return self.most_similar(positive=[key], topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_word(
        self, word, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words most similar to one word (alias of :meth:`similar_by_key`).

        Parameters
        ----------
        word : str
            The query word.
        topn : int or None, default=10
            Number of words returned; ``None`` returns every similarity.
        restrict_vocab : int or None, default=None
            Search only the first ``restrict_vocab`` words.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None
        """
        return self.similar_by_key(word, topn=topn, restrict_vocab=restrict_vocab)

    def similar_by_vector(
        self, vector, topn: int | None = 10, restrict_vocab: int | None = None
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words most similar to a vector (``most_similar(positive=[vector])``).

        Parameters
        ----------
        vector : array-like of shape (n_dims,)
            The query vector.
        topn : int or None, default=10
            Number of words returned; ``None`` returns every similarity.
        restrict_vocab : int or None, default=None
            Search only the first ``restrict_vocab`` words.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None
        """
        return self.most_similar(positive=[vector], topn=topn, restrict_vocab=restrict_vocab)

    def most_similar_cosmul(
        self,
        positive=None,
        negative=None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words maximising the multiplicative combination of similarities (3CosMul).

        As gensim's ``most_similar_cosmul``, equation (4) of Levy and Goldberg
        (2014): the product of ``(1 + cos(w, p)) / 2`` over positive items
        divided by the product over negative items plus 1e-6. Words enter as
        unit vectors, vectors as given; the query words are left out.
        ``restrict_vocab`` limits the search (gensim 4.4 ignores it).

        Parameters
        ----------
        positive : str, array-like or list of these, default=None
            Words or vectors whose similarity multiplies the score.
        negative : str, array-like or list of these, default=None
            Words or vectors whose similarity divides it.
        topn : int or None, default=10
            ``None`` returns the score of every word.
        restrict_vocab : int or None, default=None
            Search only the first ``restrict_vocab`` words.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None

        Raises
        ------
        KeyError
            If a query word is not in the vocabulary.
        ValueError
            Without positive items, or for a zero or non-finite query vector.

        References
        ----------
        Levy, O. and Goldberg, Y. (2014). Linguistic regularities in sparse and
        explicit word representations. CoNLL.
        """
        topn = _check_topn(topn)
        if topn == 0:
            return []
        restrict_vocab = _check_restrict_vocab(restrict_vocab)
        positive, negative = _ensure_list(positive), _ensure_list(negative)
        exclude = {self.get_index(k) for k in positive + negative if _is_key(k) and k in self}
        terms = []
        for items in (positive, negative):
            vectors = []
            for item in items:
                if _is_key(item):
                    vector, what = self.get_vector(item, norm=True), f"the vector of {item!r}"
                elif isinstance(item, np.ndarray):
                    vector, what = self._check_vector(item), "a query vector"
                else:
                    raise TypeError(f"most_similar_cosmul takes words and vectors, got {item!r}.")
                if not vector.any():
                    raise ValueError(f"{what} is zero: its cosine with any word is undefined.")
                vectors.append(vector)
            terms.append(vectors)
        if not terms[0]:
            raise ValueError("most_similar_cosmul needs at least one positive word or vector.")
        self.fill_norms()
        end = restrict_vocab or len(self)
        vectors, divisor = self._vectors[:end], self._divisor[:end]
        cosines = [self._patch_extreme(vectors @ t / divisor, t) for t in terms[0] + terms[1]]
        pos = [(1 + sims) / 2 for sims in cosines[: len(terms[0])]]
        neg = [(1 + sims) / 2 for sims in cosines[len(terms[0]) :]]
        dists = np.prod(pos, axis=0) / (np.prod(neg, axis=0) + 0.000001)
        if topn is None:
            return dists
        return self._top(dists, topn, sorted(exclude))

    def rank_by_centrality(self, words, use_norm: bool = True) -> list[tuple[float, str]]:
        """Words by cosine to the normalised mean of their vectors, most central first.

        Unknown words are left out with a warning (gensim logs them).

        Parameters
        ----------
        words : list of str
            The words to rank (unknown words are left out).
        use_norm : bool, default=True
            Use the words' unit vectors.

        Returns
        -------
        list of (float, str)

        Raises
        ------
        ValueError
            If no word is in the vocabulary.
        """
        used = [word for word in words if word in self]
        if len(used) != len(words):
            missing = [word for word in words if word not in self]
            warnings.warn(
                f"words not in the vocabulary are ignored: {missing!r}", UserWarning, stacklevel=2
            )
        if not used:
            raise ValueError("cannot select a word from an empty list (no word is known).")
        vectors = np.vstack([self.get_vector(w, norm=use_norm) for w in used]).astype(np.float32)
        mean = self.get_mean_vector(vectors, post_normalize=True)
        dists = vectors @ mean
        return sorted(zip(dists.tolist(), used), reverse=True)

    def doesnt_match(self, words) -> str:
        """The word farthest (in cosine) from the mean of the words' unit vectors.

        Parameters
        ----------
        words : list of str
            Unknown words are left out with a warning.

        Returns
        -------
        str
        """
        return self.rank_by_centrality(words)[-1][1]

    @staticmethod
    def cosine_similarities(vector_1, vectors_all) -> np.ndarray:
        """Cosine similarity of one vector with each row of a matrix (gensim's formula).

        Parameters
        ----------
        vector_1 : ndarray of shape (n_dims,)
            The query vector.
        vectors_all : ndarray of shape (n, n_dims)
            The vectors to compare it with.

        Returns
        -------
        ndarray of shape (n,)
        """
        vector_1, vectors_all = np.asarray(vector_1), np.asarray(vectors_all)
        with np.errstate(over="ignore", under="ignore"):  # such norms are redone below
            norm = np.linalg.norm(vector_1)
            all_norms = np.linalg.norm(vectors_all, axis=1)
        dtype = np.result_type(vector_1, vectors_all, np.float32)
        floor = np.sqrt(np.finfo(dtype).tiny / np.finfo(dtype).eps)
        norms = np.append(all_norms[np.abs(vectors_all).max(axis=1, initial=0) > 0], norm)
        if (np.isfinite(norms).all() and (norms >= floor).all()) or not vector_1.any():
            return np.dot(vectors_all, vector_1) / (norm * all_norms)
        # Squares overflow or underflow: each vector divided by its largest value first.
        query = vector_1.astype(np.float64) / np.abs(vector_1).max()
        rows = vectors_all.astype(np.float64)
        biggest = np.abs(rows).max(axis=1, initial=0)[:, None]
        rows = rows / np.where(biggest > 0, biggest, 1)
        with np.errstate(invalid="ignore"):  # a zero row is NaN, as in gensim
            sims = rows @ query / (np.linalg.norm(rows, axis=1) * np.linalg.norm(query))
        return sims.astype(dtype)

    def distances(self, word_or_vector, other_words: Iterable = ()) -> np.ndarray:
        """Cosine distances (1 - cosine) from a word or vector to other words.

        Parameters
        ----------
        word_or_vector : str or array-like of shape (n_dims,)
            The query: a word or a vector.
        other_words : iterable of str, default=()
            Words to measure; empty means every word (the query word included).

        Returns
        -------
        ndarray of shape (n_other_words,) or (n_words,)

        Raises
        ------
        KeyError
            For an unknown word.
        ValueError
            If the query vector is zero or not finite.
        """
        if _is_key(word_or_vector):
            query = self.get_vector(word_or_vector)
            what = f"the vector of {word_or_vector!r}"
        else:
            query, what = self._check_vector(word_or_vector), "the query vector"
        if not query.any():
            raise ValueError(f"{what} is zero: cosine distances from it are undefined.")
        with np.errstate(over="ignore", under="ignore"):  # such queries are redone below
            norm = np.linalg.norm(query)
        if not (np.isfinite(norm) and norm > np.sqrt(np.finfo(query.dtype).tiny)):
            query, norm = _unitvec(query), 1.0  # its squares overflow or underflow
        self.fill_norms()
        other_words = list(other_words)
        rows = [self.get_index(word) for word in other_words] if other_words else None
        vectors = self._vectors if rows is None else self._vectors[rows]
        divisor = self._divisor if rows is None else self._divisor[rows]
        sims = self._patch_extreme(vectors @ query / (norm * divisor), query / norm, rows)
        return 1 - sims

    def distance(self, w1, w2) -> float:
        """Cosine distance ``1 - similarity(w1, w2)``.

        Parameters
        ----------
        w1, w2 : str
            The two words.

        Returns
        -------
        float
        """
        return 1 - self.similarity(w1, w2)

    def similarity(self, w1, w2) -> float:
        """Cosine similarity of the vectors of two words (0 if one is zero).

        Parameters
        ----------
        w1, w2 : str
            The two words.

        Returns
        -------
        float

        Raises
        ------
        KeyError
            For an unknown word.
        """
        a, b = self._vectors[self.get_index(w1)], self._vectors[self.get_index(w2)]
        return float(np.dot(_unitvec(a), _unitvec(b)))

    def n_similarity(self, ws1, ws2) -> float:
        """Cosine similarity of the mean vectors of two lists of words.

        As gensim: means of the raw vectors, unknown words skipped.

        Parameters
        ----------
        ws1, ws2 : list of str
            The two sets of words (each non-empty).

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If a list is empty.
        KeyError
            If no word of a list is in the vocabulary.
        """
        if not (len(ws1) and len(ws2)):
            raise ValueError("n_similarity needs two non-empty lists of words.")
        for words in (ws1, ws2):
            if not any(word in self for word in words):
                raise KeyError(f"none of the words {list(words)!r} is in the vocabulary.")
        mean1 = self.get_mean_vector(ws1, pre_normalize=False)
        mean2 = self.get_mean_vector(ws2, pre_normalize=False)
        return float(np.dot(_unitvec(mean1), _unitvec(mean2)))

    def closer_than(self, key1, key2) -> list[str]:
        """The words closer (in cosine) to ``key1`` than ``key2`` is.

        Parameters
        ----------
        key1, key2 : str
            The query word and the word whose distance to it is the bound.

        Returns
        -------
        list of str
            In row order, ``key1`` left out.
        """
        dists = self.distances(key1)
        row1, row2 = self.get_index(key1), self.get_index(key2)
        rows = np.flatnonzero(dists < dists[row2])
        return [self.index_to_key[i] for i in rows if i != row1]

    def rank(self, key1, key2) -> int:
        """Rank of ``key2`` among the neighbours of ``key1`` (1 = nearest).

        Parameters
        ----------
        key1, key2 : str
            The query word and the word to rank among its neighbours.

        Returns
        -------
        int
        """
        return len(self.closer_than(key1, key2)) + 1

    def most_similar_to_given(self, key1, keys_list):
        """The key of ``keys_list`` most similar to ``key1``.

        Parameters
        ----------
        key1 : str
            The query word.
        keys_list : list of str
            The candidate words.

        Returns
        -------
        str
        """
        return keys_list[int(np.argmax([self.similarity(key1, key) for key in keys_list]))]

    # --- evaluation --------------------------------------------------------------------
    def evaluate_word_pairs(
        self,
        pairs: PathType | Iterable[tuple[str, str, float]],
        *,
        delimiter: str = "\t",
        encoding: str = "utf8",
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
    ):
        """Correlate the cosine similarities of word pairs with human scores.

        The same computation as gensim's ``KeyedVectors.evaluate_word_pairs``
        (WordSim353, SimLex-999 and similar files), so numbers are comparable.

        Parameters
        ----------
        pairs : path or iterable of (str, str, float)
            A file of ``word1<delimiter>word2<delimiter>score`` lines, where
            lines starting with ``#`` and malformed lines are skipped (as
            gensim's ``wordsim353.tsv``), or the triples themselves.
        delimiter : str, default="\\t"
            Field separator of the file.
        encoding : str, default="utf8"
            Encoding of the file.
        restrict_vocab : int, default=300000
            Only the first ``restrict_vocab`` words (the most frequent, in a
            trained vocabulary) count as known.
        case_insensitive : bool, default=True
            Compare words upper-cased; when several words differ only by case,
            the first (most frequent) one's vector is used.
        dummy4unknown : bool, default=False
            Give pairs with an unknown word similarity 0 instead of skipping them.

        Returns
        -------
        pearson : scipy.stats PearsonRResult
            Pearson correlation and its two-sided p-value (a 2-tuple).
        spearman : scipy.stats SignificanceResult
            Spearman rank correlation and its p-value (a 2-tuple).
        oov_ratio : float
            Percentage of pairs with an unknown word (gensim's definition: of
            the evaluated pairs when ``dummy4unknown``, else of all pairs).

        Raises
        ------
        ValueError
            If a human score is not finite, or no pair has both words known.
        """
        ok_vocab = self._ok_vocab(restrict_vocab, case_insensitive)
        gold, model = [], []
        oov = 0
        for a, b, score in _iter_pairs(pairs, delimiter, case_insensitive, encoding):
            if a not in ok_vocab or b not in ok_vocab:
                oov += 1
                if dummy4unknown:
                    gold.append(score)
                    model.append(0.0)
                continue
            gold.append(score)
            model.append(self.similarity(ok_vocab[a], ok_vocab[b]))
        if not gold:
            raise ValueError(
                f"no valid similarity judgements in {pairs!r}: the lines are not "
                f"'word1{delimiter!r}word2{delimiter!r}score', or all pairs have a word "
                f"outside the first {restrict_vocab} of {len(self)} words."
            )
        pearson, spearman = _pearson_spearman(gold, model)
        # gensim's definition, whose denominator differs between the two modes.
        oov_ratio = oov / (len(gold) if dummy4unknown else len(gold) + oov) * 100
        return pearson, spearman, oov_ratio

    def _ok_vocab(self, restrict_vocab: int, case_insensitive: bool) -> dict[str, int]:
        """Known words (upper-cased if asked) to rows; the first of case variants wins."""
        known = self.index_to_key[:restrict_vocab]
        if case_insensitive:
            return {w.upper(): self.key_to_index[w] for w in reversed(known)}
        return {w: self.key_to_index[w] for w in reversed(known)}

    def evaluate_word_analogies(
        self,
        analogies: PathType,
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
        similarity_function: str = "most_similar",
    ) -> tuple[float, list[dict]]:
        """Accuracy on word analogies "a is to b as c is to d", by section.

        The same computation as gensim's ``evaluate_word_analogies`` (the
        ``compute-accuracy`` script of word2vec): the answer is the first of
        the five words nearest to ``b + c - a`` (3CosAdd, as in
        :meth:`most_similar`) that is known and not a question word. The
        questions are answered in batches of one matrix product each.
        ``similarity_function="most_similar_cosmul"`` ranks the words by
        3CosMul instead (:meth:`most_similar_cosmul`; gensim 4.4 accepts the
        option but always uses 3CosAdd).

        Parameters
        ----------
        analogies : str or path-like
            File of four-word lines in sections headed ``": name"``, as
            gensim's ``questions-words.txt``.
        restrict_vocab : int, default=300000
            Skip questions with a word outside the first ``restrict_vocab``
            words, and search answers among those words only.
        case_insensitive : bool, default=True
            Compare words upper-cased (the first of several case variants wins).
        dummy4unknown : bool, default=False
            Count questions with an unknown word as wrong instead of skipping them.
        similarity_function : {"most_similar", "most_similar_cosmul"}, default="most_similar"
            The ranking of candidate answers: 3CosAdd or 3CosMul (Levy and
            Goldberg, 2014).

        Returns
        -------
        score : float
            Accuracy over all evaluated questions.
        sections : list of dict
            One dict per section, then ``"Total accuracy"``: ``"section"`` (the
            name), ``"correct"`` and ``"incorrect"`` (lists of 4-tuples of the
            question's words, upper-cased when ``case_insensitive``).

        Raises
        ------
        ValueError
            If the file has a question before its first section header, or
            no question at all, or ``similarity_function`` is unknown.
        """
        if similarity_function not in ("most_similar", "most_similar_cosmul"):
            raise ValueError(
                "similarity_function must be 'most_similar' (3CosAdd) or "
                f"'most_similar_cosmul' (3CosMul), got {similarity_function!r}."
            )
        cosmul = similarity_function == "most_similar_cosmul"
        ok_vocab = self._ok_vocab(restrict_vocab, case_insensitive)
        sections, entries, questions = [], [], []
        n_questions = 0
        for kind, value in _io.iter_analogies(analogies, case_insensitive):
            if kind == "section":
                sections.append({"section": value, "correct": [], "incorrect": []})
                entries.append([])
                continue
            n_questions += 1
            if all(word in ok_vocab for word in value):
                entries[-1].append((value, len(questions)))
                questions.append(value)
            elif dummy4unknown:
                entries[-1].append((value, None))
        if not n_questions:
            raise ValueError(f"{analogies} holds no analogy question (lines of four words).")
        verdicts = self._answer_analogies(
            questions, ok_vocab, restrict_vocab, case_insensitive, cosmul
        )
        for section, section_entries in zip(sections, entries):
            for question, i in section_entries:
                key = "correct" if i is not None and verdicts[i] else "incorrect"
                section[key].append(question)
        total = {
            "section": "Total accuracy",
            "correct": [q for s in sections for q in s["correct"]],
            "incorrect": [q for s in sections for q in s["incorrect"]],
        }
        sections.append(total)
        n_evaluated = len(total["correct"]) + len(total["incorrect"])
        score = len(total["correct"]) / n_evaluated if n_evaluated else 0.0
        return score, sections

    def _cosadd_scores(self, block, matrix, divisor) -> np.ndarray:
        """3CosAdd of unit vectors ``block[:, (a, b, c)]``: cosines with ``b + c - a``."""
        # gensim's sum: b + c - a accumulated in the vectors' type, then / 3 and unit
        # length in float64, then back to float32.
        mean = block[:, 1] + block[:, 2]
        mean -= block[:, 0]
        mean = mean.astype(np.float64) / 3.0
        norm = np.linalg.norm(mean, axis=1, keepdims=True)
        query = np.where(norm > 0, mean * (1.0 / np.where(norm > 0, norm, 1)), mean)
        query = query.astype(np.float32)
        return self._patch_extreme(query @ matrix.T / divisor, query)

    def _cosmul_scores(self, block, matrix, divisor) -> np.ndarray:
        """3CosMul of unit vectors ``block[:, (a, b, c)]``, as :meth:`most_similar_cosmul`."""
        terms = block.reshape(-1, block.shape[-1])
        cosines = self._patch_extreme(terms @ matrix.T / divisor, terms)
        cosines = cosines.reshape(len(block), 3, -1)
        positive = (1 + cosines[:, 1]) / 2 * ((1 + cosines[:, 2]) / 2)
        return positive / ((1 + cosines[:, 0]) / 2 + 0.000001)

    def _answer_analogies(self, questions, ok_vocab, restrict_vocab, case_insensitive, cosmul):
        """Whether each in-vocabulary question is answered right, as gensim decides it."""
        if not questions:
            return []
        self.fill_norms()
        end = min(restrict_vocab or len(self), len(self))
        matrix, divisor = self._vectors[:end], self._divisor[:end]
        rows = np.array([[ok_vocab[w] for w in q[:3]] for q in questions])
        n_best = 5 + 3  # gensim asks most_similar for topn + the three query words
        step = max(1, _ANALOGY_BLOCK // max(end, 1))
        verdicts = []
        for start in range(0, len(questions), step):
            block_rows = rows[start : start + step]
            block = self._unit_rows(block_rows)  # a, b, c
            scores = self._cosmul_scores if cosmul else self._cosadd_scores
            # (questions, words), so that the top-k selection runs along contiguous rows.
            neg_sims = -scores(block, matrix, divisor)
            if n_best >= end:
                best = np.argsort(neg_sims, axis=1)[:, :n_best]
            else:
                part = np.argpartition(neg_sims, n_best, axis=1)[:, :n_best]
                order = np.argsort(np.take_along_axis(neg_sims, part, axis=1), axis=1)
                best = np.take_along_axis(part, order, axis=1)
            for (a, b, c, expected), ranked in zip(questions[start : start + step], best.tolist()):
                ignore_rows = {ok_vocab[b], ok_vocab[c], ok_vocab[a]}
                candidates = [i for i in ranked if i not in ignore_rows][:5]
                predicted = None
                for i in candidates:
                    word = self.index_to_key[i]
                    predicted = word.upper() if case_insensitive else word
                    if predicted in ok_vocab and predicted not in {a, b, c}:
                        break
                verdicts.append(predicted == expected)
        return verdicts

    # --- gensim ------------------------------------------------------------------------
    def to_gensim(self):
        """The same vectors as a gensim ``KeyedVectors`` (a copy).

        Words, row order, the matrix bit for bit in its type, and the per-word
        attributes (``"count"``...) are carried over; :meth:`from_gensim` gives
        back an equal :class:`WordVectors`.

        Returns
        -------
        gensim.models.KeyedVectors

        Raises
        ------
        ImportError
            If gensim is not installed.
        """
        keyed_vectors = _gensim_keyed_vectors("to_gensim")
        kv = keyed_vectors(self.vector_size, count=0, dtype=self._vectors.dtype)
        kv.add_vectors(list(self.index_to_key), np.array(self._vectors))
        for name, values in self.expandos.items():
            # gensim's add_vectors(extras=...) mishandles the dict: set the arrays directly.
            kv.expandos[name] = values.copy()
        return kv

    @classmethod
    def from_gensim(cls, kv) -> WordVectors:
        """The vectors of a gensim ``KeyedVectors`` (a copy), with their attributes.

        Only the vectors of the vocabulary's words are taken: a
        ``FastTextKeyedVectors``'s n-gram buckets are not.

        Parameters
        ----------
        kv : gensim.models.KeyedVectors
            E.g. ``model.wv`` of a gensim ``Word2Vec``.

        Returns
        -------
        WordVectors

        Raises
        ------
        ImportError
            If gensim is not installed.
        TypeError
            If ``kv`` is not a ``KeyedVectors``, or has keys that are not words
            (``Doc2Vec``'s integer tags).
        """
        keyed_vectors = _gensim_keyed_vectors("from_gensim")
        if not isinstance(kv, keyed_vectors):
            raise TypeError(
                f"from_gensim takes a gensim KeyedVectors (e.g. model.wv), got "
                f"{type(kv).__name__}."
            )
        words = list(kv.index_to_key)
        bad = [key for key in words if not isinstance(key, str)][:1]
        if bad:
            raise TypeError(
                f"the KeyedVectors has keys that are not words, e.g. {bad[0]!r} "
                f"({type(bad[0]).__name__}: Doc2Vec's tags, or a row of KeyedVectors(count=n) "
                "not filled yet); WordVectors holds str words."
            )
        wv = cls(words, np.array(kv.vectors), dtype=kv.vectors.dtype)
        for name, values in kv.expandos.items():
            wv.expandos[name] = np.array(values[: len(words)])
        return wv

    def vectors_for_all(
        self, keys: Iterable, allow_inference: bool = True, copy_vecattrs: bool = False
    ) -> WordVectors:
        """The vectors of the known words among ``keys``, as a new :class:`WordVectors`.

        As gensim's ``vectors_for_all``: the keys are deduplicated, kept in
        their first order, unknown ones left out.

        Parameters
        ----------
        keys : iterable of str
            The words wanted (e.g. a corpus's words, most frequent first).
        allow_inference : bool, default=True
            gensim's option for vectors that can be inferred for unknown words
            (subword models); these vectors have none, so unknown words are
            always left out.
        copy_vecattrs : bool, default=False
            Carry the per-word attributes (``"count"``...) over.

        Returns
        -------
        WordVectors
        """
        rows, seen = [], set()
        for key in keys:
            if key in seen:
                continue
            seen.add(key)
            row = self.key_to_index.get(key, -1) if isinstance(key, str) else -1
            if row >= 0:
                rows.append(row)
        rows = np.asarray(rows, dtype=np.intp)
        wv = type(self)(
            [self.index_to_key[i] for i in rows], self._vectors[rows], dtype=self._vectors.dtype
        )
        if copy_vecattrs:
            wv.expandos = {name: values[rows] for name, values in self.expandos.items()}
        return wv

    def relative_cosine_similarity(self, wa, wb, topn: int = 10) -> float:
        """Relative cosine similarity of ``wb`` to ``wa`` among ``wa``'s ``topn`` neighbours.

        Equation (1) of Leeuwenberg et al. (2016), as gensim computes it:
        ``similarity(wa, wb)`` divided by the sum of the similarities of
        ``wa``'s ``topn`` nearest words. Above ``1 / topn``, ``wb`` is closer to
        ``wa`` than an average neighbour (the paper's synonym threshold is 0.10
        for ``topn=10``).

        Parameters
        ----------
        wa : str
            The word whose neighbours are the reference.
        wb : str
            The word compared with it.
        topn : int, default=10
            Number of neighbours of ``wa``.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``wa`` has no neighbour (``topn < 1`` or a one-word vocabulary).

        References
        ----------
        Leeuwenberg, A., Vela, M., Dehdari, J. and van Genabith, J. (2016). A
        minimally supervised approach for synonym extraction with word
        embeddings. The Prague Bulletin of Mathematical Linguistics, 105.
        """
        sims = self.similar_by_word(wa, topn)
        if not sims:
            raise ValueError(
                f"cannot compute a relative cosine similarity without neighbours of {wa!r} "
                f"(topn={topn}, {len(self)} words); pass topn >= 1."
            )
        return float(self.similarity(wa, wb)) / sum(sim for _, sim in sims)

    # --- files -------------------------------------------------------------------------
    def save_word2vec_format(
        self,
        path: PathType,
        binary: bool = False,
        write_header: bool = True,
        *,
        fvocab: PathType | None = None,
    ) -> None:
        """Write the vectors in the word2vec format (C tool, gensim), atomically.

        Text: a header line ``"<n_words> <n_dims>"``, then one line per word,
        the word and its values separated by spaces, each value in the
        shortest form that reads back to the same number. Binary: the same
        header, then per word its UTF-8 bytes, a space and the float32 values
        (little-endian), as gensim writes them. Paths ending in ``.gz`` or
        ``.bz2`` are compressed. The file is written under a temporary name in
        the same directory and renamed, so a failed save leaves an existing
        file as it was. Words are written in row order.

        Parameters
        ----------
        path : str or path-like
            File to write.
        binary : bool, default=False
            Write the binary format instead of text.
        write_header : bool, default=True
            Write the header line (text without it is GloVe's format).
        fvocab : str or path-like or None, default=None
            Also write the word counts (the ``"count"`` attribute) to this file,
            a ``"<word> <count>"`` line per word in row order, as gensim's
            ``fvocab`` and the C tool's ``-save-vocab``. Both files are replaced
            together, or neither.

        Raises
        ------
        ValueError
            If a word is empty, holds whitespace or a control character, or
            cannot be encoded in UTF-8 (the message names it), or ``fvocab`` is
            given and no counts are stored.
        """
        counts = None
        if fvocab is not None:
            if "count" not in self.expandos:
                raise ValueError(
                    "fvocab needs the words' counts, and these vectors have none; pass "
                    "counts= to WordVectors, or set_vecattr(word, 'count', n) for each word."
                )
            counts = self.expandos["count"]
        _io.write_word2vec(
            path,
            self.index_to_key,
            self._vectors,
            binary=binary,
            write_header=write_header,
            vocab_path=fvocab,
            counts=counts,
        )

    @classmethod
    def load_word2vec_format(
        cls,
        path: PathType,
        binary: bool | None = False,
        limit: int | None = None,
        unicode_errors: str = "strict",
        datatype=np.float32,
        encoding: str = "utf8",
        *,
        fvocab: PathType | None = None,
    ) -> WordVectors:
        """Read vectors written in the word2vec format (gensim, the C tool, GloVe).

        The matrix is allocated once from the header and filled in chunks, so
        a load needs little more memory than the matrix itself.

        Parameters
        ----------
        path : str or path-like
            File to read (``.gz`` and ``.bz2`` are decompressed).
        binary : bool or None, default=False
            Whether the file is in the binary format; ``None`` detects it from
            the first record. Text files without the header line (GloVe's
            format) are accepted too.
        limit : int or None, default=None
            Read only the first ``limit`` vectors.
        unicode_errors : {"strict", "replace", "ignore"}, default="strict"
            What to do with a word that is not valid ``encoding``, such as a
            word the C tool cut inside a multibyte character.
        datatype : numpy float dtype, default=numpy.float32
            Type of the loaded vectors.
        encoding : str, default="utf8"
            Encoding of the words.
        fvocab : str or path-like or None, default=None
            A vocabulary file (``"<word> <count>"`` lines: gensim's ``fvocab``,
            the C tool's ``-save-vocab``) whose counts become the ``"count"``
            attribute. Without it no counts are stored (gensim makes up
            decreasing ones).

        Returns
        -------
        WordVectors

        Raises
        ------
        ValueError
            If the file is not in the word2vec format (bad header, header
            disagreeing with the records, tab-separated fields, a word list
            without values, truncated), with the line or record at fault; if
            ``fvocab`` is damaged or lacks a word of the file.
        """
        words, vectors = _io.read_word2vec(
            path,
            binary=binary,
            limit=limit,
            unicode_errors=unicode_errors,
            datatype=datatype,
            encoding=encoding,
        )
        counts = None
        if fvocab is not None:
            counts = _io.read_vocab(fvocab, words, unicode_errors, encoding)
        with _naming(path):
            return cls(words, vectors, counts=counts, dtype=vectors.dtype)

    def save(self, path: PathType) -> None:
        """Save in sknce's native format: ``path`` (JSON) and ``<path>.vectors.npy``.

        The JSON file holds the words and per-word attributes, the ``.npy``
        file the matrix, bit for bit; both are written atomically. Any word
        can be saved, whitespace included.

        Parameters
        ----------
        path : str or path-like
            The file of the words and attributes (JSON); the matrix goes to
            ``<path>.vectors.npy``.

        See Also
        --------
        load : read it back, optionally memory-mapped.
        """
        _io.write_native(path, self.index_to_key, self._vectors, self.expandos)

    @classmethod
    def load(cls, path: PathType, mmap: str | None = None) -> WordVectors:
        """Load vectors saved by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            The file written by :meth:`save` (the matrix is read from
            ``<path>.vectors.npy``).
        mmap : {None, "r", "r+", "c"}, default=None
            Memory-map the matrix instead of reading it: with ``"r"`` the
            pages are read-only and shared by every process that maps the
            file; ``"c"`` is copy-on-write.

        Returns
        -------
        WordVectors

        Raises
        ------
        ValueError
            If ``path`` is not a native file or its matrix file does not match.
        """
        words, vectors, vecattrs = _io.read_native(path, mmap=mmap)
        with _naming(path):
            wv = cls(words, vectors, dtype=vectors.dtype)
        for name, values in vecattrs.items():
            if values.shape != (len(wv),):
                raise ValueError(f"{path}: the attribute {name!r} has {len(values)} values.")
            wv.expandos[name] = values
        return wv


@contextlib.contextmanager
def _naming(path: PathType):
    """A ValueError about the words or vectors read from ``path``, prefixed with its name."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _gensim_keyed_vectors(caller: str):
    """gensim's ``KeyedVectors`` class, or an ImportError saying how to get it."""
    try:
        from gensim.models import KeyedVectors
    except ImportError:
        raise ImportError(
            f"WordVectors.{caller} needs gensim, which is not installed; install it with "
            "'pip install gensim'."
        ) from None
    return KeyedVectors


def resolve_init_vectors(init_vectors) -> WordVectors:
    """Pretrained vectors in any accepted form, as a :class:`WordVectors`.

    Parameters
    ----------
    init_vectors : WordVectors, dict, (words, matrix) pair, KeyedVectors, or path
        - a :class:`WordVectors` (returned as is);
        - a dict mapping each word to its vector;
        - a pair ``(words, matrix)`` with one matrix row per word;
        - a gensim ``KeyedVectors`` (anything with ``index_to_key`` and
          ``vectors``);
        - a path (str or path-like) to a file in the word2vec text or binary
          format, or GloVe's header-less text format, or sknce's native format
          (:meth:`WordVectors.save`); which one is detected.

    Returns
    -------
    WordVectors

    Raises
    ------
    TypeError
        If ``init_vectors`` is none of the above.
    ValueError
        If the vectors are ragged, empty or not finite.
    """
    if isinstance(init_vectors, WordVectors):
        return init_vectors
    if isinstance(init_vectors, (str, os.PathLike)):
        if not os.path.exists(init_vectors):
            raise ValueError(f"init_vectors file {str(init_vectors)!r} does not exist.")
        if _io.is_native(init_vectors):
            return WordVectors.load(init_vectors)
        return WordVectors.load_word2vec_format(init_vectors, binary=None)
    if isinstance(init_vectors, Mapping):
        if not init_vectors:
            raise ValueError("init_vectors is an empty dict; pass at least one word vector.")
        words = list(init_vectors)
        rows = [np.asarray(init_vectors[w]) for w in words]
        for word, row in zip(words, rows):
            if row.shape != rows[0].shape or row.ndim != 1:
                raise ValueError(
                    f"init_vectors is ragged: the vector of {word!r} has shape {row.shape}, "
                    f"that of {words[0]!r} {rows[0].shape}; all must be 1-d and equally long."
                )
        return WordVectors(words, np.vstack(rows))
    if hasattr(init_vectors, "index_to_key") and hasattr(init_vectors, "vectors"):
        return WordVectors(init_vectors.index_to_key, init_vectors.vectors)
    if isinstance(init_vectors, (tuple, list)) and len(init_vectors) == 2:
        words, matrix = init_vectors
        if isinstance(words, str) or not isinstance(words, Iterable):
            raise TypeError(
                "init_vectors as a pair must be (words, matrix) with a list of words first, "
                f"got {type(words).__name__}."
            )
        try:
            matrix = np.asarray(matrix, dtype=np.float32)
        except ValueError:
            raise ValueError(
                "init_vectors matrix is ragged; pass a 2-d array with one row per word."
            ) from None
        return WordVectors(list(words), matrix)
    raise TypeError(
        "init_vectors must be a dict word -> vector, a (words, matrix) pair, a WordVectors, "
        "a gensim KeyedVectors, or the path of a word2vec text/binary file; "
        f"got {type(init_vectors).__name__}."
    )
