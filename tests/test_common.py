"""scikit-learn's common checks and round trips over every public sknce estimator.

The one registry of the suite (``tests/_registry.py``) lists each estimator with fast
test settings, the kind of data it takes and the common checks it cannot pass, with
the reason (each reason also stands in the estimator's docstring).
"""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _registry import REGISTRY, DataKind
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import (
    check_global_output_transform_pandas,
    check_set_output_transform,
    check_set_output_transform_pandas,
    parametrize_with_checks,
)

import sknce

# Warnings these tests expect, filtered where they arise so that a real one stands out:
# - the fits are tiny (one or two epochs on a few dozen random rows), so an embedder's
#   validation loss seldom beats a constant guess and fit ends with a ConvergenceWarning
#   (a classifier's: no epoch beat the label frequencies);
# - scikit-learn's common checks feed random count matrices in which some rows hold fewer
#   than 2 tokens, which the document embedders skip with a warning (tests/documents
#   checks that warning);
# - scikit-learn's set_output checks fit on a DataFrame and transform an array, and the
#   reverse, on purpose: a feature-names warning is the behaviour they expect.
TINY_FITS = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning",
    "ignore:No epoch of this fit beat:sklearn.exceptions.ConvergenceWarning",
)
RANDOM_COUNTS = pytest.mark.filterwarnings(
    r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning"
)
MIXED_FEATURE_NAMES = pytest.mark.filterwarnings(
    "ignore:X has feature names, but:UserWarning",
    "ignore:X does not have valid feature names, but:UserWarning",
)


def _available() -> dict[str, type]:
    """The registered estimators whose family module is importable."""
    found = {}
    for name in REGISTRY:
        try:
            found[name] = getattr(sknce, name)
        except (ImportError, AttributeError):
            continue
    return found


ESTIMATORS = _available()


def _instances():
    """The estimators that scikit-learn's common checks can test.

    Those checks feed 2-D arrays only: for an estimator of token lists (ACEWord2Vec)
    they yield only ``check_estimator_cloneable`` and warn that they test nothing else.
    tests/words/test_words_ace.py runs the checks that apply to it, and the round trips
    below (cloning included) cover it too.
    """
    instances = [cls(**REGISTRY[name].params) for name, cls in ESTIMATORS.items()]
    return [est for est in instances if est.__sklearn_tags__().input_tags.two_d_array]


def _expected_failed(estimator) -> dict[str, str]:
    return REGISTRY[type(estimator).__name__].expected_failed_checks


def test_every_public_estimator_is_registered_and_importable():
    assert set(REGISTRY) == set(sknce._ESTIMATORS)
    for name in sknce._ESTIMATORS:
        module = importlib.import_module(sknce._ESTIMATORS[name])
        assert hasattr(module, name), f"{name} is not implemented in {module.__name__}"


@TINY_FITS
@RANDOM_COUNTS
@parametrize_with_checks(_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# --- round trips on each estimator's own kind of data -----------------------------
#: Examples of the round trips' data (and of the other tests that take it from here).
N_SAMPLES = 80


def _data(kind: DataKind, seed: int = 0):
    """``N_SAMPLES`` examples of ``kind``; a sparse ``X`` as a dense array (the sparse
    form is what the streaming, distributed and property tests fit)."""
    X, y = kind.make(N_SAMPLES, seed)
    return (X.toarray() if sp.issparse(X) else X), y


def _fit(estimator, entry):
    X, y = _data(entry.data)
    return entry.fit(estimator, X, y), X, y


def _output(estimator, X):
    """The output of ``estimator`` that the round trips compare (its registry entry's)."""
    return REGISTRY[type(estimator).__name__].output_of(estimator, X)


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_pickle_round_trip(name):
    entry = REGISTRY[name]
    fitted, X, _ = _fit(ESTIMATORS[name](**entry.params), entry)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(_output(again, X), _output(fitted, X), rtol=1e-5, atol=1e-6)


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_clone_and_refit_is_reproducible(name):
    entry = REGISTRY[name]
    first, X, _ = _fit(ESTIMATORS[name](**entry.params), entry)
    twin = clone(first)
    assert twin.get_params() == first.get_params()
    assert not hasattr(twin, "net_")
    second, _, _ = _fit(twin, entry)
    np.testing.assert_allclose(_output(second, X), _output(first, X), rtol=1e-5, atol=1e-6)


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_grid_search_round_trip(name):
    entry = REGISTRY[name]
    estimator = ESTIMATORS[name](**entry.params)
    X, y = _data(entry.data)
    if entry.task == "transformer":  # searched through a linear probe of the labels
        pipe = Pipeline([("embed", estimator), ("clf", LogisticRegression(max_iter=200))])
        grid = {f"embed__{key}": values for key, values in entry.grid.items()}
        search = GridSearchCV(pipe, grid, cv=2).fit(X, y)
    else:  # by its own score
        search = GridSearchCV(estimator, entry.grid, cv=2).fit(*entry.args(X, y))
    assert search.best_params_
    assert np.isfinite(search.best_score_)
    if hasattr(search, "predict"):
        assert len(search.predict(X)) == len(y)


@TINY_FITS
@RANDOM_COUNTS
@MIXED_FEATURE_NAMES
@pytest.mark.parametrize("name", [n for n, c in ESTIMATORS.items() if hasattr(c, "transform")])
def test_set_output_pandas(name):
    pytest.importorskip("pandas")
    entry = REGISTRY[name]
    if not entry.data.array:
        pytest.skip(f"{entry.data.name} input has no column names")
    estimator = ESTIMATORS[name](**entry.params)
    check_set_output_transform(name, estimator)
    check_set_output_transform_pandas(name, estimator)
    check_global_output_transform_pandas(name, estimator)
