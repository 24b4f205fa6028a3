"""Word-vector files: word2vec text and binary, sknce's native format, evaluation sets.

Readers and writers as plain functions, apart from the queries of
:class:`sknce.words.WordVectors` (as gensim keeps ``_load_word2vec_format``
apart from ``KeyedVectors``):

- :func:`read_word2vec` reads the word2vec text and binary formats (and
  GloVe's header-less text) into a matrix preallocated from the header and
  filled in chunks, so that a load needs little more memory than the matrix;
- :func:`write_word2vec`, :func:`write_native` write through
  ``sknce._files`` (a verified temporary file renamed over the target, files
  of a pair switched together), so a failed or killed save never leaves a
  truncated file, nor a pair of two saves;
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
import warnings
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from sknce._files import describe_file, recover, replace_together

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
# Version 2 adds the pair token: the JSON file's "pair" and the matrix file's trailer.
_NATIVE_VERSION = 2
_NATIVE_KEYS = {
    "n_words": int,
    "vector_size": int,
    "dtype": str,
    "words": list,
    "vecattrs": dict,
}
_PAIR_TRAILER = b"\nsknce.WordVectors pair "
_PAIR_HEX = 32
_UTF8_BOM = codecs.BOM_UTF8
# Bounds of a header's numbers: beyond them no matrix can be indexed.
_MAX_WORDS = 1 << 48
_MAX_DIMS = 1 << 31
# Largest ratio of uncompressed to compressed size: deflate's (gzip) is 1032; bzip2's
# is far higher for pathological input (runs of one byte), about 4.6e7.
_MAX_RATIO = {".gz": 1100, ".bz2": 5 * 10**7}


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
def file_errors(path: PathType):
    """Decompression errors while reading ``path`` as ValueErrors naming the file.

    A truncated or damaged ``.gz``/``.bz2`` file, or a plain file whose name ends
    in ``.gz``, makes the decompressors raise ``EOFError``, ``zlib.error`` or an
    ``OSError`` without an ``errno``; input/output errors of the system (which
    have one) pass unchanged.

    Parameters
    ----------
    path : str or path-like
    """
    try:
        yield
    except (EOFError, zlib.error, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            raise
        suffix = Path(path).suffix
        raise ValueError(
            f"{path} cannot be read as a {suffix or 'plain'} file ({type(exc).__name__}: "
            f"{exc}): it is truncated or damaged, or it is not {suffix}-compressed although "
            "its name says so (rename it to match its content)."
        ) from None


def _format_hint(path: PathType) -> str:
    """Which loader reads ``path``, from what it looks like ("" when none applies)."""
    found = describe_file(path)
    for start, hint in (
        ("a fastText", "load_facebook_vectors reads it"),
        (
            "a Python pickle",
            "a gensim KeyedVectors.save file loads with gensim's "
            "KeyedVectors.load, then WordVectors.from_gensim",
        ),
        ("a word2vec binary", "WordVectors.load_word2vec_format(path, binary=True) reads it"),
        ("a word2vec text", "WordVectors.load_word2vec_format(path) reads it"),
        ("a WordVectors.save", "WordVectors.load reads it"),
    ):
        if found.startswith(start):
            return f" ({hint}.)"
    return ""


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
    recover(path)  # finish a save of the file that a kill interrupted
    _check_not_foreign(path)
    with file_errors(path):
        detected = is_binary_word2vec(path) if binary in (None, True) else False
        if binary is None:
            binary = detected
        elif binary and not detected and _read_header(path) is not None:
            raise ValueError(
                f"{path} is a word2vec text file (its first record is a line of numbers), "
                "not a binary one: load it with binary=False, or binary=None to detect the "
                "format."
            )
        reader = _Reader(path, limit, unicode_errors, datatype, encoding)
        if binary:
            return reader.read_binary()
        return reader.read_text()


#: What a word2vec file never starts as (checked on files not named .gz or .bz2).
_FOREIGN = ("a fastText", "a Python pickle", "a WordVectors.save", "a numpy", "a zip")


def _check_not_foreign(path: PathType) -> None:
    """Raise a ValueError naming the format of a file that is no word2vec file at all."""
    if Path(path).suffix in _MAX_RATIO or not os.path.isfile(path):
        return  # compressed: its content is checked as it is read; a missing file: OSError
    found = describe_file(path)
    if found.startswith(_FOREIGN):
        raise ValueError(f"{path} is not a word2vec file: it is {found}.{_format_hint(path)}")


def is_binary_word2vec(path: PathType) -> bool:
    """Whether a word2vec file is binary: its first record is not a text line of numbers.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
    """
    with file_errors(path), open_file(path, "rb") as stream:
        header = _parse_header(_strip_bom(stream.readline(1024)))
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


def _read_header(path: PathType) -> tuple[int, int] | None:
    """The (n_words, n_dims) of a file's header line, or None if it has none."""
    with open_file(path, "rb") as stream:
        return _parse_header(_strip_bom(stream.readline(1024)))


def _strip_bom(line: bytes) -> bytes:
    """The first line without a UTF-8 byte-order mark (Windows editors write one)."""
    return line[len(_UTF8_BOM) :] if line.startswith(_UTF8_BOM) else line


def _parse_header(line: bytes) -> tuple[int, int] | None:
    fields = line.split()
    if len(fields) != 2:
        return None
    try:
        n_words, n_dims = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    valid = 0 <= n_words < _MAX_WORDS and 0 < n_dims < _MAX_DIMS
    return (n_words, n_dims) if valid else None


def _bad_header(path: PathType, line: bytes) -> str | None:
    """What is wrong with a first line of integers that is not a valid header; else None."""
    fields = line.split()
    if not fields or len(fields) > 3 or not all(re.fullmatch(rb"[-+]?\d+", f) for f in fields):
        return None
    if len(fields) == 2 and _parse_header(line) is not None:
        return None
    shown = line.strip().decode("ascii")
    return (
        f"the first line of {path}, {shown!r}, is not a word2vec header: the header is two "
        f"numbers, '<n_words> <n_dims>', with 0 <= n_words < {_MAX_WORDS} and "
        f"1 <= n_dims < {_MAX_DIMS}. Fix the header (or, for a header-less file whose first "
        "word is a number, add one)."
    )


def _check_size(path: PathType, n_words: int, n_rows: int, n_dims: int, binary: bool) -> None:
    """Raise if the file cannot hold the ``n_rows`` records its header announces.

    Checked before the matrix is allocated, so that a wrong header (or a truncated
    file) is an error naming the file rather than a huge allocation. A record takes
    at least a one-byte word and a space, then ``4 * n_dims`` bytes (binary) or
    ``n_dims`` one-digit values each after a space, and a newline (text).
    Compressed files are bounded by their format's largest compression ratio.
    """
    try:
        size = os.path.getsize(path)
    except (OSError, TypeError):
        return
    per_record = 2 + 4 * n_dims if binary else 2 * n_dims + 2
    ratio = _MAX_RATIO.get(Path(path).suffix, 1)
    if n_rows * per_record - (0 if binary else 1) <= size * ratio:
        return
    fits = (size * ratio + (0 if binary else 1)) // per_record
    if ratio == 1:
        # Worded as the errors of a read that meets the end of the records.
        verb = "ends after" if binary else "holds"
        raise ValueError(
            f"{path} announces {n_words} words but {verb} {fits} at most: its {size} bytes "
            f"cannot hold more records of {n_dims} values. The header is wrong or the file "
            "is truncated."
        )
    raise ValueError(
        f"{path} announces {n_words} words of {n_dims} values, at least "
        f"{n_rows * per_record} bytes, but a {size}-byte {Path(path).suffix} file holds at "
        f"most {size * ratio} bytes uncompressed. The header is wrong or the file is "
        "truncated."
    )


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
            first = _strip_bom(stream.readline(1024))
            header = _parse_header(first)
            if header is None:
                raise ValueError(
                    _bad_header(path, first)
                    or f"{path} does not start with a '<n_words> <n_dims>' header line, which "
                    f"the binary word2vec format requires: it is {describe_file(path)}."
                    f"{_format_hint(path)}"
                )
            n_words, n_dims = header
            n_rows = n_words if self.limit is None else min(n_words, self.limit)
            _check_size(path, n_words, n_rows, n_dims, binary=True)
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
            first = _strip_bom(stream.readline())
            header = _parse_header(first)
            problem = _bad_header(path, first)
            if problem:
                raise ValueError(problem)
            if header is None:
                n_words, n_dims = self._count_headerless(first, stream)
                announced = None
            else:
                n_words, n_dims = header
                announced = n_words
                # A malformed first record is the error to report, before the size's.
                for line_no, line in enumerate(stream, start=2):
                    if line.strip():
                        self._parse_line(line, line_no, n_dims)
                        break
        n_rows = n_words if self.limit is None else min(n_words, self.limit)
        if announced is not None:
            _check_size(path, n_words, n_rows, n_dims, binary=False)
        vectors = np.empty((n_rows, n_dims), dtype=self.datatype)
        self._set_chunk_bytes(vectors)
        with open_file(path, "rb") as stream:
            line_no = 0
            first = _strip_bom(stream.readline())
            lines = _chain(first, stream)
            if announced is not None:
                next(lines)
                line_no = 1
            row, n_records, batch_bytes = 0, 0, 0
            batch: list[tuple[int, bytes]] = []
            for line in lines:
                line_no += 1
                if not line.strip():
                    continue
                if n_records == n_rows:
                    if self.limit is not None and n_rows == self.limit:
                        break
                    extra = 1 + sum(1 for rest in lines if rest.strip())
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
                if _CONTROL.search(token.replace(b"\t", b"")):
                    hint = " (binary data: is it a binary word2vec file? Load it with binary=True)"
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
    vocab_path: PathType | None = None,
    counts: np.ndarray | None = None,
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
    vocab_path : str or path-like or None, default=None
        Also write the vocabulary file of the C tool's ``-save-vocab`` (gensim's
        ``fvocab``): a ``"<word> <count>"`` line per word, in row order. The two
        files are switched in together.
    counts : ndarray of int of shape (n_words,) or None, default=None
        The counts of ``vocab_path``.

    Raises
    ------
    ValueError
        If a word is empty, holds whitespace or a control character, or is not
        encodable as UTF-8 (e.g. a lone surrogate); nothing is written then.
    """
    check_word2vec_words(words)
    if vocab_path is not None and os.path.abspath(vocab_path) == os.path.abspath(path):
        raise ValueError(
            f"fvocab and the vectors' path are the same file ({path}); give the vocabulary "
            "its own file."
        )
    if binary and not write_header:
        raise ValueError("the binary word2vec format needs its header; pass write_header=True.")
    n_rows = 4096
    paths = [path] if vocab_path is None else [path, vocab_path]
    with replace_together(paths) as streams:
        out = streams[0]
        if vocab_path is not None:
            for start in range(0, len(words), n_rows):
                pairs = zip(words[start : start + n_rows], counts[start : start + n_rows])
                streams[1].write("".join(f"{w} {int(c)}\n" for w, c in pairs).encode())
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


def read_vocab(
    path: PathType, words: list[str], unicode_errors: str = "strict", encoding: str = "utf8"
) -> np.ndarray:
    """The counts of ``words`` in a vocabulary file (``"<word> <count>"`` lines, gensim's fvocab).

    Parameters
    ----------
    path : str or path-like
        The file (``.gz``/``.bz2`` decompressed), as the C tool's ``-save-vocab``
        writes it.
    words : list of str
        The words whose counts are wanted.
    unicode_errors : {"strict", "replace", "ignore"}, default="strict"
    encoding : str, default="utf8"

    Returns
    -------
    ndarray of int64 of shape (len(words),)

    Raises
    ------
    ValueError
        If a line is not a word and a non-negative whole count, or a word of
        ``words`` is missing from the file (the messages name the file).
    """
    counts: dict[str, int] = {}
    recover(path)  # the temporary file of a killed save
    with file_errors(path), open_file(path, "rb") as lines:
        for line_no, raw in enumerate(lines, start=1):
            try:
                line = raw.decode(encoding, errors=unicode_errors)
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"line {line_no} of {path} is not valid {encoding} ({exc.reason}); load "
                    "with unicode_errors='replace' or 'ignore'."
                ) from None
            if line_no == 1:
                line = line.lstrip("\ufeff")
            fields = line.split()
            if not fields:
                continue
            try:
                word, count = fields
                count = int(count)
                if count < 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"line {line_no} of {path} is {line.strip()[:60]!r}; a vocabulary file "
                    "holds lines '<word> <count>' with a whole count >= 0."
                ) from None
            counts.setdefault(word, count)
    missing = [w for w in words if w not in counts]
    if missing:
        raise ValueError(
            f"the vocabulary file {path} lacks {len(missing)} of the {len(words)} words "
            f"(e.g. {missing[:3]!r}); is it the vocabulary of these vectors?"
        )
    return np.fromiter((counts[w] for w in words), dtype=np.int64, count=len(words))


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
    """Save words, per-word attributes (JSON) and the matrix (``.npy``), atomically as a pair.

    Both files are written to temporary files first, then renamed over the
    targets together (Ctrl-C held back meanwhile; if the second rename fails the
    first target gets its old content back), so a failed or interrupted save
    leaves the previous pair as it was. Both files carry the same random token
    (the JSON's ``"pair"``, the matrix file's trailer after the array), which
    :func:`read_native` compares: a pair that a crash or a copy has mixed up is
    an error, never words read with another save's vectors.

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
    token = secrets.token_hex(_PAIR_HEX // 2)
    meta = {
        "format": _NATIVE_FORMAT,
        "version": _NATIVE_VERSION,
        "pair": token,
        "n_words": len(words),
        "vector_size": int(vectors.shape[1]),
        "dtype": vectors.dtype.str,
        "words": list(words),
        "vecattrs": attrs,
    }
    # ensure_ascii escapes every non-ASCII character, lone surrogates included.
    text = json.dumps(meta, ensure_ascii=True, allow_nan=True)
    with replace_together([path, native_matrix_path(path)]) as (words_out, matrix_out):
        # np.load reads the array and ignores the bytes after it: the token's place.
        np.save(matrix_out, np.ascontiguousarray(vectors), allow_pickle=False)
        matrix_out.write(_PAIR_TRAILER + token.encode("ascii"))
        words_out.write(text.encode("ascii"))


def _native_meta(path: PathType) -> dict:
    """The checked JSON part of a native file."""
    # A path ending in .gz or .bz2 was saved compressed (atomic_write compresses).
    with file_errors(path), open_file(path, "rb") as f:
        raw = f.read(1)
        if raw == b"{":  # not a multi-gigabyte read of another kind of file
            raw += f.read()
    try:
        meta = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _NATIVE_FORMAT:
        found, hint = describe_file(path), _format_hint(path)
        if raw[:1] == b"{" and "native" in found:
            found, hint = "a truncated or damaged one", ""
        raise ValueError(
            f"{path} is not a file written by WordVectors.save, or it is truncated or "
            f"damaged: it is {found}.{hint or ' Save the vectors again.'}"
        )
    if meta.get("version") not in (1, _NATIVE_VERSION):
        raise ValueError(
            f"{path} has format version {meta.get('version')!r}; this sknce reads "
            f"versions 1 to {_NATIVE_VERSION}: update sknce."
        )
    for key, kind in _NATIVE_KEYS.items():
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise ValueError(
                f"{path} lacks its {key!r} entry or holds a wrong one ({meta.get(key)!r:.40}): "
                "the file is damaged. Save the vectors again."
            )
    if len(meta["words"]) != meta["n_words"]:
        raise ValueError(
            f"{path} lists {len(meta['words'])} words but announces {meta['n_words']}: the "
            "file is damaged. Save the vectors again."
        )
    return meta


def _check_matrix_file(path: Path, matrix_path: Path, meta: dict) -> None:
    """Raise unless the matrix file is whole and was written with ``path`` (same token)."""
    if not matrix_path.exists():
        raise ValueError(
            f"{path} has no matrix file: {matrix_path} is missing. WordVectors.save writes "
            "the two files; copy or move them as a pair."
        )
    with open(matrix_path, "rb") as f:
        try:
            major, _ = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0
                if major == 1
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(f)
        except Exception as exc:  # numpy's header parser raises many kinds on junk
            raise ValueError(
                f"{matrix_path} is not a .npy matrix file, or its header is damaged ({exc})."
            ) from None
        offset = f.tell()
    expected = (meta["n_words"], meta["vector_size"])
    if shape != expected or dtype.str != meta["dtype"]:
        raise ValueError(
            f"{matrix_path} holds a {dtype} matrix of shape {shape}, but "
            f"{path} describes a {meta['dtype']} one of shape {expected}: the two files do "
            "not belong together (copy or replace them as a pair)."
        )
    data_end = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    token = meta.get("pair")
    size = matrix_path.stat().st_size
    if size < data_end:
        raise ValueError(
            f"{matrix_path} is truncated: it holds {size} bytes of the {data_end} its "
            f"{shape} {dtype} matrix needs. Save the vectors again."
        )
    if token is None:
        return  # version 1: no token to compare
    with open(matrix_path, "rb") as f:
        f.seek(data_end)
        trailer = f.read(len(_PAIR_TRAILER) + _PAIR_HEX + 1)
    if trailer != _PAIR_TRAILER + str(token).encode("ascii", "replace"):
        raise ValueError(
            f"{matrix_path} and {path} were not written by the same WordVectors.save "
            "(their pair tokens differ): the words of one save would get the vectors of "
            "another. A save was interrupted by a crash, or one file was copied or "
            "replaced alone. Save the vectors again, or copy both files from one save."
        )


def is_native(path: PathType) -> bool:
    """Whether ``path`` starts as a file written by :func:`write_native` does.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    bool
    """
    with file_errors(path), open_file(path, "rb") as f:
        head = f.read(64)
    return head.startswith(b"{") and f'"{_NATIVE_FORMAT}"'.encode() in head


def read_native(path: PathType, mmap: str | None = None):
    """Words, matrix and per-word attributes saved by :func:`write_native`.

    The two files are checked before the matrix is read: the JSON file whole,
    the matrix file of the described shape and type, whole, and of the same
    save (pair token).

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

    Raises
    ------
    ValueError
        If either file is missing, damaged or truncated, or the two files are
        not of the same save; the message names the file.
    """
    if mmap not in (None, "r", "r+", "c"):
        raise ValueError(f"mmap must be None, 'r', 'r+' or 'c', got {mmap!r}.")
    recover(path, native_matrix_path(path))  # finish a save of the pair that a kill interrupted
    meta = _native_meta(path)
    matrix_path = native_matrix_path(path)
    _check_matrix_file(Path(path), matrix_path, meta)
    try:
        vectors = np.load(matrix_path, mmap_mode=mmap, allow_pickle=False)
    except ValueError as exc:  # e.g. a damaged byte of the .npy format version
        raise ValueError(
            f"{matrix_path} is not a readable .npy matrix file ({exc}): the file is "
            "damaged. Save the vectors again."
        ) from None
    words = meta["words"]
    if not all(isinstance(word, str) for word in words):
        raise ValueError(f"{path} lists a word that is not a string: the file is damaged.")
    vecattrs = {}
    for name, attr in meta["vecattrs"].items():
        try:
            dtype = object if attr["dtype"] == "object" else np.dtype(attr["dtype"])
            values = np.array(attr["values"], dtype=dtype)
        except (KeyError, TypeError, ValueError):
            values = None
        if values is None or values.shape != (len(words),):
            raise ValueError(
                f"{path}: the attribute {name!r} is damaged (it must hold one value per "
                f"word, {len(words)}). Save the vectors again."
            )
        vecattrs[name] = values
    return words, vectors, vecattrs


# --- evaluation sets -------------------------------------------------------------------


def iter_word_pairs(pairs, delimiter: str = "\t", case_insensitive: bool = True, encoding="utf8"):
    """(word1, word2, score) from a file or from triples, as gensim parses them.

    Lines starting with ``#`` and lines that are not three fields ending in a
    number are skipped (gensim's rule); a score that is not finite is an error.

    Parameters
    ----------
    pairs : str, path-like, or iterable of (str, str, float)
        A file (``.gz``/``.bz2`` decompressed, a UTF-8 byte-order mark
        skipped), or the triples.
    delimiter : str, default="\\t"
    case_insensitive : bool, default=True
        Upper-case the words.
    encoding : str, default="utf8"

    Yields
    ------
    (str, str, float)
    """
    if isinstance(pairs, (str, os.PathLike)):
        with file_errors(pairs), open_file(pairs, "rb") as lines:
            for line_no, raw in enumerate(lines, start=1):
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"line {line_no} of {pairs} is not valid {encoding} ({exc.reason}); "
                        "pass the file's encoding."
                    ) from None
                if line_no == 1:
                    line = line.removeprefix("\ufeff")  # a byte-order mark is no word
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
    with file_errors(path), open_file(path, "rb") as lines:
        for line_no, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf8")
            except UnicodeDecodeError:
                raise ValueError(f"line {line_no} of {path} is not valid UTF-8.") from None
            if line_no == 1:
                line = line.removeprefix("\ufeff")  # a byte-order mark is no word
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
