"""Trained word vectors as their own object: queries, evaluation and word2vec-format I/O.

:class:`WordVectors` plays the part of gensim's ``KeyedVectors``, apart from
the training code: cosine neighbours, similarities, the word-pair correlation
benchmark with gensim's exact semantics, and files in the word2vec text and
binary formats that gensim and the original C tool read and write.
:func:`resolve_init_vectors` turns the accepted forms of pretrained vectors
into a :class:`WordVectors`.
"""

from __future__ import annotations

import bz2
import gzip
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

__all__ = ["WordVectors", "resolve_init_vectors"]

PathType = str | os.PathLike


def _open(path: PathType, mode: str):
    """Open a file, transparently (de)compressing ``.gz`` and ``.bz2`` as gensim does."""
    suffix = Path(path).suffix
    if suffix == ".gz":
        return gzip.open(path, mode)
    if suffix == ".bz2":
        return bz2.open(path, mode)
    return open(path, mode)


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (as gensim's ``unitvec``)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1).astype(vectors.dtype)


class WordVectors:
    """Word vectors with cosine queries, evaluation and word2vec-format I/O.

    The counterpart of gensim's ``KeyedVectors``: a list of words and a matrix
    with one row per word, kept apart from the model that trained them.

    Parameters
    ----------
    words : sequence of str
        Distinct words, one per row of ``vectors``.
    vectors : array-like of shape (n_words, n_dims)
        Finite word vectors; stored as float32, the precision of the word2vec
        formats.

    Attributes
    ----------
    words : list of str
        The words, in row order.
    index : dict of str to int
        Row of each word.
    vectors : ndarray of shape (n_words, n_dims), dtype float32
        The vectors.

    See Also
    --------
    sknce.words.ACEWord2Vec : trains word vectors; its ``vectors_`` and queries
        use this class.

    Examples
    --------
    >>> import numpy as np
    >>> from sknce.words import WordVectors
    >>> wv = WordVectors(["cat", "dog", "car"], np.array([[1.0, 0.1], [0.9, 0.2], [0.0, 1.0]]))
    >>> wv.most_similar("cat", topn=1)[0][0]
    'dog'
    >>> round(wv.similarity("cat", "car"), 3)
    0.1
    """

    def __init__(self, words: Sequence[str], vectors) -> None:
        words = list(words)
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:
            raise ValueError(
                f"vectors must be a 2-d array (n_words, n_dims), got shape {vectors.shape}."
            )
        if vectors.dtype.kind not in "fiu":
            raise TypeError(f"vectors must hold numbers, got dtype {vectors.dtype}.")
        if len(words) != vectors.shape[0]:
            raise ValueError(
                f"got {len(words)} words for {vectors.shape[0]} vectors; pass one word per row."
            )
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
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        bad_rows = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
        if len(bad_rows):
            others = f" and {len(bad_rows) - 1} more words" if len(bad_rows) > 1 else ""
            raise ValueError(
                f"the vector of {words[bad_rows[0]]!r}{others} has non-finite values (NaN "
                "or inf, or beyond float32's range); fix or drop those words."
            )
        self.words = words
        self.index = index
        self.vectors = vectors

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self._row(word)]

    def __repr__(self) -> str:
        return f"WordVectors({len(self)} words, {self.vector_size} dimensions)"

    @property
    def vector_size(self) -> int:
        """Number of dimensions of each vector."""
        return self.vectors.shape[1]

    def _row(self, word: str) -> int:
        try:
            return self.index[word]
        except (KeyError, TypeError):
            raise KeyError(
                f"word {word!r} is not in the vocabulary ({len(self)} words); check its "
                "spelling and case, and that it occurs at least min_count times in the "
                "training corpus."
            ) from None

    def _query_vector(self, item) -> tuple[np.ndarray, int | None]:
        """A word's unit vector (with its row), or a given vector (no row)."""
        if isinstance(item, str):
            row = self._row(item)
            return _unit_rows(self.vectors[row]), row
        vector = np.asarray(item, dtype=np.float32)
        if vector.shape != (self.vector_size,):
            raise ValueError(
                f"a query vector must have shape ({self.vector_size},), got {vector.shape}; "
                "pass a word (str), a vector, or a list of words."
            )
        return vector, None

    def most_similar(
        self,
        word_or_vector: str | np.ndarray | Sequence,
        topn: int = 10,
        *,
        negative: Sequence | None = None,
    ) -> list[tuple[str, float]]:
        """The ``topn`` words closest in cosine similarity.

        As gensim's ``most_similar``: the query is the normalised mean of the
        unit vectors of the positive words (and of any raw vectors given),
        minus those of the ``negative`` words; the query words themselves are
        excluded from the answer.

        Parameters
        ----------
        word_or_vector : str, array-like of shape (n_dims,), or list of these
            A word, a vector, or several (positive) words or vectors.
        topn : int, default=10
            Number of neighbours returned.
        negative : list of str or array-like, default=None
            Words or vectors subtracted from the query, as in analogies
            (``most_similar(["king", "woman"], negative=["man"])``).

        Returns
        -------
        list of (str, float)
            Words and cosine similarities, most similar first.

        Raises
        ------
        KeyError
            If a query word is not in the vocabulary.
        """
        if isinstance(topn, bool) or not isinstance(topn, (int, np.integer)) or topn < 1:
            raise ValueError(f"topn must be an int >= 1, got {topn!r}.")
        positive = _query_items(word_or_vector)
        negative = [] if negative is None else _query_items(negative)
        if not positive and not negative:
            raise ValueError("most_similar needs at least one query word or vector.")
        parts, exclude = [], set()
        for sign, items in ((1.0, positive), (-1.0, negative)):
            for item in items:
                vector, row = self._query_vector(item)
                parts.append(sign * vector)
                if row is not None:
                    exclude.add(row)
        query = _unit_rows(np.mean(parts, axis=0, dtype=np.float32))
        sims = _unit_rows(self.vectors) @ query
        sims[list(exclude)] = -np.inf
        n = min(topn, len(self) - len(exclude))
        if n <= 0:
            return []
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.words[i], float(sims[i])) for i in top]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of the vectors of two words.

        Parameters
        ----------
        a, b : str
            Words of the vocabulary.

        Returns
        -------
        float
        """
        unit = _unit_rows(self.vectors[[self._row(a), self._row(b)]])
        return float(unit[0] @ unit[1])

    def evaluate_word_pairs(
        self,
        pairs: PathType | Iterable[tuple[str, str, float]],
        *,
        delimiter: str = "\t",
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
            If no pair has both words known.
        """
        known = self.words[:restrict_vocab]
        # Reversed, so that the first of several case variants wins (gensim).
        if case_insensitive:
            ok_vocab = {w.upper(): self.index[w] for w in reversed(known)}
        else:
            ok_vocab = {w: self.index[w] for w in reversed(known)}
        unit = None
        gold, model = [], []
        oov = 0
        for a, b, score in _iter_pairs(pairs, delimiter, case_insensitive):
            if a not in ok_vocab or b not in ok_vocab:
                oov += 1
                if dummy4unknown:
                    gold.append(score)
                    model.append(0.0)
                continue
            if unit is None:
                unit = _unit_rows(self.vectors)
            gold.append(score)
            model.append(float(unit[ok_vocab[a]] @ unit[ok_vocab[b]]))
        if not gold:
            raise ValueError(
                f"no valid similarity judgements in {pairs!r}: the lines are not "
                f"'word1{delimiter!r}word2{delimiter!r}score', or all pairs have a word "
                f"outside the first {restrict_vocab} of {len(self)} words."
            )
        spearman = stats.spearmanr(gold, model)
        pearson = stats.pearsonr(gold, model)
        # gensim's definition, whose denominator differs between the two modes.
        oov_ratio = oov / (len(gold) if dummy4unknown else len(gold) + oov) * 100
        return pearson, spearman, oov_ratio

    def save_word2vec_format(self, path: PathType, binary: bool = False) -> None:
        """Write the vectors in the word2vec format (C tool, gensim).

        Text: a header line ``"<n_words> <n_dims>"``, then one line per word,
        the word and its values separated by spaces. Binary: the same header,
        then per word its UTF-8 bytes, a space and the float32 values
        (little-endian), as gensim writes them. Paths ending in ``.gz`` or
        ``.bz2`` are compressed.

        Parameters
        ----------
        path : str or path-like
            File to write.
        binary : bool, default=False
            Write the binary format instead of text.
        """
        bad = next((w for w in self.words if not w or w != "".join(w.split())), None)
        if bad is not None:
            raise ValueError(
                f"the word2vec format separates words by whitespace; the word {bad!r} "
                "is empty or contains whitespace, so it cannot be saved in it."
            )
        vectors = self.vectors.astype("<f4", copy=False)
        with _open(path, "wb") as out:
            out.write(f"{len(self)} {self.vector_size}\n".encode())
            for word, vector in zip(self.words, vectors):
                if binary:
                    out.write(word.encode("utf8") + b" " + vector.tobytes())
                else:
                    # str(np.float32) is the shortest exact form, as gensim writes it.
                    values = " ".join(map(str, vector))
                    out.write(f"{word} {values}\n".encode())

    @classmethod
    def load_word2vec_format(cls, path: PathType, binary: bool | None = False) -> WordVectors:
        """Read vectors written in the word2vec format (gensim, the C tool, GloVe).

        Parameters
        ----------
        path : str or path-like
            File to read (``.gz`` and ``.bz2`` are decompressed).
        binary : bool or None, default=False
            Whether the file is in the binary format; ``None`` detects it from
            the first record. Text files without the header line (GloVe's
            format) are accepted too.

        Returns
        -------
        WordVectors

        Raises
        ------
        ValueError
            If the file is not in the word2vec format (bad header, wrong number
            of values on a line, truncated).
        """
        if binary is None:
            binary = _is_binary(path)
        with _open(path, "rb") as stream:
            if binary:
                words, vectors = _read_binary(stream, path)
            else:
                words, vectors = _read_text(stream, path)
        return cls(*_first_of_duplicates(words, vectors, path))


def _query_items(items) -> list:
    """A word, a vector, or a list of words/vectors, as a list of query items."""
    if isinstance(items, str):
        return [items]
    try:
        array = np.asarray(items)
    except ValueError:  # a ragged mix of words and vectors
        return list(items)
    if array.ndim == 1 and array.dtype.kind in "fiu":
        return [array]
    return list(items)


def _iter_pairs(pairs, delimiter: str, case_insensitive: bool):
    """(word1, word2, score) from a file or from triples, as gensim parses them."""
    if isinstance(pairs, (str, os.PathLike)):
        with open(pairs, encoding="utf8") as lines:
            for line in lines:
                if not line or line.startswith("#"):
                    continue
                try:
                    a, b, score = line.split(delimiter)
                    score = float(score)
                except (ValueError, TypeError):
                    continue
                yield (a.upper(), b.upper(), score) if case_insensitive else (a, b, score)
        return
    for i, triple in enumerate(pairs):
        try:
            a, b, score = triple
            score = float(score)
        except (ValueError, TypeError):
            raise ValueError(
                f"pair {i} is {triple!r}; each pair must be a (word1, word2, score) triple."
            ) from None
        a, b = str(a), str(b)
        yield (a.upper(), b.upper(), score) if case_insensitive else (a, b, score)


def _parse_header(line: bytes) -> tuple[int, int] | None:
    fields = line.split()
    if len(fields) != 2:
        return None
    try:
        n_words, n_dims = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return (n_words, n_dims) if n_words >= 0 and n_dims > 0 else None


def _is_binary(path: PathType) -> bool:
    """Whether a word2vec file is binary: its first record is not a text line of numbers."""
    with _open(path, "rb") as stream:
        header = _parse_header(stream.readline())
        if header is None:
            return False  # no header: only the text format (GloVe's) has none
        n_dims = header[1]
        # Bounded read: a binary record may hold no newline byte for a long stretch.
        line = stream.readline(64 * (n_dims + 1) + 1024)
    try:
        values = line.decode("utf8").rstrip().split(" ")[1:]
        return len(values) != n_dims or not np.isfinite(np.asarray(values, np.float64)).all()
    except (UnicodeDecodeError, ValueError):
        return True


def _text_record(line: bytes, line_no: int, path) -> tuple[str, np.ndarray]:
    try:
        parts = line.decode("utf8").rstrip().split(" ")
    except UnicodeDecodeError:
        raise ValueError(
            f"line {line_no} of {path} is not UTF-8 text; the file is not in the word2vec "
            "text format (a binary word2vec file needs binary=True)."
        ) from None
    try:
        return parts[0], np.asarray(parts[1:], dtype=np.float32)
    except ValueError:
        raise ValueError(
            f"line {line_no} of {path} has a value that is not a number; the file is not "
            "in the word2vec text format."
        ) from None


def _read_text(stream, path) -> tuple[list[str], np.ndarray]:
    first = stream.readline()
    header = _parse_header(first)
    lines = iter(stream) if header is not None else _chain_first(first, stream)
    words, rows = [], []
    n_dims = None if header is None else header[1]
    for line_no, line in enumerate(lines, start=1 if header is None else 2):
        if not line.strip():
            continue
        word, vector = _text_record(line, line_no, path)
        if n_dims is None:
            n_dims = len(vector)
        if len(vector) != n_dims:
            raise ValueError(
                f"line {line_no} of {path} has {len(vector)} values for {word!r}, expected "
                f"{n_dims}; the file is not in the word2vec text format (or is damaged)."
            )
        words.append(word)
        rows.append(vector)
    if header is not None and len(words) != header[0]:
        raise ValueError(
            f"{path} announces {header[0]} words in its header but holds {len(words)}; "
            "the file is truncated or damaged."
        )
    if not words:
        raise ValueError(f"{path} holds no word vectors.")
    return words, np.vstack(rows)


def _chain_first(first: bytes, stream):
    yield first
    yield from stream


def _read_binary(stream, path) -> tuple[list[str], np.ndarray]:
    header = _parse_header(stream.readline())
    if header is None:
        raise ValueError(
            f"{path} does not start with a '<n_words> <n_dims>' header line, which the "
            "binary word2vec format requires; is it a text file (binary=False)?"
        )
    n_words, n_dims = header
    data = stream.read()
    n_bytes = 4 * n_dims
    words = []
    vectors = np.empty((n_words, n_dims), dtype=np.float32)
    start = 0
    for i in range(n_words):
        space = data.find(b" ", start)
        if space < 0 or len(data) - space - 1 < n_bytes:
            raise ValueError(
                f"{path} announces {n_words} words but ends after {i}; "
                "the file is truncated or damaged."
            )
        # The C tool ends each record with a newline that gensim does not write.
        try:
            words.append(data[start:space].decode("utf8").lstrip("\n"))
        except UnicodeDecodeError:
            raise ValueError(
                f"word {i} of {path} is not valid UTF-8; the file is not in the binary "
                "word2vec format."
            ) from None
        vectors[i] = np.frombuffer(data, dtype="<f4", count=n_dims, offset=space + 1)
        start = space + 1 + n_bytes
    return words, vectors


def _first_of_duplicates(words: list[str], vectors: np.ndarray, path):
    """Keep the first vector of a repeated word, with a warning (gensim does the same)."""
    index = {}
    for i, word in enumerate(words):
        index.setdefault(word, i)
    if len(index) == len(words):
        return words, vectors
    warnings.warn(
        f"{path} lists {len(words) - len(index)} words more than once; "
        "keeping the first vector of each.",
        UserWarning,
        stacklevel=3,
    )
    rows = sorted(index.values())
    return [words[i] for i in rows], vectors[rows]


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
          format, or GloVe's header-less text format; which one is detected.

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
