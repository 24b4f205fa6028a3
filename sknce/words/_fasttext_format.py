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

__all__ = ["FastTextModel", "load_facebook_model", "write_facebook_model"]

#: fastText's file magic and the version written (``fasttext.cc``).
MAGIC = 793712314
VERSION = 12
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


class _Reader:
    def __init__(self, stream, path) -> None:
        self.stream, self.path = stream, path

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        data = self.stream.read(size)
        if len(data) != size:
            raise ValueError(f"{self.path}: truncated fastText file (ends inside its header).")
        return struct.unpack(fmt, data)

    def matrix(self) -> np.ndarray:
        rows, dim = self.unpack("@2q")
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
        return bytes(chunks).decode(encoding, errors="backslashreplace")


def load_facebook_model(
    path: str | os.PathLike, encoding: str = "utf-8", full_model: bool = True
) -> FastTextModel:
    """Read a fastText ``.bin`` file of an unsupervised model.

    Parameters
    ----------
    path : str or path-like
        The ``.bin`` file.
    encoding : str, default="utf-8"
        Of the words; undecodable bytes are backslash-escaped (as gensim).
    full_model : bool, default=True
        Also read the output vectors.

    Returns
    -------
    FastTextModel

    Raises
    ------
    ValueError
        If the file is truncated, holds a supervised or quantized model, or its
        matrices disagree with its dictionary.
    """
    with open(path, "rb") as stream:
        reader = _Reader(stream, path)
        magic, version = reader.unpack("@2i")
        args = {}
        if magic == MAGIC:
            for name in _ARGS_NEW:
                args[name] = reader.unpack("@i")[0]
        else:  # before the magic number: the file starts with dim and ws
            args["dim"], args["ws"] = magic, version
            version = 0
            for name in _ARGS_NEW[2:]:
                args[name] = reader.unpack("@i")[0]
        for name in _ARGS_TAIL:
            args[name] = reader.unpack("@i")[0]
        args["t"] = reader.unpack("@d")[0]
        size, nwords, nlabels = reader.unpack("@3i")
        if nlabels > 0 or args["model"] == MODEL["supervised"]:
            raise ValueError(
                f"{path} is a supervised fastText model ({nlabels} labels); only the "
                "unsupervised models (skipgram, cbow) are read."
            )
        ntokens = reader.unpack("@q")[0]
        prune_size = reader.unpack("@q")[0] if version else -1
        words, counts = [], np.empty(size, dtype=np.int64)
        for i in range(size):
            words.append(reader.word(encoding))
            counts[i] = reader.unpack("@qb")[0]
        for _ in range(max(prune_size, 0)):
            reader.unpack("@2i")
        if version and reader.unpack("@?")[0]:
            raise ValueError(
                f"{path} is a quantized fastText model (.ftz); only full models are read."
            )
        matrix = reader.matrix()
        if matrix.shape != (nwords + args["bucket"], args["dim"]):
            raise ValueError(
                f"{path}: the input matrix is {matrix.shape[0]} x {matrix.shape[1]}, but the "
                f"dictionary has {nwords} words, bucket={args['bucket']}, dim={args['dim']}."
            )
        output = None
        if full_model:
            if version:
                reader.unpack("@?")
            output = reader.matrix()
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
    n-gram rows as the input matrix, and the output matrix. Written under a
    temporary name and renamed. :func:`~sknce.words.save_facebook_model` writes a
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
        If a word holds a NUL character or ``output`` has the wrong shape.
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
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as out:
            out.write(struct.pack("@2i", MAGIC, VERSION))
            for name in _ARGS_NEW + _ARGS_TAIL:
                out.write(struct.pack("@i", int(header[name])))
            out.write(struct.pack("@d", float(header["t"])))
            out.write(struct.pack("@3i", n_words, n_words, 0))
            total = int(counts.sum()) if ntokens is None else int(ntokens)
            out.write(struct.pack("@2q", total, -1))
            for word, count in zip(words, counts):
                data = word.encode(encoding)
                if b"\x00" in data:
                    raise ValueError(
                        f"the word {word!r} holds a NUL character, fastText's end of a word; "
                        "remove it."
                    )
                out.write(data + b"\x00" + struct.pack("@qb", int(count), 0))
            # fastText writes the flag alone: no padding before the sizes
            out.write(struct.pack("@?", False) + struct.pack("@2q", n_words + bucket, dim))
            out.write(np.ascontiguousarray(vectors_vocab, dtype=np.float32).tobytes())
            out.write(np.ascontiguousarray(vectors_ngrams, dtype=np.float32).tobytes())
            out.write(struct.pack("@?", False) + struct.pack("@2q", n_words, dim))
            out.write(output.tobytes())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
