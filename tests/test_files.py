"""The one write path of sknce's files (sknce._files): verified, atomic, and cleaned up after.

Faults are simulated here (a failing write, a file system that loses bytes, the
temporaries and journals a killed save leaves); tests/test_files_full_disk.py fills a
real file system and tests/test_files_kills.py kills real saves.
"""

import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sknce import _files
from sknce._files import (
    atomic_write,
    describe_file,
    recover,
    remove_stale,
    replace_together,
    staged_files,
)

pytestmark = pytest.mark.attack("Writing files: the one write path")


@pytest.fixture
def dead_pid():
    """The id of a process of this host that has ended."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    return int(child.stdout)


def _temp(directory, target, pid, host=_files._HOST, kind="tmp"):
    path = directory / f".{target}.{host}-{pid}-0123abcd.{kind}"
    path.write_bytes(b"half a save")
    return path


def _listing(directory):
    return sorted(p.name for p in directory.iterdir())


# --- atomic_write ----------------------------------------------------------------------


def test_a_verified_write_replaces_the_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with atomic_write(path) as out:
        out.write(b"new")
        out.write(memoryview(np.arange(3, dtype=np.int32)))
    assert path.read_bytes() == b"new" + np.arange(3, dtype=np.int32).tobytes()
    assert _listing(tmp_path) == ["f.bin"]


def test_a_writer_closing_the_stream_is_harmless(tmp_path):
    path = tmp_path / "f.json"
    with atomic_write(path) as out:
        out.write(b"[1]")
        out.close()  # skorch's history closes the file it is given
    assert path.read_bytes() == b"[1]"


def test_a_failing_write_names_the_file_and_the_cause(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def no_space(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_files._Checked, "write", no_space)
    message = r"could not write .*f\.bin: No space left on device; the previous f\.bin is unch"
    with pytest.raises(OSError, match=message) as error, atomic_write(path) as out:
        out.write(b"new")
    assert error.value.errno == errno.ENOSPC
    assert path.read_bytes() == b"old" and _listing(tmp_path) == ["f.bin"]


def test_a_failed_first_write_says_no_file_was_written(tmp_path, monkeypatch):
    monkeypatch.setattr(
        _files._Checked, "write", lambda self, data: (_ for _ in ()).throw(OSError(errno.EIO, "x"))
    )
    with pytest.raises(OSError, match="no file was written") as error:  # noqa: SIM117
        with atomic_write(tmp_path / "f.bin") as out:
            out.write(b"new")
    assert error.value.errno == errno.EIO and _listing(tmp_path) == []


def test_bytes_lost_by_the_file_system_are_caught_before_the_rename(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    fsync = os.fsync

    def lossy_fsync(fd):
        fsync(fd)
        os.ftruncate(fd, 2)  # what a file system that failed to write would hold

    monkeypatch.setattr(_files.os, "fsync", lossy_fsync)
    with pytest.raises(OSError, match=r"f\.bin: the file read back \(2 bytes.*\) is not what"):  # noqa: SIM117
        with atomic_write(path) as out:
            out.write(b"new content")
    monkeypatch.undo()
    assert path.read_bytes() == b"old" and _listing(tmp_path) == ["f.bin"]


def test_an_exception_of_the_writer_passes_unchanged(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with pytest.raises(KeyError, match="writer"), atomic_write(path) as out:
        out.write(b"partial")
        raise KeyError("writer")
    assert path.read_bytes() == b"old" and _listing(tmp_path) == ["f.bin"]


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"could not write .*nowhere.*No such file"):  # noqa: SIM117
        with atomic_write(tmp_path / "nowhere" / "f.bin") as out:
            out.write(b"x")


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_compressed_targets_are_compressed_and_verified(tmp_path, suffix):
    import bz2
    import gzip

    path = tmp_path / f"f{suffix}"
    with atomic_write(path) as out:
        out.write(b"hello" * 100)
    module = gzip if suffix == ".gz" else bz2
    assert module.decompress(path.read_bytes()) == b"hello" * 100
    with atomic_write(path, compress=False) as out:
        out.write(b"raw")
    assert path.read_bytes() == b"raw"


# --- stale temporaries -----------------------------------------------------------------


def test_the_temporaries_of_dead_processes_are_removed_by_the_next_save(tmp_path, dead_pid):
    dead = _temp(tmp_path, "f.bin", dead_pid)
    dead_backup = _temp(tmp_path, "f.bin", dead_pid, kind="bak")
    companion = _temp(tmp_path, "f.bin.data", dead_pid)
    live = _temp(tmp_path, "f.bin", os.getpid())
    foreign = _temp(tmp_path, "f.bin", dead_pid, host="ffffffff")
    other_file = _temp(tmp_path, "g.bin", dead_pid)
    not_ours = tmp_path / ".f.bin.tmp"
    not_ours.write_bytes(b"a user's file")
    with atomic_write(tmp_path / "f.bin") as out:
        out.write(b"new")
    for path in (dead, dead_backup, companion):
        assert not path.exists()
    for path in (live, foreign, other_file, not_ours):
        assert path.exists()
    assert remove_stale(tmp_path) == [other_file]  # every name: what save_npz_chunks does


def test_a_stale_staging_directory_is_removed(tmp_path, dead_pid):
    stage = tmp_path / f".m.onnx.{_files._HOST}-{dead_pid}-0123abcd.tmp"
    stage.mkdir()
    (stage / "m.onnx").write_bytes(b"half")
    recover(tmp_path / "m.onnx")
    assert _listing(tmp_path) == []


# --- replace_together and its journal --------------------------------------------------


def _journal(directory, primary, pid, moves, kind="journal"):
    record = {"format": _files._JOURNAL_FORMAT, "host": _files._HOST, "pid": pid,
              "moves": [[str(p) if p else None for p in move] for move in moves]}  # fmt: skip
    path = directory / f".{primary}.sknce-{kind}"
    path.write_text(json.dumps(record))
    return path


def test_a_switch_killed_between_its_renames_is_finished_by_the_next_load(tmp_path, dead_pid):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"new a")  # renamed before the kill
    b.write_bytes(b"old b")
    tmp_b = _temp(tmp_path, "b", dead_pid)
    tmp_b.write_bytes(b"new b")
    journal = _journal(tmp_path, "a", dead_pid, [(_temp(tmp_path, "a", dead_pid), a), (tmp_b, b)])
    (tmp_path / f".a.{_files._HOST}-{dead_pid}-0123abcd.tmp").unlink()  # a's rename was done
    recover(a, b)
    assert a.read_bytes() == b"new a" and b.read_bytes() == b"new b"
    assert not journal.exists() and _listing(tmp_path) == ["a", "b"]


@pytest.mark.parametrize("done", ["b", "b and a"])
def test_a_rollback_killed_half_way_is_finished_by_the_next_load(tmp_path, dead_pid, done):
    # a and b were renamed (a was new, b replaced "old b"), then c's rename failed; the
    # rollback had put back b (and removed a) when the process was killed.
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    b.write_bytes(b"old b")
    c.write_bytes(b"old c")
    if done == "b":
        a.write_bytes(b"new a")
    tmp_c = _temp(tmp_path, "c", dead_pid)
    backup_c = _temp(tmp_path, "c", dead_pid, kind="bak")
    tmp_a, tmp_b = tmp_path / ".a.x.tmp", tmp_path / ".b.x.tmp"  # renamed: gone
    backup_b = tmp_path / f".b.{_files._HOST}-{dead_pid}-0123abcd.bak"  # used: gone
    moves = [(tmp_a, a, None), (tmp_b, b, backup_b), (tmp_c, c, backup_c)]
    journal = _journal(tmp_path, "a", dead_pid, moves, kind="rollback")
    recover(a, b, c)
    assert not a.exists() and b.read_bytes() == b"old b" and c.read_bytes() == b"old c"
    assert not journal.exists() and _listing(tmp_path) == ["b", "c"]


def test_a_rollback_journal_undoes_what_a_forward_journal_would_finish(tmp_path, dead_pid):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"new a")
    b.write_bytes(b"old b")
    backup_a = tmp_path / f".a.{_files._HOST}-{dead_pid}-0123abcd.bak"
    backup_a.write_bytes(b"old a")
    tmp_b = _temp(tmp_path, "b", dead_pid)
    moves = [(tmp_path / ".a.gone.tmp", a, backup_a), (tmp_b, b, None)]
    _journal(tmp_path, "a", dead_pid, moves, kind="rollback")
    recover(a, b)
    assert (a.read_bytes(), b.read_bytes()) == (b"old a", b"old b")
    _journal(tmp_path, "a", dead_pid, [(_temp(tmp_path, "b", dead_pid), b, None)])
    recover(a, b)  # a forward journal: the rename not done is done
    assert b.read_bytes() == b"half a save" and _listing(tmp_path) == ["a", "b"]


def test_the_journal_of_a_running_save_is_left_alone(tmp_path):
    tmp_b = _temp(tmp_path, "b", os.getpid())
    journal = _journal(tmp_path, "a", os.getpid(), [(tmp_b, tmp_path / "b")])
    recover(tmp_path / "a", tmp_path / "b")
    assert journal.exists() and tmp_b.exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"format": "other"}', b"[1, 2]"])
def test_a_damaged_journal_is_dropped(tmp_path, content):
    journal = tmp_path / ".a.sknce-journal"
    journal.write_bytes(content)
    (tmp_path / "a").write_bytes(b"a")
    recover(tmp_path / "a")
    assert _listing(tmp_path) == ["a"]


def test_files_replaced_together_in_two_directories(tmp_path):
    (tmp_path / "d").mkdir()
    paths = [tmp_path / "v.txt", tmp_path / "d" / "v.vocab"]
    with replace_together(paths) as (first, second):
        first.write(b"1")
        second.write(b"2")
    assert [p.read_bytes() for p in paths] == [b"1", b"2"]
    assert _listing(tmp_path) == ["d", "v.txt"] and _listing(tmp_path / "d") == ["v.vocab"]


# The calls of os.replace: the journal, a, then b (failing); then the journal's rename to
# the rollback journal, which fails too in the second case (the rollback runs all the same).
@pytest.mark.parametrize("failing", [(3,), (3, 4)], ids=["rename", "rename-and-journal"])
def test_a_failed_rename_puts_every_file_back(tmp_path, monkeypatch, failing):
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        path.write_bytes(b"old")
    replace, calls = os.replace, []

    def fail(src, dst):
        calls.append(dst)
        if len(calls) in failing:
            raise OSError(errno.EIO, "Input/output error")
        return replace(src, dst)

    monkeypatch.setattr(_files.os, "replace", fail)
    with pytest.raises(OSError, match=r"could not write .*a: Input/output error"):  # noqa: SIM117
        with replace_together(paths) as streams:
            for stream in streams:
                stream.write(b"new")
    monkeypatch.undo()
    assert str(calls[3]).endswith(".a.sknce-rollback")
    assert [p.read_bytes() for p in paths] == [b"old", b"old"]
    assert _listing(tmp_path) == ["a", "b"]


# --- staged_files ----------------------------------------------------------------------


def test_staged_files_move_the_main_file_and_its_companions(tmp_path):
    with staged_files(tmp_path / "m.onnx") as staged:
        staged.write_bytes(b"model")
        staged.with_name("m.onnx.data").write_bytes(b"weights")
    assert (tmp_path / "m.onnx").read_bytes() == b"model"
    assert _listing(tmp_path) == ["m.onnx", "m.onnx.data"]


@pytest.mark.parametrize("write", [lambda p: None, lambda p: p.write_bytes(b"")])
def test_a_writer_that_leaves_no_file_is_an_error(tmp_path, write):
    (tmp_path / "m.onnx").write_bytes(b"old")
    with pytest.raises(OSError, match=r"could not write .*m\.onnx: the writer left it empty"):  # noqa: SIM117
        with staged_files(tmp_path / "m.onnx") as staged:
            write(staged)
    assert (tmp_path / "m.onnx").read_bytes() == b"old" and _listing(tmp_path) == ["m.onnx"]


def test_a_failed_verification_is_named(tmp_path):
    def verify(path):
        raise OSError(errno.EIO, "the model does not parse")

    with pytest.raises(OSError, match=r"could not write .*m\.onnx: the model does not parse"):  # noqa: SIM117
        with staged_files(tmp_path / "m.onnx", verify=verify) as staged:
            staged.write_bytes(b"junk")
    assert _listing(tmp_path) == []


# --- describe_file ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b"", "an empty file"),
        (b"\x1f\x8b\x08junk", "a gzip-compressed file"),
        (b"BZh91AY", "a bzip2-compressed file"),
        (b"PK\x03\x04....", "a zip archive"),
        (b"\x93NUMPY\x01\x00", "a numpy .npy array"),
        ((793712314).to_bytes(4, "little") + b"\x0c\x00\x00\x00", "a fastText .bin model"),
        (b"\x80\x04\x95", "a Python pickle"),
        (b'{"format": "sknce.WordVectors", "version": 2}', "sknce's native format"),
        (b"2 3\nthe 0.1 0.2 0.3\nof 1 2 3\n", "a word2vec text file (header '2 3')"),
        (b"2 3\nthe \x00\x00\x80\xbf\xff\xfe\x00\x00" * 4, "a word2vec binary file"),
        (b'{"a": 1}', "a JSON file"),
        (b"hello world\n", "a text file (first line 'hello world')"),
        (b"\xff\xfe\x00\x01\x02", "binary data starting with"),
        (b"abc\x00\x01def", "binary data starting with"),
    ],
)
def test_describe_file(tmp_path, content, found):
    path = tmp_path / "f"
    path.write_bytes(content)
    assert found in describe_file(path)


def test_describe_file_of_a_missing_file(tmp_path):
    assert describe_file(tmp_path / "none").startswith("unreadable")


def test_the_fasttext_magic_is_the_readers():
    from sknce.words._fasttext_format import MAGIC

    assert MAGIC.to_bytes(4, "little") == _files._FASTTEXT_MAGIC
