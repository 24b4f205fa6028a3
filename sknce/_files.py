"""Files written whole or not at all: the one write path of every file sknce saves.

Every writer (word vectors in the native, word2vec and fastText formats, chunk files,
checkpoints and the pickled net of a ``Checkpoint(f_pickle=...)``, ONNX models) saves
through :func:`atomic_write` (one file), :func:`replace_together` (files that belong
together, e.g. a vectors file and its vocabulary), a :class:`Transaction` (files from
separate calls) or :func:`staged_files` (a writer that takes a path, such as torch's
ONNX exporter). Each of them:

1. finishes, first, a switch that a killed save of the same target left half done
   (:func:`recover`), and removes the temporary files of killed saves;
2. writes each file under a temporary name beside its target,
   ``.<name>.<host>-<pid>-<token>.<n>.tmp``, so that the rename below stays in one
   file system and a later save can tell whose temporary it is. The save holds a lock
   file, ``.sknce.<host>-<pid>-<token>.lock``, open in each directory where it makes
   temporaries: on Windows, where no process can be probed safely, a lock that cannot
   be removed is a save still running;
3. flushes and ``fsync``\\ s it, then *verifies* it: its size and a CRC-32 read back
   must equal what was written (a file system that reports a failed write only at
   ``fsync`` or ``close``, or a short write, fails here, not at the next load), and the
   writer's own check, if it gives one (a pickle must end);
4. renames it over the target, which is atomic: a reader, or a process killed at any
   moment, sees the old file or the new one, never a mix. Files replaced together are
   renamed after a *journal* listing the renames (and a hard-linked backup of each
   target) is written; a save killed between two renames is finished by the next save
   or load (step 1). If a rename fails, the journal is renamed to a *rollback journal*
   before any target is put back, so a save killed during the rollback is rolled back
   by the next save or load: a pair is never left half old, half new;
5. on failure removes its temporary files and raises an ``OSError`` (same ``errno``)
   naming the target, the cause (``No space left on device``) and the fix; the old
   file is unchanged.

Ctrl-C is held back while the renames run. Temporary files of a process that still
runs, or of another host, are never touched. On Windows a rename over a file that
another program holds open for a moment is retried for about a second.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "Transaction",
    "atomic_write",
    "describe_file",
    "recover",
    "remove_stale",
    "replace_together",
    "staged_files",
]

PathType = str | os.PathLike

_HOST = hashlib.sha256(socket.gethostname().encode("utf8", "replace")).hexdigest()[:8]
_TEMP = re.compile(
    r"^\.(?P<target>.+)\.(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-(?P<token>[0-9a-f]{8})"
    r"(\.\d+)?\.(?P<kind>tmp|bak|lock)$"
)
#: The lock a save holds open in each directory it writes temporary files into.
_LOCK = ".sknce.{host}-{pid}-{token}.lock"
#: Windows: an open file can be neither removed nor renamed over. A process's liveness
#: is read from its lock (held open while it saves), and renames are retried a while
#: (a virus scanner or an indexer may hold a new file open for a moment).
_WINDOWS = os.name == "nt"
_RETRY_DELAYS = (0.01, 0.05, 0.1, 0.25, 0.5)
_JOURNAL_SUFFIX = ".sknce-journal"
_ROLLBACK_SUFFIX = ".sknce-rollback"
_JOURNAL_FORMAT = "sknce.replace_together"
_READ_BYTES = 1 << 20
#: What to do about a failed write, by errno.
_FIXES = {
    errno.ENOSPC: "Free space on that device, or save to another directory.",
    errno.EDQUOT: "Your disk quota is used up: free space, or save to another directory.",
    errno.EACCES: "Save to a directory you can write to.",
    errno.EPERM: "Save to a directory you can write to.",
    errno.EROFS: "The file system is read-only: save to another directory.",
    errno.EFBIG: "The file system cannot hold a file this large: save to another one.",
    errno.EMFILE: "Too many files are open: close some.",
    errno.ENFILE: "Too many files are open: close some.",
    errno.ENAMETOOLONG: "Give the file a shorter name.",
}
#: What to do about a failed write on Windows, where an open file cannot be replaced.
_WINDOWS_FIXES = {
    errno.EACCES: "Another program (an editor, a viewer, a virus scanner, a process that "
    "loaded the file) may hold it open: close it and save again, or save to a directory "
    "you can write to.",
}


# --- temporary names, their owners, stale temporaries ----------------------------------


def _alive(host: str, pid: int, token: str | None, directory: Path) -> bool:
    """Whether the process that named a temporary may still run (True when unknown).

    On POSIX systems the process is probed (signal 0). Windows has no safe probe
    (``os.kill`` there terminates), but there a file held open cannot be removed:
    the save's lock in ``directory`` is removed if its process ended (it is then
    stale), and the removal fails while the process runs and holds it.
    """
    if host != _HOST or pid == os.getpid():
        return True
    if _WINDOWS:
        if token is None:  # a save that took no lock (an older sknce): unknown
            return True
        try:
            os.unlink(directory / _LOCK.format(host=host, pid=pid, token=token))
        except FileNotFoundError:  # the lock is taken before the first temporary
            return False
        except OSError:  # held open: the process runs
            return True
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process
        return True
    return True


def _replace(source: PathType, target: PathType) -> None:
    """``os.replace``, retried a while on Windows where an open file cannot be replaced."""
    for delay in _RETRY_DELAYS if _WINDOWS else ():
        try:
            os.replace(source, target)
            return
        except PermissionError:
            time.sleep(delay)
    os.replace(source, target)


def remove_stale(directory: PathType, targets=None) -> list[Path]:
    """Remove the temporary files that killed saves left in ``directory``.

    A temporary file of a save (``.<name>.<host>-<pid>-<token>[.<n>].tmp`` or
    ``.bak``, a staging directory of that name, or the save's lock
    ``.sknce.<host>-<pid>-<token>.lock``) is stale when its process ran on this host
    and no longer runs. Others are left alone.

    Parameters
    ----------
    directory : str or path-like
    targets : collection of str, or None, default=None
        Only the temporaries of these file names and of their companions (names
        that extend one of them after a dot, such as ONNX's ``<name>.data``);
        ``None``: of any name.

    Returns
    -------
    list of Path
        What was removed.
    """
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    owners: dict[tuple[str, str, str], bool] = {}
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None:
            continue
        # A lock belongs to no file: a dead process's is removed by any clean-up.
        if match["kind"] != "lock" and not _belongs(match["target"], targets):
            continue
        owner = (match["host"], match["pid"], match["token"])
        if owner not in owners:
            owners[owner] = _alive(match["host"], int(match["pid"]), owner[2], Path(directory))
        if owners[owner]:
            continue
        path = Path(entry.path)
        if match["kind"] == "lock" and not os.path.lexists(path):  # removed by the probe
            removed.append(path)
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


def _belongs(name: str, targets) -> bool:
    """Whether a temporary of the file ``name`` is one of a save of ``targets``."""
    return targets is None or any(name == t or name.startswith(t + ".") for t in targets)


def _journal_path(primary: Path, suffix: str = _JOURNAL_SUFFIX) -> Path:
    return primary.with_name(f".{primary.name}{suffix}")


def recover(*paths: PathType) -> None:
    """Finish a killed :func:`replace_together` of ``paths``, and remove stale temporaries.

    Called by every save before it writes and by every load before it reads. If a
    save of these files was killed while it switched them (its journal remains and
    its process no longer runs), the switch is finished: the renames it had not done
    are done now, or, if it was rolling back after a failed rename (its journal was
    renamed to a rollback journal first), the files it had replaced get their
    previous content back. Either way the files are all of one save. Then the
    temporary files of killed saves of each path are removed (:func:`remove_stale`).
    Errors of the file system are ignored here (a read-only directory): the load
    that follows reports what it finds.

    Parameters
    ----------
    *paths : str or path-like
        The files of one save; the first holds the journal.
    """
    if not paths:
        return
    primary = Path(paths[0])
    journals = [_journal_path(primary, _ROLLBACK_SUFFIX), _journal_path(primary)]
    with contextlib.suppress(OSError):
        for journal in journals:
            record = _read_journal(journal)
            if record is None or _alive(
                record["host"], record["pid"], record["token"], journal.parent
            ):
                continue
            if journal.name.endswith(_ROLLBACK_SUFFIX):
                _roll_back(record["moves"])
            else:
                _roll_forward(record["moves"])
            journal.unlink()
            _sync_directory(journal.parent)
            break
    if any(os.path.lexists(journal) for journal in journals):
        return  # a save still running, or one not finished: its temporaries stay
    by_directory: dict[Path, set[str]] = {primary.parent: {j.name for j in journals}}
    for path in map(Path, paths):
        by_directory.setdefault(path.parent, set()).add(path.name)
    for directory, names in by_directory.items():
        remove_stale(directory, names)


def _roll_forward(moves) -> None:
    """Do the renames of a switch that are not done yet (their temporary file remains)."""
    for tmp, target, _ in moves:
        if os.path.lexists(tmp):
            _replace(tmp, target)
            _sync_directory(target.parent)


def _roll_back(moves) -> None:
    """Give each target that a switch replaced its previous content back (or remove it).

    A target was replaced when its temporary file is gone (a switch removes its
    temporaries only once the rollback is over). Each step can be run again: a
    rollback killed half way is finished by running it once more.
    """
    for tmp, target, backup in reversed(moves):
        if os.path.lexists(tmp):
            continue  # not renamed over its target: the target is as it was
        with contextlib.suppress(FileNotFoundError):
            if backup is None:  # the target did not exist before the switch
                os.unlink(target)
            elif os.path.lexists(backup):
                _replace(backup, target)
        _sync_directory(target.parent)


def _read_journal(journal: Path) -> dict | None:
    """The journal's record, or None if there is none; a damaged one is removed."""
    try:
        raw = journal.read_bytes()
    except FileNotFoundError:
        return None
    try:
        record = json.loads(raw.decode("utf8"))
        if record.get("format") != _JOURNAL_FORMAT:
            raise ValueError
        moves = []
        for move in record["moves"]:
            # [temporary, target, backup or null]; saves before backups were listed: 2
            tmp, target, backup = (*move, None) if len(move) == 2 else move
            moves.append((Path(tmp), Path(target), None if backup is None else Path(backup)))
        token = record.get("token")  # saves before locks were taken have none
        return {
            "host": str(record["host"]),
            "pid": int(record["pid"]),
            "token": None if token is None else str(token),
            "moves": moves,
        }
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        # Written whole by a rename, so only a hand edit damages it: nothing to finish.
        journal.unlink()
        return None


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the platform can)."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- errors ----------------------------------------------------------------------------


def _write_error(target: Path, exc: OSError, existed: bool) -> OSError:
    """An OSError naming the target, the cause and the fix.

    The same errno, so the same subclass (``PermissionError``, ...); an error that
    names its file already is returned as it is.
    """
    if getattr(exc, "_sknce_target", None) is not None:
        return exc
    number = exc.errno if exc.errno is not None else errno.EIO
    cause = (exc.strerror or os.strerror(number)) if exc.errno is not None else str(exc)
    state = f"the previous {target.name} is unchanged" if existed else "no file was written"
    fix = (_WINDOWS and _WINDOWS_FIXES.get(number)) or _FIXES.get(number, "")
    error = OSError(number, f"could not write {target}: {cause}; {state}. {fix}".rstrip())
    error._sknce_target = str(target)
    return error


@contextlib.contextmanager
def _named(target: Path, stage: _Stage | None = None) -> Iterator[None]:
    """A writer's OSError (e.g. no space left) as the error naming ``target``.

    A writer may turn the OSError of its stream into another exception (torch's
    zip writer raises a RuntimeError about positions): the stream's own error is
    raised then.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno is None:
            raise
        raise _write_error(target, exc, target.exists()) from exc
    except Exception as exc:
        failed = stage.failed_write() if stage is not None else None
        if failed is None:
            raise
        raise _write_error(failed[0], failed[1], failed[0].exists()) from exc


# --- the staged file -------------------------------------------------------------------


class _Checked(io.BufferedIOBase):
    """A write-only stream that counts its bytes and their CRC-32.

    Writers may close it (skorch's history closes its file): the underlying file
    stays open until the save verifies and closes it.
    """

    def __init__(self, raw) -> None:
        super().__init__()
        self._raw = raw
        self.size = 0
        self.crc = 0
        self.error: OSError | None = None

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("write to a closed file")
        view = memoryview(data).cast("B")
        try:
            self._raw.write(view)
        except OSError as exc:
            self.error = exc
            raise
        self.size += view.nbytes
        self.crc = zlib.crc32(view, self.crc)
        return view.nbytes

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        if not self.closed:
            self._raw.flush()


class _Stage:
    """The temporary files of one save, their verification and their switch."""

    def __init__(self, primary: Path) -> None:
        self.primary = primary
        self.moves: list[tuple[Path, Path]] = []
        self.open: list[tuple[Path, object, _Checked]] = []
        self.checks: dict[Path, object] = {}
        self.directory: Path | None = None
        # Every temporary file of the save carries its token, and the save holds its
        # lock (_LOCK) open in each directory where it makes them: a later save tells
        # by the lock, on Windows, whether the process that made them still runs.
        self.token = secrets.token_hex(4)
        self.count = 0
        self.locks: dict[str, tuple[Path, int]] = {}

    def temp_name(self, target: Path, kind: str = "tmp") -> Path:
        """A new name for a temporary file of this save beside ``target``."""
        self._lock(target)
        self.count += 1
        name = f".{target.name}.{_HOST}-{os.getpid()}-{self.token}.{self.count}.{kind}"
        return target.with_name(name)

    def _lock(self, target: Path) -> None:
        """Take the save's lock in ``target``'s directory, before its first temporary."""
        directory = os.path.abspath(target.parent)
        if directory in self.locks:
            return
        path = target.parent / _LOCK.format(host=_HOST, pid=os.getpid(), token=self.token)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # the same directory by another name: taken already
            return
        except OSError as exc:
            raise _write_error(target, exc, target.exists()) from exc
        self.locks[directory] = (path, fd)

    def release(self) -> None:
        """Close and remove the save's locks, once its temporary files are gone."""
        for path, fd in self.locks.values():
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
        self.locks = {}

    def stream(self, target: Path, compress: bool, verify=None):
        """A stream to a new temporary file for ``target``, and its checked stream.

        The first is a compressor for a ``.gz``/``.bz2`` target, else the second.
        ``verify(temporary_path)``, if given, checks the file's content once it is
        written and read back (an OSError if it is not right).
        """
        tmp = self.temp_name(target)
        try:
            # 0o666: the permissions the user's umask allows, as open() gives.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise _write_error(target, exc, target.exists()) from exc
        raw = open(fd, "wb")  # noqa: SIM115 - closed by close_and_verify or abort
        checked = _Checked(raw)
        self.moves.append((tmp, target))
        self.open.append((tmp, raw, checked))
        if verify is not None:
            self.checks[tmp] = verify
        if compress and target.suffix == ".gz":
            import gzip

            return gzip.GzipFile(filename=target.name, mode="wb", fileobj=checked), checked
        if compress and target.suffix == ".bz2":
            import bz2

            return bz2.BZ2File(checked, "wb"), checked
        return checked, checked

    def failed_write(self) -> tuple[Path, OSError] | None:
        """The target and error of the first write that failed, or None."""
        targets = dict(self.moves)
        for tmp, _, checked in self.open:
            if checked.error is not None:
                return targets[tmp], checked.error
        return None

    def staging_directory(self, target: Path) -> Path:
        """A new directory beside ``target``, for writers that take a path."""
        if self.directory is not None:
            raise ValueError("one staging directory per transaction")
        self.directory = self.temp_name(target)
        self.directory_target = target
        try:
            self.directory.mkdir()
        except OSError as exc:
            raise _write_error(target, exc, target.exists()) from exc
        return self.directory

    def close_and_verify(self) -> None:
        """fsync every temporary file, then check its size and CRC-32 on disk."""
        for tmp, raw, checked in self.open:
            target = dict(self.moves)[tmp]
            try:
                raw.flush()
                os.fsync(raw.fileno())
                raw.close()
                _verify(tmp, target, checked.size, checked.crc)
                if tmp in self.checks:
                    self.checks[tmp](tmp)
            except OSError as exc:
                raise _write_error(target, exc, target.exists()) from exc
        if self.directory is not None:
            for entry in sorted(self.directory.iterdir()):
                target = self.directory_target.with_name(entry.name)
                try:
                    with open(entry, "rb") as f:
                        os.fsync(f.fileno())
                except OSError as exc:
                    raise _write_error(target, exc, target.exists()) from exc
                self.moves.append((entry, target))

    def abort(self) -> None:
        """Remove every temporary file (after a failure)."""
        for _, raw, _ in self.open:
            with contextlib.suppress(OSError, ValueError):
                raw.close()
        for tmp, _ in self.moves:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.release()

    def switch(self) -> None:
        """Rename the temporary files over their targets: all of them, or none."""
        try:
            if len(self.moves) == 1 and self.directory is None:
                tmp, target = self.moves[0]
                try:
                    with _interrupts_deferred():
                        _keep_mode(tmp, target)
                        _replace(tmp, target)
                except BaseException:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                    raise
                _sync_directory(target.parent)
            else:
                _switch_with_journal(self.moves, _journal_path(self.primary), self)
        except OSError as exc:
            raise _write_error(self.primary, exc, True) from exc
        finally:
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
            self.release()


def _verify(tmp: Path, target: Path, size: int, crc: int) -> None:
    """Raise an OSError(EIO) unless ``tmp`` holds ``size`` bytes of CRC-32 ``crc``."""
    found, check = 0, 0
    with open(tmp, "rb") as f:
        while chunk := f.read(_READ_BYTES):
            found += len(chunk)
            check = zlib.crc32(chunk, check)
    if found != size or check != crc:
        raise OSError(
            errno.EIO,
            f"the file read back ({found} bytes, CRC-32 {check:08x}) is not what was "
            f"written ({size} bytes, CRC-32 {crc:08x})",
        )


def _keep_mode(tmp: Path, target: Path) -> None:
    """Give the new file the permissions of the one it replaces."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))


def _switch_with_journal(moves: list[tuple[Path, Path]], journal: Path, stage: _Stage) -> None:
    """Rename files over their targets behind a journal (see the module docstring).

    The journal lists each rename with the hard-linked backup of the target it
    replaces. If a rename fails, the journal is first renamed to a rollback journal,
    then the targets already replaced get their previous content back from their
    backups (those that did not exist are removed); the temporary files and backups
    are removed only after the journal. So a process killed at any point, even
    during the rollback, leaves a journal that :func:`recover` finishes in the same
    direction: every target old, or every target new.
    """
    plan = [(tmp, target, stage.temp_name(target, "bak") if target.exists() else None)
            for tmp, target in moves]  # fmt: skip
    record = {
        "format": _JOURNAL_FORMAT,
        "host": _HOST,
        "pid": os.getpid(),
        "token": stage.token,
        "moves": [[str(t), str(g), None if b is None else str(b)] for t, g, b in plan],
    }
    failure = None
    with _interrupts_deferred():
        _write_small(journal, json.dumps(record).encode("utf8"), stage.temp_name(journal))
        try:
            for tmp, target, backup in plan:
                if backup is not None:
                    _keep_mode(tmp, target)
                    with contextlib.suppress(OSError):  # no hard links: no rollback for it
                        os.link(target, backup)
                _replace(tmp, target)
        except BaseException as exc:
            failure = exc
            journal = _rolling_back(journal)
            with contextlib.suppress(OSError):
                _roll_back(plan)
        for directory in {target.parent for _, target in moves}:
            _sync_directory(directory)
        with contextlib.suppress(OSError):
            journal.unlink()
        for tmp, _, backup in plan:
            for leftover in (tmp, backup):
                if leftover is not None and os.path.lexists(leftover):
                    with contextlib.suppress(OSError):
                        os.unlink(leftover)
    if failure is not None:
        raise failure


def _rolling_back(journal: Path) -> Path:
    """Rename the journal to the rollback journal, so that :func:`recover` rolls back.

    If that rename fails too, the rollback runs all the same (unrecorded: only a
    kill during it would then leave the files mixed).
    """
    rollback = journal.with_name(journal.name[: -len(_JOURNAL_SUFFIX)] + _ROLLBACK_SUFFIX)
    try:
        _replace(journal, rollback)
    except OSError:
        return journal
    _sync_directory(journal.parent)
    return rollback


def _write_small(path: Path, data: bytes, tmp: Path) -> None:
    """Write a few bytes to ``path`` atomically (the journal), through ``tmp``."""
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _sync_directory(path.parent)


@contextlib.contextmanager
def _interrupts_deferred():
    """Hold back Ctrl-C (SIGINT) until the block ends, in the main thread.

    Elsewhere (no signal handler can be set) the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *args: received.append(args))
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
    if received and callable(previous):
        previous(*received[0])
    elif received and previous == signal.SIG_DFL:
        signal.raise_signal(signal.SIGINT)


class Transaction:
    """Files written one by one, then switched in together, or not at all.

    Each :meth:`stream` (or :meth:`staged`) block writes one file to its temporary
    file; a failure in any marks the transaction failed. :meth:`commit` verifies
    every file and replaces the targets together (one rename, or several behind a
    journal), or raises the first failure with every target unchanged. For writers
    whose files come from separate calls (skorch's ``Checkpoint`` saves its files one
    by one); :func:`atomic_write`, :func:`replace_together` and :func:`staged_files`
    are one-block transactions. As a context manager it commits when its block
    ends without error, and aborts otherwise.

    Parameters
    ----------
    clean : bool, default=True
        Before a file's first write, finish a killed save of it and remove the
        temporary files of killed saves (:func:`recover`).
    """

    def __init__(self, clean: bool = True) -> None:
        self.clean = clean
        self.error: BaseException | None = None
        self._stage: _Stage | None = None

    def _begin(self, path: Path) -> _Stage:
        if self.error is not None:
            raise self.error
        if self.clean:
            recover(path)
        if self._stage is None:
            self._stage = _Stage(path)
        return self._stage

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            self.error = exc
            raise

    @contextlib.contextmanager
    def stream(self, path: PathType, compress: bool = True, verify=None):
        """A binary stream to a temporary file that will replace ``path``.

        Parameters
        ----------
        path : str or path-like
        compress : bool, default=True
            Compress a ``.gz``/``.bz2`` target.
        verify : callable or None, default=None
            ``verify(written_path)`` raises an ``OSError`` if the file written, read
            back, is not what it should be (e.g. a pickle cut short); the commit then
            fails and no target is replaced.

        Yields
        ------
        binary file object
            Closing it early is harmless.
        """
        path = Path(path)
        with self._failing():
            stage = self._begin(path)
            stream, checked = stage.stream(path, compress, verify)
            with _named(path, stage):
                try:
                    yield stream
                except BaseException:
                    if stream is not checked:
                        with contextlib.suppress(Exception):
                            stream.close()
                    raise
                if stream is not checked:
                    stream.close()  # a compressor: writes its trailer

    @contextlib.contextmanager
    def staged(self, path: PathType, verify=None):
        """A path in a new temporary directory; its files will replace their namesakes.

        Parameters
        ----------
        path : str or path-like
            The main file; the writer must create the yielded path.
        verify : callable or None, default=None
            ``verify(staged_path)`` raises if the staged main file is not right.

        Yields
        ------
        pathlib.Path
        """
        path = Path(path)
        with self._failing():
            staged = self._begin(path).staging_directory(path) / path.name
            with _named(path):
                yield staged
                if not staged.is_file() or staged.stat().st_size == 0:
                    raise OSError(errno.EIO, "the writer left it empty or did not create it")
                if verify is not None:
                    verify(staged)

    def commit(self) -> None:
        """Verify the files and switch them in, or raise the first failure (none switched)."""
        stage, self._stage = self._stage, None
        if stage is None:
            if self.error is not None:
                raise self.error
            return
        try:
            if self.error is not None:
                raise self.error
            stage.close_and_verify()
        except BaseException:
            stage.abort()
            raise
        stage.switch()

    def abort(self) -> None:
        """Remove the temporary files; every target stays as it was."""
        stage, self._stage = self._stage, None
        if stage is not None:
            stage.abort()

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        """Commit when the block ends without error, else abort."""
        if kind is None:
            self.commit()
        else:
            self.abort()


# --- the three ways to save ------------------------------------------------------------


@contextlib.contextmanager
def atomic_write(path: PathType, *, compress: bool = True, clean: bool = True):
    """A binary stream to a temporary file that replaces ``path`` once verified.

    Parameters
    ----------
    path : str or path-like
        The file to write; its permissions are kept when it exists.
    compress : bool, default=True
        Compress a ``.gz``/``.bz2`` target.
    clean : bool, default=True
        First remove the temporary files of killed saves of ``path`` (a caller
        writing many files of one directory does it once, with :func:`remove_stale`).

    Yields
    ------
    binary file object
        Closing it early is harmless.

    Raises
    ------
    OSError
        If the file cannot be written or verified; the message names ``path``, the
        cause and the fix, and ``path`` is unchanged.
    """
    with Transaction(clean) as transaction, transaction.stream(path, compress) as stream:
        yield stream


@contextlib.contextmanager
def replace_together(paths: Sequence[PathType], *, compress: bool = True):
    """Binary streams to temporary files that replace all of ``paths`` together, or none.

    A save killed while the files are renamed is finished by the next
    :func:`recover` of ``paths[0]`` (every save and load of them calls it).

    Parameters
    ----------
    paths : sequence of str or path-like
        The files; the first is the one readers open (its directory holds the journal).
    compress : bool, default=True
        Compress ``.gz``/``.bz2`` targets.

    Yields
    ------
    list of binary file objects
        One per path, in order.

    Raises
    ------
    OSError
        As :func:`atomic_write`; every target is unchanged.
    """
    with Transaction() as transaction, contextlib.ExitStack() as stack:
        yield [stack.enter_context(transaction.stream(path, compress)) for path in paths]


@contextlib.contextmanager
def staged_files(path: PathType, verify=None):
    """A temporary directory beside ``path`` whose files replace their namesakes together.

    For writers that take a path (torch's ONNX exporter, which may add a ``.data``
    file beside the model): they write ``<directory>/<name of path>`` and any
    companion files; when the block ends each file is fsynced, ``verify`` is called,
    and every file replaces the file of its name beside ``path``.

    Parameters
    ----------
    path : str or path-like
        The main file; the writer must create its namesake in the directory.
    verify : callable or None, default=None
        ``verify(staged_path)`` raises if the staged main file is not what it
        should be (e.g. a model that does not parse).

    Yields
    ------
    pathlib.Path
        The staged main file's path, ``<directory>/<name of path>``.
    """
    with Transaction() as transaction, transaction.staged(path, verify) as staged:
        yield staged


# --- what a file is --------------------------------------------------------------------

#: fastText's magic number (``sknce.words._fasttext_format.MAGIC``).
_FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")
_SIGNATURES = (
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"PK\x03\x04", "a zip archive (a .npz chunk file or a PyTorch checkpoint?)"),
    (b"\x93NUMPY", "a numpy .npy array"),
    (_FASTTEXT_MAGIC, "a fastText .bin model"),
)


def describe_file(path: PathType) -> str:
    """What ``path`` looks like, from its first bytes, for error messages.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str
        E.g. ``"a word2vec text file (first line '3 4')"``, ``"an empty file"``.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not head:
        return "an empty file"
    for signature, what in _SIGNATURES:
        if head.startswith(signature):
            return what
    if head[:1] == b"\x80":
        return "a Python pickle (a gensim or torch save?)"
    if head[:1] == b"{" and b'"sknce.WordVectors"' in head[:256]:
        return "a WordVectors.save file (sknce's native format)"
    first, _, rest = head.partition(b"\n")
    try:
        line = first.decode("utf8").strip()
    except UnicodeDecodeError:
        return f"binary data starting with {head[:16]!r}"
    if re.fullmatch(r"\d+ \d+", line):
        try:
            rest.decode("utf8")
        except UnicodeDecodeError as exc:
            if exc.start < len(rest) - 4:  # not merely a character cut at the 4 KiB edge
                return f"a word2vec binary file (header {line!r})"
        return f"a word2vec text file (header {line!r})"
    if head[:1] == b"{":
        return "a JSON file"
    if any(c < 32 and c not in (9, 10, 13) for c in head):
        return f"binary data starting with {head[:16]!r}"
    return f"a text file (first line {line[:40]!r})"
