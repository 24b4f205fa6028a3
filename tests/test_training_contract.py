"""What every estimator gains from the one training engine, tested on all six.

Callbacks, optimizer options, warm starts, ``partial_fit``, checkpoints that
resume a fit exactly, thread-safe seeding, and failed fits that leave the
estimator as it was.
"""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback, Checkpoint, EpochScoring, LoadInitState, LRScheduler
from test_common import ESTIMATORS, REGISTRY, _data, _output

from sknce.exceptions import TrainingDivergedError

#: Settings under which two ways of reaching the same epoch must give the same weights:
#: no early stopping (the validation split is exact too, but patience is not resumable),
#: one kernel thread and a constant learning rate for the word vectors.
EXACT = {
    "LandmarkNCEEmbedder": {"early_stopping": False},
    "DirectNCEEmbedder": {"early_stopping": False},
    "ACEWord2Vec": {"min_lr_ratio": 1.0, "adversarial_warmup": 0.0, "n_jobs": 1},
}

ARRAY_ESTIMATORS = [name for name in ESTIMATORS if name != "ACEWord2Vec"]


def _make(name, **params):
    return ESTIMATORS[name](**{**REGISTRY[name].params, **EXACT.get(name, {}), **params})


def _fit(estimator, name):
    X, y = _data(REGISTRY[name].data)
    if REGISTRY[name].data in ("counts", "tokens"):
        return estimator.fit(X)
    return estimator.fit(X, y)


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
    X, y = _data(REGISTRY[name].data)
    estimator = _make(name, early_stopping=False)
    extra = {"classes": np.unique(y)} if name == "ConditionalNCEClassifier" else {}
    for _ in range(2):
        estimator.partial_fit(X, y, **extra)
    # Declared classes smooth the label counts of the noise, in fit as in partial_fit.
    whole = _make(name, max_epochs=2, early_stopping=False, **extra).fit(X, y)
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


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_diverging_fit_raises_or_stays_finite(name):
    """A learning rate far too large never ends in a silent NaN model."""
    try:
        estimator = _fit(_make(name, lr=1e12, max_epochs=3), name)
    except TrainingDivergedError as error:
        assert "Lower lr" in str(error)
    else:
        X, _ = _data(REGISTRY[name].data)
        assert np.all(np.isfinite(_output(estimator, X).astype(float)))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_failed_refit_leaves_the_previous_fit(name):
    estimator = _fit(_make(name), name)
    X, y = _data(REGISTRY[name].data)
    expected = _output(estimator, X)
    before = dict(vars(estimator))
    with pytest.raises((ValueError, TypeError)):
        if REGISTRY[name].data == "tokens":
            estimator.fit([["a", "b"], 3])  # the second document is not a token list
        elif REGISTRY[name].data == "counts":
            estimator.fit(-np.abs(X))  # negative counts, rejected after n_features_in_ resets
        else:
            estimator.fit(X[:, :2], y[:4])
    assert vars(estimator).keys() == before.keys()
    assert all(vars(estimator)[key] is before[key] for key in before)
    np.testing.assert_array_equal(_output(estimator, X), expected)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_score_is_the_same_in_concurrent_calls(name):
    estimator = _fit(_make(name), name)
    if not hasattr(estimator, "score") or name == "ACEWord2Vec":
        pytest.skip("no contrastive score")
    X, y = _data(REGISTRY[name].data)
    args = (X,) if REGISTRY[name].data == "counts" else (X, y)
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
    X, _ = _data("counts")
    np.testing.assert_allclose(again.transform(X), estimator.transform(X))
