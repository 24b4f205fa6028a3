"""skorch's callback contract run against sknce (issue 22): scoring callbacks with
skorch's default caching, and named callbacks whose parameters ``set_params`` and
``GridSearchCV`` reach as ``callbacks__<name>__<param>``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import EpochScoring, LRScheduler, PrintLog
from test_common import ESTIMATORS, REGISTRY, _data

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)


def _make(name, **params):
    return ESTIMATORS[name](**{**REGISTRY[name].params, **params})


def _fit(estimator, name):
    X, y = _data(REGISTRY[name].data)
    return REGISTRY[name].fit(estimator, X, y)


@pytest.mark.parametrize("on_train", [True, False], ids=["train", "valid"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_epoch_scoring_with_skorchs_default_caching_scores_every_epoch(name, on_train):
    """skorch's EpochScoring caches each batch's y by default; an NCE batch's targets are
    not labels and failed to concatenate ('zero-dimensional arrays cannot be
    concatenated') on the classifier and ACEWord2Vec."""
    seen = []

    def custom(net, X, y):
        seen.append(len(net.history))
        return float(len(net.history))

    scoring = EpochScoring(custom, name="custom", use_caching=True, on_train=on_train)
    estimator = _fit(_make(name, early_stopping=not on_train, callbacks=[scoring]), name)
    if not seen:
        pytest.skip("no validation split in this estimator's test settings")
    # (an early stopping that weighs the start first records an epoch 0 without training)
    assert [row["custom"] for row in estimator.history_ if "custom" in row] == seen
    assert len(seen) >= len(estimator.history_) - 1


def _scheduled(name, **params):
    scheduler = LRScheduler(policy="StepLR", step_size=1, gamma=0.5)
    return _make(name, callbacks=[("lr", scheduler), PrintLog()], **params)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_named_callback_parameters_are_reached_by_set_params(name):
    estimator = _scheduled(name)
    params = estimator.get_params()
    assert params["callbacks__lr__gamma"] == 0.5
    assert isinstance(params["callbacks__PrintLog"], PrintLog)
    estimator.set_params(callbacks__lr__gamma=0.1, max_epochs=2)
    assert estimator.callbacks[0][1].gamma == 0.1
    assert estimator.max_epochs == 2
    estimator.set_params(callbacks__PrintLog__sink=print)
    assert estimator.callbacks[1].sink is print


def test_set_params_learning_rate_schedule_reaches_the_fit():
    name = "ConditionalNCEClassifier"
    estimator = _scheduled(name, max_epochs=3, optimizer_kwargs=None)
    estimator.set_params(callbacks__lr__gamma=0.1)
    fitted = _fit(estimator, name)
    lrs = [group["lr"] for group in fitted.net_.optimizer_.param_groups]
    np.testing.assert_allclose(lrs, estimator.lr * 0.1**3, rtol=1e-6)


def test_a_named_callback_can_be_replaced_and_an_unknown_name_is_named():
    estimator = _scheduled("DirectNCEEmbedder")
    other = LRScheduler(policy="StepLR", step_size=2)
    estimator.set_params(callbacks__lr=other)
    assert estimator.callbacks[0] == ("lr", other)
    with pytest.raises(ValueError, match=r"no callback named 'lrr'.*\['lr', 'PrintLog'\]"):
        estimator.set_params(callbacks__lrr__gamma=0.3)


def test_clone_keeps_named_callbacks_apart():
    estimator = _scheduled("DirectNCEEmbedder")
    twin = clone(estimator).set_params(callbacks__lr__gamma=0.9)
    assert estimator.callbacks[0][1].gamma == 0.5
    assert twin.callbacks[0][1].gamma == 0.9


@pytest.mark.parametrize("name", ["ConditionalNCEClassifier", "ConditionalNCERegressor"])
def test_grid_search_over_a_schedulers_parameter(name):
    X, y = _data(REGISTRY[name].data)
    search = GridSearchCV(
        _scheduled(name, max_epochs=2), {"callbacks__lr__step_size": [1, 2]}, cv=2
    ).fit(X, y)
    assert search.best_params_["callbacks__lr__step_size"] in (1, 2)
    assert search.best_estimator_.callbacks[0][1].step_size in (1, 2)
