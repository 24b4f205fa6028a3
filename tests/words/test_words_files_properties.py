"""Generated corrupt word-vector files: a load gives the vectors or a ValueError naming the file.

Each test writes a valid file (word2vec text or binary, plain or compressed, or the
native pair), damages it as a disk, a download or a hand edit would (truncation, bit
flips, a rewritten header, bytes inserted or deleted), and loads it. Whatever the
damage, the load either succeeds or raises a ``ValueError`` whose message names the
file; never another exception (``EOFError``, ``zlib.error``, ``KeyError``,
``MemoryError``, numpy's errors).
"""

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sknce.words import _io
from sknce.words._vectors import WordVectors

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORDS = ["the", "café", "日本語", "of", "x" * 12]

# (binary, file name); "native" is WordVectors.save's pair.
FORMATS = [
    (False, "v.txt"),
    (True, "v.bin"),
    (False, "v.txt.gz"),
    (True, "v.bin.gz"),
    (False, "v.txt.bz2"),
    (True, "v.bin.bz2"),
]


def _wv():
    rng = np.random.default_rng(0)
    return WordVectors(WORDS, rng.normal(size=(len(WORDS), 3)), counts=[5, 4, 3, 2, 1])


@st.composite
def damage(draw, size):
    """A function that damages a byte string of ``size`` bytes."""
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
    if kind == "truncate":
        at = draw(st.integers(0, max(size - 1, 0)))
        return lambda data: data[:at]
    positions = draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=1, max_size=4))
    if kind == "flip":
        masks = draw(st.lists(st.integers(1, 255), min_size=len(positions)))

        def flip(data):
            data = bytearray(data)
            for at, mask in zip(positions, masks):
                if at < len(data):
                    data[at] ^= mask
            return bytes(data)

        return flip
    if kind == "insert":
        junk = draw(st.binary(min_size=1, max_size=16))
        return lambda data: data[: positions[0]] + junk + data[positions[0] :]
    n = draw(st.integers(1, 16))
    return lambda data: data[: positions[0]] + data[positions[0] + n :]


def _load_or_named_error(load, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # repeated words keep their first vector
        try:
            return load()
        except ValueError as exc:
            assert str(path) in str(exc), f"the error does not name {path}: {exc}"
            return None


@pytest.mark.parametrize(("binary", "name"), FORMATS)
@SETTINGS
@given(data=st.data())
def test_damaged_word2vec_files_load_or_name_the_file(binary, name, data):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        _wv().save_word2vec_format(path, binary=binary)
        raw = path.read_bytes()
        path.write_bytes(data.draw(damage(len(raw)))(raw))
        for mode in (binary, None):
            loaded = _load_or_named_error(
                lambda mode=mode: WordVectors.load_word2vec_format(path, binary=mode), path
            )
            if loaded is not None:
                assert np.isfinite(loaded.vectors).all()
                assert len(set(loaded.index_to_key)) == len(loaded)


@pytest.mark.parametrize(("binary", "name"), FORMATS[:2])
@SETTINGS
@given(data=st.data())
def test_damaged_uncompressed_content_loads_or_names_the_file(binary, name, data):
    # The damage inside the decompressed text, for the compressed formats' content.
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / (name + ".gz")
        plain = Path(directory) / name
        _wv().save_word2vec_format(plain, binary=binary)
        raw = plain.read_bytes()
        with _io.open_file(path, "wb") as out:
            out.write(data.draw(damage(len(raw)))(raw))
        _load_or_named_error(lambda: WordVectors.load_word2vec_format(path, binary=binary), path)


@st.composite
def header(draw):
    """A first line: numbers of any size and sign, one to three of them, or junk."""
    number = st.one_of(st.integers(-(10**15), 10**15), st.sampled_from([0, 1, 3, 5, 2**62]))
    fields = draw(st.lists(number, min_size=1, max_size=3))
    line = " ".join(map(str, fields))
    return draw(st.sampled_from([line, line + " ", " " + line, line + "\r"])).encode()


@pytest.mark.parametrize(("binary", "name"), FORMATS)
@SETTINGS
@given(first=header())
def test_any_header_loads_or_names_the_file(binary, name, first):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / name
        _wv().save_word2vec_format(path, binary=binary)
        with _io.open_file(path, "rb") as f:
            body = f.read().split(b"\n", 1)[1]
        with _io.open_file(path, "wb") as f:
            f.write(first + b"\n" + body)
        for mode in (binary, None):
            _load_or_named_error(
                lambda mode=mode: WordVectors.load_word2vec_format(path, binary=mode), path
            )


@pytest.mark.parametrize("which", ["words", "matrix"])
@SETTINGS
@given(data=st.data())
def test_damaged_native_files_load_or_name_the_file(which, data):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "model.wv"
        wv = _wv()
        wv.save(path)
        target = path if which == "words" else _io.native_matrix_path(path)
        raw = target.read_bytes()
        target.write_bytes(data.draw(damage(len(raw)))(raw))
        for mmap in (None, "r"):
            loaded = _load_or_named_error(
                lambda mmap=mmap: WordVectors.load(path, mmap=mmap), path
            )
            if loaded is not None and which == "matrix":
                # A flip in the matrix's data is a valid file of other values; the
                # words and the shape are those saved.
                assert loaded.index_to_key == wv.index_to_key
                assert loaded.vectors.shape == wv.vectors.shape
