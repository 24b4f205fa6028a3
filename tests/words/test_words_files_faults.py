"""Word-vector files under faults: interrupted saves, mixed-up pairs, damaged and lying files.

Every damaged file is a ``ValueError`` that names the file and what is wrong with it;
an interrupted or failed save leaves the previous files a consistent pair.
"""

import bz2
import gzip
import json
import os
import re
import signal
import threading

import numpy as np
import pytest

from sknce import _files as atomic
from sknce.words import _io
from sknce.words._vectors import WordVectors, resolve_init_vectors

WORDS = ["the", "of", "café", "日本語", "and"]


def _vectors(seed, dim=4):
    return np.random.default_rng(seed).normal(size=(len(WORDS), dim)).astype(np.float32)


@pytest.fixture
def old():
    return WordVectors(WORDS, _vectors(0), counts=[50, 40, 30, 20, 10])


@pytest.fixture
def new():
    # Same vocabulary size and dimension: a mixed-up pair has the shapes of a good one.
    return WordVectors(WORDS[::-1], _vectors(1))


def _assert_same(loaded, wv):
    assert loaded.index_to_key == wv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, wv.vectors)
    for word in wv.index_to_key:  # each word keeps its own vector
        np.testing.assert_array_equal(loaded[word], wv[word])


def _files(directory):
    return sorted(p.name for p in directory.iterdir())


# --- native format: atomic as a pair --------------------------------------------------


def test_a_save_interrupted_between_its_two_writes_keeps_the_old_pair(
    old, new, tmp_path, monkeypatch
):
    path = tmp_path / "model.wv"
    old.save(path)
    write, calls = atomic._Checked.write, []

    def interrupt_words(stream, data):
        calls.append(len(memoryview(data).cast("B")))
        if bytes(memoryview(data)[:1]) == b"{":  # the matrix is written, the words are not
            raise KeyboardInterrupt
        return write(stream, data)

    monkeypatch.setattr(atomic._Checked, "write", interrupt_words)
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    monkeypatch.undo()
    assert len(calls) > 1
    _assert_same(WordVectors.load(path), old)
    assert _files(tmp_path) == ["model.wv", "model.wv.vectors.npy"]  # no temporary left


@pytest.mark.parametrize("fault", [KeyboardInterrupt, OSError])
def test_a_save_failing_between_its_two_renames_restores_the_old_pair(
    old, new, tmp_path, monkeypatch, fault
):
    path = tmp_path / "model.wv"
    old.save(path)
    replace, calls = os.replace, []

    def fail_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the new matrix is in place, the words file is not
            raise fault("simulated")
        return replace(src, dst)

    monkeypatch.setattr(_io.os, "replace", fail_second)
    with pytest.raises(fault, match="simulated"):
        new.save(path)
    monkeypatch.undo()
    _assert_same(WordVectors.load(path), old)
    assert _files(tmp_path) == ["model.wv", "model.wv.vectors.npy"]


def test_a_first_save_that_fails_leaves_no_half_pair(new, tmp_path, monkeypatch):
    path = tmp_path / "model.wv"
    replace, calls = os.replace, []

    def fail_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("disk full")
        return replace(src, dst)

    monkeypatch.setattr(_io.os, "replace", fail_second)
    with pytest.raises(OSError, match="disk full"):
        new.save(path)
    assert _files(tmp_path) == []


def test_ctrl_c_during_the_switch_waits_until_the_pair_is_whole(old, new, tmp_path, monkeypatch):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set in the main thread only")
    path = tmp_path / "model.wv"
    old.save(path)
    replace = os.replace

    def signal_then_replace(src, dst):
        signal.raise_signal(signal.SIGINT)  # Ctrl-C between the two renames
        return replace(src, dst)

    monkeypatch.setattr(_io.os, "replace", signal_then_replace)
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    monkeypatch.undo()
    _assert_same(WordVectors.load(path), new)  # the switch finished, then Ctrl-C


def test_a_mixed_up_pair_of_the_same_shape_is_an_error(old, new, tmp_path):
    # What a crash between the two renames (or copying one file alone) leaves: the
    # words of one save beside the matrix of another, of the same shape and type.
    old.save(tmp_path / "a.wv")
    new.save(tmp_path / "b.wv")
    matrix = _io.native_matrix_path
    os.replace(matrix(tmp_path / "b.wv"), matrix(tmp_path / "a.wv"))
    for mmap in (None, "r"):
        with pytest.raises(ValueError, match=r"a\.wv\.vectors\.npy and .*a\.wv were not written"):
            WordVectors.load(tmp_path / "a.wv", mmap=mmap)


def test_a_matrix_file_saved_by_numpy_alone_has_no_token(old, tmp_path):
    path = tmp_path / "model.wv"
    old.save(path)
    np.save(_io.native_matrix_path(path), old.vectors[::-1].copy())
    with pytest.raises(ValueError, match="not written by the same WordVectors.save"):
        WordVectors.load(path)


def test_the_matrix_file_is_still_a_npy_file(old, tmp_path):
    old.save(tmp_path / "model.wv")
    for mmap in (None, "r"):
        matrix = np.load(_io.native_matrix_path(tmp_path / "model.wv"), mmap_mode=mmap)
        np.testing.assert_array_equal(matrix, old.vectors)


def test_version_1_files_without_a_token_still_load(old, tmp_path):
    path = tmp_path / "model.wv"
    meta = {
        "format": "sknce.WordVectors",
        "version": 1,
        "n_words": len(old),
        "vector_size": old.vector_size,
        "dtype": old.vectors.dtype.str,
        "words": old.index_to_key,
        "vecattrs": {},
    }
    path.write_text(json.dumps(meta))
    np.save(_io.native_matrix_path(path), old.vectors)
    _assert_same(WordVectors.load(path), old)


def _edit_meta(path, edit):
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda p, m: _edit_meta(p, lambda d: d.pop("vecattrs")), "lacks its 'vecattrs' entry"),
        (lambda p, m: _edit_meta(p, lambda d: d.pop("words")), "lacks its 'words' entry"),
        (lambda p, m: _edit_meta(p, lambda d: d.pop("n_words")), "lacks its 'n_words' entry"),
        (lambda p, m: _edit_meta(p, lambda d: d.update(n_words="5")), "'n_words' entry"),
        (lambda p, m: _edit_meta(p, lambda d: d["words"].pop()), "lists 4 words but announces 5"),
        (lambda p, m: _edit_meta(p, lambda d: d.update(version=9)), "format version 9"),
        (
            lambda p, m: _edit_meta(p, lambda d: d["vecattrs"]["count"]["values"].pop()),
            "attribute 'count' is damaged",
        ),
        (
            lambda p, m: _edit_meta(p, lambda d: d["vecattrs"]["count"].pop("dtype")),
            "attribute 'count' is damaged",
        ),
        (lambda p, m: _edit_meta(p, lambda d: d["words"].__setitem__(0, 7)), "not a string"),
        (lambda p, m: p.write_bytes(p.read_bytes()[:-20]), "truncated or damaged"),
        (lambda p, m: p.write_bytes(b""), "truncated or damaged"),
        (lambda p, m: m.write_bytes(m.read_bytes()[:140]), r"vectors\.npy is truncated"),
        (lambda p, m: m.write_bytes(m.read_bytes()[:-40]), r"vectors\.npy.*not written by the"),
        (lambda p, m: m.write_bytes(m.read_bytes()[:30]), r"vectors\.npy is not a \.npy"),
        (lambda p, m: m.write_bytes(b"junk" * 40), r"vectors\.npy is not a \.npy"),
        (lambda p, m: m.unlink(), r"has no matrix file: .*vectors\.npy is missing"),
    ],
)
def test_damaged_native_files_are_named(old, tmp_path, damage, match):
    path = tmp_path / "model.wv"
    old.save(path)
    damage(path, _io.native_matrix_path(path))
    for mmap in (None, "r"):
        with pytest.raises(ValueError, match=match) as error:
            WordVectors.load(path, mmap=mmap)
        assert "model.wv" in str(error.value)


# --- word2vec formats: files that lie or are damaged ----------------------------------


@pytest.fixture
def text_file(old, tmp_path):
    path = tmp_path / "vectors.txt"
    old.save_word2vec_format(path)
    return path


@pytest.fixture
def binary_file(old, tmp_path):
    path = tmp_path / "vectors.bin"
    old.save_word2vec_format(path, binary=True)
    return path


def test_a_text_file_read_as_binary_is_an_error(text_file):
    with pytest.raises(ValueError, match=r"vectors\.txt is a word2vec text file.*binary=False"):
        WordVectors.load_word2vec_format(text_file, binary=True)


def test_a_binary_file_read_as_text_says_so(binary_file):
    with pytest.raises(ValueError, match=r"vectors\.bin .*binary data.*binary=True"):
        WordVectors.load_word2vec_format(binary_file, binary=False)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
@pytest.mark.parametrize("header", [b"30000000000000 4\n", b"5 4000000000000\n"])
def test_a_header_announcing_terabytes_is_checked_before_allocating(
    old, tmp_path, binary, suffix, header
):
    path = tmp_path / f"lie.w2v{suffix}"
    old.save_word2vec_format(path, binary=binary)
    with _io.open_file(path, "rb") as f:
        body = f.read().split(b"\n", 1)[1]
    with _io.open_file(path, "wb") as f:
        f.write(header + body)
    n_words, n_dims = header.split()
    if int(n_dims) >= 2**31:  # no matrix row can be that long: not a header at all
        match = rf"first line of .*lie\.w2v{re.escape(suffix)}, '5 4000000000000', is not a"
    else:
        match = rf"lie\.w2v{re.escape(suffix)} announces {int(n_words)}"
    with pytest.raises(ValueError, match=match):
        WordVectors.load_word2vec_format(path, binary=binary)


@pytest.mark.parametrize("binary", [False, True, None])
@pytest.mark.parametrize(
    ("header", "shown"),
    [(b"-5 4\n", "-5 4"), (b"5 -4\n", "5 -4"), (b"5 0\n", "5 0"), (b"5 4 1\n", "5 4 1")],
)
def test_a_negative_zero_or_three_field_header_is_named(text_file, binary, header, shown):
    body = text_file.read_bytes().split(b"\n", 1)[1]
    text_file.write_bytes(header + body)
    with pytest.raises(ValueError, match=rf"first line of .*vectors\.txt, '{shown}', is not a"):
        WordVectors.load_word2vec_format(text_file, binary=binary)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
@pytest.mark.parametrize("cut", [0.5, 0.9])
def test_a_truncated_compressed_file_is_named(old, tmp_path, binary, suffix, cut):
    path = tmp_path / f"cut.w2v{suffix}"
    old.save_word2vec_format(path, binary=binary)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ValueError, match=rf"cut\.w2v{suffix}"):
        WordVectors.load_word2vec_format(path, binary=binary)


@pytest.mark.parametrize("binary", [False, True, None])
@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_a_plain_file_with_a_compressed_name_is_named(text_file, binary, suffix):
    path = text_file.with_name("plain.txt" + suffix)
    path.write_bytes(text_file.read_bytes())
    with pytest.raises(ValueError, match=rf"plain\.txt{suffix} cannot be read as a {suffix}"):
        WordVectors.load_word2vec_format(path, binary=binary)


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_a_corrupted_compressed_file_is_named(old, tmp_path, suffix):
    path = tmp_path / f"flip.txt{suffix}"
    old.save_word2vec_format(path)
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 8):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"flip\.txt{suffix}"):
        WordVectors.load_word2vec_format(path)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_utf8_byte_order_mark_is_accepted(old, tmp_path, binary, suffix):
    path = tmp_path / f"bom.w2v{suffix}"
    old.save_word2vec_format(path, binary=binary)
    with _io.open_file(path, "rb") as f:
        data = f.read()
    with _io.open_file(path, "wb") as f:
        f.write(b"\xef\xbb\xbf" + data)
    for detect in (binary, None):
        _assert_same(WordVectors.load_word2vec_format(path, binary=detect), old)


def test_a_byte_order_mark_before_a_headerless_file_is_accepted(old, tmp_path):
    path = tmp_path / "glove.txt"
    old.save_word2vec_format(path, write_header=False)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    _assert_same(WordVectors.load_word2vec_format(path), old)


def test_system_errors_are_not_disguised(tmp_path):
    with pytest.raises(FileNotFoundError):
        WordVectors.load_word2vec_format(tmp_path / "missing.txt.gz")


def test_analogy_files_name_a_damaged_archive(old, tmp_path):
    path = tmp_path / "questions.txt.gz"
    path.write_bytes(gzip.compress(b": capital\na b c d\n")[:-12])
    with pytest.raises(ValueError, match=r"questions\.txt\.gz"):
        old.evaluate_word_analogies(path)
    path = tmp_path / "questions.txt.bz2"
    path.write_bytes(b": capital\na b c d\n")
    with pytest.raises(ValueError, match=r"questions\.txt\.bz2 cannot be read"):
        old.evaluate_word_analogies(path)


def test_compressed_files_still_round_trip(old, tmp_path):
    for suffix, module in ((".gz", gzip), (".bz2", bz2)):
        path = tmp_path / f"ok.txt{suffix}"
        old.save_word2vec_format(path)
        assert module.decompress(path.read_bytes()).startswith(b"5 4\n")
        _assert_same(WordVectors.load_word2vec_format(path), old)


# --- evaluation files --------------------------------------------------------------------


def test_evaluation_files_with_a_byte_order_mark_or_compressed_read_as_plain(old, tmp_path):
    pairs = "the\tof\t3.5\ncafé\tand\t1.0\nof\tand\t2.0\nthe\tcafé\t0.5\n"
    plain = tmp_path / "pairs.tsv"
    plain.write_text(pairs, encoding="utf8")
    expected = old.evaluate_word_pairs(plain)
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf" + pairs.encode())  # the first word is 'the', not '\ufeffthe'
    assert old.evaluate_word_pairs(bom) == expected
    packed = tmp_path / "pairs.tsv.gz"
    packed.write_bytes(gzip.compress(pairs.encode()))
    assert old.evaluate_word_pairs(packed) == expected
    packed.write_bytes(gzip.compress(pairs.encode())[:-9])
    with pytest.raises(ValueError, match=r"pairs\.tsv\.gz cannot be read as a \.gz file"):
        old.evaluate_word_pairs(packed)
    bom.write_bytes(b"the\tof\t3.5\n\xff\xfe\t\x00\t1\n")
    with pytest.raises(ValueError, match=r"line 2 of .*bom\.tsv is not valid utf8"):
        old.evaluate_word_pairs(bom)
    questions = tmp_path / "questions.txt"
    questions.write_bytes(b"\xef\xbb\xbf: s\nthe of and caf\xc3\xa9\n")
    score, sections = old.evaluate_word_analogies(questions)
    assert sections[0]["section"] == "s" and len(sections[0]["correct"] + sections[0]["incorrect"])


def test_init_vectors_accept_a_native_file(old, tmp_path):
    path = tmp_path / "model.wv"
    old.save(path)
    _assert_same(resolve_init_vectors(path), old)
    _assert_same(resolve_init_vectors(str(path)), old)
    _io.native_matrix_path(path).unlink()
    with pytest.raises(ValueError, match=r"model\.wv has no matrix file"):
        resolve_init_vectors(path)


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_a_native_save_under_a_compressed_name_loads(old, tmp_path, suffix):
    path = tmp_path / f"model.wv{suffix}"
    old.save(path)  # the words file is compressed, as its name says
    _assert_same(WordVectors.load(path), old)
    _assert_same(resolve_init_vectors(path), old)


def test_fvocab_cannot_overwrite_the_vectors(old, tmp_path):
    path = tmp_path / "v.txt"
    with pytest.raises(ValueError, match="fvocab and the vectors' path are the same file"):
        old.save_word2vec_format(path, fvocab=str(path))
    assert not path.exists()
