"""fastText's binary model files (``.bin``), read and written as gensim does.

What is supported, exactly:

* reading the models of fastText's unsupervised modes (``skipgram``, ``cbow``)
  in the current layout (magic ``793712314``, versions 11 and 12) and in the
  layout before the magic number (fastText before 2017, e.g. gensim's
  ``lee_fasttext.bin``); every header field is read, and the vectors of any
  string are those of gensim's ``load_facebook_vectors``;
* writing that current layout (version 12, as gensim's ``save_facebook_model``),
  readable by fastText and gensim;
* the ``.vec`` file is the word2vec text format
  (:meth:`~sknce.words.WordVectors.save_word2vec_format`).

Not supported: supervised models (a dictionary with labels) and quantized
models (``.ftz``, ``quant`` set), both a ``ValueError``; the pruned-index table
of a dictionary is skipped when read (only quantized supervised models fill it).
Words come back as gensim decodes them (``encoding``, invalid bytes
backslash-escaped). The numbers are native-endian as fastText writes them, so a
file moves between little-endian machines only, as fastText's own.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

import numpy as np

from sknce._files import atomic_write, describe_file, recover

__all__ = ["FastTextModel", "load_facebook_model", "write_facebook_model"]

#: fastText's file magic and the version written (``fasttext.cc``).
MAGIC = 793712314
VERSION = 12
#: The versions read: fastText wrote 11, then 12; it refuses later ones.
VERSIONS = (11, 12)
#: fastText's ``loss_name`` and ``model_name`` enums (``args.h``).
LOSS = {"hs": 1, "ns": 2, "softmax": 3, "ova": 4}
MODEL = {"cbow": 1, "skipgram": 2, "supervised": 3}

_ARGS_NEW = ("dim", "ws", "epoch", "min_count", "neg", "word_ngrams", "loss", "model")
_ARGS_TAIL = ("bucket", "minn", "maxn", "lr_update_rate")


@dataclass
class FastTextModel:
    """Everything a fastText ``.bin`` file of an unsupervised model holds.

    Attributes
    ----------
    args : dict
        The header's training arguments, under fastText's names (``dim``, ``ws``,
        ``epoch``, ``min_count``, ``neg``, ``word_ngrams``, ``loss``, ``model``,
        ``bucket``, ``minn``, ``maxn``, ``lr_update_rate``, ``t``).
    words : list of str
    counts : int64 ndarray
    ntokens : int
        Tokens of the training corpus.
    input : float32 ndarray of shape (nwords + bucket, dim)
        Word rows, then n-gram rows.
    output : float32 ndarray or None
        The output (context) vectors, ``None`` when not read.
    version : int
        The file's version (0 for the layout before the magic number).
    """

    args: dict
    words: list
    counts: np.ndarray
    ntokens: int
    input: np.ndarray
    output: np.ndarray | None = None
    version: int = VERSION


#: Plausible header values: a file whose header holds others is not a fastText model
#: (or is damaged). Every count is also checked against the file's size.
_MAX_DIM = 1 << 20
_MAX_WORD_BYTES = 1 << 16
# A dictionary entry: the word's bytes, a NUL, an int64 count and an int8 type.
_ENTRY_MIN_BYTES = 1 + struct.calcsize("@qb")


def _header_problem(args: dict) -> str | None:
    """What is implausible in a header's arguments, or None."""
    checks = (
        ("dim", 0 < args["dim"] <= _MAX_DIM),
        ("ws", args["ws"] > 0),
        ("epoch", args["epoch"] > 0),
        ("min_count", args["min_count"] >= 0),
        ("neg", args["neg"] >= 0),
        ("word_ngrams", args["word_ngrams"] > 0),
        ("loss", args["loss"] in LOSS.values()),
        ("model", args["model"] in MODEL.values()),
        ("bucket", args["bucket"] >= 0),
        ("minn", args["minn"] >= 0),
        ("maxn", args["maxn"] >= 0),
        ("lr_update_rate", args["lr_update_rate"] > 0),
        ("t", 0 <= args["t"] <= 1),
    )
    bad = [f"{name}={args[name]!r}" for name, ok in checks if not ok]
    return ", ".join(bad[:3]) if bad else None


class _Reader:
    def __init__(self, stream, path) -> None:
        self.stream, self.path = stream, path
        self.size = os.fstat(stream.fileno()).st_size

    def remaining(self) -> int:
        return self.size - self.stream.tell()

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        data = self.stream.read(size)
        if len(data) != size:
            raise ValueError(f"{self.path}: truncated fastText file (ends inside its header).")
        return struct.unpack(fmt, data)

    def check_fits(self, n_bytes: int, what: str) -> None:
        """Raise before reading (or allocating) ``n_bytes`` that the file cannot hold."""
        if n_bytes > self.remaining():
            raise ValueError(
                f"{self.path}: truncated or damaged fastText file: its header announces "
                f"{what}, at least {n_bytes} bytes, but only {self.remaining()} of its "
                f"{self.size} bytes are left."
            )

    def matrix_shape(self, rows: int, dim: int, what: str) -> tuple[int, int]:
        """Read a matrix's shape; raise unless it is (rows, dim) and fits in the file."""
        found = self.unpack("@2q")
        if found != (rows, dim):
            raise ValueError(
                f"{self.path}: the {what} matrix is {found[0]} x {found[1]}, but the header "
                f"announces {rows} x {dim}: the file is damaged."
            )
        self.check_fits(rows * dim * 4, f"a {rows} x {dim} {what} matrix")
        return found

    def matrix(self, rows: int, dim: int, what: str) -> np.ndarray:
        self.matrix_shape(rows, dim, what)
        count = rows * dim
        data = np.fromfile(self.stream, np.float32, count)
        if data.shape[0] != count:
            raise ValueError(
                f"{self.path}: truncated fastText file: a {rows} x {dim} matrix has "
                f"{data.shape[0]} of its {count} values."
            )
        return data.reshape(rows, dim)

    def word(self, encoding: str) -> str:
        chunks = bytearray()
        while True:
            byte = self.stream.read(1)
            if not byte:
                raise ValueError(f"{self.path}: truncated fastText file (inside a word).")
            if byte == b"\x00":
                break
            chunks += byte
            if len(chunks) > _MAX_WORD_BYTES:
                raise ValueError(
                    f"{self.path}: a word of the dictionary is longer than "
                    f"{_MAX_WORD_BYTES} bytes: the file is damaged."
                )
        return bytes(chunks).decode(encoding, errors="backslashreplace")

    def not_fasttext(self, problem: str) -> ValueError:
        found = describe_file(self.path)
        hint = ""
        if "word2vec" in found:
            hint = (
                " A .vec file (and any word2vec file) loads with WordVectors.load_word2vec_format."
            )
        elif "native" in found:
            hint = " It loads with WordVectors.load."
        return ValueError(
            f"{self.path} is not a fastText .bin model ({problem}): it is {found}.{hint}"
        )

    def header(self) -> tuple[dict, int]:
        """The training arguments and the version (0 for the layout before the magic)."""
        magic, version = self.unpack("@2i")
        args = {}
        if magic == MAGIC:
            if version not in VERSIONS:
                newer = version > VERSION
                raise ValueError(
                    f"{self.path} is a fastText .bin model of version {version}; fastText "
                    f"and sknce read versions {min(VERSIONS)} to {VERSION}"
                    + (": it was written by a newer fastText." if newer else ": it is damaged.")
                )
            for name in _ARGS_NEW:
                args[name] = self.unpack("@i")[0]
        else:  # before the magic number: the file starts with dim and ws
            args["dim"], args["ws"] = magic, version
            version = 0
            for name in _ARGS_NEW[2:]:
                args[name] = self.unpack("@i")[0]
        for name in _ARGS_TAIL:
            args[name] = self.unpack("@i")[0]
        args["t"] = self.unpack("@d")[0]
        problem = _header_problem(args)
        if problem and version == 0:
            raise self.not_fasttext(f"it lacks fastText's magic number, and {problem}")
        if problem:
            raise ValueError(
                f"{self.path}: the header of this fastText .bin model is damaged ({problem})."
            )
        return args, version


def load_facebook_model(
    path: str | os.PathLike, encoding: str = "utf-8", full_model: bool = True
) -> FastTextModel:
    """Read a fastText ``.bin`` file of an unsupervised model.

    Every count of the header (words, matrix shapes) is checked against the
    file's size before anything is allocated.

    Parameters
    ----------
    path : str or path-like
        The ``.bin`` file.
    encoding : str, default="utf-8"
        Of the words; undecodable bytes are backslash-escaped (as gensim).
    full_model : bool, default=True
        Also read the output vectors (their size is checked either way).

    Returns
    -------
    FastTextModel

    Raises
    ------
    ValueError
        If the file is not a fastText model (the message says what it looks
        like), is truncated or damaged, holds a supervised or quantized model,
        was written by a newer fastText, or its matrices disagree with its
        dictionary; the message names the file.
    """
    recover(path)  # a save of the file that a kill interrupted left a temporary
    with open(path, "rb") as stream:
        reader = _Reader(stream, path)
        if reader.size < struct.calcsize("@2i"):
            raise reader.not_fasttext(f"{reader.size} bytes")
        args, version = reader.header()
        size, nwords, nlabels = reader.unpack("@3i")
        if min(size, nwords, nlabels) < 0 or size != nwords + nlabels:
            raise ValueError(
                f"{path}: the dictionary's header is damaged ({size} entries, {nwords} "
                f"words and {nlabels} labels; entries must be words plus labels)."
            )
        if nlabels > 0 or args["model"] == MODEL["supervised"]:
            raise ValueError(
                f"{path} is a supervised fastText model ({nlabels} labels); only the "
                "unsupervised models (skipgram, cbow) are read."
            )
        ntokens = reader.unpack("@q")[0]
        prune_size = reader.unpack("@q")[0] if version else -1
        if ntokens < 0 or prune_size < -1:
            raise ValueError(
                f"{path}: the dictionary's header is damaged (ntokens={ntokens}, "
                f"pruned entries {prune_size})."
            )
        reader.check_fits(size * _ENTRY_MIN_BYTES, f"{size} words")
        words, counts = [], np.empty(size, dtype=np.int64)
        for i in range(size):
            words.append(reader.word(encoding))
            counts[i] = reader.unpack("@qb")[0]
        reader.check_fits(max(prune_size, 0) * 8, f"{prune_size} pruned entries")
        stream.seek(max(prune_size, 0) * 8, os.SEEK_CUR)
        if version and reader.unpack("@?")[0]:
            raise ValueError(
                f"{path} is a quantized fastText model (.ftz); only full models are read."
            )
        matrix = reader.matrix(nwords + args["bucket"], args["dim"], "input")
        if version:
            reader.unpack("@?")
        rows, dim = reader.unpack("@2q")
        if dim != args["dim"] or rows < 0 or rows * dim * 4 != reader.remaining():
            raise ValueError(
                f"{path}: truncated or damaged fastText file: the output matrix is announced "
                f"as {rows} x {dim} (float32, {rows * dim * 4} bytes) and "
                f"{reader.remaining()} bytes are left."
            )
        output = None
        if full_model:
            stream.seek(-16, os.SEEK_CUR)
            output = reader.matrix(rows, dim, "output")
    return FastTextModel(args, words, counts, ntokens, matrix, output, version)


def write_facebook_model(
    path: str | os.PathLike,
    words: list,
    counts: np.ndarray,
    vectors_vocab: np.ndarray,
    vectors_ngrams: np.ndarray,
    min_n: int,
    max_n: int,
    output: np.ndarray | None = None,
    *,
    args: dict | None = None,
    ntokens: int | None = None,
    encoding: str = "utf-8",
) -> None:
    """Write word rows, n-gram rows and output vectors as a fastText ``.bin`` file.

    The layout of gensim's ``save_facebook_model`` (version 12), which fastText
    reads: the header, the dictionary (words and counts), the word rows then the
    n-gram rows as the input matrix, and the output matrix. Written through
    ``sknce._files.atomic_write`` (verified, then renamed over ``path``).
    :func:`~sknce.words.save_facebook_model` writes a
    :class:`~sknce.words.SubwordVectors` with it.

    Parameters
    ----------
    path : str or path-like
        The ``.bin`` file.
    words : list of str
    counts : int array of shape (n_words,)
    vectors_vocab : float32 array of shape (n_words, dim)
    vectors_ngrams : float32 array of shape (bucket, dim)
    min_n, max_n : int
    output : array-like of shape (n_words, dim) or None, default=None
        The output vectors; zeros when ``None`` (then fastText cannot continue
        training from the file, but every vector is there).
    args : dict or None, default=None
        Header fields under fastText's names (see :class:`FastTextModel`); the
        missing ones take fastText's defaults for a skip-gram model with
        negative sampling, and ``dim``, ``bucket``, ``minn``, ``maxn`` always
        come from the vectors.
    ntokens : int or None, default=None
        Tokens of the corpus; default the sum of the word counts.
    encoding : str, default="utf-8"
        Encoding of the words in the file.

    Raises
    ------
    ValueError
        If a word holds a NUL character, ``output`` has the wrong shape, or
        ``args`` holds a field fastText does not know or a value it refuses.
    OSError
        If the file cannot be written (the message names it and the cause); an
        existing file is left as it was.
    """
    n_words, dim = vectors_vocab.shape
    bucket = vectors_ngrams.shape[0]
    header = {
        "ws": 5,
        "epoch": 5,
        "min_count": 5,
        "neg": 5,
        "word_ngrams": 1,
        "loss": LOSS["ns"],
        "model": MODEL["skipgram"],
        "lr_update_rate": 100,
        "t": 1e-4,
        **(args or {}),
        "dim": dim,
        "bucket": bucket,
        "minn": min_n,
        "maxn": max_n,
    }
    counts = np.asarray(counts)
    if output is None:
        output = np.zeros((n_words, dim), dtype=np.float32)
    output = np.ascontiguousarray(output, dtype=np.float32)
    if output.shape != (n_words, dim):
        raise ValueError(f"output has shape {output.shape}; it must be ({n_words}, {dim}).")
    unknown = sorted(set(args or {}) - set(_ARGS_NEW + _ARGS_TAIL + ("t",)))
    problem = _header_problem(header) if not unknown else f"unknown {unknown}"
    if problem:
        raise ValueError(
            f"args holds header fields fastText cannot read back ({problem}); see "
            "FastTextModel.args for the fields and fastText's documentation for their values."
        )
    entries = []
    for word, count in zip(words, counts):
        try:
            data = word.encode(encoding)
        except UnicodeEncodeError as error:
            raise ValueError(
                f"the word {word!r} cannot be written in {encoding} ({error.reason}); save "
                "with encoding='utf-8'."
            ) from None
        if b"\x00" in data:
            raise ValueError(
                f"the word {word!r} holds a NUL character, fastText's end of a word; remove it."
            )
        entries.append(data + b"\x00" + struct.pack("@qb", int(count), 0))
    total = int(counts.sum()) if ntokens is None else int(ntokens)
    with atomic_write(path, compress=False) as out:
        out.write(struct.pack("@2i", MAGIC, VERSION))
        for name in _ARGS_NEW + _ARGS_TAIL:
            out.write(struct.pack("@i", int(header[name])))
        out.write(struct.pack("@d", float(header["t"])))
        out.write(struct.pack("@3i", n_words, n_words, 0))
        out.write(struct.pack("@2q", total, -1))
        for start in range(0, len(entries), 4096):
            out.write(b"".join(entries[start : start + 4096]))
        # fastText writes the flag alone: no padding before the sizes
        out.write(struct.pack("@?", False) + struct.pack("@2q", n_words + bucket, dim))
        out.write(np.ascontiguousarray(vectors_vocab, dtype=np.float32).tobytes())
        out.write(np.ascontiguousarray(vectors_ngrams, dtype=np.float32).tobytes())
        out.write(struct.pack("@?", False) + struct.pack("@2q", n_words, dim))
        out.write(output.tobytes())
