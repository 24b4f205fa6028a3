"""scikit-learn's common checks and round trips over every public sknce estimator.

The one registry of the suite (``tests/_registry.py``) lists each estimator with fast
test settings and the kind of data it takes; ``EXPECTED_FAILED_CHECKS`` lists, per estimator, the
common checks that cannot pass and why (each reason also stands in the
estimator's docstring).
"""

from __future__ import annotations

import importlib
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from _registry import REGISTRY
from sklearn.base import clone, is_classifier, is_regressor
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
#   validation loss seldom beats a constant guess and fit ends with a ConvergenceWarning;
# - scikit-learn's common checks feed random count matrices in which some rows hold fewer
#   than 2 tokens, which the document embedders skip with a warning (tests/documents
#   checks that warning);
# - scikit-learn's set_output checks fit on a DataFrame and transform an array, and the
#   reverse, on purpose: a feature-names warning is the behaviour they expect.
TINY_FITS = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
RANDOM_COUNTS = pytest.mark.filterwarnings(
    r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning"
)
MIXED_FEATURE_NAMES = pytest.mark.filterwarnings(
    "ignore:X has feature names, but:UserWarning",
    "ignore:X does not have valid feature names, but:UserWarning",
)


# --- checks that cannot pass, with the reason (also stated in the docstring) ------
_WEIGHTS_NOT_REPEATS = {
    check: "a weight scales an example's loss in each stochastic batch; repeating the "
    "example changes the batches and the negatives drawn, so the two fits differ (the "
    "weighted objectives are tested against brute force in tests/test_losses_sample_weight.py)"
    for check in (
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weight_equivalence_on_sparse_data",
    )
}
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {
    "LandmarkNCEEmbedder": _WEIGHTS_NOT_REPEATS,
    "DirectNCEEmbedder": _WEIGHTS_NOT_REPEATS,
    "ACEWord2Vec": {},
    "ConditionalNCEClassifier": _WEIGHTS_NOT_REPEATS,
    "ConditionalNCERegressor": {
        **{
            check: "score_samples(X, y) is the log-density of y given X; the check calls "
            "score_samples(X) (predict passes it; batch invariance is tested in "
            "tests/conditional)"
            for check in (
                "check_methods_sample_order_invariance",
                "check_methods_subset_invariance",
                # run by scikit-learn with SCIPY_ARRAY_API=1 (.ci/test sets it)
                "check_array_api_input",
            )
        },
        **{
            check: reason + "; and the base density's leave-one-out choice of the ridge "
            "penalty leaves an example out with its whole weight, not one repeat "
            "(tests/conditional/test_regressor_weights.py checks the weighted base by "
            "brute force)"
            for check, reason in _WEIGHTS_NOT_REPEATS.items()
        },
    },
    "LatentClassNCEEmbedder": _WEIGHTS_NOT_REPEATS,
}


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
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


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
def _data(kind: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if kind == "counts":
        topics = rng.dirichlet(np.full(30, 0.1), size=3)
        y = rng.integers(0, 3, size=60)
        X = np.vstack([rng.multinomial(30, topics[c]) for c in y]).astype(np.float64)
        return X, y
    if kind == "tokens":
        vocab = [[f"a{i}" for i in range(6)], [f"b{i}" for i in range(6)]]
        y = rng.integers(0, 2, size=40)
        docs = [list(rng.choice(vocab[c], size=12)) for c in y]
        return docs, y
    if kind in ("classification", "groups"):
        centers = rng.normal(scale=3, size=(3, 5))
        y = rng.integers(0, 3, size=90)
        return centers[y] + rng.normal(size=(90, 5)), y
    if kind == "regression":
        X = rng.normal(size=(80, 3))
        return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=80)
    if kind == "text":
        docs, y = _data("tokens", seed)
        return [" ".join(doc) for doc in docs], y
    if kind == "sparse-counts":
        X, y = _data("counts", seed)
        return sp.csr_matrix(X), y
    if kind == "multilabel":
        X, y = _data("classification", seed)
        Y = (rng.random((len(y), 4)) < 0.3).astype(np.int64)
        Y[np.arange(len(y)), y] = 1  # every row has a label, tied to its class
        return X, Y
    raise ValueError(kind)


def _fit(estimator, entry):
    X, y = _data(entry.data)
    return entry.fit(estimator, X, y), X, y


def _output(estimator, X):
    if hasattr(estimator, "transform"):
        return estimator.transform(X)
    return estimator.predict(X)


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
    if is_classifier(estimator) or is_regressor(estimator):
        search = GridSearchCV(estimator, entry.grid, cv=2)
    else:
        pipe = Pipeline([("embed", estimator), ("clf", LogisticRegression(max_iter=200))])
        grid = {f"embed__{key}": values for key, values in entry.grid.items()}
        search = GridSearchCV(pipe, grid, cv=2)
    search.fit(X, y)
    assert search.best_params_
    assert np.isfinite(search.best_score_)
    assert len(search.predict(X)) == len(y)


@TINY_FITS
@RANDOM_COUNTS
@MIXED_FEATURE_NAMES
@pytest.mark.parametrize("name", [n for n, c in ESTIMATORS.items() if hasattr(c, "transform")])
def test_set_output_pandas(name):
    pytest.importorskip("pandas")
    entry = REGISTRY[name]
    if entry.data == "tokens":
        pytest.skip("token-list input has no column names; covered in tests/words")
    estimator = ESTIMATORS[name](**entry.params)
    check_set_output_transform(name, estimator)
    check_set_output_transform_pandas(name, estimator)
    check_global_output_transform_pandas(name, estimator)
