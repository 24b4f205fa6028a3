"""Data-parallel training (``accelerator=``) and distributed grid search.

* Two CPU processes launched by ``torchrun`` (gloo) fit every estimator of the test
  registry and a streamed fit (tests/distributed_worker.py): every process ends with
  the same model and the same merged history, of the quality of a single-process fit
  on the same data (as the registry entry judges it).
* A one-process ``Accelerator`` trains exactly as no accelerator, on every
  estimator; bf16 mixed precision trains those the registry judges; a missing
  ``accelerate`` is an ImportError naming the extra.
* ``GridSearchCV`` under joblib's dask backend on a ``LocalCluster`` (threads, and
  worker processes to which the estimators are pickled) gives the results of the
  sequential search.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import subprocess
import sys
from pathlib import Path

import distributed_worker as worker
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from test_common import ESTIMATORS, REGISTRY, _data

INSTALL = 'in the clone: pip install ".[distributed]"'
HAS_ACCELERATE = importlib.util.find_spec("accelerate") is not None
HAS_GLOO = torch.distributed.is_available() and torch.distributed.is_gloo_available()
needs_accelerate = pytest.mark.skipif(
    not HAS_ACCELERATE,
    reason=f"accelerate is not installed ({INSTALL})",
)


def _fit(estimator, name):
    X, y = _data(REGISTRY[name].data)
    return REGISTRY[name].fit(estimator, X, y)


# --- two processes ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """Launch the worker on 2 CPU processes once; the directory of what they wrote."""
    if not (HAS_ACCELERATE and HAS_GLOO):
        pytest.skip("needs accelerate and torch.distributed with the gloo backend")
    out = tmp_path_factory.mktemp("two_processes")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node", "2", worker.__file__, str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def _states(out: Path, name: str) -> list[dict]:
    return [pickle.loads((out / f"{name}-{rank}.pkl").read_bytes()) for rank in (0, 1)]


CASES = {case.name: case for case in worker.cases()}
STREAM = f"{worker.STREAMED}-stream"


@pytest.mark.parametrize("name", list(CASES))
def test_both_processes_end_with_the_same_model_and_history(two_processes, name):
    first, second = _states(two_processes, name)
    assert first["n_processes"] == second["n_processes"] == 2
    for a, b in zip(first["weights"], second["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    for row_a, row_b in zip(first["history"], second["history"], strict=True):
        assert row_a["train_loss"] == row_b["train_loss"]
        assert row_a.get("valid_loss") == row_b.get("valid_loss")


def test_the_merged_history_holds_the_batches_of_both_processes(two_processes):
    first, _ = _states(two_processes, "ConditionalNCEClassifier")
    n_examples = len(CASES["ConditionalNCEClassifier"].y)
    n_train = n_examples - int(np.ceil(0.1 * n_examples))  # early stopping holds out 10%
    padded = int(np.ceil(n_train / 2)) * 2  # each process takes ceil(n / 2) examples
    for batches in first["batches"]:
        assert sum(b.get("train_batch_size", 0) for b in batches) == padded
        assert sum(b.get("valid_batch_size", 0) for b in batches) == n_examples - n_train


def test_a_stream_is_sharded_chunk_by_chunk_and_holds_out_its_last_chunk(two_processes):
    first, _ = _states(two_processes, STREAM)
    sizes = [chunk.shape[0] for chunk in worker.chunks(CASES[STREAM].X)]
    padded = sum(int(np.ceil(n / 2)) * 2 for n in sizes[:-1])  # each chunk is sharded
    for batches in first["batches"]:
        assert sum(b.get("train_batch_size", 0) for b in batches) == padded
        assert sum(b.get("valid_batch_size", 0) for b in batches) == sizes[-1]


def test_the_user_guides_script_trains_on_two_processes(two_processes):
    """docs/user_guide/scaling.rst's train.py, as ``torchrun --nproc_per_node 2`` runs it."""
    assert (two_processes / "guide-0.txt").read_text() == "2 True\n"
    assert (two_processes / "guide-1.txt").read_text() == ""  # only the main process prints


def _single_process(name):
    case = CASES[name]
    return case.make(), case.data


#: The fits whose estimator's registry entry says how to judge its quality.
JUDGED = [name for name, case in CASES.items() if REGISTRY[case.estimator].quality]


@pytest.mark.parametrize("name", JUDGED)
def test_two_processes_match_one_process_with_the_same_global_batch(two_processes, name):
    """Two processes of ``batch_size`` b take the steps of one process of batch 2b.

    The single-process reference fits the same data with ``batch_size=2b``; the
    two-process model must reach its quality within 0.03 (the draws of the
    negatives differ, so the models are not equal).
    """
    single, data = _single_process(name)
    single.set_params(batch_size=2 * single.batch_size).fit(*data)
    case = CASES[name]
    REGISTRY[case.estimator].assert_as_good(_load(two_processes, name), single, case.X, case.y)


def _load(out: Path, name: str):
    return pickle.loads((out / f"{name}.estimator.pkl").read_bytes())


def test_two_processes_classify_as_well_as_one(two_processes):
    single, (X, y) = _single_process("ConditionalNCEClassifier")
    single.fit(X, y)
    parallel = _load(two_processes, "ConditionalNCEClassifier")  # pickled in process 0, used here
    assert parallel.score(X, y) >= single.score(X, y) - 0.05
    assert parallel.score(X, y) > 0.85


def test_two_processes_embed_documents_as_well_as_one(two_processes):
    single, (X,) = _single_process("DirectNCEEmbedder")
    single.fit(X)
    parallel = _load(two_processes, "DirectNCEEmbedder")
    # score: minus the contrastive loss on fixed fresh pairs (chance: log 2 = 0.693)
    assert parallel.score(X) >= single.score(X) - 0.05
    assert parallel.score(X) > -0.65
    assert parallel.transform(X[:5]).shape == (5, 8)


def _planted_margin(model) -> float:
    """Mean cosine similarity within the planted word groups minus across them."""
    words = [f"a{i}" for i in range(8)] + [f"b{i}" for i in range(8)]
    vectors = np.stack([model.vectors_[model.vocabulary_[w]] for w in words])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = unit @ unit.T
    same = np.kron(np.eye(2), np.ones((8, 8))).astype(bool) & ~np.eye(16, dtype=bool)
    across = ~np.kron(np.eye(2), np.ones((8, 8))).astype(bool)
    return float(sim[same].mean() - sim[across].mean())


def test_two_processes_of_local_sgd_learn_word_vectors_as_one(two_processes):
    single, (docs,) = _single_process("ACEWord2Vec")
    single.fit(docs)
    parallel = _load(two_processes, "ACEWord2Vec")
    assert _planted_margin(parallel) > 0.5
    assert _planted_margin(parallel) >= _planted_margin(single) - 0.2


# --- one process -------------------------------------------------------------------------
@pytest.fixture
def accelerator_factory():
    """Accelerators of any settings: accelerate keeps one state per process, reset here."""
    if not HAS_ACCELERATE:
        pytest.skip(f"accelerate is not installed ({INSTALL})")
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    def make(**kwargs):
        AcceleratorState._reset_state(reset_partial_state=True)
        return Accelerator(cpu=True, **kwargs)

    yield make
    AcceleratorState._reset_state(reset_partial_state=True)


#: Settings under which a warm start runs all of its ``max_epochs``: the classifier's
#: early stopping would end it once the validation loss stalls.
_ALL_EPOCHS = {"ConditionalNCEClassifier": {"early_stopping": False}}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_one_process_accelerator_trains_as_no_accelerator(name, accelerator_factory):
    accelerator = accelerator_factory()
    params = {**REGISTRY[name].params, **_ALL_EPOCHS.get(name, {})}
    plain = _fit(ESTIMATORS[name](**params), name)
    accelerated = _fit(ESTIMATORS[name](**params, accelerator=accelerator), name)
    for a, b in zip(plain.net_.module_.parameters(), accelerated.net_.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    again = pickle.loads(pickle.dumps(accelerated))  # unwrapped after training
    assert type(again.net_.module_) is type(plain.net_.module_)
    accelerated.set_params(warm_start=True)
    assert _fit(accelerated, name).n_iter_ == 2 * plain.n_iter_


@pytest.mark.parametrize("name", JUDGED)
def test_bf16_mixed_precision_trains_in_bf16(name, accelerator_factory):
    """bf16 autocast (on CPUs too) changes the fit but not its quality (within 0.03)."""
    case = CASES[name]
    full = case.make().fit(*case.data)
    mixed = case.make(accelerator=accelerator_factory(mixed_precision="bf16")).fit(*case.data)
    weights = list(mixed.net_.module_.parameters())
    assert all(w.dtype == torch.float32 for w in weights)  # master weights stay float32
    assert not all(torch.equal(a, b) for a, b in zip(full.net_.module_.parameters(), weights))
    REGISTRY[case.estimator].assert_as_good(mixed, full, case.X, case.y)


def test_ace_ignores_mixed_precision(accelerator_factory):
    """ACE's compiled kernel computes in float32 whatever the accelerator's precision."""
    name = "ACEWord2Vec"
    full = _fit(ESTIMATORS[name](**REGISTRY[name].params), name)
    mixed = _fit(
        ESTIMATORS[name](
            **REGISTRY[name].params, accelerator=accelerator_factory(mixed_precision="bf16")
        ),
        name,
    )
    np.testing.assert_array_equal(mixed.vectors_, full.vectors_)


def test_without_accelerate_the_error_names_the_extra(monkeypatch):
    class FakeAccelerator:
        device, num_processes = torch.device("cpu"), 1

        def prepare(self, *objects):
            return objects

        def unwrap_model(self, model):
            return model

    monkeypatch.setitem(sys.modules, "accelerate", None)  # import accelerate fails
    estimator = ESTIMATORS["DirectNCEEmbedder"](
        **REGISTRY["DirectNCEEmbedder"].params, accelerator=FakeAccelerator()
    )
    with pytest.raises(ImportError, match=r'in a clone of sknce, pip install "\.\[distributed\]"'):
        _fit(estimator, "DirectNCEEmbedder")
    assert not hasattr(estimator, "net_")


def test_sparse_embeddings_on_several_processes_is_a_clear_error():
    class TwoProcesses:
        device, num_processes = torch.device("cpu"), 2

        def prepare(self, *objects):
            return objects

        def unwrap_model(self, model):
            return model

    from sknce.optim import LazyAdam

    estimator = ESTIMATORS["DirectNCEEmbedder"](
        **REGISTRY["DirectNCEEmbedder"].params,
        sparse_embeddings=True,
        optimizer=LazyAdam,
        accelerator=TwoProcesses(),
    )
    with pytest.raises(ValueError, match="sparse_embeddings=False"):
        _fit(estimator, "DirectNCEEmbedder")


# --- grid search on dask -----------------------------------------------------------------
def test_grid_search_on_a_dask_cluster_equals_the_sequential_search():
    pytest.importorskip("dask.distributed", reason=f"needs dask ({INSTALL})")
    from dask.distributed import Client, LocalCluster
    from joblib import parallel_backend

    name = "ConditionalNCEClassifier"
    X, y = _data(REGISTRY[name].data)
    search = GridSearchCV(
        ESTIMATORS[name](**REGISTRY[name].params), {"lr": [0.01, 0.05], "max_epochs": [2, 4]}, cv=2
    )
    sequential = clone(search).fit(X, y)
    # processes=False: the workers are threads of this process (fast to start in a test);
    # with processes or remote machines the fits are pickled to them the same way.
    cluster = LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    with cluster, Client(cluster), parallel_backend("dask"):
        distributed = clone(search).set_params(n_jobs=-1).fit(X, y)
    np.testing.assert_array_equal(
        distributed.cv_results_["mean_test_score"], sequential.cv_results_["mean_test_score"]
    )
    assert distributed.best_params_ == sequential.best_params_


def test_grid_search_on_dask_worker_processes_equals_the_sequential_search():
    """The estimators and data are pickled to 2 worker processes, which fit them there."""
    pytest.importorskip("dask.distributed", reason=f"needs dask ({INSTALL})")
    import dask
    from dask.distributed import Client, LocalCluster
    from joblib import parallel_backend

    name = "ConditionalNCEClassifier"
    X, y = _data(REGISTRY[name].data)
    params = {**REGISTRY[name].params, "max_epochs": 3}
    search = GridSearchCV(ESTIMATORS[name](**params), {"lr": [0.01, 0.05]}, cv=2)
    sequential = clone(search).fit(X, y)
    # forkserver: fresh interpreters that import sknce when they unpickle the estimators,
    # as on other machines; unlike spawn's, they exit at once when the cluster closes.
    method = {"distributed.worker.multiprocessing-method": "forkserver"}
    with dask.config.set(method):
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"OMP_NUM_THREADS": "1"},
        )
    with cluster, Client(cluster) as client, parallel_backend("dask"):
        pids = set(client.run(os.getpid).values())
        distributed = clone(search).set_params(n_jobs=-1).fit(X, y)
    assert len(pids) == 2 and os.getpid() not in pids
    np.testing.assert_array_equal(
        distributed.cv_results_["mean_test_score"], sequential.cv_results_["mean_test_score"]
    )
    assert distributed.best_params_ == sequential.best_params_
