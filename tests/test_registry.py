"""The test registry covers every public estimator, agrees with each, and every
cross-estimator test reads it."""

import distributed_worker
import numpy as np
import pytest
import scipy.sparse as sp
from _registry import REGISTRY, TASKS, Entry
from sklearn.base import is_classifier, is_regressor

import sknce


def test_every_public_estimator_has_an_entry():
    missing = sorted(set(sknce._ESTIMATORS) - set(REGISTRY))
    assert not missing, f"add an entry to tests/_registry.py for {missing}"
    assert set(REGISTRY) == set(sknce._ESTIMATORS)
    assert set(sknce.__all__) - {"__version__"} == set(sknce._ESTIMATORS)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_entry_holds_settings_the_estimator_accepts(name):
    entry = REGISTRY[name]
    estimator = getattr(sknce, name)()
    accepted = set(estimator.get_params())
    settings = (entry.params, entry.tiny, entry.streaming or {}, entry.distributed, entry.exact)
    modes = [mode.params for mode in entry.modes.values()]
    for values in (*settings, entry.network_change, entry.grid, *modes):
        assert set(values) <= accepted, sorted(set(values) - accepted)
    ((param, value),) = entry.network_change.items()
    assert value != entry.params.get(param, estimator.get_params()[param])


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_entry_says_what_its_estimator_is(name):
    """Task, output, targets and input form: as the estimator's own tags and methods say."""
    entry = REGISTRY[name]
    estimator = getattr(sknce, name)()
    tags = estimator.__sklearn_tags__()
    assert entry.task in TASKS
    assert (entry.task == "classifier") == is_classifier(estimator)
    assert (entry.task == "regressor") == is_regressor(estimator)
    assert (entry.task == "density") == (tags.estimator_type == "density_estimator")
    assert (entry.task == "transformer") == (tags.transformer_tags is not None)
    assert callable(getattr(estimator, entry.output, None)), entry.output
    assert entry.data.array == tags.input_tags.two_d_array
    if tags.target_tags.required:
        assert entry.takes_y
    for check, reason in entry.expected_failed_checks.items():
        assert check.startswith("check_") and reason


def _same(a, b) -> bool:
    if sp.issparse(a):
        return a.shape == b.shape and (a != b).nnz == 0
    return bool(np.array_equal(a, b)) if isinstance(a, np.ndarray) else a == b


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_entrys_data_kind_makes_what_it_says(name):
    kind = REGISTRY[name].data
    for n in (5, 24):
        X, y = kind.make(n, 0)
        assert (X.shape[0] if hasattr(X, "shape") else len(X)) == n == len(y)
        assert isinstance(X, (np.ndarray, sp.spmatrix, sp.sparray)) == kind.array
    assert _same(X, kind.make(24, 0)[0])  # a seed makes the same data
    assert not _same(X, kind.make(24, 1)[0])


def test_every_consumer_covers_the_registry():
    launched = {case.estimator for case in distributed_worker.cases()}
    assert launched == set(REGISTRY)


class _Recorder:
    def fit(self, *args):
        self.args = args
        return self

    def partial_fit(self, *args, **kwargs):
        self.args = (*args, kwargs)
        self.net_ = True
        return self

    def predict(self, X):
        return ("predicted", X)


def test_the_fit_helpers_pass_targets_to_estimators_that_take_them_only():
    unsupervised, supervised = REGISTRY["DirectNCEEmbedder"], REGISTRY["ConditionalNCEClassifier"]
    assert unsupervised.fit(_Recorder(), "X", "y").args == ("X",)
    assert supervised.fit(_Recorder(), "X", "y").args == ("X", "y")
    recorder = _Recorder()
    first = supervised.partial_fit(recorder, "X", [1, 0, 1]).args
    assert first[:2] == ("X", [1, 0, 1]) and list(first[2]["classes"]) == [0, 1]
    # the first call's keywords only on the first call; the caller's win
    assert supervised.partial_fit(recorder, "X", "y").args == ("X", "y", {})
    again = supervised.partial_fit(_Recorder(), "X", [1], classes=[0, 1, 2]).args
    assert again[2] == {"classes": [0, 1, 2]}
    assert supervised.output_of(_Recorder(), "X") == ("predicted", "X")


def test_a_new_kind_of_data_needs_no_edit_of_a_test():
    """An entry with a kind of data no test names runs through the helpers unchanged."""
    from _registry import DataKind

    kind = DataKind("points", lambda n, seed: (np.arange(n)[:, None] * 1.0, None), None)
    entry = Entry(
        data=kind,
        takes_y=False,
        output="predict",
        task="density",
        params={},
        tiny={},
        distributed={},
        network_change={"width": 2},
    )
    X, y = entry.data.make(3, 0)
    assert entry.fit(_Recorder(), X, y).args == (X,)
    assert entry.partial_fit(_Recorder(), X, y).args == (X, {})
