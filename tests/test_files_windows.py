"""The Windows branch of the one write path, simulated on this platform.

On Windows a file held open can be neither removed nor renamed over, and there is no
safe way to probe a process (``os.kill`` terminates it). So each save holds a lock file
open in every directory where it makes temporary files, and a later save or load tells
a killed save's temporaries (its lock can be removed) from a running save's (removing
its lock fails). These tests set ``sknce._files._WINDOWS`` and make ``os.unlink`` and
``os.replace`` fail as Windows does for files held open; they were not run on Windows.
"""

import errno
import json
import os
import subprocess
import sys

import pytest

from sknce import _files
from sknce._files import atomic_write, recover, replace_together

pytestmark = pytest.mark.attack("Temporaries and renames on Windows, simulated")


@pytest.fixture
def windows(monkeypatch):
    """The Windows branch; ``held`` lists the files another process holds open."""
    monkeypatch.setattr(_files, "_WINDOWS", True)
    monkeypatch.setattr(_files.time, "sleep", lambda seconds: None)
    held = set()
    unlink = os.unlink

    def unlink_unless_held(path, *args, **kwargs):
        if os.fspath(path) in held:
            raise PermissionError(errno.EACCES, "The process cannot access the file", path)
        return unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink_unless_held)
    return held


@pytest.fixture
def other_pid():
    """The id of another process of this host (ended: only its lock says if it runs)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    return int(child.stdout)


def _save_left(directory, pid, token="0123abcd", lock=True):
    """What a save of ``f.bin`` by process ``pid`` leaves: temporaries, its lock."""
    made = []
    for name in (f".f.bin.{_files._HOST}-{pid}-{token}.1.tmp",
                 f".f.bin.{_files._HOST}-{pid}-{token}.2.bak"):  # fmt: skip
        (directory / name).write_bytes(b"half a save")
        made.append(directory / name)
    if lock:
        made.append(directory / _files._LOCK.format(host=_files._HOST, pid=pid, token=token))
        made[-1].write_bytes(b"")
    return made


def _listing(directory):
    return sorted(p.name for p in directory.iterdir())


def test_a_save_holds_its_lock_while_its_temporaries_exist(tmp_path):
    with atomic_write(tmp_path / "f.bin") as out:
        out.write(b"new")
        (tmp,) = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        (lock,) = [p for p in tmp_path.iterdir() if p.name.endswith(".lock")]
        token = _files._TEMP.match(tmp.name)["token"]
        assert _files._TEMP.match(lock.name)["token"] == token
    assert _listing(tmp_path) == ["f.bin"]


def test_a_killed_saves_temporaries_are_removed_by_the_next_save(tmp_path, windows, other_pid):
    left = _save_left(tmp_path, other_pid)  # its lock is not held: the process ended
    with atomic_write(tmp_path / "f.bin") as out:
        out.write(b"new")
    assert [p for p in left if p.exists()] == []
    assert _listing(tmp_path) == ["f.bin"]


def test_a_running_saves_temporaries_are_left_alone(tmp_path, windows, other_pid):
    left = _save_left(tmp_path, other_pid)
    windows.add(os.fspath(left[-1]))  # the process holds its lock open
    with atomic_write(tmp_path / "f.bin") as out:
        out.write(b"new")
    recover(tmp_path / "f.bin")
    assert all(p.exists() for p in left)
    windows.clear()  # the process ended
    recover(tmp_path / "f.bin")
    assert _listing(tmp_path) == ["f.bin"]


def test_temporaries_without_their_lock_are_stale(tmp_path, windows, other_pid):
    # the lock is taken before the first temporary and removed after the last
    _save_left(tmp_path, other_pid, lock=False)
    recover(tmp_path / "f.bin")
    assert _listing(tmp_path) == []


def test_another_hosts_temporaries_are_left_alone(tmp_path, windows, other_pid):
    name = f".f.bin.00000000-{other_pid}-0123abcd.1.tmp"
    (tmp_path / name).write_bytes(b"half")
    recover(tmp_path / "f.bin")
    assert _listing(tmp_path) == [name]


@pytest.mark.parametrize("running", [False, True])
def test_a_journal_is_finished_only_once_its_process_ended(tmp_path, windows, other_pid, running):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"new a")
    b.write_bytes(b"old b")
    tmp_b = tmp_path / f".b.{_files._HOST}-{other_pid}-0123abcd.2.tmp"
    tmp_b.write_bytes(b"new b")
    lock = tmp_path / _files._LOCK.format(host=_files._HOST, pid=other_pid, token="0123abcd")
    lock.write_bytes(b"")
    if running:
        windows.add(os.fspath(lock))
    record = {"format": _files._JOURNAL_FORMAT, "host": _files._HOST, "pid": other_pid,
              "token": "0123abcd", "moves": [[str(tmp_path / ".a.gone.tmp"), str(a), None],
                                             [str(tmp_b), str(b), None]]}  # fmt: skip
    (tmp_path / ".a.sknce-journal").write_text(json.dumps(record))
    recover(a, b)
    if running:
        assert b.read_bytes() == b"old b" and tmp_b.exists() and lock.exists()
    else:
        assert b.read_bytes() == b"new b" and _listing(tmp_path) == ["a", "b"]


def _replace_failing(monkeypatch, failures, name):
    """``os.replace`` onto ``name`` fails ``failures`` times, as onto a file held open."""
    replace, count = os.replace, [0]

    def held_open(src, dst):
        if os.path.basename(dst) == name and count[0] < failures:
            count[0] += 1
            raise PermissionError(errno.EACCES, "Access is denied", os.fspath(dst))
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", held_open)
    return count


def test_a_rename_over_a_file_held_open_a_moment_is_retried(tmp_path, windows, monkeypatch):
    (tmp_path / "f.bin").write_bytes(b"old")
    count = _replace_failing(monkeypatch, 3, "f.bin")  # a virus scanner, for a moment
    with atomic_write(tmp_path / "f.bin") as out:
        out.write(b"new")
    assert count[0] == 3 and (tmp_path / "f.bin").read_bytes() == b"new"
    assert _listing(tmp_path) == ["f.bin"]


def test_a_file_held_open_is_named_and_kept(tmp_path, windows, monkeypatch):
    (tmp_path / "f.bin").write_bytes(b"old")
    _replace_failing(monkeypatch, 100, "f.bin")
    message = r"could not write .*f\.bin: Access is denied; the previous f\.bin is unchanged"
    with pytest.raises(PermissionError, match=message + r"\. Another program"):  # noqa: SIM117
        with atomic_write(tmp_path / "f.bin") as out:
            out.write(b"new")
    assert (tmp_path / "f.bin").read_bytes() == b"old"
    assert _listing(tmp_path) == ["f.bin"]  # no temporary, no lock


def test_a_pair_whose_second_file_is_held_open_is_put_back(tmp_path, windows, monkeypatch):
    paths = [tmp_path / "v.txt", tmp_path / "v.vocab"]
    for path in paths:
        path.write_bytes(b"old")
    _replace_failing(monkeypatch, 100, "v.vocab")
    with pytest.raises(PermissionError, match=r"could not write .*v\.txt"):  # noqa: SIM117
        with replace_together(paths) as streams:
            for stream in streams:
                stream.write(b"new")
    assert [p.read_bytes() for p in paths] == [b"old", b"old"]
    assert _listing(tmp_path) == ["v.txt", "v.vocab"]


def test_posix_probes_the_process_not_the_lock(tmp_path, other_pid):
    left = _save_left(tmp_path, os.getppid())  # a running process: the test's parent
    left += _save_left(tmp_path, other_pid, token="4567cdef")
    recover(tmp_path / "f.bin")
    assert [p.exists() for p in left] == [True] * 3 + [False] * 3
