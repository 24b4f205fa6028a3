"""fastText .bin files attacked: lying headers, other formats, damaged bytes, bad arguments.

A header is checked against the file's size before anything is allocated; a file that
is not a fastText model is named with what it looks like; every damaged file is a
ValueError naming the file.
"""

import io
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sknce.words import (
    SubwordVectors,
    WordVectors,
    load_facebook_model,
    load_facebook_vectors,
    save_facebook_model,
)

pytestmark = pytest.mark.attack("fastText .bin files")

# Offsets of the current layout's header fields (fasttext.cc, args.cc, dictionary.cc).
OFFSET = {
    "magic": 0, "version": 4, "dim": 8, "ws": 12, "epoch": 16, "min_count": 20, "neg": 24,
    "word_ngrams": 28, "loss": 32, "model": 36, "bucket": 40, "minn": 44, "maxn": 48,
    "lr_update_rate": 52, "t": 56, "size": 64, "nwords": 68, "nlabels": 72, "ntokens": 76,
    "prune": 84,
}  # fmt: skip
WORDS = ["walk", "talk", "naïve", "日本", "x"]


@pytest.fixture
def wv():
    rng = np.random.default_rng(0)
    return SubwordVectors(
        WORDS, rng.normal(size=(5, 4)), rng.normal(size=(30, 4)), counts=[5, 4, 3, 2, 1]
    )


@pytest.fixture
def good(wv, tmp_path):
    path = tmp_path / "good.bin"
    wv.save(path)
    return path


def _patched(path, field, value):
    data = bytearray(path.read_bytes())
    fmt = "@d" if field == "t" else "@q" if field in ("ntokens", "prune") else "@i"
    struct.pack_into(fmt, data, OFFSET[field], value)
    out = path.with_name(f"{field}.bin")
    out.write_bytes(bytes(data))
    return out


def _npy_bytes():
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(100))
    return buffer.getvalue()


def _load_named(path, match):
    with pytest.raises(ValueError, match=match) as error:
        load_facebook_vectors(path)
    assert str(path) in str(error.value)


# --- headers checked against the file size, before allocating ----------------------------


def _matrix_rows(path, rows):
    """The file with its input matrix announcing ``rows`` rows (and its header's bucket)."""
    data = bytearray(path.read_bytes())
    at = data.find(struct.pack("@2q", 35, 4))
    struct.pack_into("@q", data, at, rows)
    struct.pack_into("@i", data, OFFSET["bucket"], rows - 5)
    out = path.with_name("rows.bin")
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda p: _patched(_patched(p, "size", 2**31 - 1), "nwords", 2**31 - 1),
         "announces 2147483647 words, at least 21474836470 bytes"),
        (lambda p: _patched(p, "nwords", 2**31 - 1), "dictionary's header is damaged"),
        (lambda p: _patched(p, "size", -5), "dictionary's header is damaged"),
        (lambda p: _matrix_rows(p, 2**31 + 4), "announces a 2147483652 x 4 input matrix"),
        (lambda p: _patched(p, "bucket", 2**31 - 1), "input matrix is 35 x 4, but the header"),
        (lambda p: _patched(p, "dim", 2**20), "input matrix is 35 x 4, but the header"),
        (lambda p: _patched(p, "prune", 2**60), "pruned entries"),
        (lambda p: _patched(p, "ntokens", -1), "ntokens=-1"),
    ],
)  # fmt: skip
def test_a_lying_header_is_an_error_before_any_allocation(good, damage, match):
    path = damage(good)
    tracemalloc.start()
    try:
        _load_named(path, match)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # the 16 GiB a word count of 2**31 - 1 used to allocate


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("version", 13, "version 13; fastText and sknce read versions 11 to 12: it was writ"),
        ("version", 10, "version 10; .*: it is damaged"),
        ("dim", 0, r"header of this fastText \.bin model is damaged \(dim=0"),
        ("dim", -4, "dim=-4"),
        ("loss", 9, "loss=9"),
        ("model", 0, "model=0"),
        ("epoch", -1, "epoch=-1"),
        ("t", float("nan"), "t=nan"),
        ("minn", -3, "minn=-3"),
        ("bucket", -1, "bucket=-1"),
    ],
)
def test_a_damaged_header_field_is_named(good, field, value, match):
    _load_named(_patched(good, field, value), match)


def test_a_supervised_model_is_named(good):
    path = _patched(_patched(good, "nlabels", 2), "size", 7)
    _load_named(path, r"is a supervised fastText model \(2 labels\)")


# --- other formats passed as a .bin file -------------------------------------------------


@pytest.mark.parametrize(
    ("make", "found"),
    [
        (lambda wv, p: wv.save_facebook_vec(p), "a word2vec text file.*load_word2vec_format"),
        (lambda wv, p: wv.save_word2vec_format(p, binary=True), "a word2vec binary file"),
        (lambda wv, p: WordVectors(wv.index_to_key, wv.vectors).save(p), "a WordVectors.save"),
        (lambda wv, p: p.write_bytes(b""), "an empty file"),
        (lambda wv, p: p.write_bytes(b"\x01\x02"), "binary data"),
        (lambda wv, p: p.write_bytes(np.random.default_rng(1).bytes(4000)), "binary data"),
        (lambda wv, p: p.write_bytes(b"\x1f\x8b" + bytes(200)), "a gzip-compressed file"),
        (lambda wv, p: p.write_bytes(_npy_bytes()), r"a numpy \.npy array"),
        (lambda wv, p: p.write_text("hello\nworld\n" * 20), "a text file"),
    ],
)
def test_another_format_is_named_with_what_it_is(wv, tmp_path, make, found):
    path = tmp_path / "model.bin"
    make(wv, path)
    _load_named(path, rf"is not a fastText \.bin model \(.*\): it is {found}")


def test_a_damaged_magic_number_is_not_read_as_a_supervised_model(good):
    path = _patched(good, "magic", 12345)
    with pytest.raises(ValueError, match="is not a fastText .bin model") as error:
        load_facebook_vectors(path)
    assert "supervised" not in str(error.value)


# --- damaged bodies -----------------------------------------------------------------------


@pytest.mark.parametrize("cut", [70, 100, 130, 0.5, 0.9, -1])
def test_a_truncated_file_is_named(good, cut):
    data = good.read_bytes()
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    good.write_bytes(data[:end])
    _load_named(good, "truncated|not a fastText")


def test_data_after_the_output_matrix_is_an_error(good):
    good.write_bytes(good.read_bytes() + b"junk")
    _load_named(good, "output matrix is announced as 5 x 4 .* 84 bytes are left")


def test_a_word_without_its_end_is_named(good):
    data = bytearray(good.read_bytes())
    body = data[:92] + b"w" * 70000
    good.write_bytes(bytes(body) + bytes(data[92:]))
    _load_named(good, "longer than 65536 bytes")


def test_nan_rows_in_a_file_are_named(wv, tmp_path):
    rows = wv.vectors_ngrams.copy()
    path = tmp_path / "nan.bin"
    save_facebook_model(path, wv)
    data = bytearray(path.read_bytes())
    start = data.find(rows.tobytes())
    struct.pack_into("@f", data, start, float("nan"))
    path.write_bytes(bytes(data))
    _load_named(path, "n-gram row 0 of vectors_ngrams has non-finite values.*damaged")


def test_a_quantized_flag_is_named(good):
    data = bytearray(good.read_bytes())
    flag = data.find(struct.pack("@2q", 35, 4)) - 1
    data[flag] = 1
    good.write_bytes(bytes(data))
    _load_named(good, r"quantized fastText model \(\.ftz\)")


def test_a_minn_of_zero_reads_as_fasttext_does(good, wv):
    back = load_facebook_vectors(_patched(good, "minn", 0))
    assert back.min_n == 1
    same = SubwordVectors(WORDS, wv.vectors_vocab, wv.vectors_ngrams, min_n=1, max_n=wv.max_n)
    np.testing.assert_allclose(back["walking"], same["walking"])


def test_a_missing_file_and_a_directory_are_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_facebook_vectors(tmp_path / "none.bin")
    with pytest.raises(IsADirectoryError):
        load_facebook_vectors(tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_damage_loads_or_is_named(data):
    import tempfile
    from pathlib import Path

    rng = np.random.default_rng(0)
    wv = SubwordVectors(WORDS, rng.normal(size=(5, 4)), rng.normal(size=(30, 4)))
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "d.bin"
        wv.save(path)
        raw = bytearray(path.read_bytes())
        kind = data.draw(st.sampled_from(["truncate", "flip", "insert"]))
        at = data.draw(st.integers(0, len(raw) - 1))
        if kind == "truncate":
            raw = raw[:at]
        elif kind == "flip":
            raw[at] ^= data.draw(st.integers(1, 255))
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=12))
        path.write_bytes(bytes(raw))
        try:
            load_facebook_model(path)
        except ValueError as error:
            assert str(path) in str(error)


# --- the writer's arguments ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"args": {"loss": 9}}, ValueError, "loss=9"),
        ({"args": {"epoch": -1}}, ValueError, "epoch=-1"),
        ({"args": {"t": 2.0}}, ValueError, "t=2.0"),
        ({"args": {"model": 3}}, None, None),  # supervised flag without labels: written
        ({"args": {"dims": 4}}, ValueError, r"unknown \['dims'\]"),
        ({"output": np.zeros((4, 4))}, ValueError, r"output has shape \(4, 4\)"),
        ({"encoding": "latin-1"}, ValueError, "'日本' cannot be written in latin-1"),
        ({"ntokens": 10}, None, None),
    ],
)
def test_save_facebook_model_arguments(wv, tmp_path, options, error, match):
    path = tmp_path / "m.bin"
    if error is None:
        save_facebook_model(path, wv, **options)
        return
    with pytest.raises(error, match=match):
        save_facebook_model(path, wv, **options)
    assert not path.exists()


def test_a_word_holding_nul_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    wv = SubwordVectors(["a\x00b"], rng.normal(size=(1, 2)), rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="NUL character"):
        wv.save(tmp_path / "m.bin")
    assert list(tmp_path.iterdir()) == []


def test_saving_into_a_directory_or_a_missing_one_is_named(wv, tmp_path):
    (tmp_path / "dir.bin").mkdir()
    with pytest.raises(IsADirectoryError, match=r"could not write .*dir\.bin"):
        wv.save(tmp_path / "dir.bin")
    with pytest.raises(FileNotFoundError, match=r"could not write .*missing.*No such file"):
        wv.save(tmp_path / "missing" / "m.bin")
