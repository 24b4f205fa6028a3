"""Each reader names the file and the format it found; writers name the file and the cause.

A file of another format passed to a reader is a ValueError saying what the file is
and which loader reads it (no "supervised model (858665005 labels)" for a text file);
a chunk file whose array header announces more than the file holds is an error before
numpy allocates; a checkpoint's load removes what killed saves left.
"""

import io
import zipfile

import numpy as np
import pytest

from sknce import _files
from sknce.datasets import NpzChunks, save_npz_chunks
from sknce.words import SubwordVectors, WordVectors

pytestmark = pytest.mark.attack("Readers naming what they found")

RNG = np.random.default_rng(0)
WV = WordVectors(["the", "of", "café"], RNG.normal(size=(3, 4)).astype(np.float32))
SV = SubwordVectors(["the", "of"], RNG.normal(size=(2, 4)), RNG.normal(size=(10, 4)))


def _write(kind, path):
    if kind == "fasttext":
        SV.save(path)
    elif kind == "native":
        WV.save(path)
    elif kind == "text":
        WV.save_word2vec_format(path)
    elif kind == "binary":
        WV.save_word2vec_format(path, binary=True)
    elif kind == "npz":
        np.savez(open(path, "wb"), X=np.ones(3))  # noqa: SIM115
    elif kind == "pickle":
        import pickle

        path.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    return path


@pytest.mark.parametrize(
    ("kind", "found", "hint"),
    [
        ("fasttext", r"a fastText \.bin model", "load_facebook_vectors reads it"),
        ("native", "a WordVectors.save file", r"WordVectors\.load reads it"),
        ("npz", "a zip archive", ""),
        ("pickle", "a Python pickle", "KeyedVectors.load"),
    ],
)
@pytest.mark.parametrize("binary", [False, True, None])
def test_word2vec_readers_name_a_foreign_format(tmp_path, kind, found, hint, binary):
    path = _write(kind, tmp_path / "file")
    with pytest.raises(ValueError, match=rf"file is not a word2vec file: it is {found}.*{hint}"):
        WordVectors.load_word2vec_format(path, binary=binary)


@pytest.mark.parametrize(
    ("kind", "found"),
    [
        ("fasttext", r"a fastText \.bin model.*load_facebook_vectors"),
        ("text", r"a word2vec text file \(header '3 4'\).*load_word2vec_format\(path\)"),
        ("binary", r"a word2vec binary file.*binary=True"),
        ("npz", "a zip archive"),
        ("pickle", "a Python pickle.*from_gensim"),
    ],
)
def test_the_native_reader_names_a_foreign_format(tmp_path, kind, found):
    path = _write(kind, tmp_path / "file")
    message = rf"file is not a file written by WordVectors.save.*{found}"
    with pytest.raises(ValueError, match=message):
        WordVectors.load(path)


def test_a_native_json_cut_short_is_named_damaged(tmp_path):
    path = _write("native", tmp_path / "m.wv")
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(ValueError, match="it is a truncated or damaged one. Save the vectors"):
        WordVectors.load(path)


def test_saving_into_a_missing_directory_names_it(tmp_path):
    for save in (WV.save, WV.save_word2vec_format, SV.save):
        with pytest.raises(FileNotFoundError, match=r"could not write .*missing.*no file was"):
            save(tmp_path / "missing" / "f")


# --- chunk files -------------------------------------------------------------------------


def _npy(header: str, data: bytes) -> bytes:
    text = header.ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode() + data


@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ("(10000000000,)", r"'X' announces shape \(10000000000,\) of float64"),
        ("(3, 2**40)", "damaged"),
        ("(4,)", r"announces shape \(4,\) of float64 \(\d+ bytes\) but its member holds"),
    ],
)
def test_a_chunk_array_announcing_more_than_its_file_is_named(tmp_path, shape, match):
    path = tmp_path / "chunk-00000.npz"
    with zipfile.ZipFile(path, "w") as archive:
        header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"
        archive.writestr("X.npy", _npy(header, np.ones(3).tobytes()))
    with pytest.raises(ValueError, match=rf"chunk file .*chunk-00000\.npz.*{match}"):
        NpzChunks([path])[0]


def test_a_chunk_file_of_another_format_is_named(tmp_path):
    path = _write("text", tmp_path / "chunk.npz")
    with pytest.raises(ValueError, match=r"chunk\.npz is not a readable \.npz file .*it is a "
                       r"word2vec text file"):  # fmt: skip
        NpzChunks([path])[0]


def test_chunks_written_in_a_stream_read_back(tmp_path):
    blocks = [RNG.normal(size=(4, 3)), RNG.normal(size=(2, 3))]
    chunks = save_npz_chunks([(b, np.arange(len(b))) for b in blocks], tmp_path)
    for (X, y), block in zip(chunks, blocks):
        np.testing.assert_array_equal(X, block)
        np.testing.assert_array_equal(y, np.arange(len(block)))
    buffer = io.BytesIO(chunks.files[0].read_bytes())
    assert zipfile.ZipFile(buffer).testzip() is None  # every member's CRC is right


def test_a_chunk_save_removes_what_killed_saves_left(tmp_path):
    import subprocess
    import sys

    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True, check=True).stdout)  # fmt: skip
    stale = tmp_path / f".chunk-00000.npz.{_files._HOST}-{pid}-0123abcd.tmp"
    stale.write_bytes(b"half")
    save_npz_chunks([np.ones((2, 2))], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunk-00000.npz"]
