"""The test registry covers every public estimator, and every cross-estimator test reads it."""

import distributed_worker
import pytest
import test_properties
import test_streaming
from _registry import REGISTRY

import sknce


def test_every_public_estimator_has_an_entry():
    missing = sorted(set(sknce._ESTIMATORS) - set(REGISTRY))
    assert not missing, f"add an entry to tests/_registry.py for {missing}"
    assert set(REGISTRY) == set(sknce._ESTIMATORS)
    assert set(sknce.__all__) - {"__version__"} == set(sknce._ESTIMATORS)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_an_entry_holds_settings_the_estimator_accepts(name):
    entry = REGISTRY[name]
    cls = getattr(sknce, name)
    accepted = set(cls().get_params())
    modes = [mode.params for mode in entry.modes.values()]
    for settings in (entry.params, entry.tiny, entry.streaming or {}, entry.distributed, *modes):
        assert set(settings) <= accepted, sorted(set(settings) - accepted)
    assert entry.supervised == (entry.data not in ("counts", "tokens"))


def test_every_consumer_covers_the_registry():
    assert set(test_properties.TINY) == set(test_properties.KIND) == set(REGISTRY)
    streamed = {name for name, entry in REGISTRY.items() if entry.streaming is not None}
    assert set(test_streaming.PARTIAL_FIT_CASES) == streamed
    launched = {type(make()).__name__ for _, make, _ in distributed_worker.cases()}
    assert launched == set(REGISTRY)


class _Recorder:
    def fit(self, *args):
        self.args = args
        return self

    def partial_fit(self, *args, **kwargs):
        self.args = (*args, kwargs)
        return self


def test_the_fit_helpers_pass_targets_to_supervised_estimators_only():
    unsupervised, supervised = REGISTRY["DirectNCEEmbedder"], REGISTRY["ConditionalNCEClassifier"]
    assert unsupervised.fit(_Recorder(), "X", "y").args == ("X",)
    assert supervised.fit(_Recorder(), "X", "y").args == ("X", "y")
    assert supervised.partial_fit(_Recorder(), "X", "y", classes=[0]).args == (
        "X",
        "y",
        {"classes": [0]},
    )
