"""Kill a save at each of its points, in forked children; report what the files hold then.

Run by ``tests/test_files_kills.py`` as ``python tests/kill_points.py WRITER DIRECTORY``.
The process saves the writer's *old* content into DIRECTORY, then, for k = 1, 2, ...,
forks a child that saves the *new* content and kills itself (SIGKILL) at its k-th
file-system call (``os.open``, ``os.mkdir``, ``os.write``, ``os.fsync``, ``os.link``,
``os.replace``, ``os.rename``, ``os.unlink``, ``os.rmdir``, ``os.chmod``, and each write
to a save's stream). After each kill it lists what the kill left, loads the files as a
user would (each load first finishes or cleans up after a killed save) and records
whether they hold the old content, the new one, or something else, and which files
beyond the targets remain; then it saves the old content again. It stops at the first k
the save survives, and prints the records as one JSON list.

With ``--fail-rename`` (``python tests/kill_points.py WRITER DIRECTORY --fail-rename``)
the second rename of a new file over one of the writer's targets fails (an injected
``EIO``), so the save rolls back what it had switched; the kill points then run on
through the rollback (their points are named ``after the failed rename: ...``), and a
last record, of the child that was not killed, gives what the failed save left.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np

_CALLS = (
    "open",
    "mkdir",
    "write",
    "fsync",
    "link",
    "replace",
    "rename",
    "unlink",
    "rmdir",
    "chmod",
)


def _arm(k: int, report: int, fail_rename_of: tuple[str, ...] = ()) -> list:
    """Make the k-th file-system call of this process kill it, after naming the call.

    With ``fail_rename_of``, the second ``os.replace`` onto one of these file names
    raises an injected ``OSError`` instead. Returns a list that holds that error
    once it was raised.
    """
    count, renames, failed = [0], [0], []

    def point(name: str) -> None:
        count[0] += 1
        if count[0] == k:
            if failed:
                name = f"after the failed rename: {name}"
            os.write(report, name.encode())
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(name, function):
        def call(*args, **kwargs):
            point(name)
            return function(*args, **kwargs)

        return call

    for name in _CALLS:
        setattr(os, name, wrap(f"os.{name}", getattr(os, name)))
    replace = os.replace

    def failing_replace(src, dst, *args, **kwargs):
        if os.path.basename(dst) in fail_rename_of and not failed:
            renames[0] += 1
            if renames[0] == 2:
                point("os.replace")
                failed.append(OSError(errno.EIO, "injected failure of a rename"))
                raise failed[0]
        return replace(src, dst, *args, **kwargs)

    os.replace = failing_replace
    try:  # the stream every save of this tree writes through (absent before it)
        from sknce import _files
    except ImportError:
        return failed
    checked = getattr(_files, "_Checked", None)
    if checked is not None:
        checked.write = wrap("stream write", checked.write)
    return failed


# --- the writers: make old and new content, save, and say what the files hold -----------


@contextlib.contextmanager
def _nothing():
    yield


def _recover(*paths) -> None:
    """What a load of sknce does first (absent before sknce._files: nothing)."""
    try:
        from sknce._files import recover
    except ImportError:
        return
    recover(*paths)


def _equal(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a, b)


class Native:
    """``WordVectors.save``: a pair of files (words as JSON, the matrix as .npy)."""

    targets = ("m.wv", "m.wv.vectors.npy")

    def make(self):
        from sknce.words import WordVectors

        rng = np.random.default_rng(0)
        words = [f"w{i}" for i in range(50)]
        old = WordVectors(words, rng.normal(size=(50, 8)).astype(np.float32))
        new = WordVectors(words[::-1], rng.normal(size=(50, 8)).astype(np.float32))
        return old, new

    def save(self, wv, directory: Path) -> None:
        wv.save(directory / "m.wv")

    def load(self, directory: Path):
        from sknce.words import WordVectors

        return WordVectors.load(directory / "m.wv")

    def same(self, back, wv) -> bool:
        return back.index_to_key == wv.index_to_key and _equal(back.vectors, wv.vectors)

    def state(self, directory: Path, old, new) -> str:
        """``"old"`` or ``"new"``: whose content the files hold; else what is wrong."""
        try:
            back = self.load(directory)
        except (ValueError, OSError) as error:
            return f"error: {error}"
        found = [name for name, wv in (("old", old), ("new", new)) if self.same(back, wv)]
        return found[0] if found else "mixed"


class Word2VecWithVocab(Native):
    """``save_word2vec_format(fvocab=...)``: a vectors file and its vocabulary file."""

    targets = ("v.txt", "v.vocab")

    def make(self):
        from sknce.words import WordVectors

        old, new = super().make()
        old = WordVectors(old.index_to_key, old.vectors, counts=np.arange(100, 50, -1))
        new = WordVectors(new.index_to_key, new.vectors, counts=np.arange(200, 150, -1))
        return old, new

    def save(self, wv, directory: Path) -> None:
        wv.save_word2vec_format(directory / "v.txt", fvocab=directory / "v.vocab")

    def load(self, directory: Path):
        from sknce.words import WordVectors

        return WordVectors.load_word2vec_format(directory / "v.txt", fvocab=directory / "v.vocab")

    def same(self, back, wv) -> bool:
        return super().same(back, wv) and _equal(back.expandos["count"], wv.expandos["count"])


class Word2VecBinary(Native):
    """``save_word2vec_format(binary=True)``: one file."""

    targets = ("v.bin",)

    def save(self, wv, directory: Path) -> None:
        wv.save_word2vec_format(directory / "v.bin", binary=True)

    def load(self, directory: Path):
        from sknce.words import WordVectors

        return WordVectors.load_word2vec_format(directory / "v.bin", binary=True)


class FastText(Native):
    """``SubwordVectors.save``: a fastText ``.bin`` file."""

    targets = ("f.bin",)

    def make(self):
        from sknce.words import SubwordVectors

        rng = np.random.default_rng(0)
        words = [f"word{i}" for i in range(20)]
        return tuple(
            SubwordVectors(words, rng.normal(size=(20, 4)), rng.normal(size=(40, 4)))
            for _ in range(2)
        )

    def save(self, wv, directory: Path) -> None:
        wv.save(directory / "f.bin")

    def load(self, directory: Path):
        from sknce.words import SubwordVectors

        return SubwordVectors.load(directory / "f.bin")

    def same(self, back, wv) -> bool:
        return _equal(back.vectors_ngrams, wv.vectors_ngrams)


class Chunks:
    """``save_npz_chunks``: one file per chunk, each whole (old or new), never damaged."""

    targets = ("chunk-00000.npz", "chunk-00001.npz")

    def make(self):
        rng = np.random.default_rng(0)
        return tuple([rng.normal(size=(30, 5)) for _ in range(2)] for _ in range(2))

    def save(self, blocks, directory: Path) -> None:
        from sknce.datasets import save_npz_chunks

        save_npz_chunks(blocks, directory)

    def state(self, directory: Path, old, new) -> str:
        from sknce.datasets import NpzChunks

        _recover(*(directory / name for name in self.targets))  # as the next save does
        states = []
        try:
            chunks = NpzChunks([directory / name for name in self.targets])
            for i, block in enumerate(chunks):
                found = [n for n, b in (("old", old[i]), ("new", new[i])) if _equal(block, b)]
                states.append(found[0] if found else "damaged")
        except (ValueError, OSError) as error:
            return f"error: {error}"
        return "/".join(states)


class Checkpoint:
    """An epoch's checkpoint files, saved as skorch's ``Checkpoint`` saves them."""

    targets = ("params.pt", "history.json")

    def make(self):
        import torch

        from sknce import ConditionalNCEClassifier

        torch.set_num_threads(1)
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 4)).astype(np.float32), np.arange(40) % 3
        clf = ConditionalNCEClassifier(hidden_layer_sizes=(4,), max_epochs=1, random_state=0)
        self.net = clf.fit(X, y).net_
        old = {k: v.clone() for k, v in self.net.module_.state_dict().items()}
        new = {k: v + 1 for k, v in old.items()}
        return (old, 1), (new, 2)

    def _set(self, content) -> None:
        """Give the net the weights and the number of epochs of ``content``."""
        state, epochs = content
        self.net.module_.load_state_dict(state)
        del self.net.history[epochs:]
        while len(self.net.history) < epochs:
            self.net.history.new_epoch()
            self.net.history.new_batch()  # skorch's file names may quote the last batch
            self.net.history.record("train_loss", 1.0)

    def save(self, content, directory: Path) -> None:
        self._set(content)
        try:  # as skorch's Checkpoint saves within the net's notify("on_epoch_end")
            from sknce._checkpoints import checkpoint_saves
        except ImportError:  # before sknce._files: each file on its own
            checkpoint_saves = None
        with checkpoint_saves(self.net, "on_epoch_end") if checkpoint_saves else _nothing():
            self.net.save_params(f_params=str(directory / "params.pt"))
            self.net.save_params(f_history=str(directory / "history.json"))

    def state(self, directory: Path, old, new) -> str:
        import torch

        states = []
        for name in self.targets:
            _recover(directory / name)  # what CheckpointGuard does before LoadInitState loads
        try:
            params = torch.load(directory / "params.pt", weights_only=True)
            history = json.loads((directory / "history.json").read_text())
        except Exception as error:
            return f"error: {type(error).__name__}: {error}"
        for content, found in ((old, "old"), (new, "new")):
            if all(torch.equal(params[k], v) for k, v in content[0].items()):
                states.append(found)
        states += ["old" if len(history) == old[1] else "new" if len(history) == new[1] else "?"]
        return "/".join(states) if len(states) == 2 else "damaged"


class CheckpointPickle(Checkpoint):
    """``Checkpoint(f_pickle=...)``: the epoch's parameters and the pickled net, together."""

    targets = ("params.pt", "net.pkl")

    def make(self):
        from skorch.callbacks import Checkpoint as Callback

        contents = super().make()
        self.callback = Callback(monitor=None, f_params="params.pt", f_optimizer=None,
                                 f_criterion=None, f_history=None, f_pickle="net.pkl")  # fmt: skip
        self.net.callbacks_ = [*self.net.callbacks_, ("checkpoint", self.callback)]
        return contents

    def save(self, content, directory: Path) -> None:
        from sknce._checkpoints import checkpoint_saves

        self._set(content)
        self.callback.dirname = str(directory)
        with checkpoint_saves(self.net, "on_epoch_end"):  # as the net notifies its callbacks
            self.callback.save_model(self.net)

    def state(self, directory: Path, old, new) -> str:
        import pickle

        import torch

        for name in self.targets:
            _recover(directory / name)
        try:
            params = torch.load(directory / "params.pt", weights_only=True)
            with open(directory / "net.pkl", "rb") as f:
                pickled = pickle.load(f)
        except Exception as error:
            return f"error: {type(error).__name__}: {error}"
        states = []
        for found in (params, pickled.module_.state_dict()):
            for content, name in ((old, "old"), (new, "new")):
                if all(torch.equal(found[k], v) for k, v in content[0].items()):
                    states.append(name)
        if len(pickled.history) != (old if states[-1:] == ["old"] else new)[1]:
            states.append("history of another save")
        return "/".join(states) if len(states) == 2 else "damaged"


class Onnx:
    """``sknce.export.to_onnx``: the model file and its ``.data`` file, together.

    The exporter runs once, in this process; the children's ``torch.onnx.export``
    writes its files again (through ``os.open`` and ``os.write``), so that every
    point of the files' handling is reached without exporting at each.
    """

    targets = ("m.onnx", "m.onnx.data")

    def make(self):
        import torch

        from sknce import ConditionalNCEClassifier
        from sknce.export import to_onnx

        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 4)).astype(np.float32), np.arange(40) % 3
        clf = ConditionalNCEClassifier(hidden_layer_sizes=(4,), max_epochs=1, random_state=0)
        scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"onnx-{os.getpid()}"
        scratch.mkdir()
        to_onnx(clf.fit(X, y), scratch / "m.onnx")
        new = {name: (scratch / name).read_bytes() for name in self.targets}
        old = {name: data[::-1] for name, data in new.items()}
        self.new = new

        def export(program, args, f, **kwargs):
            for name, data in new.items():
                path = Path(f).with_name(name)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, data)
                os.close(fd)

        torch.onnx.export = export
        self.estimator = clf
        return old, new

    def save(self, content, directory: Path) -> None:
        from sknce.export import to_onnx

        if content is self.new:
            to_onnx(self.estimator, directory / "m.onnx")
            return
        for name, data in content.items():
            (directory / name).write_bytes(data)

    def state(self, directory: Path, old, new) -> str:
        _recover(directory / "m.onnx")  # what the next to_onnx of this path does first
        try:
            found = {name: (directory / name).read_bytes() for name in self.targets}
        except OSError as error:
            return f"error: {error}"
        return "old" if found == old else "new" if found == new else "mixed"


WRITERS = {
    "native": Native,
    "word2vec-vocab": Word2VecWithVocab,
    "word2vec-binary": Word2VecBinary,
    "fasttext": FastText,
    "chunks": Chunks,
    "checkpoint": Checkpoint,
    "checkpoint-pickle": CheckpointPickle,
    "onnx": Onnx,
}


def _save_in_child(writer, new, directory: Path, k: int, report: int, fail_rename: bool):
    """The child: save ``new``, dying at the k-th call; exit 0 if the save ends as meant."""
    failed = _arm(k, report, writer.targets if fail_rename else ())
    try:
        writer.save(new, directory)
    except OSError as error:
        # With an injected failure, the save must raise it (named) and nothing else.
        os._exit(0 if failed and error.errno == errno.EIO else 3)
    os._exit(3 if fail_rename else 0)


#: the writers of several files, whose switch can fail half way and roll back
PAIRS = ["native", "word2vec-vocab", "checkpoint", "checkpoint-pickle", "onnx"]


def main(writer_name: str, directory: str, fail_rename: bool = False, limit: int = 400):
    writer = WRITERS[writer_name]()
    directory = Path(directory)
    old, new = writer.make()
    writer.save(old, directory)
    records = []
    for k in range(1, limit + 1):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: saves the new content and dies at its k-th call
            os.close(read)
            _save_in_child(writer, new, directory, k, write, fail_rename)
        os.close(write)
        _, status = os.waitpid(pid, 0)
        point = os.read(read, 200).decode()
        os.close(read)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            if fail_rename:  # what the failed save left, unkilled: the old files, alone
                left = sorted(set(os.listdir(directory)) - set(writer.targets))
                state = writer.state(directory, old, new)
                records.append({"k": k, "point": "none: the save failed and rolled back",
                                "state": state, "left_by_kill": left,
                                "left_after_load": left})  # fmt: skip
            break  # the save ran through: k is past its last point
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        left_by_kill = sorted(set(os.listdir(directory)) - set(writer.targets))
        state = writer.state(directory, old, new) if killed else f"child failed: {status}"
        records.append(
            {
                "k": k,
                "point": point,
                "state": state,
                "left_by_kill": left_by_kill,
                "left_after_load": sorted(set(os.listdir(directory)) - set(writer.targets)),
            }
        )
        writer.save(old, directory)
    return records


if __name__ == "__main__":
    records = main(sys.argv[1], sys.argv[2], fail_rename="--fail-rename" in sys.argv[3:])
    print("\n" + json.dumps(records))  # the last line: exporters print their progress
