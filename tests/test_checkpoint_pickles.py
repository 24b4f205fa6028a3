"""``Checkpoint(f_pickle=...)``: the pickled net is written like the checkpoint's other files.

skorch opens the ``f_pickle`` path itself: a full disk stopped the fit with a bare
``ENOSPC`` and left the pickle truncated, the previous one lost. sknce hands skorch a
file object of the epoch's transaction instead, so the pickle is verified (a whole
pickle, read back) and replaces the previous one together with ``params.pt`` and the
others, or not at all. Each case: a fault, the error, and the previous checkpoint intact.
"""

import errno
import io
import os
import pathlib
import pickle
import threading

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, Checkpoint, TrainEndCheckpoint

from sknce import ConditionalNCEClassifier, _files
from sknce._checkpoints import _whole_pickle

pytestmark = pytest.mark.attack("Checkpoint saves")

X = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
Y = np.arange(40) % 3
FILES = ["criterion.pt", "history.json", "net.pkl", "optimizer.pt", "params.pt"]


def _fit(dirname, *extra, f_pickle="net.pkl", random_state=0, **options):
    options = {"monitor": None, **options}
    checkpoint = Checkpoint(dirname=str(dirname), f_pickle=f_pickle, **options)
    clf = ConditionalNCEClassifier(
        hidden_layer_sizes=(4,), max_epochs=2, random_state=random_state,
        callbacks=[checkpoint, *extra],
    )  # fmt: skip
    return clf.fit(X, Y)


def _contents(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


class _Unpicklable(Callback):
    """A callback holding a lock: pickling the net fails half way."""

    def __init__(self):
        self.lock = threading.Lock()


class _FullDisk:
    """A file whose writes fail for lack of space (the rest is the real file's)."""

    def __init__(self, raw):
        self._raw = raw

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self._raw, name)


def _full_disk_for(suffix):
    """``_Stage.stream`` whose temporary files of targets ending in ``suffix`` run out of space."""
    stream = _files._Stage.stream

    def full(self, target, compress, verify=None):
        made = stream(self, target, compress, verify)
        if target.name.endswith(suffix):
            checked = self.open[-1][2]
            checked._raw = _FullDisk(checked._raw)
        return made

    return full


def test_the_pickle_is_the_net_and_keeps_the_users_f_pickle(tmp_path):
    clf = _fit(tmp_path)
    net = _load(tmp_path / "net.pkl")
    assert sorted(p.name for p in tmp_path.iterdir()) == FILES  # no temporary left
    assert len(net.history) == 2
    for name, value in clf.net_.module_.state_dict().items():
        assert torch.equal(net.module_.state_dict()[name], value)
    checkpoint = dict(net.callbacks_)["Checkpoint"]
    assert checkpoint.f_pickle == "net.pkl"  # the user's, not the file object of the save
    assert dict(clf.net_.callbacks_)["Checkpoint"].f_pickle == "net.pkl"


def test_a_full_disk_while_pickling_stops_the_fit_and_keeps_the_previous_checkpoint(
    tmp_path, monkeypatch
):
    _fit(tmp_path)
    before = _contents(tmp_path)
    monkeypatch.setattr(_files._Stage, "stream", _full_disk_for("net.pkl"))
    message = r"a checkpoint could not be saved: could not write .*net\.pkl: No space left"
    with pytest.raises(OSError, match=message + ".*The fit stops") as error:
        _fit(tmp_path, random_state=1)
    assert error.value.errno == errno.ENOSPC
    assert _contents(tmp_path) == before  # the previous pickle and its pair, whole


def test_a_net_that_cannot_be_pickled_keeps_the_previous_checkpoint(tmp_path):
    _fit(tmp_path)
    before = _contents(tmp_path)
    with pytest.raises(TypeError, match="pickle") as error:
        _fit(tmp_path, _Unpicklable(), random_state=1)
    notes = " ".join(getattr(error.value, "__notes__", []))
    assert "net.pkl: it does not hold a whole pickle" in notes
    assert _contents(tmp_path) == before  # params.pt of the failed epoch not switched in


def test_a_first_pickle_that_fails_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_files._Stage, "stream", _full_disk_for("net.pkl"))
    with pytest.raises(OSError, match=r"net\.pkl: No space left on device; no file was"):
        _fit(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_no_pickle_when_the_monitor_says_no(tmp_path):
    _fit(tmp_path, monitor=lambda net: False)
    assert list(tmp_path.iterdir()) == []


def test_a_formatted_name_gives_a_pickle_per_epoch(tmp_path):
    _fit(tmp_path, f_pickle="net-{last_epoch[epoch]}.pkl")
    assert {"net-1.pkl", "net-2.pkl"} <= {p.name for p in tmp_path.iterdir()}
    assert len(_load(tmp_path / "net-1.pkl").history) == 1
    assert dict(_load(tmp_path / "net-2.pkl").callbacks_)["Checkpoint"].f_pickle == (
        "net-{last_epoch[epoch]}.pkl"
    )


ONLY_PICKLE = {"f_params": None, "f_optimizer": None, "f_criterion": None, "f_history": None}


def test_a_path_object_is_written_where_skorch_writes_it(tmp_path):
    target = tmp_path / "net.pkl"  # skorch takes a Path as it is, without a dirname
    _fit("", f_pickle=target, **ONLY_PICKLE)
    assert isinstance(dict(_load(target).callbacks_)["Checkpoint"].f_pickle, pathlib.Path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.pkl"]


class _Kept(io.BytesIO):
    """A buffer whose bytes stay readable after skorch closes it."""

    def close(self):
        self.kept = self.getvalue()


def test_a_file_object_is_left_to_skorch():
    buffer = _Kept()
    _fit("", f_pickle=buffer, **ONLY_PICKLE)
    written = io.BytesIO(buffer.kept)  # the pickles of both epochs, one after the other
    assert [len(pickle.load(written).history) for _ in range(2)] == [1, 2]


class _Logged(Checkpoint):
    """A checkpoint that reads ``f_pickle`` as a path in its own ``save_model``."""

    def save_model(self, net):
        super().save_model(net)
        self.logged = os.path.getsize(self._format_target(net, self.f_pickle, -1))


def test_a_subclass_with_its_own_save_model_keeps_its_path(tmp_path):
    checkpoint = _Logged(dirname=str(tmp_path), monitor=None, f_pickle="net.pkl")
    ConditionalNCEClassifier(hidden_layer_sizes=(4,), max_epochs=1, random_state=0,
                             callbacks=[checkpoint]).fit(X, Y)  # fmt: skip
    assert checkpoint.logged == (tmp_path / "net.pkl").stat().st_size > 0


def test_a_train_end_checkpoint_pickles_through_the_same_path(tmp_path, monkeypatch):
    end = TrainEndCheckpoint(dirname=str(tmp_path), f_pickle="end.pkl")
    clf = ConditionalNCEClassifier(hidden_layer_sizes=(4,), max_epochs=2, random_state=0,
                                   callbacks=[end]).fit(X, Y)  # fmt: skip
    before = _contents(tmp_path)
    assert len(_load(tmp_path / "train_end_end.pkl").history) == 2
    monkeypatch.setattr(_files._Stage, "stream", _full_disk_for(".pkl"))
    with pytest.raises(OSError, match=r"train_end_end\.pkl: No space left on device"):
        clf.set_params(random_state=1).fit(X, Y)
    assert _contents(tmp_path) == before


@pytest.mark.parametrize(
    "damage",
    [b"", b"\x80\x04", b"not a pickle", "cut", "trailing"],
    ids=["empty", "header-only", "text", "cut", "trailing"],
)
def test_a_pickle_that_is_not_whole_is_refused(tmp_path, damage):
    whole = pickle.dumps({"weights": list(range(1000))}, protocol=4)
    data = {"cut": whole[:-10], "trailing": whole + b"x"}.get(damage, damage)
    path = tmp_path / "p.pkl"
    path.write_bytes(data)
    with pytest.raises(OSError, match="does not hold a whole pickle"):
        _whole_pickle(path)
    path.write_bytes(whole)
    _whole_pickle(path)
