"""Word-vector files: exact round trips, gensim compatibility, hostile files, atomic writes."""

import gzip
import mmap
import os
import stat
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sknce._files import atomic_write
from sknce.words import _io
from sknce.words._vectors import WordVectors, resolve_init_vectors

WORDS = ["the", "café", "日本語", "naïve", "Ωmega", "x" * 40, "emoji🙂", "a.b-c_d"]


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    vectors = rng.normal(scale=rng.uniform(1e-3, 1e3, size=(len(WORDS), 1)), size=(8, 6))
    return WordVectors(WORDS, vectors, counts=np.arange(80, 0, -10))


def _bits(vectors):
    return np.asarray(vectors, dtype=np.float32).view(np.uint32)


def _assert_identical(loaded, wv):
    assert loaded.index_to_key == wv.index_to_key
    assert loaded.vectors.dtype == wv.vectors.dtype
    np.testing.assert_array_equal(_bits(loaded.vectors), _bits(wv.vectors))


def _keyedvectors():
    return pytest.importorskip("gensim.models.keyedvectors").KeyedVectors


# --- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_word2vec_round_trip_is_exact(wv, tmp_path, binary, suffix):
    path = tmp_path / f"vectors.w2v{suffix}"
    wv.save_word2vec_format(path, binary=binary)
    for detect in (binary, None):
        _assert_identical(WordVectors.load_word2vec_format(path, binary=detect), wv)


@pytest.mark.parametrize("mmap", [None, "r", "c"])
def test_native_round_trip_is_exact_with_counts(wv, tmp_path, mmap):
    path = tmp_path / "model.wv"
    wv.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.wv", "model.wv.vectors.npy"]
    loaded = WordVectors.load(path, mmap=mmap)
    _assert_identical(loaded, wv)
    assert loaded.get_vecattr("café", "count") == 70
    assert loaded.most_similar("the", topn=3) == wv.most_similar("the", topn=3)


def test_native_format_keeps_any_word_and_attribute(tmp_path):
    words = ["new york", "tab\there", "\ud800", "", "line\nbreak"]
    wv = WordVectors(words, np.arange(10, dtype=np.float64).reshape(5, 2), dtype=np.float64)
    wv.set_vecattr("new york", "tag", "city")
    wv.set_vecattr("", "score", 0.25)
    wv.save(tmp_path / "odd.wv")
    loaded = WordVectors.load(tmp_path / "odd.wv")
    assert loaded.words == words and loaded.vectors.dtype == np.float64
    np.testing.assert_array_equal(loaded.vectors, wv.vectors)
    assert loaded.get_vecattr("new york", "tag") == "city"
    assert loaded.get_vecattr("", "score") == 0.25


def test_mmap_shares_the_file_and_is_read_only(wv, tmp_path):
    path = tmp_path / "model.wv"
    wv.save(path)
    loaded = WordVectors.load(path, mmap="r")
    base = loaded.vectors
    while not isinstance(base, np.memmap) and base.base is not None:
        base = base.base
    assert isinstance(base, np.memmap) and str(base.filename) == str(_io.native_matrix_path(path))
    assert not loaded.vectors.flags.writeable
    with pytest.raises(ValueError, match="read-only.*mmap='c'"):
        loaded.add_vectors(["the"], np.ones((1, 6)), replace=True)
    with pytest.raises(ValueError, match="read-only"):
        loaded.unit_normalize_all()
    loaded.add_vectors(["new"], np.ones((1, 6)))  # appending makes a new in-memory matrix
    assert "new" in loaded
    copy_on_write = WordVectors.load(path, mmap="c")
    copy_on_write.unit_normalize_all()
    _assert_identical(WordVectors.load(path), wv)  # the file is unchanged


def _mapped_file(path, n_words, n_dims):
    """A native file of ``n_words`` random rows; returns its words and its matrix, writable."""
    words = [f"w{i}" for i in range(n_words)]
    rows = np.random.default_rng(1).standard_normal((n_words, n_dims)).astype(np.float32)
    WordVectors(words, rows).save(path)
    return words, np.load(_io.native_matrix_path(path), mmap_mode="r+")


@pytest.mark.parametrize("mmap", ["r", "c"])
def test_mmap_load_refuses_nan_rows_past_the_released_pages(tmp_path, mmap):
    # The check releases the pages of each block it has read (mode "r"): the rows after
    # them must still be read, and a NaN there named.
    path = tmp_path / "model.wv"
    words, matrix = _mapped_file(path, 4000, 300)
    matrix[3000, 7] = np.nan
    matrix[3500] = np.inf
    matrix.flush()
    del matrix
    with pytest.raises(ValueError, match="vector of 'w3000' and 1 more words has non-finite"):
        WordVectors.load(path, mmap=mmap)


def _rss_file_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssFile:"))


@pytest.mark.skipif(
    not (os.path.exists("/proc/self/status") and hasattr(mmap, "MADV_DONTNEED")),
    reason="reads the process's resident file pages from Linux's /proc/self/status",
)
def test_mmap_r_load_leaves_the_matrix_mapped_but_not_resident(tmp_path):
    path = tmp_path / "model.wv"
    words, matrix = _mapped_file(path, 16000, 512)  # 32 MiB
    del matrix
    before = _rss_file_kib()
    loaded = WordVectors.load(path, mmap="r")
    grown = _rss_file_kib() - before
    assert grown < 8 * 1024, f"the load left {grown} KiB of the 32 MiB matrix resident"
    base = loaded.vectors
    while not isinstance(base, np.memmap):
        base = base.base
    assert base.mode == "r" and str(base.filename) == str(_io.native_matrix_path(path))
    reread = np.load(_io.native_matrix_path(path))
    np.testing.assert_array_equal(loaded.vectors, reread)  # released pages read back whole
    assert loaded.most_similar("w5", topn=1)[0][0] in words


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(
        st.text(
            st.characters(blacklist_categories=("Cs",), min_codepoint=0x21),
            min_size=1,
            max_size=8,
        ),
        min_size=0,
        max_size=6,
        unique=True,
    ),
    data=st.data(),
)
def test_every_format_round_trips_any_float32_exactly(tmp_path, words, data):
    vectors = data.draw(
        arrays(np.float32, (len(words), 3), elements=st.floats(width=32, allow_nan=False))
    )
    vectors[~np.isfinite(vectors)] = 0.0
    wv = WordVectors(words, vectors)
    for name, save, load in (
        ("t.w2v", lambda p: wv.save_word2vec_format(p), WordVectors.load_word2vec_format),
        (
            "b.w2v",
            lambda p: wv.save_word2vec_format(p, binary=True),
            lambda p: WordVectors.load_word2vec_format(p, binary=True),
        ),
        ("n.wv", wv.save, WordVectors.load),
    ):
        save(tmp_path / name)
        _assert_identical(load(tmp_path / name), wv)


def test_text_values_are_shortest_exact_forms(tmp_path):
    values = np.array([[0.1, 1e-45, 3.4028235e38, -0.0, 1.0 / 3.0]], dtype=np.float32)
    WordVectors(["w"], values).save_word2vec_format(tmp_path / "v.txt")
    line = (tmp_path / "v.txt").read_text().splitlines()[1]
    assert line == "w 0.1 1e-45 3.4028235e+38 -0.0 0.33333334"


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_datatype(wv, tmp_path, dtype):
    wv.save_word2vec_format(tmp_path / "v.bin", binary=True)
    loaded = WordVectors.load_word2vec_format(tmp_path / "v.bin", binary=True, datatype=dtype)
    assert loaded.vectors.dtype == dtype
    np.testing.assert_array_equal(loaded.vectors, wv.vectors.astype(dtype))


def test_empty_vectors_round_trip(tmp_path):
    empty = WordVectors([], np.zeros((0, 4)))
    for binary in (False, True):
        empty.save_word2vec_format(tmp_path / "e.w2v", binary=binary)
        assert (tmp_path / "e.w2v").read_bytes() == b"0 4\n"
        loaded = WordVectors.load_word2vec_format(tmp_path / "e.w2v", binary=binary)
        assert len(loaded) == 0 and loaded.vector_size == 4


@pytest.mark.parametrize("binary", [False, True])
def test_limit_reads_the_first_vectors(wv, tmp_path, binary):
    path = tmp_path / "v.w2v"
    wv.save_word2vec_format(path, binary=binary)
    loaded = WordVectors.load_word2vec_format(path, binary=binary, limit=3)
    assert loaded.words == WORDS[:3]
    np.testing.assert_array_equal(loaded.vectors, wv.vectors[:3])
    assert len(WordVectors.load_word2vec_format(path, binary=binary, limit=100)) == 8
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="limit must be None or an int >= 1"):
            WordVectors.load_word2vec_format(path, binary=binary, limit=bad)


@pytest.mark.parametrize("binary", [False, True])
def test_limit_reads_what_gensim_reads(wv, tmp_path, binary):
    path = tmp_path / "v.w2v"
    wv.save_word2vec_format(path, binary=binary)
    kv = _keyedvectors().load_word2vec_format(str(path), binary=binary, limit=3)
    loaded = WordVectors.load_word2vec_format(path, binary=binary, limit=3)
    assert loaded.words == kv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, kv.vectors)


def test_chunk_and_batch_boundaries_do_not_matter(wv, tmp_path, monkeypatch):
    monkeypatch.setattr(_io, "_CHUNK_BYTES", 7)
    monkeypatch.setattr(_io, "_BATCH_LINES", 3)
    for binary in (False, True):
        wv.save_word2vec_format(tmp_path / "v.w2v", binary=binary)
        _assert_identical(WordVectors.load_word2vec_format(tmp_path / "v.w2v", binary=binary), wv)
    glove = tmp_path / "glove.txt"
    wv.save_word2vec_format(glove, write_header=False)
    _assert_identical(WordVectors.load_word2vec_format(glove, limit=None), wv)


@pytest.mark.parametrize("binary", [False, True])
def test_loading_needs_little_more_memory_than_the_matrix(tmp_path, binary):
    rng = np.random.default_rng(0)
    words = [f"word{i}é" for i in range(1500)]
    wv = WordVectors(words, rng.normal(size=(1500, 1000)))
    path = tmp_path / "big.w2v"
    wv.save_word2vec_format(path, binary=binary)
    tracemalloc.start()
    try:
        loaded = WordVectors.load_word2vec_format(path, binary=binary)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert loaded.vectors.shape == (1500, 1000)
    assert peak <= 1.2 * loaded.vectors.nbytes, peak / loaded.vectors.nbytes


# --- compatibility with gensim and other tools ----------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", [".txt", ".gz"])
def test_our_files_load_in_gensim(wv, tmp_path, binary, suffix):
    path = tmp_path / f"vectors{suffix}"
    wv.save_word2vec_format(path, binary=binary)
    kv = _keyedvectors().load_word2vec_format(str(path), binary=binary)
    assert kv.index_to_key == wv.words
    np.testing.assert_array_equal(kv.vectors, wv.vectors)


@pytest.mark.parametrize("binary", [False, True])
def test_gensim_files_load_here_and_bytes_match(wv, tmp_path, binary):
    kv = _keyedvectors()(wv.vector_size)
    kv.add_vectors(wv.words, wv.vectors)
    theirs, ours = tmp_path / "gensim.w2v", tmp_path / "ours.w2v"
    kv.save_word2vec_format(str(theirs), binary=binary)
    wv.save_word2vec_format(ours, binary=binary)
    assert ours.read_bytes() == theirs.read_bytes()
    loaded = resolve_init_vectors(str(theirs))  # format detected
    assert loaded.words == kv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, kv.vectors)


def test_glove_files_without_header_match_gensim(wv, tmp_path):
    path = tmp_path / "glove.txt"
    wv.save_word2vec_format(path, write_header=False)
    assert path.read_text(encoding="utf8").startswith("the ")
    kv = _keyedvectors().load_word2vec_format(str(path), no_header=True)
    loaded = WordVectors.load_word2vec_format(path, binary=None)
    assert loaded.words == kv.index_to_key
    np.testing.assert_array_equal(loaded.vectors, kv.vectors)
    assert WordVectors.load_word2vec_format(path, limit=2).words == WORDS[:2]


def test_c_tool_binary_records_and_glove_text(tmp_path):
    vectors = np.array([[0.5, -1.0], [2.0, 0.25]], dtype=np.float32)
    c_tool = tmp_path / "c.bin"
    # The original word2vec.c ends each binary record with a newline.
    c_tool.write_bytes(
        b"2 2\n" + b"".join(w + b" " + v.tobytes() + b"\n" for w, v in zip([b"a", b"b"], vectors))
    )
    loaded = resolve_init_vectors(c_tool)
    assert loaded.words == ["a", "b"] and np.array_equal(loaded.vectors, vectors)
    glove = tmp_path / "glove.txt"
    glove.write_text("the 0.5 -1.0\n\nof 2.0 0.25\n", encoding="utf8")
    loaded = resolve_init_vectors(glove)
    assert loaded.words == ["the", "of"] and np.array_equal(loaded.vectors, vectors)
    with gzip.open(tmp_path / "glove.txt.gz", "wt") as f:
        f.write("the 0.5 -1.0\nof 2.0 0.25\n")
    assert resolve_init_vectors(tmp_path / "glove.txt.gz").words == ["the", "of"]


def test_duplicate_words_in_a_file_keep_the_first(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("3 1\na 1\nb 2\na 3\n", encoding="utf8")
    with pytest.warns(UserWarning, match="1 words more than once"):
        loaded = WordVectors.load_word2vec_format(path)
    assert loaded.words == ["a", "b"] and loaded.vectors[:, 0].tolist() == [1.0, 2.0]


# --- hostile files --------------------------------------------------------------------


def _binary_file(words, vectors, header):
    body = b"".join(w.encode() + b" " + v.astype("<f4").tobytes() for w, v in zip(words, vectors))
    return header.encode() + body


@pytest.mark.parametrize("unicode_errors", ["strict", "replace"])
@pytest.mark.parametrize("n_dims", [5, 100])
@pytest.mark.parametrize(
    "header",
    [
        lambda n, d: f"{n} {d - 1}\n",
        lambda n, d: f"{n} {d + 1}\n",
        lambda n, d: f"{n} {d // 2}\n",
        lambda n, d: f"{n} {2 * d}\n",
        lambda n, d: f"{n - 1} {d}\n",
        lambda n, d: f"{n + 1} {d}\n",
    ],
)
def test_binary_header_disagreeing_with_records_is_an_error(
    tmp_path, header, n_dims, unicode_errors
):
    rng = np.random.default_rng(n_dims)
    vectors = rng.normal(size=(len(WORDS), n_dims))
    path = tmp_path / "bad.bin"
    path.write_bytes(_binary_file(WORDS, vectors, header(len(WORDS), n_dims)))
    with pytest.raises(
        ValueError, match="header|announces .* but ends after|does not start with a word"
    ):
        WordVectors.load_word2vec_format(path, binary=True, unicode_errors=unicode_errors)


@pytest.mark.parametrize("binary", [False, True])
def test_a_word_cut_inside_a_multibyte_character(tmp_path, binary):
    cut = "café".encode()[:-1]  # the C tool truncates words at a byte count
    vectors = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    path = tmp_path / "cut.w2v"
    if binary:
        path.write_bytes(
            b"2 2\n" + cut + b" " + vectors[0].tobytes() + b"dog " + vectors[1].tobytes()
        )
    else:
        path.write_bytes(b"2 2\n" + cut + b" 1.0 2.0\ndog 3.0 4.0\n")
    with pytest.raises(ValueError, match=r"(word|line) [12] of .* is not valid utf-8.*'replace'"):
        WordVectors.load_word2vec_format(path, binary=binary)
    for errors, word in (("replace", "caf\ufffd"), ("ignore", "caf")):
        loaded = WordVectors.load_word2vec_format(path, binary=binary, unicode_errors=errors)
        assert loaded.words == [word, "dog"] and np.array_equal(loaded.vectors, vectors)
    with pytest.raises(ValueError, match="unicode_errors must be one of"):
        WordVectors.load_word2vec_format(path, binary=binary, unicode_errors="backslash")


@pytest.mark.parametrize(
    ("content", "binary", "match"),
    [
        (b"2 3\na 1 2 3\nb 1 2\n", False, "line 3.*2 values for 'b', expected 3"),
        (b"3 2\na 1 2\nb 1 2\n", False, "announces 3 words.*holds 2"),
        (b"1 2\na 1 2\nb 3 4\n", False, "announces 1 words.*holds 2"),
        (b"1 2\na 1 x\n", False, "value 'x' for 'a', which is not a number"),
        (b"\xff\xfe\x00\x01 binary junk\n", False, "not valid utf-8.*binary=True"),
        (b"the\t0.1\t0.2\nof\t0.3\t0.4\n", False, "line 1 .* separates its fields with tabs"),
        (b"2 2\nthe\t0.1\t0.2\nof\t0.3\t0.4\n", False, "line 2 .* tabs"),
        (b"the 0.1\t0.2\n", False, r"value '0.1\\t0.2'.*not a number \(fields separated by"),
        (b"the\nof\nand\n", False, "line 1 .* holds 'the' and no values: a plain word list"),
        (b"3 50\nthe\nof\nand\n", False, "line 2 .* holds 'the' and no values"),
        (b" 0.1 0.2\n", False, "line 1 .* starts with a space: its word is empty"),
        (
            b"2 2\na " + np.ones(2, np.float32).tobytes(),
            True,
            "announces 2 words but ends after 1",
        ),
        (b"a 1 2\n", True, "header line"),
        (b"", False, "no word vectors"),
        (b"\n\n", False, "no word vectors"),
    ],
)
def test_damaged_files_raise_clear_errors(tmp_path, content, binary, match):
    path = tmp_path / "bad.w2v"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        WordVectors.load_word2vec_format(path, binary=binary)


def test_a_non_finite_value_names_its_word(tmp_path):
    path = tmp_path / "nan.txt"
    path.write_text("2 2\na 1 2\nb nan 1\n")
    with pytest.raises(ValueError, match="vector of 'b' has non-finite values"):
        WordVectors.load_word2vec_format(path)


def test_native_files_are_checked(wv, tmp_path):
    path = tmp_path / "model.wv"
    wv.save(path)
    np.save(_io.native_matrix_path(path), np.zeros((3, 6), dtype=np.float32))
    with pytest.raises(
        ValueError, match=r"shape \(3, 6\).*shape \(8, 6\).*do not belong together"
    ):
        WordVectors.load(path)
    wv.save_word2vec_format(tmp_path / "w2v.txt")
    with pytest.raises(ValueError, match="not a file written by WordVectors.save"):
        WordVectors.load(tmp_path / "w2v.txt")
    with pytest.raises(ValueError, match="mmap must be"):
        WordVectors.load(path, mmap="w+")


# --- writing --------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_a_failed_save_leaves_the_existing_file_intact(wv, tmp_path, binary, suffix):
    path = tmp_path / f"vectors.w2v{suffix}"
    wv.save_word2vec_format(path, binary=binary)
    before = path.read_bytes()
    bad = WordVectors(["ok", "bad\ud800word"], np.ones((2, 2)))
    with pytest.raises(
        ValueError, match=r"word 1 \('bad\\ud800word'\) cannot be written as UTF-8"
    ):
        bad.save_word2vec_format(path, binary=binary)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_atomic_write_replaces_only_on_success_and_keeps_permissions(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    with pytest.raises(RuntimeError, match="interrupted"), atomic_write(path) as out:
        out.write(b"partial")
        raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]
    with atomic_write(path) as out:
        out.write(b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(os.stat(path).st_mode) == 0o640


@pytest.mark.parametrize("word", ["new york", "tab\tword", "", "line\nbreak", "nul\x00"])
def test_words_the_format_cannot_hold_are_named(tmp_path, word):
    wv = WordVectors(["fine", word], np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"word 1 \(.*\) is empty or contains whitespace"):
        wv.save_word2vec_format(tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()


def test_binary_needs_its_header(wv, tmp_path):
    with pytest.raises(ValueError, match="write_header=True"):
        wv.save_word2vec_format(tmp_path / "x.bin", binary=True, write_header=False)
