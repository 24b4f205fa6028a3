"""Word-vector files: word2vec text and binary, sknce's native format, evaluation sets.

Readers and writers as plain functions, apart from the queries of
:class:`sknce.words.WordVectors` (as gensim keeps ``_load_word2vec_format``
apart from ``KeyedVectors``):

- :func:`read_word2vec` reads the word2vec text and binary formats (and
  GloVe's header-less text) into a matrix preallocated from the header and
  filled in chunks, so that a load needs little more memory than the matrix;
- :func:`write_word2vec`, :func:`write_native` write to a temporary file in
  the target's directory and rename it over the target, so a failed write
  never leaves a truncated file;
- :func:`read_native` maps the native format's ``.npy`` matrix (``mmap="r"``)
  so that processes share one copy;
- :func:`iter_word_pairs` and :func:`iter_analogies` parse the word-similarity
  and word-analogy files that gensim's evaluations read.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import json
import os
import re
import secrets
import stat
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

PathType = str | os.PathLike

# Bytes read per chunk of a binary file; a text file is parsed in batches of at most
# this many lines or bytes.
_CHUNK_BYTES = 1 << 20
_BATCH_LINES = 1024
# A binary record's word longer than this means the records are misaligned.
_MAX_WORD_BYTES = 1 << 16
# Word2vec separates words by whitespace: a word may hold none of these (nor be empty).
_CONTROL = re.compile(rb"[\x00-\x1f]")
_FORBIDDEN_IN_WORD = re.compile(r"[\x00-\x20]")
_UNICODE_ERRORS = ("strict", "replace", "ignore")
_NATIVE_FORMAT = "sknce.WordVectors"
_NATIVE_VERSION = 1


def open_file(path: PathType, mode: str):
    """Open a file, (de)compressing ``.gz`` and ``.bz2`` transparently as gensim does.

    Parameters
    ----------
    path : str or path-like
    mode : str
        ``"rb"`` or ``"wb"``.

    Returns
    -------
    file object
    """
    suffix = Path(path).suffix
    if suffix == ".gz":
        return gzip.open(path, mode)
    if suffix == ".bz2":
        return bz2.open(path, mode)
    return open(path, mode)


@contextlib.contextmanager
def atomic_write(path: PathType):
    """A binary stream to a temporary file that replaces ``path`` only on success.

    The temporary file lives in the target's directory (``os.replace`` is atomic
    there); ``.gz``/``.bz2`` targets are compressed. On any exception the
    temporary file is removed and an existing ``path`` is left untouched.

    Parameters
    ----------
    path : str or path-like
        The file to write; its permissions are kept when it exists.

    Yields
    ------
    binary file object
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 gives the permissions the user's umask allows, as open() would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with contextlib.ExitStack() as stack:
            stream = stack.enter_context(open(fd, "wb"))
            if path.suffix == ".gz":
                stream = stack.enter_context(
                    gzip.GzipFile(filename=path.name, mode="wb", fileobj=stream)
                )
            elif path.suffix == ".bz2":
                stream = stack.enter_context(bz2.BZ2File(stream, "wb"))
            yield stream
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- word2vec format: reading ----------------------------------------------------------


def read_word2vec(
    path: PathType,
    *,
    binary: bool | None = False,
    limit: int | None = None,
    unicode_errors: str = "strict",
    datatype=np.float32,
    encoding: str = "utf8",
) -> tuple[list[str], np.ndarray]:
    """Words and matrix of a word2vec text or binary file, read in chunks.

    The matrix is allocated once from the header (a header-less text file is
    counted in a first pass) and filled row by row. A word listed twice keeps
    its first vector, with a warning (as gensim).

    Parameters
    ----------
    path : str or path-like
        File to read (``.gz`` and ``.bz2`` are decompressed).
    binary : bool or None, default=False
        Binary format; ``None`` detects it from the first record.
    limit : int or None, default=None
        Read at most this many vectors (the first ones of the file).
    unicode_errors : {"strict", "replace", "ignore"}, default="strict"
        What to do with a word that is not valid ``encoding``.
    datatype : numpy float dtype, default=numpy.float32
        Type of the returned matrix.
    encoding : str, default="utf8"
        Encoding of the words.

    Returns
    -------
    words : list of str
    vectors : ndarray of shape (n_words, n_dims), dtype ``datatype``

    Raises
    ------
    ValueError
        If the file is not in the word2vec format, disagrees with its header,
        or is truncated.
    """
    if unicode_errors not in _UNICODE_ERRORS:
        raise ValueError(
            f"unicode_errors must be one of {_UNICODE_ERRORS}, got {unicode_errors!r}."
        )
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1
    ):
        raise ValueError(f"limit must be None or an int >= 1, got {limit!r}.")
    datatype = np.dtype(datatype)
    if datatype.kind != "f":
        raise TypeError(f"datatype must be a float type, got {datatype}.")
    codecs.lookup(encoding)  # an unknown encoding fails here, not after a long read
    if binary is None:
        binary = is_binary_word2vec(path)
    reader = _Reader(path, limit, unicode_errors, datatype, encoding)
    if binary:
        return reader.read_binary()
    return reader.read_text()


def is_binary_word2vec(path: PathType) -> bool:
    """Whether a word2vec file is binary: its first record is not a text line of numbers.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
    """
    with open_file(path, "rb") as stream:
        header = _parse_header(stream.readline(1024))
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


def _parse_header(line: bytes) -> tuple[int, int] | None:
    fields = line.split()
    if len(fields) != 2:
        return None
    try:
        n_words, n_dims = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return (n_words, n_dims) if n_words >= 0 and n_dims > 0 else None


class _Reader:
    """State of one read: the options, the words so far, duplicate bookkeeping."""

    def __init__(self, path, limit, unicode_errors, datatype, encoding):
        self.path = path
        self.chunk_bytes = _CHUNK_BYTES
        self.limit = limit
        self.unicode_errors = unicode_errors
        self.datatype = datatype
        self.encoding = encoding
        self.words: list[str] = []
        self.seen: set[str] = set()
        self.n_duplicates = 0

    def _decode(self, raw: bytes, where: str, hint: str) -> str:
        try:
            return raw.decode(self.encoding, errors=self.unicode_errors)
        except UnicodeDecodeError as exc:
            name = codecs.lookup(self.encoding).name
            raise ValueError(
                f"{where} of {self.path} is not valid {name} ({raw[:40]!r}: {exc.reason}); {hint}"
            ) from None

    def _set_chunk_bytes(self, vectors: np.ndarray) -> None:
        """Chunks of at most 1/32 of the matrix (64 KiB to 1 MiB): little beside it."""
        self.chunk_bytes = min(_CHUNK_BYTES, max(vectors.nbytes // 32, 1 << 16))

    def _add(self, word: str) -> bool:
        """Record a word; False for a repeated word (whose vector is skipped)."""
        if word in self.seen:
            self.n_duplicates += 1
            return False
        self.seen.add(word)
        self.words.append(word)
        return True

    def _finish(self, vectors: np.ndarray) -> tuple[list[str], np.ndarray]:
        if self.n_duplicates:
            warnings.warn(
                f"{self.path} lists {self.n_duplicates} words more than once; "
                "keeping the first vector of each.",
                UserWarning,
                stacklevel=5,
            )
            # A view, not a copy: the unused rows at the end cost no second matrix.
            vectors = vectors[: len(self.words)]
        return self.words, vectors

    # --- binary ------------------------------------------------------------------------
    def read_binary(self) -> tuple[list[str], np.ndarray]:
        path = self.path
        with open_file(path, "rb") as stream:
            header = _parse_header(stream.readline(1024))
            if header is None:
                raise ValueError(
                    f"{path} does not start with a '<n_words> <n_dims>' header line, which "
                    "the binary word2vec format requires; is it a text file (binary=False)?"
                )
            n_words, n_dims = header
            n_rows = n_words if self.limit is None else min(n_words, self.limit)
            vectors = np.empty((n_rows, n_dims), dtype=self.datatype)
            self._set_chunk_bytes(vectors)
            n_bytes = 4 * n_dims
            buf, pos, eof, row = b"", 0, False, 0
            for record in range(n_rows):
                while True:
                    space = buf.find(b" ", pos)
                    if space >= 0 and len(buf) - space - 1 >= n_bytes:
                        break
                    if eof:
                        raise ValueError(
                            f"{path} announces {n_words} words but ends after {record}; "
                            "the file is truncated or damaged."
                        )
                    if space < 0 and len(buf) - pos > _MAX_WORD_BYTES:
                        self._misaligned(record, buf[pos : pos + 40], n_dims)
                    more = stream.read(self.chunk_bytes)
                    eof = len(more) < self.chunk_bytes
                    buf, pos = buf[pos:] + more, 0
                raw = buf[pos:space]
                # The C tool ends each record with a newline that gensim does not write.
                if raw[:1] == b"\n":
                    raw = raw[1:]
                if not raw or _CONTROL.search(raw):
                    self._misaligned(record, raw, n_dims)
                word = self._decode(
                    raw,
                    f"word {record + 1}",
                    "either a word was cut inside a multibyte character (common in files "
                    "of the C tool: load with unicode_errors='replace' or 'ignore'), or "
                    f"the header's {n_dims} values per vector or its word count disagree "
                    "with the records.",
                )
                if self._add(word):
                    vectors[row] = np.frombuffer(buf, dtype="<f4", count=n_dims, offset=space + 1)
                    row += 1
                pos = space + 1 + n_bytes
            if n_rows == n_words:
                self._check_rest_is_blank(buf[pos:], stream, eof, n_words, n_dims)
        return self._finish(vectors)

    def _misaligned(self, record: int, raw: bytes, n_dims: int):
        raise ValueError(
            f"record {record + 1} of {self.path} does not start with a word (it starts "
            f"with {raw[:40]!r}): the header's {n_dims} values per vector or its word count "
            "disagree with the records, or the file is not in the binary word2vec format."
        )

    def _check_rest_is_blank(self, rest: bytes, stream, eof: bool, n_words, n_dims) -> None:
        while True:
            if rest.strip():
                raise ValueError(
                    f"{self.path} holds more data after the {n_words} vectors of {n_dims} "
                    "values its header announces: the header disagrees with the records, "
                    "or the file is damaged."
                )
            if eof:
                return
            rest = stream.read(self.chunk_bytes)
            eof = len(rest) < self.chunk_bytes

    # --- text --------------------------------------------------------------------------
    def read_text(self) -> tuple[list[str], np.ndarray]:
        path = self.path
        with open_file(path, "rb") as stream:
            first = stream.readline()
            header = _parse_header(first)
            if header is None:
                n_words, n_dims = self._count_headerless(first, stream)
                announced = None
            else:
                n_words, n_dims = header
                announced = n_words
        n_rows = n_words if self.limit is None else min(n_words, self.limit)
        vectors = np.empty((n_rows, n_dims), dtype=self.datatype)
        self._set_chunk_bytes(vectors)
        with open_file(path, "rb") as stream:
            line_no = 0
            if announced is not None:
                stream.readline()
                line_no = 1
            row, n_records, batch_bytes = 0, 0, 0
            batch: list[tuple[int, bytes]] = []
            for line in stream:
                line_no += 1
                if not line.strip():
                    continue
                if n_records == n_rows:
                    if self.limit is not None and n_rows == self.limit:
                        break
                    extra = 1 + sum(1 for rest in stream if rest.strip())
                    raise ValueError(
                        f"{path} announces {announced} words in its header but holds "
                        f"{announced + extra}; the header disagrees with the records."
                    )
                batch.append((line_no, line))
                n_records += 1
                batch_bytes += len(line)
                if len(batch) == _BATCH_LINES or batch_bytes >= self.chunk_bytes:
                    row = self._parse_batch(batch, vectors, row, n_dims)
                    batch, batch_bytes = [], 0
            row = self._parse_batch(batch, vectors, row, n_dims)
        if n_records < n_rows:
            raise ValueError(
                f"{path} announces {announced} words in its header but holds {n_records}; "
                "the file is truncated or damaged."
            )
        return self._finish(vectors)

    def _count_headerless(self, first: bytes, stream) -> tuple[int, int]:
        """Records and values per record of a header-less (GloVe) text file."""
        n_dims, n_words, line_no = None, 0, 0
        for line in _chain(first, stream):
            line_no += 1
            if not line.strip():
                continue
            if n_dims is None:
                n_dims = len(self._parse_line(line, line_no, None)[1])
            n_words += 1
        if n_dims is None:
            raise ValueError(f"{self.path} holds no word vectors.")
        return n_words, n_dims

    def _parse_batch(self, batch, vectors: np.ndarray, row: int, n_dims: int) -> int:
        """Parse lines into ``vectors`` from ``row``; return the next free row."""
        if not batch:
            return row
        words, values = [], []
        for line_no, line in batch:
            line = line.rstrip()
            space = line.find(b" ")
            if space <= 0:
                self._parse_line(line, line_no, n_dims)  # raises the line's own error
            words.append(line[:space])
            values.append(line[space + 1 :])
        try:
            block = np.loadtxt(
                values,
                dtype=self.datatype,
                delimiter=" ",
                comments=None,
                quotechar=None,
                ndmin=2,
                encoding="latin1",
            )
        except ValueError:
            block = None
        if block is None or block.shape != (len(values), n_dims):
            # Line by line, as gensim parses: raises at the first bad line, or parses the
            # forms numpy's reader refuses but Python's float accepts ("1_000").
            block = [self._parse_line(line, line_no, n_dims)[1] for line_no, line in batch]
        for (line_no, _), raw, vector in zip(batch, words, block):
            word = self._decode(
                raw,
                f"line {line_no}",
                "is it a binary word2vec file (binary=True)? A word cut inside a multibyte "
                "character loads with unicode_errors='replace' or 'ignore'.",
            )
            if self._add(word):
                vectors[row] = vector
                row += 1
        return row

    def _parse_line(self, line: bytes, line_no: int, n_dims: int | None):
        """One text record, as gensim parses it, with an error naming what is wrong."""
        line = line.rstrip()
        parts = line.split(b" ")
        where = f"line {line_no} of {self.path}"
        word = self._decode(
            parts[0],
            f"line {line_no}",
            "is it a binary word2vec file (binary=True)? A word cut inside a multibyte "
            "character loads with unicode_errors='replace' or 'ignore'.",
        )
        if len(parts) == 1:
            if b"\t" in line:
                raise ValueError(
                    f"{where} separates its fields with tabs; the word2vec text format "
                    "(and GloVe's) separates the word and its values with single spaces. "
                    "Replace the tabs by spaces."
                )
            raise ValueError(
                f"{where} holds {word!r} and no values: a plain word list is not a "
                "word-vector file; each line must be a word and its values."
            )
        if not word:
            raise ValueError(f"{where} starts with a space: its word is empty.")
        values = np.empty(len(parts) - 1, dtype=self.datatype)
        for i, token in enumerate(parts[1:]):
            try:
                values[i] = float(token)
            except ValueError:
                hint = " (fields separated by tabs?)" if b"\t" in token else ""
                raise ValueError(
                    f"{where} has the value {token.decode('latin1')!r} for {word!r}, which "
                    f"is not a number{hint}; the file is not in the word2vec text format."
                ) from None
        if n_dims is not None and len(parts) - 1 != n_dims:
            raise ValueError(
                f"{where} has {len(parts) - 1} values for {word!r}, expected {n_dims}; "
                "the file is not in the word2vec text format (or is damaged)."
            )
        return word, values


def _chain(first: bytes, stream) -> Iterator[bytes]:
    yield first
    yield from stream


# --- word2vec format: writing ----------------------------------------------------------


def check_word2vec_words(words: Iterable[str]) -> None:
    """Raise a ValueError naming the first word that the word2vec formats cannot hold.

    Parameters
    ----------
    words : iterable of str
    """
    for i, word in enumerate(words):
        if not word or _FORBIDDEN_IN_WORD.search(word):
            raise ValueError(
                f"the word2vec format separates words by whitespace; word {i} ({word!r}) "
                "is empty or contains whitespace or a control character, so it cannot be "
                "saved in it (the native format, WordVectors.save, holds any word)."
            )
        try:
            word.encode("utf8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"word {i} ({word!r}) cannot be written as UTF-8 ({exc.reason} at "
                f"position {exc.start}); fix or drop it before saving."
            ) from None


def write_word2vec(
    path: PathType,
    words: list[str],
    vectors: np.ndarray,
    *,
    binary: bool = False,
    write_header: bool = True,
) -> None:
    """Write words and vectors in the word2vec text or binary format, atomically.

    Text values are written in the shortest form that reads back to the same
    number (``str`` of a numpy float, as gensim writes them); binary values as
    little-endian float32.

    Parameters
    ----------
    path : str or path-like
        Target (``.gz``/``.bz2`` compressed); replaced only once fully written.
    words : list of str
    vectors : ndarray of shape (n_words, n_dims)
    binary : bool, default=False
    write_header : bool, default=True
        Write the ``"<n_words> <n_dims>"`` line (``False`` gives GloVe's format).

    Raises
    ------
    ValueError
        If a word is empty, holds whitespace or a control character, or is not
        encodable as UTF-8 (e.g. a lone surrogate); nothing is written then.
    """
    check_word2vec_words(words)
    if binary and not write_header:
        raise ValueError("the binary word2vec format needs its header; pass write_header=True.")
    n_rows = 4096
    with atomic_write(path) as out:
        if write_header:
            out.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        for start in range(0, len(words), n_rows):
            block = vectors[start : start + n_rows]
            chunk = words[start : start + n_rows]
            if binary:
                block = block.astype("<f4", copy=False)
                out.write(b"".join(w.encode() + b" " + v.tobytes() for w, v in zip(chunk, block)))
            else:
                # str(numpy float) is the shortest exact form, as gensim writes it.
                out.write(
                    "".join(
                        f"{w} {' '.join(map(str, v))}\n" for w, v in zip(chunk, block)
                    ).encode()
                )


# --- native format ---------------------------------------------------------------------


def native_matrix_path(path: PathType) -> Path:
    """The ``.npy`` file that holds the matrix of a native file (as gensim names it).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Path
        ``<path>.vectors.npy``.
    """
    path = Path(path)
    return path.with_name(path.name + ".vectors.npy")


def write_native(
    path: PathType, words: list[str], vectors: np.ndarray, vecattrs: dict[str, np.ndarray]
) -> None:
    """Save words, per-word attributes (JSON) and the matrix (``.npy``), atomically each.

    Parameters
    ----------
    path : str or path-like
        The JSON file; the matrix goes to ``<path>.vectors.npy``.
    words : list of str
    vectors : ndarray of shape (n_words, n_dims)
    vecattrs : dict of str to ndarray
        Per-word attributes (``"count"``...), numbers, booleans or strings.
    """
    attrs = {}
    for name, values in vecattrs.items():
        values = np.asarray(values)
        if values.dtype.kind not in "biuf" and not all(
            v is None or isinstance(v, (str, bool, int, float)) for v in values.tolist()
        ):
            raise TypeError(
                f"the attribute {name!r} holds {values.dtype} values; the native format "
                "stores numbers, booleans and strings."
            )
        dtype = "object" if values.dtype.kind in "OUS" else values.dtype.str
        attrs[name] = {"dtype": dtype, "values": values.tolist()}
    meta = {
        "format": _NATIVE_FORMAT,
        "version": _NATIVE_VERSION,
        "n_words": len(words),
        "vector_size": int(vectors.shape[1]),
        "dtype": vectors.dtype.str,
        "words": list(words),
        "vecattrs": attrs,
    }
    # ensure_ascii escapes every non-ASCII character, lone surrogates included.
    text = json.dumps(meta, ensure_ascii=True, allow_nan=True)
    with atomic_write(native_matrix_path(path)) as out:
        np.save(out, np.ascontiguousarray(vectors), allow_pickle=False)
    with atomic_write(path) as out:
        out.write(text.encode("ascii"))


def read_native(path: PathType, mmap: str | None = None):
    """Words, matrix and per-word attributes saved by :func:`write_native`.

    Parameters
    ----------
    path : str or path-like
    mmap : {None, "r", "r+", "c"}, default=None
        Memory-map the matrix in this mode instead of reading it (``"r"``:
        read-only pages that processes share).

    Returns
    -------
    words : list of str
    vectors : ndarray or numpy.memmap of shape (n_words, n_dims)
    vecattrs : dict of str to ndarray
    """
    if mmap not in (None, "r", "r+", "c"):
        raise ValueError(f"mmap must be None, 'r', 'r+' or 'c', got {mmap!r}.")
    try:
        with open(path, "rb") as f:
            meta = json.loads(f.read().decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _NATIVE_FORMAT:
        raise ValueError(
            f"{path} is not a file written by WordVectors.save (a word2vec file loads "
            "with WordVectors.load_word2vec_format)."
        )
    if meta.get("version") != _NATIVE_VERSION:
        raise ValueError(
            f"{path} has format version {meta.get('version')!r}; this sknce reads "
            f"version {_NATIVE_VERSION}."
        )
    matrix_path = native_matrix_path(path)
    vectors = np.load(matrix_path, mmap_mode=mmap, allow_pickle=False)
    expected = (meta["n_words"], meta["vector_size"])
    if vectors.shape != expected or vectors.dtype.str != meta["dtype"]:
        raise ValueError(
            f"{matrix_path} holds a {vectors.dtype} matrix of shape {vectors.shape}, but "
            f"{path} describes a {meta['dtype']} one of shape {expected}: the two files do "
            "not belong together (copy or replace them as a pair)."
        )
    words = meta["words"]
    vecattrs = {}
    for name, attr in meta["vecattrs"].items():
        dtype = object if attr["dtype"] == "object" else np.dtype(attr["dtype"])
        vecattrs[name] = np.array(attr["values"], dtype=dtype)
    return words, vectors, vecattrs


# --- evaluation sets -------------------------------------------------------------------


def iter_word_pairs(pairs, delimiter: str = "\t", case_insensitive: bool = True, encoding="utf8"):
    """(word1, word2, score) from a file or from triples, as gensim parses them.

    Lines starting with ``#`` and lines that are not three fields ending in a
    number are skipped (gensim's rule); a score that is not finite is an error.

    Parameters
    ----------
    pairs : str, path-like, or iterable of (str, str, float)
    delimiter : str, default="\\t"
    case_insensitive : bool, default=True
        Upper-case the words.
    encoding : str, default="utf8"

    Yields
    ------
    (str, str, float)
    """
    if isinstance(pairs, (str, os.PathLike)):
        with open(pairs, encoding=encoding) as lines:
            for line_no, line in enumerate(lines, start=1):
                if not line or line.startswith("#"):
                    continue
                try:
                    a, b, score = line.split(delimiter)
                    score = float(score)
                except (ValueError, TypeError):
                    continue
                if not np.isfinite(score):
                    raise ValueError(
                        f"line {line_no} of {pairs} has the human score {score} for "
                        f"({a!r}, {b!r}); scores must be finite numbers."
                    )
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
        if not np.isfinite(score):
            raise ValueError(
                f"pair {i} has the human score {score} for ({a!r}, {b!r}); scores must be "
                "finite numbers."
            )
        a, b = str(a), str(b)
        yield (a.upper(), b.upper(), score) if case_insensitive else (a, b, score)


def iter_analogies(path: PathType, case_insensitive: bool = True):
    """Sections and questions of an analogy file (gensim's ``questions-words.txt`` format).

    Yields ``("section", name)`` for a ``": name"`` line and
    ``("question", (a, b, c, expected))`` for a line of four words; other
    lines are skipped, as gensim skips them.

    Parameters
    ----------
    path : str or path-like
    case_insensitive : bool, default=True
        Upper-case the words.

    Yields
    ------
    tuple
    """
    in_section = False
    with open_file(path, "rb") as lines:
        for line_no, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf8")
            except UnicodeDecodeError:
                raise ValueError(f"line {line_no} of {path} is not valid UTF-8.") from None
            if line.startswith(": "):
                in_section = True
                yield "section", line.lstrip(": ").strip()
                continue
            if not in_section:
                raise ValueError(
                    f"line {line_no} of {path} comes before any ': section name' line; "
                    "an analogy file starts with a section header."
                )
            words = line.split()
            if len(words) != 4:
                continue
            if case_insensitive:
                words = [w.upper() for w in words]
            yield "question", tuple(words)
