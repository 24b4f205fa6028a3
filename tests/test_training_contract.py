"""What every estimator gains from the one training engine, tested on each of the registry.

Callbacks, optimizer options, warm starts, ``partial_fit``, checkpoints that
resume a fit exactly, thread-safe seeding, and failed fits that leave the
estimator as it was.
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, Checkpoint, EpochScoring, LoadInitState, LRScheduler
from test_common import ESTIMATORS, REGISTRY, _data, _output

from sknce.exceptions import TrainingDivergedError

ARRAY_ESTIMATORS = [name for name in ESTIMATORS if REGISTRY[name].data.array]


def _make(name, **params):
    """The estimator with its registry settings and those under which two ways of reaching
    the same epoch give the same weights (the entry's ``exact``: e.g. no early stopping,
    whose patience is not resumable)."""
    return ESTIMATORS[name](**{**REGISTRY[name].params, **REGISTRY[name].exact, **params})


def _fit(estimator, name, X=None, y=None):
    """``fit`` on the registry's data of ``name`` (or on ``X`` and ``y``)."""
    if X is None:
        X, y = _data(REGISTRY[name].data)
    return REGISTRY[name].fit(estimator, X, y)


def _weights(estimator):
    return [p.detach().clone() for p in estimator.net_.module_.parameters()]


def _assert_same_weights(a, b):
    for wa, wb in zip(_weights(a), _weights(b), strict=True):
        torch.testing.assert_close(wa, wb, rtol=0, atol=0)


class _EpochCounter(Callback):
    def initialize(self):
        self.epochs_ = 0
        self.train_begins_ = 0
        return self

    def on_train_begin(self, net, **kwargs):
        self.train_begins_ += 1

    def on_epoch_end(self, net, **kwargs):
        self.epochs_ += 1


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_user_callback_is_called_once_per_epoch(name):
    counter = _EpochCounter()
    estimator = _fit(_make(name, max_epochs=3, callbacks=[counter]), name)
    assert counter.epochs_ == estimator.n_iter_ == 3
    assert counter.train_begins_ == 1


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_user_callbacks_come_after_sknces_own(name):
    """sknce's callbacks (early stopping, the word vectors) have run when a user's runs."""
    extra = {} if name == "ACEWord2Vec" else {"early_stopping": True}
    estimator = _fit(_make(name, callbacks=[_EpochCounter()], max_epochs=2, **extra), name)
    names = [callback_name for callback_name, _ in estimator.net_.callbacks_]
    own = "vectors" if name == "ACEWord2Vec" else "early_stopping"
    assert names.index(own) < names.index("_EpochCounter") < names.index("print_log")
    assert names[-2:] == ["_EpochCounter", "print_log"]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_lr_scheduler_changes_the_learning_rate(name):
    scheduler = LRScheduler(policy="StepLR", step_size=1, gamma=0.5)
    estimator = _fit(_make(name, max_epochs=3, callbacks=[scheduler]), name)
    lr = estimator.net_.optimizer_.param_groups[0]["lr"]
    assert lr == pytest.approx(estimator.lr * 0.5**3)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_epoch_scoring_sees_the_model_of_each_epoch(name):
    X, _ = _data(REGISTRY[name].data)

    def mean_output(net, dataset, y):
        return float(np.mean(_output(net.estimator, X)))

    scoring = EpochScoring(
        mean_output, name="mean_output", on_train=True, use_caching=False, lower_is_better=False
    )
    estimator = _fit(_make(name, max_epochs=3, callbacks=[scoring]), name)
    scores = [row["mean_output"] for row in estimator.history_]
    assert len(scores) == 3 and len(set(scores)) > 1  # the model changed between epochs
    assert scores[-1] == pytest.approx(float(np.mean(_output(estimator, X))), rel=1e-5)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_checkpoint_resumes_a_fit_exactly(name, tmp_path):
    """2 epochs, checkpointed, then 2 more from the checkpoint = 4 uninterrupted epochs."""
    checkpoint = Checkpoint(monitor=None, dirname=str(tmp_path))
    _fit(_make(name, max_epochs=2, callbacks=[checkpoint]), name)
    resume = [Checkpoint(monitor=None, dirname=str(tmp_path)), LoadInitState(checkpoint)]
    resumed = _fit(_make(name, max_epochs=2, callbacks=resume), name)
    whole = _fit(_make(name, max_epochs=4), name)
    assert resumed.n_iter_ == 4
    _assert_same_weights(resumed, whole)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_warm_start_continues_the_fitted_network(name):
    estimator = _fit(_make(name, max_epochs=2), name)
    estimator.set_params(warm_start=True)
    continued = _fit(estimator, name)
    whole = _fit(_make(name, max_epochs=4), name)
    assert continued.n_iter_ == 4
    _assert_same_weights(continued, whole)


@pytest.mark.parametrize("name", ARRAY_ESTIMATORS)
def test_partial_fit_passes_equal_epochs_of_fit(name):
    entry = REGISTRY[name]
    X, y = _data(entry.data)
    estimator = _make(name, early_stopping=False)
    for _ in range(2):
        entry.partial_fit(estimator, X, y)
    # What the first call declares is declared to fit too (a classifier's classes smooth
    # the label counts of the noise, in fit as in partial_fit).
    whole = entry.fit(_make(name, max_epochs=2, early_stopping=False, **entry.first_call(y)), X, y)
    assert estimator.n_iter_ == 2
    _assert_same_weights(estimator, whole)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_weight_decay_reaches_the_optimizer_and_shrinks_the_weights(name):
    plain = _fit(_make(name, max_epochs=3), name)
    decayed = _fit(_make(name, max_epochs=3, optimizer_kwargs={"weight_decay": 0.5}), name)
    assert decayed.net_.optimizer_.param_groups[0]["weight_decay"] == 0.5

    def norm(estimator):
        return float(sum(w.norm() ** 2 for w in _weights(estimator)))

    assert norm(decayed) < norm(plain)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_option_the_optimizer_lacks_is_a_clear_error(name):
    with pytest.raises(ValueError, match=r"\['momentum_typo'\] which \w+ does not accept"):
        _fit(_make(name, optimizer_kwargs={"momentum_typo": 0.9}), name)
    with pytest.raises(ValueError, match="LazyAdam"):
        _fit(_make(name, optimizer=torch.optim.SparseAdam), name)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_fits_in_concurrent_threads_equal_sequential_fits(name):
    sequential = [_fit(_make(name, random_state=s), name) for s in (0, 0, 1)]
    concurrent = [_make(name, random_state=s) for s in (0, 0, 1)]
    threads = [threading.Thread(target=_fit, args=(est, name)) for est in concurrent]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seq, con in zip(sequential, concurrent):
        _assert_same_weights(seq, con)


def _is_unfitted(estimator) -> bool:
    return not [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_diverging_fit_raises(name):
    """A learning rate far too large raises, naming the fix, and leaves nothing fitted."""
    estimator = _make(name, lr=1e12, max_epochs=3)
    with pytest.raises(TrainingDivergedError, match="training diverged in epoch 1.*Lower lr"):
        _fit(estimator, name)
    assert _is_unfitted(estimator)


def _word_corpus(n_documents=300):
    """300 documents of 30 tokens over 50 words: enough batches to explode in epoch 1."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    return [list(rng.choice(words, size=30)) for _ in range(n_documents)]


@pytest.mark.parametrize(
    ("name", "params", "what"),
    [
        # Each finished without an error before the guard checked every batch of epoch 1.
        ("ConditionalNCEClassifier", {"lr": 10.0, "max_epochs": 10}, "batch's loss"),
        ("DirectNCEEmbedder", {"lr": 1e12, "early_stopping": False}, "batch's loss"),
        # Unit-norm outputs keep the loss at chance while the weights run away.
        ("LatentClassNCEEmbedder", {"lr": 1e12}, "grew to magnitude"),
        ("ACEWord2Vec", {"optimizer": torch.optim.Adam, "lr": 1e10}, "batch's loss"),
        # The loss explodes, then falls: no epoch is 1000 times the first.
        ("ACEWord2Vec", {"optimizer": torch.optim.Adam, "lr": 1e10, "max_epochs": 5}, "batch's"),
    ],
)
def test_a_fit_exploding_in_its_first_epoch_raises(name, params, what):
    estimator = _make(name, **params)
    with pytest.raises(TrainingDivergedError, match=f"in epoch 1: .*{what}.*Lower lr"):
        if name == "ACEWord2Vec":
            estimator.fit(_word_corpus())
        else:
            _fit(estimator, name)
    assert _is_unfitted(estimator)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_failed_refit_leaves_the_previous_fit(name):
    estimator = _fit(_make(name), name)
    X, y = _data(REGISTRY[name].data)
    expected = _output(estimator, X)
    before = dict(vars(estimator))
    with pytest.raises((ValueError, TypeError)):
        _fit(estimator, name, *REGISTRY[name].data.refused(X, y))
    assert vars(estimator).keys() == before.keys()
    assert all(vars(estimator)[key] is before[key] for key in before)
    np.testing.assert_array_equal(_output(estimator, X), expected)


def _tensors(state) -> list:
    """The tensors of a (nested) state dict, in order."""
    if torch.is_tensor(state):
        return [state.clone()]
    if isinstance(state, dict):
        return [t for key in state for t in _tensors(state[key])]
    if isinstance(state, (list, tuple)):
        return [t for item in state for t in _tensors(item)]
    return []


def _state(estimator) -> dict:
    """What a failed fit must leave as it was: every attribute, and the network's."""
    net = estimator.net_
    return {
        "attributes": dict(vars(estimator)),
        "net": {k: v for k, v in vars(net).items() if k not in ("history", "history_")},
        "history": [dict(row) for row in net.history],
        "weights": _weights(estimator),
        "optimizer": _tensors(net.optimizer_.state_dict()),
    }


def _assert_same_state(estimator, before: dict) -> None:
    after = _state(estimator)
    assert after["attributes"].keys() == before["attributes"].keys()
    assert all(after["attributes"][k] is v for k, v in before["attributes"].items())
    assert after["net"].keys() == before["net"].keys()
    changed = [k for k, v in before["net"].items() if after["net"][k] is not v]
    assert not changed, f"net attributes changed: {changed}"
    assert after["history"] == before["history"]
    for name in ("weights", "optimizer"):
        for a, b in zip(after[name], before[name], strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_failed_warm_start_leaves_the_estimator_exactly_as_before(name):
    """The new lr, max_epochs and verbose of a diverging refit do not stay on the net."""
    estimator = _fit(_make(name), name)
    X, _ = _data(REGISTRY[name].data)
    expected = _output(estimator, X)
    estimator.set_params(warm_start=True, lr=1e12, max_epochs=7, verbose=1)
    before = _state(estimator)
    with pytest.raises(TrainingDivergedError):
        _fit(estimator, name)
    _assert_same_state(estimator, before)
    assert estimator.net_.lr == REGISTRY[name].params.get("lr", ESTIMATORS[name]().lr)
    np.testing.assert_array_equal(_output(estimator, X), expected)


def _bad_params(name) -> list[dict]:
    """Parameters that fail inside fit (past the declared constraints)."""
    bad = [{"optimizer_kwargs": {"momentum_typo": 0.9}}, {"optimizer": torch.optim.SparseAdam}]
    if "hidden_layer_sizes" in REGISTRY[name].params:
        bad += [{"hidden_layer_sizes": (-1,)}, {"hidden_layer_sizes": (2.5,)}]
    return bad


@pytest.mark.parametrize("warm_start", [False, True])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_refit_with_bad_params_leaves_the_estimator_exactly_as_before(name, warm_start):
    estimator = _fit(_make(name), name)
    for params in _bad_params(name):
        estimator.set_params(warm_start=warm_start, **params)
        before = _state(estimator)
        with pytest.raises((ValueError, TypeError)):
            _fit(estimator, name)
        _assert_same_state(estimator, before)
        estimator.set_params(**{k: _make(name).get_params()[k] for k in params})


class _InterruptAt(Callback):
    """Raise KeyboardInterrupt in ``epoch`` (1-based): when it begins (``batch=0``), or
    after its ``batch``-th training batch."""

    def __init__(self, epoch: int, batch: int = 0) -> None:
        self.epoch = epoch
        self.batch = batch

    def on_epoch_begin(self, net, **kwargs):
        if self.batch == 0 and len(net.history) == self.epoch:
            raise KeyboardInterrupt

    def on_batch_end(self, net, training=False, **kwargs):
        if not training or self.batch == 0 or len(net.history) != self.epoch:
            return
        done = sum("train_loss" in b for b in net.history[-1]["batches"])
        if done == self.batch:
            raise KeyboardInterrupt


def _assert_usable(estimator, name) -> None:
    X, _ = _data(REGISTRY[name].data)
    assert np.all(np.isfinite(np.asarray(_output(estimator, X), dtype=float)))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_interrupted_epoch_is_kept_in_the_history_and_counted(name):
    """Interrupted after a batch of epoch 2: two rows, the second marked, the net kept."""
    estimator = _fit(_make(name, max_epochs=5, callbacks=[_InterruptAt(2, batch=1)]), name)
    assert estimator.n_iter_ == len(estimator.history_) == len(estimator.net_.history) == 2
    assert all("train_loss" in row for row in estimator.history_)
    assert estimator.history_[-1]["interrupted"] is True
    assert "interrupted" not in estimator.history_[0]
    _assert_usable(estimator, name)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_epoch_interrupted_before_its_first_batch_is_dropped(name):
    estimator = _fit(_make(name, max_epochs=5, callbacks=[_InterruptAt(3)]), name)
    assert estimator.n_iter_ == len(estimator.history_) == 2
    assert not any("interrupted" in row for row in estimator.history_)
    _assert_usable(estimator, name)


class _InterruptBeforeTraining(Callback):
    def __init__(self) -> None:
        self.armed = False

    def on_train_begin(self, net, **kwargs):
        if self.armed:
            raise KeyboardInterrupt


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_interrupt_before_training_leaves_the_estimator_exactly_as_before(name):
    """Outside skorch's loop an interrupt is a failed fit: the previous state is kept."""
    interrupt = _InterruptBeforeTraining()
    estimator = _fit(_make(name, callbacks=[interrupt]), name)
    interrupt.armed = True
    for warm_start in (True, False):
        estimator.set_params(warm_start=warm_start)
        before = _state(estimator)
        with pytest.raises(KeyboardInterrupt):
            _fit(estimator, name)
        _assert_same_state(estimator, before)


def test_an_interrupted_ace_refit_keeps_history_and_n_iter_in_agreement():
    name = "ACEWord2Vec"
    # The callback fires in the refit's second epoch (the net's fourth).
    estimator = _fit(_make(name, max_epochs=2, callbacks=[_InterruptAt(4, batch=1)]), name)
    estimator.set_params(warm_start=True)
    _fit(estimator, name)
    assert estimator.n_iter_ == len(estimator.history_) == len(estimator.net_.history) == 4
    assert estimator.history_[-1]["interrupted"] is True
    _assert_usable(estimator, name)
    # A fresh refit interrupted in its first epoch.
    estimator.set_params(warm_start=False, callbacks=[_InterruptAt(1, batch=1)])
    _fit(estimator, name)
    assert estimator.n_iter_ == len(estimator.history_) == 1
    _assert_usable(estimator, name)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_thread_drawing_from_torchs_global_generator_changes_nothing(name):
    """Fits draw from their own generators: a foreign thread using torch's global one
    neither changes the fit nor sees its draws changed by it."""
    sequential = _fit(_make(name), name)
    stop = threading.Event()
    draws = []

    def foreign():
        torch.manual_seed(1234)
        while not stop.is_set() or len(draws) < 10:
            draws.append(torch.rand(16))
            time.sleep(1e-4)  # leave the interpreter to the fit between draws

    thread = threading.Thread(target=foreign)
    thread.start()
    try:
        concurrent = _fit(_make(name), name)
    finally:
        stop.set()
        thread.join()
    _assert_same_weights(sequential, concurrent)
    own = torch.Generator().manual_seed(1234)
    for draw in draws:
        torch.testing.assert_close(draw, torch.rand(16, generator=own), rtol=0, atol=0)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_score_is_the_same_in_concurrent_calls(name):
    estimator = _fit(_make(name), name)
    if not hasattr(estimator, "score") or name == "ACEWord2Vec":
        pytest.skip("no contrastive score")
    X, y = _data(REGISTRY[name].data)
    args = REGISTRY[name].args(X, y)
    results = [None] * 4

    def run(i):
        results[i] = estimator.score(*args)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and results[0] == estimator.score(*args)


def test_pickled_estimators_with_callbacks_keep_working():
    name = "DirectNCEEmbedder"
    estimator = _fit(_make(name, callbacks=[_EpochCounter()]), name)
    again = pickle.loads(pickle.dumps(estimator))
    X, _ = _data(REGISTRY[name].data)
    np.testing.assert_allclose(again.transform(X), estimator.transform(X))
