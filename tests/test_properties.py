"""Property-based tests: every public estimator and function on generated bad input.

Each call must either raise a clear error or return a finite, correct result:

* a clear error is a ``ValueError`` or ``TypeError`` raised in sknce's own code, or
  raised by scikit-learn's input and parameter validation (the errors sklearn's own
  estimators give, which name the input or the parameter); for ``WordVectors``
  lookups, gensim's ``KeyError`` naming the key;
* a result is checked: finite, of the right shape, and correct where the answer is
  known (halves of a document sum to it, a projection lies on the simplex, files
  read back what was written);
* after a failed ``fit``/``partial_fit`` the estimator is unfitted or exactly as
  before (every attribute the same object, the network's weights, optimizer state,
  history and settings unchanged).

The examples are derandomized, so CI runs the same cases every time. Set
``SKNCE_PROPERTY_REPORT=<path>`` to write the count of cases tried per category and
outcome (the note in CHANGES.md quotes it).
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
import traceback
import warnings
from collections import Counter, defaultdict
from numbers import Integral
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from _registry import REGISTRY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import UndefinedMetricWarning
from test_common import ESTIMATORS
from test_training_contract import _assert_same_state, _state

from sknce.contrastive import nce_optimal_gram, simplex_etf_report, supervised_loss
from sknce.datasets import make_latent_classes, make_loglinear_conditional, make_topic_corpus
from sknce.documents import project_simplex, recover_topic_posterior, split_documents
from sknce.words import WordVectors

#: Few examples per test, the same ones on every run.
CASES = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- outcomes -------------------------------------------------------------------------
OUTCOMES: Counter = Counter()
#: The distinct error messages of each category and outcome, for the report.
MESSAGES: defaultdict = defaultdict(set)
CLEAR_SKNCE = "clear error (sknce)"
CLEAR_SKLEARN = "clear error (scikit-learn's validation)"
HANDLED = "handled (finite, correct result)"

#: scikit-learn's modules whose errors are its input, parameter and target validation
#: (the errors its own estimators give).
_SKLEARN_VALIDATION = re.compile(
    r"sklearn/(utils/(validation|_param_validation|multiclass|_array_api|_indexing)"
    r"|metrics/_(classification|regression))\.py$"
)
_FAILED = object()


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    path = os.environ.get("SKNCE_PROPERTY_REPORT")
    if path:
        rows = [
            {"category": c, "outcome": o, "cases": n, "messages": sorted(MESSAGES[c, o])}
            for (c, o), n in OUTCOMES.items()
        ]
        rows.sort(key=lambda r: (r["category"], r["outcome"]))
        Path(path).write_text(json.dumps(rows, indent=1))


def _kind_of_error(error: BaseException) -> str | None:
    frames = traceback.extract_tb(error.__traceback__)
    last = Path(frames[-1].filename).as_posix() if frames else ""
    if isinstance(error, KeyError):
        return CLEAR_SKNCE if "/sknce/words/" in last else None
    if not isinstance(error, (ValueError, TypeError)):
        return None
    if "/sknce/" in last:
        return CLEAR_SKNCE
    if _SKLEARN_VALIDATION.search(last):
        return CLEAR_SKLEARN
    return None


def attempt(category: str, call, check=None):
    """``call()``'s result, or ``_FAILED`` after a clear error; anything else fails.

    ``check(result, warnings)`` asserts what a result must satisfy; it may return
    another outcome label than :data:`HANDLED` for the record.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as error:
            kind = _kind_of_error(error)
            if kind is None:
                raise AssertionError(
                    f"[{category}] not a clear error: {type(error).__name__}: {error}"
                ) from error
            OUTCOMES[category, kind] += 1
            MESSAGES[category, kind].add(f"{type(error).__name__}: {str(error)[:160]}")
            return _FAILED
    ours = [
        w
        for w in caught
        if issubclass(w.category, (FutureWarning, DeprecationWarning))
        and not re.search(r"/(skorch|torch)/", Path(w.filename).as_posix())
    ]
    assert not ours, f"[{category}] {ours[0].category.__name__}: {ours[0].message}"
    outcome = check(result, caught) if check is not None else None
    OUTCOMES[category, outcome or HANDLED] += 1
    return result


def _finite(value) -> bool:
    return bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


# --- estimators: tiny settings and valid data -------------------------------------------
COMMON = dict(max_epochs=1, batch_size=8, early_stopping=False, random_state=0)
#: The estimators of 2-D array input (the bad-X tests change its entries and shape).
ARRAY = [name for name in ESTIMATORS if REGISTRY[name].data.array]
#: Those whose fit takes targets (the bad-y tests).
TARGETED = [name for name in ARRAY if REGISTRY[name].takes_y]
#: Examples of the valid data.
N_SAMPLES = 24


def _make(name, **params):
    cls = ESTIMATORS[name]
    known = cls().get_params()
    merged = {**COMMON, **REGISTRY[name].tiny, **params}
    return cls(**{k: v for k, v in merged.items() if k in known})


def _valid(name: str, seed: int = 0, sparse: bool = False):
    """Small valid training data of an estimator: ``(X, y)``, a sparse X dense unless
    ``sparse`` (the mutations change a dense array)."""
    X, y = REGISTRY[name].data.make(N_SAMPLES, seed)
    return (X.toarray() if sp.issparse(X) and not sparse else X), y


def _fit(estimator, name, X, y):
    return REGISTRY[name].fit(estimator, X, y)


_FITTED: dict = {}


def _fitted(name):
    """A fitted estimator of ``name`` (a private copy each call)."""
    if name not in _FITTED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _FITTED[name] = _fit(_make(name), name, *_valid(name))
    return copy.deepcopy(_FITTED[name])


def _n_rows(X) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _check_outputs(estimator, X) -> None:
    """The outputs of a fitted estimator on ``X`` are finite and of the right shape."""
    n = _n_rows(X)
    if hasattr(estimator, "transform"):
        out = estimator.transform(X)
        assert out.shape[0] == n and _finite(out)
    if hasattr(estimator, "predict_proba"):
        proba = estimator.predict_proba(X)
        assert _finite(proba) and np.allclose(proba.sum(axis=1), 1.0)
        assert set(estimator.predict(X)) <= set(estimator.classes_)
    elif hasattr(estimator, "predict"):
        out = estimator.predict(X)
        assert out.shape == (n,) and _finite(out)


def _fit_case(category, estimator, fit, check) -> None:
    """Fit and ``check()``; after a failed fit, the estimator is unfitted or as before."""
    fitted_before = hasattr(estimator, "net_")
    before = _state(estimator) if fitted_before else dict(vars(estimator))
    if attempt(category, fit, lambda result, caught: check()) is not _FAILED:
        return
    if fitted_before:
        _assert_same_state(estimator, before)
    else:
        assert vars(estimator).keys() == before.keys()
        assert all(vars(estimator)[k] is v for k, v in before.items())


# --- bad X --------------------------------------------------------------------------
X_MUTATIONS = [
    "nan",
    "inf",
    "huge_scale",
    "huge_entry",
    "negative_entry",
    "non_integer_entry",
    "tiny_scale",
    "zeros",
    "empty_rows",
    "empty_columns",
    "one_sample",
    "two_samples",
    "one_feature",
    "one_dimensional",
    "three_dimensional",
    "strings_of_numbers",
    "letters",
    "objects_with_none",
    "complex",
    "booleans",
    "float32",
    "int64",
    "nested_list",
    "csr",
    "csc",
    "coo",
    "lil",
    "csr_array",
    "non_canonical_csr",
    "sparse_nan",
    "duplicate_rows",
    "scalar",
    "none",
]


def _mutate_X(X, y, mutation: str, data):
    """``(X, y)`` with ``X`` made bad or unusual as ``mutation`` says."""
    n, d = X.shape
    i = data.draw(st.integers(0, n - 1), label="row")
    j = data.draw(st.integers(0, d - 1), label="column")
    X = X.copy()
    if mutation == "nan":
        X[i, j] = np.nan
    elif mutation == "inf":
        X[i, j] = data.draw(st.sampled_from([np.inf, -np.inf]), label="sign")
    elif mutation == "huge_scale":
        X = X * data.draw(st.floats(1e15, 1e300), label="scale")
    elif mutation == "huge_entry":
        X[i, j] = data.draw(st.floats(1e15, 1.7e308), label="value")
    elif mutation == "negative_entry":
        X[i, j] = -data.draw(st.floats(0.5, 1e6), label="value")
    elif mutation == "non_integer_entry":
        X[i, j] += 0.5
    elif mutation == "tiny_scale":
        X = X * 1e-30
    elif mutation == "zeros":
        X = np.zeros_like(X)
    elif mutation == "empty_rows":
        X, y = X[:0], None if y is None else y[:0]
    elif mutation == "empty_columns":
        X = X[:, :0]
    elif mutation == "one_sample":
        X, y = X[:1], None if y is None else y[:1]
    elif mutation == "two_samples":
        X, y = X[:2], None if y is None else y[:2]
    elif mutation == "one_feature":
        X = X[:, :1]
    elif mutation == "one_dimensional":
        X = X[:, 0]
    elif mutation == "three_dimensional":
        X = X[:, :, None]
    elif mutation == "strings_of_numbers":
        X = X.astype(str)
    elif mutation == "letters":
        X = np.full(X.shape, "a")
    elif mutation == "objects_with_none":
        X = X.astype(object)
        X[i, j] = None
    elif mutation == "complex":
        X = X + 1j
    elif mutation == "booleans":
        X = np.median(X) < X
    elif mutation == "float32":
        X = X.astype(np.float32)
    elif mutation == "int64":
        X = np.round(X).astype(np.int64)
    elif mutation == "nested_list":
        X = X.tolist()
    elif mutation in ("csr", "csc", "coo", "lil"):
        X = sp.csr_matrix(X).asformat(mutation)
    elif mutation == "csr_array":
        X = sp.csr_array(X)
    elif mutation == "non_canonical_csr":
        coo = sp.coo_matrix(X)
        half = np.floor(coo.data / 2)
        rows, cols = np.tile(coo.row, 2), np.tile(coo.col, 2)
        X = sp.csr_matrix((np.concatenate([half, coo.data - half]), (rows, cols)), shape=X.shape)
        X.has_canonical_format = False
    elif mutation == "sparse_nan":
        X = sp.csr_matrix(X)
        X.data[i % max(X.nnz, 1)] = np.nan
    elif mutation == "duplicate_rows":
        X = np.repeat(X[i : i + 1], n, axis=0)
    elif mutation == "scalar":
        X = 3.0
    elif mutation == "none":
        X = None
    return X, y


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", X_MUTATIONS)
@pytest.mark.parametrize("name", ARRAY)
def test_fit_on_bad_X(name, mutation, data):
    X, y = _mutate_X(*_valid(name), mutation, data)
    refit = data.draw(st.booleans(), label="refit")
    estimator = _fitted(name) if refit else _make(name)
    if refit:
        estimator.set_params(warm_start=data.draw(st.booleans(), label="warm_start"))
    _fit_case(
        f"fit: X {mutation}",
        estimator,
        lambda: _fit(estimator, name, X, y),
        lambda: _check_outputs(estimator, X),
    )


# --- bad y --------------------------------------------------------------------------
Y_MUTATIONS = [
    "nan",
    "inf",
    "huge",
    "shorter",
    "longer",
    "one_class",
    "all_distinct",
    "strings",
    "mixed_types",
    "column_vector",
    "two_columns",
    "none",
    "floats_for_labels",
    "negative_labels",
    "booleans",
    "objects_with_none",
    "scalar",
]


def _mutate_y(y, mutation: str, data):
    i = data.draw(st.integers(0, len(y) - 1), label="index")
    y = np.asarray(y)
    if mutation in ("nan", "inf", "huge"):
        y = y.astype(np.float64)
        big = data.draw(st.floats(1e15, 1e300), label="value")
        y[i] = {"nan": np.nan, "inf": np.inf, "huge": big}[mutation]
        return y
    if mutation == "shorter":
        return y[:-1]
    if mutation == "longer":
        return np.concatenate([y, y[:1]])
    if mutation == "one_class":
        return np.zeros_like(y)
    if mutation == "all_distinct":
        return np.arange(len(y))
    if mutation == "strings":
        return np.array([f"c{v}" for v in y])
    if mutation == "mixed_types":
        return np.array([1, "a"] * (len(y) // 2), dtype=object)
    if mutation == "column_vector":
        return y[:, None]
    if mutation == "two_columns":
        return np.column_stack([y, y])
    if mutation == "none":
        return None
    if mutation == "floats_for_labels":
        return y + np.linspace(0.1, 0.9, len(y))
    if mutation == "negative_labels":
        return -y - 1
    if mutation == "booleans":
        return y > np.median(y)
    if mutation == "objects_with_none":
        y = y.astype(object)
        y[i] = None
        return y
    return 3.0  # scalar


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", Y_MUTATIONS)
@pytest.mark.parametrize("name", TARGETED)
def test_fit_on_bad_y(name, mutation, data):
    X, y = _valid(name)
    y = _mutate_y(y, mutation, data)
    refit = data.draw(st.booleans(), label="refit")
    estimator = _fitted(name) if refit else _make(name)
    _fit_case(
        f"fit: y {mutation}",
        estimator,
        lambda: estimator.fit(X, y),
        lambda: _check_outputs(estimator, X),
    )


# --- parameters ---------------------------------------------------------------------
_LAYERS = [(), (4, 4), (-1,), (0,), (2.5,), ("a",), [4], (True,), 4, None]
_ANY = ["abc", None, [1], {}, -1, 0.5, np.nan, object()]


def _candidates(constraint) -> list:
    """Values around a parameter constraint of scikit-learn's: valid, edge and invalid."""
    from sklearn.utils._param_validation import Interval, StrOptions

    if isinstance(constraint, Interval):
        lo = -1 if constraint.left is None else constraint.left
        values = [lo, lo - 1, lo + 1, np.nan, np.inf, -np.inf, "3"]
        if constraint.right is not None:
            values += [constraint.right, constraint.right + 1]
        if issubclass(constraint.type, Integral):
            values += [2.5, True, 8]
        else:
            values += [lo + 0.5, 1e12]
        return values
    if isinstance(constraint, StrOptions):
        return [*sorted(constraint.options), "not-an-option", 1]
    if constraint == "boolean":
        return [True, False, "yes", 2]
    if constraint in (tuple, list):
        return _LAYERS
    if constraint == "array-like":
        return [[], [1.0], [np.nan, 1.0], [-1.0, 2.0], "abc"]
    if constraint == "random_state":
        return [-1, 2**40, "seed", 0.5, np.random.RandomState(0)]
    if constraint == "verbose":
        return [-1, 2, "loud"]
    if constraint is dict:
        return [{"bogus_option": 1}, {"lr": 0.1}, {"weight_decay": -1.0}, {"betas": "x"}]
    if constraint is type:
        return [torch.optim.SGD, torch.optim.SparseAdam, int, torch.nn.Linear]
    return []


def _parameter_values(cls) -> list[tuple[str, object]]:
    pairs = []
    for param, constraints in cls._parameter_constraints.items():
        if param in ("verbose", "accelerator", "device", "callbacks", "n_jobs"):
            continue  # printing, launches and threads: tested where they belong
        values = [v for c in constraints for v in _candidates(c)] + _ANY
        pairs += [(param, v) for v in values]
    return pairs


@settings(CASES, max_examples=40)
@given(data=st.data())
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_parameters_out_of_range(name, data):
    param, value = data.draw(st.sampled_from(_parameter_values(ESTIMATORS[name])), label="param")
    if param in ("max_epochs", "patience", "n_grid", "n_landmarks", "n_components") and (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 64
    ):
        return  # valid, only slow
    X, y = _valid(name)
    estimator = _make(name).set_params(**{param: value})
    _fit_case(
        f"parameter {param}",
        estimator,
        lambda: _fit(estimator, name, X, y),
        lambda: _check_outputs(estimator, X),
    )


# --- inference ----------------------------------------------------------------------
def _inference_methods(name) -> list[str]:
    cls = ESTIMATORS[name]
    methods = ["transform", "predict", "predict_proba", "predict_log_proba", "predict_interval"]
    methods += ["score", "score_samples", "predict_topk"]
    return [m for m in methods if hasattr(cls, m)]


def _call(estimator, method, X, y):
    takes_y = REGISTRY[type(estimator).__name__].takes_y
    if method in ("score", "score_samples") and takes_y and y is not None:
        return getattr(estimator, method)(X, y)
    if method in ("score", "score_samples"):
        return getattr(estimator, method)(X)
    if method == "predict_topk":
        return estimator.predict_topk(X, 2)
    return getattr(estimator, method)(X)


#: scikit-learn's R² of a single sample: NaN, with an UndefinedMetricWarning.
UNDEFINED_R2 = "handled (R² of one sample: NaN with scikit-learn's UndefinedMetricWarning)"


def _check_inference(estimator, method, X, result, caught=()) -> str | None:
    n = _n_rows(X)
    if method == "score":
        if n < 2 and np.isnan(result):
            assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)
            return UNDEFINED_R2
        assert np.isfinite(result)
        return None
    if method == "predict_topk":
        labels, log_proba = result
        assert labels.shape == (n, 2) and _finite(log_proba)
    elif method == "predict" and hasattr(estimator, "classes_"):
        assert len(result) == n and set(result) <= set(estimator.classes_)
    elif method == "score_samples":
        # A log-density: finite, or -inf for a target outside the density's support.
        assert result.shape == (n,) and not np.any(np.isnan(result))
        assert not np.any(np.isposinf(result))
    else:
        assert result.shape[0] == n and _finite(result)
    return None


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", [*X_MUTATIONS, "other_n_features"])
@pytest.mark.parametrize("name", ARRAY)
def test_inference_on_bad_X(name, mutation, data):
    estimator = _fitted(name)
    X, y = _valid(name, seed=1)
    if mutation == "other_n_features":
        X = np.hstack([X, X[:, :1]])
    else:
        X, y = _mutate_X(X, y, mutation, data)
    method = data.draw(st.sampled_from(_inference_methods(name)), label="method")
    before = _state(estimator)
    attempt(
        f"{method}: X {mutation}",
        lambda: _call(estimator, method, X, y),
        lambda result, caught: _check_inference(estimator, method, X, result, caught),
    )
    _assert_same_state(estimator, before)  # inference changes nothing


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", Y_MUTATIONS)
@pytest.mark.parametrize("name", TARGETED)
def test_scoring_with_bad_y(name, mutation, data):
    estimator = _fitted(name)
    X, y = _valid(name, seed=1)
    y = _mutate_y(y, mutation, data)
    method = data.draw(
        st.sampled_from([m for m in ("score", "score_samples") if hasattr(estimator, m)])
    )
    attempt(
        f"{method}: y {mutation}",
        lambda: getattr(estimator, method)(X, y),
        lambda result, caught: _check_inference(estimator, method, X, result, caught),
    )


# --- partial_fit sequences ------------------------------------------------------------
@settings(CASES, max_examples=10)
@given(data=st.data())
@pytest.mark.parametrize("name", ARRAY)
def test_partial_fit_sequences(name, data):
    """Valid and bad chunks in any order: each failed call leaves the estimator as it was."""
    estimator = _make(name)
    entry = REGISTRY[name]
    X0, y0 = _valid(name)
    declared = entry.first_call(y0)  # e.g. the classes, at the first call only
    for step in range(3):
        mutation = data.draw(st.sampled_from(["valid", *X_MUTATIONS[:12]]), label="chunk")
        X, y = _valid(name, seed=step) if mutation == "valid" else (X0, y0)
        if mutation != "valid":
            X, y = _mutate_X(X, y, mutation, data)
        use = declared if not hasattr(estimator, "net_") else {}
        _fit_case(
            f"partial_fit: X {mutation}",
            estimator,
            lambda X=X, y=y, use=use: estimator.partial_fit(*entry.args(X, y), **use),
            lambda X=X: _check_outputs(estimator, X),
        )


# --- ACEWord2Vec --------------------------------------------------------------------
CORPUS_MUTATIONS = [
    "empty_corpus",
    "empty_documents",
    "one_word",
    "int_tokens",
    "none_token",
    "list_token",
    "bytes_tokens",
    "empty_string_tokens",
    "surrogate_token",
    "a_string",
    "strings_as_documents",
    "generator",
    "nested_deeper",
    "numpy_documents",
    "document_is_none",
    "dict_document",
    "huge_vocabulary_one_document",
    "repeated_single_token",
]


def _mutate_corpus(docs, mutation: str, data):
    i = data.draw(st.integers(0, len(docs) - 1), label="document")
    docs = [list(d) for d in docs]
    if mutation == "empty_corpus":
        return []
    if mutation == "empty_documents":
        return [[] for _ in docs]
    if mutation == "one_word":
        return [["w"] for _ in docs]
    if mutation == "int_tokens":
        return [[1, 2, 3] for _ in docs]
    if mutation == "none_token":
        docs[i][1] = None
    elif mutation == "list_token":
        docs[i][2] = ["x"]
    elif mutation == "bytes_tokens":
        return [[w.encode() for w in d] for d in docs]
    elif mutation == "empty_string_tokens":
        return [["", "", ""] for _ in docs]
    elif mutation == "surrogate_token":
        docs[i][0] = "\ud800"
    elif mutation == "a_string":
        return "w0 w1 w2 w3"
    elif mutation == "strings_as_documents":
        return [" ".join(d) for d in docs]
    elif mutation == "generator":
        return (d for d in docs)
    elif mutation == "nested_deeper":
        return [[d] for d in docs]
    elif mutation == "numpy_documents":
        return [np.array(d) for d in docs]
    elif mutation == "document_is_none":
        docs[i] = None
    elif mutation == "dict_document":
        docs[i] = {"a": 1}
    elif mutation == "huge_vocabulary_one_document":
        return [[f"t{k}" for k in range(500)]]
    elif mutation == "repeated_single_token":
        return [["w"] * 20 for _ in docs]
    return docs


def _check_ace(estimator, docs) -> None:
    vectors = estimator.wv_.vectors
    assert _finite(vectors) and vectors.shape[1] == estimator.n_components
    assert len(estimator.wv_) == len(estimator.vocabulary_)


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", CORPUS_MUTATIONS)
def test_ace_fit_on_bad_corpora(mutation, data):
    name = "ACEWord2Vec"
    docs = _mutate_corpus(_valid(name)[0], mutation, data)
    refit = data.draw(st.booleans(), label="refit")
    estimator = _fitted(name) if refit else _make(name)
    if refit:
        estimator.set_params(warm_start=data.draw(st.booleans(), label="warm_start"))
    _fit_case(
        f"ACEWord2Vec fit: corpus {mutation}",
        estimator,
        lambda: estimator.fit(docs),
        lambda: _check_ace(estimator, docs),
    )


@CASES
@given(data=st.data())
@pytest.mark.parametrize("mutation", CORPUS_MUTATIONS)
def test_ace_inference_on_bad_corpora(mutation, data):
    estimator = _fitted("ACEWord2Vec")
    docs = _mutate_corpus(_valid("ACEWord2Vec", seed=1)[0], mutation, data)
    method = data.draw(st.sampled_from(["transform", "score", "partial_fit"]), label="method")
    before = _state(estimator)
    result = attempt(
        f"ACEWord2Vec {method}: corpus {mutation}", lambda: getattr(estimator, method)(docs)
    )
    if result is _FAILED:
        _assert_same_state(estimator, before)
    elif method == "transform":
        assert _finite(result) and result.shape[1] == estimator.n_components
    elif method == "score":
        assert np.isfinite(result)
    else:
        _check_ace(estimator, docs)


# --- word vectors: construction, queries, files ---------------------------------------
_KNOWN = ["a", "b", "c", "d", "e"]
_WORD = st.one_of(st.sampled_from([*_KNOWN, "zz"]), st.text(max_size=4))
_QUERY = st.one_of(_WORD, st.lists(_WORD, max_size=3), st.integers(-3, 10), st.none())


def _sometimes_bad(draw, values: np.ndarray, bad: list) -> np.ndarray:
    """``values``, or (one time in three) a copy with one entry replaced by a bad one."""
    if values.size and draw(st.integers(0, 2)) == 2:
        values = values.copy()
        values.flat[draw(st.integers(0, values.size - 1))] = draw(st.sampled_from(bad))
    return values


@st.composite
def _word_table(draw):
    """Words and vectors: mostly consistent, sometimes not (duplicates, shapes, NaN)."""
    unique = draw(st.integers(0, 3)) < 3
    words = draw(st.lists(_WORD, max_size=5, unique=unique))
    dim = draw(st.integers(0, 3))
    rows = len(words) if draw(st.integers(0, 3)) < 3 else draw(st.integers(0, 6))
    vectors = draw(hnp.arrays(np.float32, (rows, dim), elements=st.floats(-3, 3, width=32)))
    vectors = _sometimes_bad(draw, vectors, [np.nan, np.inf, 0.0])
    return words, vectors if draw(st.integers(0, 5)) < 5 else vectors.ravel()


@settings(CASES, max_examples=60)
@given(table=_word_table())
def test_word_vectors_construction(table):
    words, vectors = table
    wv = attempt("WordVectors(words, vectors)", lambda: WordVectors(words, vectors))
    if wv is not _FAILED:
        assert wv.index_to_key == list(words) and _finite(wv.vectors)
        np.testing.assert_array_equal(wv.vectors, np.asarray(vectors, dtype=np.float32))


#: Five words, one of them with a zero vector.
_TABLE = WordVectors(_KNOWN, np.vstack([np.eye(4, 3) + 0.1, np.zeros((1, 3))]))


@settings(CASES, max_examples=60)
@given(
    query=st.one_of(_WORD, _WORD, st.lists(_WORD, min_size=1, max_size=3), _QUERY),
    other=st.one_of(_WORD, st.lists(_WORD, min_size=1, max_size=3), _QUERY),
    topn=st.one_of(st.integers(-2, 6), st.none(), st.just(2.5)),
)
def test_word_vector_queries(query, other, topn):
    wv = _TABLE
    queries = {
        "most_similar": lambda: wv.most_similar(query, topn=topn),
        "similarity": lambda: wv.similarity(query, other),
        "distances": lambda: wv.distances(query),
        "get_mean_vector": lambda: wv.get_mean_vector(query),
        "doesnt_match": lambda: wv.doesnt_match(query),
        "n_similarity": lambda: wv.n_similarity(query, other),
        "rank": lambda: wv.rank(query, other),
    }
    for method, call in queries.items():
        result = attempt(f"WordVectors.{method}", call)
        if result is _FAILED or isinstance(result, (str, int)):
            continue
        if isinstance(result, list):
            assert all(
                np.isfinite(score) and -1 - 1e-6 <= score <= 1 + 1e-6 for _, score in result
            )
        else:
            assert _finite(result)


@settings(CASES, max_examples=40)
@given(
    words=st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=4, unique=True),
    dim=st.integers(1, 3),
    binary=st.booleans(),
    suffix=st.sampled_from([".txt", ".gz", ".bz2"]),
)
def test_word_vectors_round_trip_or_refuse(words, dim, binary, suffix):
    """Saved words read back exactly, or saving refuses them and writes nothing."""
    vectors = np.arange(len(words) * dim, dtype=np.float32).reshape(len(words), dim) / 7
    wv = WordVectors(words, vectors)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"vectors{suffix}"
        saved = attempt(
            "WordVectors.save_word2vec_format", lambda: wv.save_word2vec_format(path, binary)
        )
        if saved is _FAILED:
            assert not path.exists() and not os.listdir(directory)
            return
        again = attempt(
            "WordVectors.load_word2vec_format",
            lambda: WordVectors.load_word2vec_format(path, binary=binary),
        )
        assert again is not _FAILED, "a file sknce wrote must read back"
        assert again.index_to_key == list(words)
        np.testing.assert_allclose(again.vectors, vectors, rtol=1e-6)


@settings(CASES, max_examples=40)
@given(content=st.binary(max_size=80), binary=st.booleans(), header=st.booleans())
def test_word_vectors_reject_damaged_files(content, binary, header):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "vectors.bin"
        path.write_bytes((b"2 3\n" if header else b"") + content)
        wv = attempt(
            "WordVectors.load_word2vec_format (damaged)",
            lambda: WordVectors.load_word2vec_format(path, binary=binary),
        )
    if wv is not _FAILED:
        assert _finite(wv.vectors) and len(set(wv.index_to_key)) == len(wv)


# --- functions --------------------------------------------------------------------------
_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
_MATRIX = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), elements=_FLOATS
)
_COUNTS = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=2, max_dims=2, min_side=0, max_side=6),
    elements=st.one_of(st.integers(-2, 6).map(float), st.sampled_from([0.5, np.nan, 1e12])),
)


@settings(CASES, max_examples=60)
@given(
    X=_COUNTS,
    split=st.sampled_from(["both", "partition", "resample", "word", "bad"]),
    sparse=st.booleans(),
)
def test_split_documents(X, split, sparse):
    X_in = sp.csr_matrix(X) if sparse and X.ndim == 2 else X
    result = attempt("split_documents", lambda: split_documents(X_in, split, random_state=0))
    if result is _FAILED:
        return
    left, right = (sp.csr_matrix(half).toarray() for half in result)
    assert left.shape == right.shape == X.shape
    assert np.all(left >= 0) and np.all(right >= 0)
    assert np.all(np.mod(left, 1) == 0) and np.all(np.mod(right, 1) == 0)
    if split in ("partition", "word"):
        # Partitions split the tokens: the halves sum to the document.
        np.testing.assert_array_equal(left + right, X)


def _simplex_projection(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of one vector on the simplex (Duchi et al., 2008), for reference."""
    v = v - v.max()  # the same projection, computed without cancelling large values
    u = np.sort(v)[::-1]
    cumulative = np.cumsum(u) - 1.0
    rho = np.nonzero(u - cumulative / np.arange(1, len(v) + 1) > 0)[0][-1]
    return np.maximum(v - cumulative[rho] / (rho + 1), 0.0)


@settings(CASES, max_examples=60)
@given(V=_MATRIX)
def test_project_simplex(V):
    P = attempt("project_simplex", lambda: project_simplex(V))
    if P is _FAILED:
        return
    V2 = np.atleast_2d(V)
    assert P.shape == V2.shape and _finite(P) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-9)
    for row, projected in zip(V2, P, strict=True):
        np.testing.assert_allclose(projected, _simplex_projection(row), atol=1e-9)


_LANDMARK = {}


def _landmark():
    if not _LANDMARK:
        corpus = make_topic_corpus(40, n_topics=2, n_words=8, mean_length=12, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            embedder = _make("LandmarkNCEEmbedder", landmarks="words", n_landmarks=8)
            _LANDMARK["embedder"] = embedder.fit(corpus.X)
        _LANDMARK["corpus"] = corpus
    return _LANDMARK["embedder"], _LANDMARK["corpus"]


@settings(CASES, max_examples=40)
@given(
    which=st.sampled_from(["topics", "word_probs", "X"]),
    replacement=st.sampled_from(["nan", "negative", "transposed", "empty", "zeros", "huge", "1d"]),
    normalize=st.booleans(),
)
def test_recover_topic_posterior(which, replacement, normalize):
    embedder, corpus = _landmark()
    args = {"X": corpus.X[:5].toarray(), "topics": corpus.topics, "word_probs": corpus.word_probs}
    value = np.asarray(args[which], dtype=float).copy()
    if replacement == "nan":
        value.flat[0] = np.nan
    elif replacement == "negative":
        value.flat[0] = -1.0
    elif replacement == "transposed":
        value = value.T
    elif replacement == "empty":
        value = value[:0]
    elif replacement == "zeros":
        value = np.zeros_like(value)
    elif replacement == "huge":
        value = value * 1e300
    else:
        value = value.ravel()
    args[which] = value
    posterior = attempt(
        f"recover_topic_posterior: {which} {replacement}",
        lambda: recover_topic_posterior(embedder, **args, normalize=normalize),
    )
    if posterior is _FAILED:
        return
    assert _finite(posterior) and posterior.shape == (args["X"].shape[0], corpus.topics.shape[0])
    if normalize:
        assert np.all(posterior >= 0)
        np.testing.assert_allclose(posterior.sum(axis=1), 1.0, rtol=1e-6)


@st.composite
def _representations(draw):
    """Representations and their labels: mostly consistent, sometimes not."""
    n, d = draw(st.integers(2, 8)), draw(st.integers(1, 4))
    n, d = (0, d) if draw(st.integers(0, 9)) == 9 else (n, d)  # sometimes empty
    Z = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-5, 5)))
    Z = _sometimes_bad(draw, Z, [np.nan, np.inf, 1e300])
    length = n if draw(st.integers(0, 3)) < 3 else draw(st.integers(0, 9))
    labels = np.asarray(draw(st.lists(st.integers(0, 2), min_size=length, max_size=length)))
    labels = _sometimes_bad(draw, labels.astype(float), [np.nan, -1.0, 0.5])
    return Z if draw(st.integers(0, 5)) < 5 else Z.ravel(), labels


@settings(CASES, max_examples=60)
@given(case=_representations())
def test_simplex_etf_report(case):
    Z, labels = case
    report = attempt("simplex_etf_report", lambda: simplex_etf_report(Z, labels))
    if report is _FAILED:
        return
    for key in ("mean_cosine", "etf_cosine", "mean_intra_var"):
        assert np.isfinite(report[key])
    assert -1 - 1e-9 <= report.mean_cosine <= 1 + 1e-9


@st.composite
def _class_probs(draw):
    """A probability vector over 0..5 classes: mostly valid, sometimes not."""
    size = draw(st.integers(2, 5)) if draw(st.integers(0, 5)) < 5 else draw(st.integers(0, 1))
    weights = draw(hnp.arrays(np.float64, size, elements=st.floats(0.05, 1)))
    probs = weights / weights.sum() if weights.size else weights
    if draw(st.integers(0, 4)) == 4:
        probs = probs * 2  # does not sum to 1
    return _sometimes_bad(draw, probs, [np.nan, np.inf, -0.1, 0.0])


_PROBS = _class_probs()


@settings(CASES, max_examples=40)
@given(
    class_probs=_PROBS,
    n_negatives=st.one_of(st.integers(1, 3), st.sampled_from([-1, 0, 2.5, "2"])),
    loss=st.sampled_from(["logistic", "hinge", "bad"]),
    beta=st.sampled_from([1.0, 0.0, -1.0, np.nan]),
)
def test_nce_optimal_gram(class_probs, n_negatives, loss, beta):
    result = attempt(
        "nce_optimal_gram",
        lambda: nce_optimal_gram(
            class_probs, n_negatives, loss, beta, n_steps=5, batch_size=64, random_state=0
        ),
    )
    if result is _FAILED:
        return
    gram, embeddings = result
    assert _finite(gram) and np.allclose(gram, gram.T)
    np.testing.assert_allclose(np.diag(gram), 1.0, atol=1e-6)
    assert np.linalg.eigvalsh(gram).min() > -1e-6
    np.testing.assert_allclose(embeddings @ embeddings.T, gram, atol=1e-6)


@st.composite
def _embeddings_and_probs(draw):
    probs = draw(_PROBS)
    rows = probs.shape[0] if draw(st.integers(0, 3)) < 3 else draw(st.integers(0, 5))
    shape = (rows, draw(st.integers(1, 4)) if draw(st.integers(0, 5)) < 5 else 0)
    embeddings = draw(hnp.arrays(np.float64, shape, elements=st.floats(-2, 2)))
    return _sometimes_bad(draw, embeddings, [np.nan, np.inf, 1e300]), probs


@settings(CASES, max_examples=40)
@given(
    case=_embeddings_and_probs(),
    loss=st.sampled_from(["logistic", "hinge", "bad"]),
    beta=st.sampled_from([1.0, 0.0, -1.0, np.nan]),
)
def test_supervised_loss(case, loss, beta):
    embeddings, class_probs = case
    value = attempt(
        "supervised_loss", lambda: supervised_loss(embeddings, class_probs, loss, beta)
    )
    if value is not _FAILED:
        assert np.isfinite(value) and value >= 0


_SIZE = st.integers(2, 6)
_SIZES = st.one_of(_SIZE, _SIZE, _SIZE, st.sampled_from([-1, 0, 1, 2.5, np.nan, "3", None]))


@settings(CASES, max_examples=60)
@given(
    generator=st.sampled_from(["topics", "loglinear", "latent"]),
    n=_SIZES,
    a=_SIZES,
    b=_SIZES,
    real=st.one_of(*[st.floats(0.1, 3)] * 3, st.sampled_from([0.0, -1.0, np.nan, np.inf, 1e300])),
)
def test_dataset_generators(generator, n, a, b, real):
    if generator == "topics":
        call = lambda: make_topic_corpus(  # noqa: E731
            n, n_topics=a, n_words=b, alpha=real, mean_length=5, random_state=0
        )
    elif generator == "loglinear":
        call = lambda: make_loglinear_conditional(n, m_x=a, m_y=b, d=2, random_state=0)  # noqa: E731
    else:
        call = lambda: make_latent_classes(  # noqa: E731
            n, n_classes=a, n_features=b, separation=real, random_state=0
        )
    result = attempt(f"make_* ({generator})", call)
    if result is _FAILED:
        return
    X = result[0] if isinstance(result, tuple) else result.X
    assert X.shape[0] == n and _finite(X.toarray() if sp.issparse(X) else X)


# --- streams of chunks (issue 22) ----------------------------------------------------------
STREAMING = [name for name in ARRAY if getattr(ESTIMATORS[name], "_fits_streams", False)]
CHUNK_MUTATIONS = [
    "valid",
    "index_out_of_range",
    "negative_index",
    "decreasing_indptr",
    "other_n_features",
    "negative",
    "nan",
    "one_row",
    "empty",
    "text",
    "not_a_pair",
]


def _chunk(name, seed: int, mutation: str, data):
    """One chunk of ``name``'s stream (a block, or an ``(X, y)`` pair), maybe damaged."""
    X, y = _valid(name, seed, sparse=True)  # in the form users pass
    if mutation in ("index_out_of_range", "negative_index", "decreasing_indptr"):
        X = sp.csr_matrix(X)
        X.indices = X.indices.copy()
        X.indptr = X.indptr.copy()
        at = data.draw(st.integers(0, X.nnz - 1), label="entry")
        if mutation == "index_out_of_range":
            X.indices[at] = X.shape[1] + data.draw(st.integers(0, 1000), label="beyond")
        elif mutation == "negative_index":
            X.indices[at] = -1
        else:
            row = data.draw(st.integers(1, X.shape[0] - 1), label="row")
            X.indptr[row] = X.indptr[row + 1] + 1
    elif mutation == "other_n_features":
        X = X[:, :-1]
    elif mutation == "negative":
        X = -abs(X)
    elif mutation == "nan":
        X = X.toarray() if sp.issparse(X) else X.copy()
        X[0, 0] = np.nan
    elif mutation == "one_row":
        X, y = X[:1], None if y is None else y[:1]
    elif mutation == "empty":
        X, y = X[:0], None if y is None else y[:0]
    elif mutation == "text":
        X = np.array(["the cat sat"] * X.shape[0])
    if ESTIMATORS[name]._stream_carries_y and mutation != "not_a_pair":
        return (X, y)
    return X


class _Passes:
    """A restartable stream whose later passes yield ``later`` of its chunks."""

    def __init__(self, chunks, later):
        self.chunks, self.later, self.done = chunks, later, 0

    def __iter__(self):
        n = len(self.chunks) if self.done == 0 else self.later
        yield from (self.chunks[i % len(self.chunks)] for i in range(n))
        self.done += 1


@settings(CASES, max_examples=8)
@given(data=st.data())
@pytest.mark.parametrize("name", STREAMING)
def test_generated_chunk_streams(name, data):
    """Sequences of valid and damaged chunks, passes that change: a fit or a clear error
    naming the chunk (or the stream's passes)."""
    n_chunks = data.draw(st.integers(1, 4), label="chunks")
    mutations = [
        data.draw(st.sampled_from(CHUNK_MUTATIONS), label=f"chunk {i}") for i in range(n_chunks)
    ]
    chunks = [_chunk(name, i, m, data) for i, m in enumerate(mutations)]
    later = data.draw(st.sampled_from([n_chunks, n_chunks - 1, n_chunks + 1]), label="later")
    stream = _Passes(chunks, later) if later != n_chunks or data.draw(st.booleans()) else chunks
    estimator = _make(name, **REGISTRY[name].streaming, max_epochs=2)
    result = attempt(
        f"stream: {'+'.join(sorted(set(mutations)))}, later pass {later - n_chunks:+d}",
        lambda: estimator.fit(stream),
        lambda result, caught: _check_outputs(
            estimator, chunks[0][0] if isinstance(chunks[0], tuple) else chunks[0]
        ),
    )
    if result is not _FAILED:
        # a fit ends only on sound chunks whose every pass yields the same chunks
        assert set(mutations[1:]) <= {"valid", "one_row"}
        assert later == n_chunks or not isinstance(stream, _Passes)


@settings(CASES, max_examples=12)
@given(content=st.binary(max_size=200), keep=st.integers(0, 400), npz=st.booleans())
def test_generated_chunk_files(content, keep, npz):
    """A chunk file holding random bytes, or a valid archive cut short: a chunk read back
    as written, or a ValueError naming the file."""
    from sknce.datasets import NpzChunks, save_npz_chunks

    with tempfile.TemporaryDirectory() as directory:
        chunks = save_npz_chunks([sp.random(4, 5, density=0.5, random_state=0)], directory)
        path = chunks.files[0]
        written = path.read_bytes()
        path.write_bytes(written[:keep] if npz else content)
        damaged = path.read_bytes() != written

        def check(block, caught):
            assert not damaged, "a damaged chunk file was read without an error"

        category = "chunk file: random bytes or cut short"
        if attempt(category, lambda: NpzChunks([path])[0], check) is _FAILED:
            assert all(path.name in m for m in MESSAGES[category, CLEAR_SKNCE])


# --- continued fits after set_params (issue 22) --------------------------------------------
def _continued_change(estimator, data) -> dict:
    """A parameter change: one that fixes the network (another value) or a setting."""
    current = estimator.get_params()
    choices = []
    for key in ("n_components", "n_landmarks", "embedding_dim"):
        if isinstance(current.get(key), Integral):
            choices.append({key: current[key] + 1})
    if isinstance(current.get("hidden_layer_sizes"), tuple):
        choices.append({"hidden_layer_sizes": (*current["hidden_layer_sizes"], 3)})
    choices += [
        {"batch_size": 3},
        {"optimizer": torch.optim.SGD},
        {"optimizer_kwargs": {"weight_decay": 0.01}},
        {"callbacks": [("noop", _Noop())]},
        {"lr": 0.5},
    ]
    return data.draw(st.sampled_from(choices), label="change")


from skorch.callbacks import Callback as _Callback  # noqa: E402


class _Noop(_Callback):
    pass


@settings(CASES, max_examples=8)
@given(data=st.data())
@pytest.mark.parametrize("name", ARRAY)
def test_partial_fit_after_set_params(name, data):
    """A change between partial_fit calls: honoured (the net takes it) or refused with an
    error naming it, the estimator as before."""
    estimator = _make(name)
    X, y = _valid(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        REGISTRY[name].partial_fit(estimator, X, y)
    change = _continued_change(estimator, data)
    estimator.set_params(**change)
    ((key, value),) = change.items()

    def check():
        net = estimator.net_
        if key == "batch_size":
            assert net.batch_size == value
        elif key == "optimizer":
            assert isinstance(net.optimizer_, value)
        elif key == "optimizer_kwargs":
            assert all(g["weight_decay"] == 0.01 for g in net.optimizer_.param_groups)
        elif key == "callbacks":
            assert "noop" in dict(net.callbacks_)
        elif key == "lr":
            assert all(g["lr"] == value for g in net.optimizer_.param_groups)
        else:
            raise AssertionError(f"{key} changed and the continued fit did not refuse it")

    _fit_case(
        f"partial_fit after set_params({key})",
        estimator,
        lambda: REGISTRY[name].partial_fit(estimator, X, y),
        check,
    )
    if key in ("n_components", "n_landmarks", "embedding_dim", "hidden_layer_sizes"):
        assert OUTCOMES[f"partial_fit after set_params({key})", CLEAR_SKNCE] > 0


# --- user encoders (issue 22) -----------------------------------------------------------------
class _Faulty(torch.nn.Module):
    """An encoder whose output has a generated fault."""

    def __init__(self, n_features, fault="none", rows=0, width=4):
        super().__init__()
        self.linear = torch.nn.Linear(n_features, width)
        self.fault, self.rows = fault, rows

    def forward(self, x):
        out = self.linear(x)
        if self.fault == "rows":
            out = (
                out[: max(x.shape[0] - self.rows, 0)]
                if self.rows > 0
                else torch.cat([out, out[:1]])
            )
        elif self.fault == "float64":
            out = out.double()
        elif self.fault == "int64":
            out = out.long()
        elif self.fault == "nan" and self.training:
            out = out * float("nan")
        elif self.fault == "3d":
            out = out.unsqueeze(1)
        return out


@settings(CASES, max_examples=6)
@given(
    fault=st.sampled_from(["none", "rows", "float64", "int64", "nan", "3d"]),
    rows=st.integers(-1, 3),
)
@pytest.mark.parametrize("name", [n for n in ARRAY if "encoder" in ESTIMATORS[n]().get_params()])
def test_user_encoders_with_generated_faults(name, fault, rows):
    """An encoder returning the wrong rows, dtype, shape or values: a ValueError saying
    what an encoder must return; a sound one trains."""
    X, y = _valid(name)
    encoder = _Faulty(X.shape[1], fault, rows)
    estimator = _make(name, encoder=encoder)
    result = attempt(
        f"encoder: {fault}",
        lambda: _fit(estimator, name, X, y),
        lambda result, caught: _check_outputs(estimator, X),
    )
    if fault == "none" or (fault == "rows" and rows == 0):
        assert result is not _FAILED
    else:
        assert result is _FAILED
        assert any("encoder" in m for m in MESSAGES[f"encoder: {fault}", CLEAR_SKNCE])
