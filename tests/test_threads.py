"""The threads of fits and inference (sknce/_threads.py, issue 34).

A fit and an inference call run torch and the BLAS libraries on the threads that
``n_jobs`` resolves to (one for the small steps of these tests at ``n_jobs=None``),
put the caller's settings back afterwards (also when they raise), and a grid search's
workers keep to their share of the cores. No timing is asserted.
"""

from __future__ import annotations

import json
import os

import pytest
import torch
from skorch.callbacks import Callback
from test_common import ESTIMATORS, REGISTRY, TINY_FITS, _data, _output
from threadpoolctl import threadpool_info

from sknce import _threads
from sknce._threads import PARALLEL_WORK, ThreadPlan, inference_work, step_work, thread_scope

#: The caller's setting in these tests: not the one a small fit runs at.
CALLER = 3


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


class Recorder(Callback):
    """Records torch's and the BLAS libraries' threads at each epoch's end, and may raise."""

    def __init__(self, raise_at: int | None = None, path: str | None = None):
        self.raise_at = raise_at
        self.path = path

    def initialize(self):
        self.seen_ = []
        return self

    def on_epoch_end(self, net, **kwargs):
        seen = {"torch": torch.get_num_threads(), "blas": sorted(_blas_threads())}
        self.seen_.append(seen)
        if self.path is not None:  # from a grid search's worker process
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({**seen, "pid": os.getpid()}) + "\n")
        if self.raise_at is not None and len(net.history) >= self.raise_at:
            raise RuntimeError("stop here")


@pytest.fixture
def caller_threads():
    """The caller runs torch and BLAS at CALLER threads (the suite's conftest sets 1)."""
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(CALLER)
    with threadpool_limits(CALLER, user_api="blas"):
        yield
    torch.set_num_threads(before)


def _fit(name: str, **params):
    entry = REGISTRY[name]
    recorder = Recorder()
    estimator = ESTIMATORS[name](**{**entry.params, "callbacks": [recorder], **params})
    X, y = _data(entry.data)
    entry.fit(estimator, X, y)
    return estimator, recorder, X


# --- the plan -------------------------------------------------------------------------------
def test_plan_of_n_jobs():
    torch_threads = torch.get_num_threads()
    assert ThreadPlan.from_n_jobs(None) == ThreadPlan(limit=torch_threads, auto=True)
    assert ThreadPlan.from_n_jobs(3) == ThreadPlan(limit=3, auto=False)
    cores = os.cpu_count()
    assert ThreadPlan.from_n_jobs(-1).limit == ThreadPlan.from_n_jobs(cores).limit
    assert ThreadPlan.from_n_jobs(-(cores + 5)).limit == 1


@pytest.mark.parametrize(
    ("n_jobs", "message"),
    [
        (0, r"n_jobs=0 asks for no thread; use None or 1 for one thread, -1 for every core"),
        (True, "n_jobs must be an int or None, got True"),
        (2.0, "n_jobs must be an int or None, got 2.0"),
        ("2", "n_jobs must be an int or None, got '2'"),
    ],
)
def test_a_meaningless_n_jobs_is_named(n_jobs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        ThreadPlan.from_n_jobs(n_jobs)


def test_small_work_runs_one_thread_and_large_work_the_limit():
    auto = ThreadPlan(limit=4, auto=True)
    assert auto.start == 1
    assert auto.threads_for(PARALLEL_WORK - 1) == 1
    assert auto.threads_for(PARALLEL_WORK) == 4
    fixed = ThreadPlan(limit=2, auto=False)
    assert fixed.start == 2
    assert fixed.threads_for(0) == fixed.threads_for(10 * PARALLEL_WORK) == 2


def test_step_work_counts_dense_gradients_per_example_and_sparse_ones_once():
    linear = torch.nn.Linear(3, 4)  # 12 weights + 4 biases
    table = torch.nn.Embedding(100, 5, sparse=True)
    frozen = torch.nn.Linear(7, 7)
    x = torch.randn(6, 3)
    (linear(x).sum() + table(torch.tensor([[1, 2], [2, 9]])).sum()).backward()
    params = [*linear.parameters(), *table.parameters(), *frozen.parameters()]
    # the table's gradient holds 4 looked-up rows of 5 values (duplicates not merged)
    assert step_work(params, batch_size=6) == 6 * 16 + 4 * 5


def test_inference_work_leaves_out_the_input_rows_a_sparse_row_looks_up():
    table = torch.zeros(50, 4)  # the input layer of 50 features
    labels = torch.zeros(7, 4)
    assert inference_work([table, labels], rows=10) == 10 * (200 + 28)
    assert inference_work([table, labels], rows=10, looked_up=50) == 10 * 28


def test_thread_scope_sets_and_restores_even_when_the_call_raises(caller_threads):
    with pytest.raises(RuntimeError), thread_scope(ThreadPlan(limit=2, auto=False)):
        assert torch.get_num_threads() == 2
        assert _blas_threads() == {2}
        raise RuntimeError
    assert torch.get_num_threads() == CALLER
    assert _blas_threads() == {CALLER}


def test_a_nested_scope_keeps_the_outer_plan(caller_threads):
    outer = ThreadPlan(limit=1, auto=False)
    with thread_scope(outer):
        with thread_scope(ThreadPlan(limit=2, auto=False)) as inner:
            assert inner is outer
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == CALLER


# --- fits and inference of every estimator ------------------------------------------------------
@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_small_fit_runs_one_thread_and_restores_the_callers(name, caller_threads):
    estimator, recorder, X = _fit(name)
    assert recorder.seen_
    assert all(seen == {"torch": 1, "blas": [1]} for seen in recorder.seen_)
    assert torch.get_num_threads() == CALLER
    assert _blas_threads() == {CALLER}
    _output(estimator, X)
    assert torch.get_num_threads() == CALLER
    assert _blas_threads() == {CALLER}


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_n_jobs_sets_the_threads_of_the_fit(name, caller_threads):
    _, recorder, _ = _fit(name, n_jobs=1)
    assert {seen["torch"] for seen in recorder.seen_} == {1}
    estimator, recorder, _ = _fit(name, n_jobs=2)
    # a compiled kernel step holds the cores with its own n_jobs threads, torch one
    kernel = type(estimator.net_.step_).__name__ != "AutogradStep"
    assert {seen["torch"] for seen in recorder.seen_} == {1 if kernel else 2}
    assert {b for seen in recorder.seen_ for b in seen["blas"]} == {2}
    assert torch.get_num_threads() == CALLER


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_fit_that_raises_restores_the_callers_threads(name, caller_threads):
    entry = REGISTRY[name]
    estimator = ESTIMATORS[name](**{**entry.params, "callbacks": [Recorder(raise_at=1)]})
    X, y = _data(entry.data)
    with pytest.raises(RuntimeError, match="stop here"):
        entry.fit(estimator, X, y)
    assert torch.get_num_threads() == CALLER
    assert _blas_threads() == {CALLER}


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_inference_that_raises_restores_the_callers_threads(name, caller_threads):
    estimator, _, _ = _fit(name)
    with pytest.raises((ValueError, TypeError)):
        _output(estimator, 12345)
    assert torch.get_num_threads() == CALLER
    assert _blas_threads() == {CALLER}


@TINY_FITS
def test_a_large_step_gets_the_callers_threads_after_the_first(monkeypatch, caller_threads):
    monkeypatch.setattr(_threads, "PARALLEL_WORK", 1)
    _, recorder, _ = _fit("DirectNCEEmbedder")
    assert {seen["torch"] for seen in recorder.seen_} == {CALLER}
    assert torch.get_num_threads() == CALLER


@TINY_FITS
def test_inference_inside_a_fit_keeps_the_fits_threads(caller_threads):
    seen = []

    class Transforms(Callback):
        def on_epoch_end(self, net, **kwargs):
            net.estimator.transform(X)
            seen.append(torch.get_num_threads())

    entry = REGISTRY["DirectNCEEmbedder"]
    X, _ = _data(entry.data)
    ESTIMATORS["DirectNCEEmbedder"](**{**entry.params, "callbacks": [Transforms()]}).fit(X)
    assert seen == [1] * len(seen) and seen
    assert torch.get_num_threads() == CALLER


@TINY_FITS
@pytest.mark.parametrize("name", ["ConditionalNCEClassifier", "DirectNCEEmbedder"])
def test_grid_search_workers_keep_to_their_share_of_the_cores(name, tmp_path):
    from sklearn.model_selection import GridSearchCV

    entry = REGISTRY[name]
    path = tmp_path / "threads.jsonl"
    estimator = ESTIMATORS[name](**{**entry.params, "callbacks": [Recorder(path=str(path))]})
    X, y = _data(entry.data)
    search = GridSearchCV(estimator, {"lr": [0.01, 0.02]}, cv=2, n_jobs=2, error_score="raise")
    entry.fit(search, X, y)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    workers = {r["pid"] for r in records} - {os.getpid()}
    assert workers, "the fits ran in worker processes"
    share = max(1, os.cpu_count() // 2)
    for record in records:
        if record["pid"] in workers:
            assert record["torch"] <= share
            assert max(record["blas"]) <= share


def _plan_in_worker():
    return ThreadPlan.from_n_jobs(None)


def test_a_joblib_workers_plan_is_its_share_of_the_cores():
    from joblib import Parallel, delayed

    plans = Parallel(n_jobs=2)(delayed(_plan_in_worker)() for _ in range(2))
    share = max(1, os.cpu_count() // 2)
    assert all(plan.auto and plan.limit <= share for plan in plans)
