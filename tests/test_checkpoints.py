"""skorch checkpoints in sknce fits: unwritable directories, damaged or foreign checkpoints.

A checkpoint that cannot be written, or that ``LoadInitState`` should not load (another
estimator's, another vocabulary's, a truncated file), is a ``ValueError`` naming the
file and the fix, raised before the first epoch.
"""

import tempfile
from collections import Counter

import numpy as np
import pytest
from skorch.callbacks import Callback, Checkpoint, LoadInitState, TrainEndCheckpoint

from sknce import ACEWord2Vec, ConditionalNCEClassifier, LatentClassNCEEmbedder
from sknce.words import _corpus

ACE = {
    "min_count": 1,
    "sample": 0,
    "max_epochs": 2,
    "n_components": 8,
    "early_stopping": False,
    "random_state": 0,
}


def _corpus_of(letters, seed=0):
    rng = np.random.default_rng(seed)
    return [list(rng.choice(list(letters), size=20)) for _ in range(30)]


A = _corpus_of("abcdefgh")
B = _corpus_of("stuvwxyz")  # another vocabulary of the same size


class _Epochs(Callback):
    """Counts the epochs that began (none, when a check fails before training)."""

    def __init__(self):
        self.begun = 0

    def on_epoch_begin(self, net, **kwargs):
        self.begun += 1


def _resume(dirname, *extra):
    checkpoint = Checkpoint(dirname=str(dirname), monitor=None)
    return [checkpoint, LoadInitState(checkpoint), *extra]


def test_a_checkpoint_of_the_same_vocabulary_resumes(tmp_path):
    ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    resumed = ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    assert len(resumed.history_) == 4  # two epochs loaded, two trained


def _reordered(corpus):
    """The same words, the least frequent made the most frequent: another row order."""
    rarest = Counter(w for doc in corpus for w in doc).most_common()[-1][0]
    return corpus + [[rarest] * 200]


@pytest.mark.parametrize("other", [B, _reordered(A)])
def test_a_checkpoint_of_another_vocabulary_is_refused(tmp_path, other):
    # B: other words; the second: the same words, counted in another order.
    ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    epochs = _Epochs()
    model = ACEWord2Vec(callbacks=_resume(tmp_path, epochs), **ACE)
    with pytest.raises(ValueError, match=r"params\.pt was trained on another vocabulary"):
        model.fit(other)
    assert epochs.begun == 0 and not hasattr(model, "net_")


def test_a_checkpoint_of_another_estimator_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4)), rng.integers(0, 3, 60)
    ConditionalNCEClassifier(
        callbacks=_resume(tmp_path), max_epochs=1, early_stopping=False, random_state=0
    ).fit(X, y)
    with pytest.raises(ValueError, match=r"params\.pt was written by another network.*missing"):
        ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    with pytest.raises(ValueError, match="another network than this LatentClassNCEEmbedder's"):
        LatentClassNCEEmbedder(
            callbacks=_resume(tmp_path), max_epochs=1, early_stopping=False
        ).fit(X, y)


def test_a_checkpoint_of_other_parameters_is_refused(tmp_path):
    ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    with pytest.raises(ValueError, match=r"another network.*shapes.*\(8, 8\) instead of \(8, 4\)"):
        ACEWord2Vec(callbacks=_resume(tmp_path), **{**ACE, "n_components": 4}).fit(A)


@pytest.mark.parametrize(
    ("name", "damage", "match"),
    [
        ("history.json", lambda b: b[: len(b) // 2], r"history file .*history\.json is truncated"),
        ("history.json", lambda b: b"{}", r"history\.json is truncated or damaged"),
        ("params.pt", lambda b: b[: len(b) // 2], r"params\.pt cannot be read"),
        ("optimizer.pt", lambda b: b[:40], r"optimizer\.pt cannot be read"),
        ("criterion.pt", lambda b: b"junk", r"criterion\.pt cannot be read"),
    ],
)
def test_a_damaged_checkpoint_is_named(tmp_path, name, damage, match):
    ACEWord2Vec(callbacks=_resume(tmp_path), **ACE).fit(A)
    path = tmp_path / name
    path.write_bytes(damage(path.read_bytes()))
    epochs = _Epochs()
    with pytest.raises(ValueError, match=match):
        ACEWord2Vec(callbacks=_resume(tmp_path, epochs), **ACE).fit(A)
    assert epochs.begun == 0


def test_a_checkpoint_of_another_optimizer_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4)), rng.integers(0, 3, 60)
    options = {"max_epochs": 1, "early_stopping": False, "random_state": 0}
    ConditionalNCEClassifier(callbacks=_resume(tmp_path), **options).fit(X, y)
    # The same network; an optimizer state of three parameter groups instead of one.
    import torch

    state = torch.load(tmp_path / "optimizer.pt", weights_only=True)
    state["param_groups"] = state["param_groups"] * 3
    torch.save(state, tmp_path / "optimizer.pt")
    with pytest.raises(ValueError, match=r"optimizer\.pt holds the state of another optimizer"):
        ConditionalNCEClassifier(callbacks=_resume(tmp_path), **options).fit(X, y)


@pytest.mark.parametrize("kind", [Checkpoint, TrainEndCheckpoint])
@pytest.mark.parametrize("where", ["a file", "below a file"])
def test_an_unwritable_checkpoint_directory_is_an_error_before_training(tmp_path, kind, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    dirname = blocker if where == "a file" else blocker / "sub"
    epochs = _Epochs()
    model = ACEWord2Vec(callbacks=[kind(dirname=str(dirname)), epochs], **ACE)
    with pytest.raises(ValueError, match=r"Checkpoint cannot write into .*blocker.*is a file"):
        model.fit(A)
    assert epochs.begun == 0 and blocker.read_text() == "not a directory"


def test_a_read_only_checkpoint_directory_is_an_error_before_training(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    # Root may write into read-only directories: simulate the refusal the system gives.
    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    epochs = _Epochs()
    model = ACEWord2Vec(callbacks=[Checkpoint(dirname=str(tmp_path)), epochs], **ACE)
    with pytest.raises(ValueError, match="Checkpoint cannot write into .*Permission denied"):
        model.fit(A)
    assert epochs.begun == 0


def test_no_guard_without_checkpoints():
    model = ACEWord2Vec(**ACE).fit(A)
    assert "checkpoint_guard" not in dict(model.net_.callbacks_)


def test_a_one_word_vocabulary_is_named():
    with pytest.warns(UserWarning, match=r"single word, 'a' \(the 2 other words.*min_count=3"):
        _corpus.Vocabulary.build([["a", "a", "a", "b"], ["c", "b"]], min_count=3)
    with pytest.warns(UserWarning, match=r"single word, 'a' \(X has no other word\)") as w:
        ACEWord2Vec(**ACE).fit([["a"] * 10, ["a"] * 8])
    assert w[0].filename == __file__


def test_a_train_end_checkpoint_of_another_vocabulary_is_refused(tmp_path):
    def callbacks():
        checkpoint = TrainEndCheckpoint(dirname=str(tmp_path))
        return [checkpoint, LoadInitState(checkpoint)]

    ACEWord2Vec(callbacks=callbacks(), **ACE).fit(A)
    assert len(ACEWord2Vec(callbacks=callbacks(), **ACE).fit(A).history_) == 4
    with pytest.raises(ValueError, match=r"train_end_params\.pt was trained on another vocab"):
        ACEWord2Vec(callbacks=callbacks(), **ACE).fit(B)


def test_a_safetensors_checkpoint_is_checked_too(tmp_path):
    pytest.importorskip("safetensors")

    def callbacks():
        checkpoint = Checkpoint(
            dirname=str(tmp_path), monitor=None, use_safetensors=True, f_optimizer=None
        )
        return [checkpoint, LoadInitState(checkpoint, use_safetensors=True)]

    ACEWord2Vec(callbacks=callbacks(), **ACE).fit(A)
    assert len(ACEWord2Vec(callbacks=callbacks(), **ACE).fit(A).history_) == 4
    with pytest.raises(ValueError, match=r"params\.pt was trained on another vocabulary"):
        ACEWord2Vec(callbacks=callbacks(), **ACE).fit(B)
    (tmp_path / "params.pt").write_bytes(b"\x08")
    with pytest.raises(ValueError, match=r"params\.pt cannot be read .*safetensors"):
        ACEWord2Vec(callbacks=callbacks(), **ACE).fit(A)


# --- saves: whole files, switched together per epoch, failures stop the fit -----------------

SAVES = pytest.mark.attack("Checkpoint saves")


def _classifier(dirname, *extra, **params):
    callbacks = [Checkpoint(dirname=str(dirname), monitor=None), *extra]
    params = {"hidden_layer_sizes": (4,), "max_epochs": 2, "random_state": 0, **params}
    return ConditionalNCEClassifier(callbacks=callbacks, **params)


XC = np.random.default_rng(0).normal(size=(40, 4)).astype(np.float32)
YC = np.arange(40) % 3


@SAVES
def test_a_failed_checkpoint_save_stops_the_fit_and_keeps_the_previous_checkpoint(
    tmp_path, monkeypatch
):
    import errno
    import os

    from sknce import _files

    _classifier(tmp_path).fit(XC, YC)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def no_space(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_files._Checked, "write", no_space)
    fitted = _classifier(tmp_path, random_state=1)
    with pytest.raises(OSError, match="a checkpoint could not be saved: could not write .*"
                       r"\.pt: No space left on device.*The fit stops") as error:  # fmt: skip
        fitted.fit(XC, YC)
    assert error.value.errno == errno.ENOSPC
    assert not hasattr(fitted, "net_")  # a failed fit leaves the estimator as it was
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@SAVES
def test_a_history_that_cannot_be_saved_is_named(tmp_path, monkeypatch):
    from skorch.history import History

    def unserialisable(self, f):
        raise TypeError("Object of type object is not JSON serializable")

    monkeypatch.setattr(History, "to_file", unserialisable)
    clf = _classifier(tmp_path, max_epochs=1)
    with pytest.raises(RuntimeError, match=r"a checkpoint could not be saved \(TypeError: .*"
                       "JSON serializable"):  # fmt: skip
        clf.fit(XC, YC)
    assert list(tmp_path.iterdir()) == []  # no file of the failed epoch, no temporary


@SAVES
def test_loading_a_checkpoint_removes_what_killed_saves_left(tmp_path):
    import subprocess
    import sys

    from sknce import _files

    _classifier(tmp_path).fit(XC, YC)
    pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True, check=True).stdout)  # fmt: skip
    stale = tmp_path / f".params.pt.{_files._HOST}-{pid}-0123abcd.tmp"
    stale.write_bytes(b"half a save")
    checkpoint = Checkpoint(dirname=str(tmp_path), monitor=None)
    ConditionalNCEClassifier(
        hidden_layer_sizes=(4,), max_epochs=3, random_state=0,
        callbacks=[checkpoint, LoadInitState(checkpoint)],
    ).fit(XC, YC)  # fmt: skip
    assert not stale.exists()


@SAVES
def test_save_params_outside_a_fit_writes_each_file_whole(tmp_path):
    net = _classifier(tmp_path).fit(XC, YC).net_
    net.save_params(f_params=str(tmp_path / "p.pt"), f_history=str(tmp_path / "h.json"))
    assert (tmp_path / "p.pt").stat().st_size > 0
    assert (tmp_path / "h.json").read_text().startswith("[")
    import io

    buffer = io.BytesIO()
    net.save_params(f_params=buffer)  # a file object: skorch's own save
    assert buffer.getvalue()


@SAVES
def test_a_checkpoint_pickling_the_net_saves_it_beside_the_other_files(tmp_path):
    # Checkpoint(f_pickle=...) pickles the net while the epoch's files are pending: what
    # is pending must not be in the net (it held open files, which cannot be pickled).
    import pickle

    import torch

    checkpoint = Checkpoint(dirname=str(tmp_path), monitor=None, f_pickle="net.pkl")
    clf = ConditionalNCEClassifier(
        hidden_layer_sizes=(4,), max_epochs=2, random_state=0, callbacks=[checkpoint]
    ).fit(XC, YC)
    with open(tmp_path / "net.pkl", "rb") as f:
        net = pickle.load(f)
    assert len(net.history) == 2
    for name, value in clf.net_.module_.state_dict().items():
        assert torch.equal(net.module_.state_dict()[name], value)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "criterion.pt", "history.json", "net.pkl", "optimizer.pt", "params.pt"
    ]  # fmt: skip
