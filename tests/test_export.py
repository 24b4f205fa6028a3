"""sknce.export attacked: bad estimators, methods, paths, inputs of the module, word ids.

The parity of every exported method with the estimator's own output, in every mode of
every registry entry, is ``tests/test_export_parity.py``. Here each public function
of :mod:`sknce.export` and the exported module get bad inputs, each with the outcome
it must have (listed in ``docs/user_guide/guarantees.rst``, "Export").
"""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from test_base import ToyNCEClassifier
from test_common import REGISTRY, _data

from sknce import (
    ACEWord2Vec,
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    DirectNCEEmbedder,
)
from sknce.export import to_onnx, to_torch_export, to_torch_module, word_ids

#: The classifier's kind of data: points of six classes, five features.
POINTS = REGISTRY["ConditionalNCEClassifier"].data

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning",
    r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning",
)


@cache
def _fitted(name: str, **params):
    entry = REGISTRY[name]
    X, y = _data(entry.data)
    cls = {
        "ACEWord2Vec": ACEWord2Vec,
        "ConditionalNCEClassifier": ConditionalNCEClassifier,
        "ConditionalNCERegressor": ConditionalNCERegressor,
        "DirectNCEEmbedder": DirectNCEEmbedder,
    }[name]
    return entry.fit(cls(**{**entry.params, **params}), X, y)


def _classifier():
    return _fitted("ConditionalNCEClassifier")


def _words():
    return _fitted("ACEWord2Vec")


# --- to_torch_module and to_torch_export: the estimator and the method ------------------
def _toy():
    X, y = _data(POINTS)
    return ToyNCEClassifier(max_epochs=1, random_state=0).fit(X, y)


BAD_ESTIMATORS = [
    (lambda: None, TypeError, r"got 'NoneType', not an sknce estimator"),
    (lambda: "ConditionalNCEClassifier", TypeError, r"got 'str', not an sknce estimator"),
    (lambda: LogisticRegression(), TypeError, r"'LogisticRegression', not an sknce estimator"),
    (lambda: ConditionalNCEClassifier, TypeError, r"got 'type', not an sknce estimator"),
    (lambda: ConditionalNCEClassifier(), NotFittedError, r"not fitted"),
    (lambda: ACEWord2Vec(), NotFittedError, r"not fitted"),
    (_toy, TypeError, r"a ToyNCEClassifier, which exports no method"),
    (
        lambda: _fitted("ConditionalNCERegressor", predict_method="mode"),
        ValueError,
        r"predict_method='mode'.*gradient ascent.*set predict_method='mean'",
    ),
]

BAD_METHODS = [
    (5, TypeError, r"method must be a str such as 'predict_proba', got 5"),
    (["predict_proba"], TypeError, r"method must be a str"),
    (b"predict_proba", TypeError, r"method must be a str"),
    ("", ValueError, r"exports method 'predict_proba' or 'predict_log_proba'; got ''"),
    ("fit", ValueError, r"got 'fit'"),
    ("predict", ValueError, r"got 'predict'"),
    ("transform", ValueError, r"got 'transform'"),
    ("PREDICT_PROBA", ValueError, r"got 'PREDICT_PROBA'"),
    ("predict_prøba", ValueError, r"got 'predict_prøba'"),
    ("predict_proba\x00", ValueError, r"got 'predict_proba\\x00'"),
]


def _to_onnx(estimator, method=None):
    """to_onnx into a fresh directory (each bad input raises before a file is written)."""
    _onnx()  # the lowest-dependency run (.ci/min-deps) has no export extra
    with tempfile.TemporaryDirectory() as directory:
        to_onnx(estimator, Path(directory) / "model.onnx", method)
        assert not list(Path(directory).iterdir()), "a refused export left a file"


EXPORTS = [to_torch_module, to_torch_export, _to_onnx]
EXPORT_IDS = ["module", "export", "onnx"]


@pytest.mark.parametrize("export", EXPORTS, ids=EXPORT_IDS)
@pytest.mark.parametrize(("make", "error", "message"), BAD_ESTIMATORS)
def test_a_bad_estimator_is_named(export, make, error, message):
    with pytest.raises(error, match=message):
        export(make())


@pytest.mark.parametrize("export", EXPORTS, ids=EXPORT_IDS)
@pytest.mark.parametrize(("method", "error", "message"), BAD_METHODS)
def test_a_bad_method_is_named(export, method, error, message):
    with pytest.raises(error, match=message):
        export(_classifier(), method)


def test_the_module_is_a_copy_independent_of_the_estimator():
    est = _classifier()
    module = to_torch_module(est)
    x = torch.as_tensor(_data(POINTS)[0][:5], dtype=torch.float32)
    before = module(x).clone()
    saved = [p.detach().clone() for p in est.net_.module_.parameters()]
    with torch.no_grad():
        for p in est.net_.module_.parameters():
            p.add_(1.0)
    try:
        assert torch.equal(module(x), before)
    finally:
        with torch.no_grad():
            for p, s in zip(est.net_.module_.parameters(), saved, strict=True):
                p.copy_(s)
    assert not any(p.requires_grad for p in module.parameters())
    assert not module.training


# --- the module's input ----------------------------------------------------------------
BAD_FEATURES = [
    (lambda x: x.numpy(), TypeError, r"takes a torch tensor, got ndarray"),
    (lambda x: x.tolist(), TypeError, r"takes a torch tensor, got list"),
    (lambda x: x[:, :3], ValueError, r"rows of 5 features.*got shape \(9, 3\)"),
    (lambda x: x[0], ValueError, r"got shape \(5,\)"),
    (lambda x: x.unsqueeze(0), ValueError, r"got shape \(1, 9, 5\)"),
    (lambda x: x[:0, :0], ValueError, r"got shape \(0, 0\)"),
    (lambda x: x > 0, TypeError, r"real features, got a tensor of torch.bool"),
    (lambda x: x.to(torch.complex64), TypeError, r"real features.*complex64"),
    (lambda x: _put(x, np.nan), ValueError, r"NaN or infinite"),
    (lambda x: _put(x, np.inf), ValueError, r"NaN or infinite"),
    (lambda x: _put(x, -np.inf), ValueError, r"NaN or infinite"),
]


def _put(x, value):
    x = x.clone()
    x[4, 2] = value
    return x


@pytest.mark.parametrize(("bad", "error", "message"), BAD_FEATURES)
def test_bad_features_given_to_the_module_are_named(bad, error, message):
    x = torch.as_tensor(_data(POINTS)[0][:9], dtype=torch.float32)
    with pytest.raises(error, match=message):
        to_torch_module(_classifier())(bad(x))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int64, torch.int32])
def test_features_of_another_real_dtype_are_cast(dtype):
    X = np.round(_data(POINTS)[0][:9])
    module = to_torch_module(_classifier())
    expected = module(torch.as_tensor(X, dtype=torch.float32))
    torch.testing.assert_close(module(torch.as_tensor(X).to(dtype)), expected)


def test_an_empty_batch_gives_an_empty_output():
    module = to_torch_module(_classifier())
    assert module(torch.zeros((0, 5))).shape == (0, len(_classifier().classes_))


BAD_IDS = [
    (lambda ids: ids.float(), TypeError, r"integer word ids.*torch.float32"),
    (lambda ids: ids > 0, TypeError, r"integer word ids.*torch.bool"),
    (lambda ids: ids[0], ValueError, r"shape \(n_documents, length\).*got shape \(4,\)"),
    (lambda ids: ids.unsqueeze(0), ValueError, r"got shape \(1, 3, 4\)"),
    (lambda ids: ids - 5, ValueError, r"from -1 \(no word\) to 15.*got -6"),
    (lambda ids: ids + 100, ValueError, r"to 15 .*got 99 to"),
    (lambda ids: torch.full_like(ids, 2**40), ValueError, r"got 1099511627776"),
]


@pytest.mark.parametrize(("bad", "error", "message"), BAD_IDS)
def test_bad_word_ids_given_to_the_module_are_named(bad, error, message):
    est = _words()
    ids = word_ids(est, [["a0", "a1", "b2", "zzz"], [], ["b5", "b5", "a3", "a4"]])
    with pytest.raises(error, match=message):
        to_torch_module(est)(bad(ids))


def test_word_ids_of_int32_and_of_no_word_are_taken():
    est = _words()
    docs = [["a0", "a1", "b2"], [], ["zzz"]]
    ids = word_ids(est, docs)
    module = to_torch_module(est)
    np.testing.assert_allclose(module(ids.int()).numpy(), est.transform(docs), atol=1e-6)
    assert module(torch.zeros((2, 0), dtype=torch.int64)).shape == (2, est.n_components)


# --- word_ids ----------------------------------------------------------------------------
BAD_WORD_IDS = [
    (lambda: _classifier(), [["a0"]], None, TypeError, r"ACEWord2Vec.*got a ConditionalNCE"),
    (lambda: ACEWord2Vec(), [["a0"]], None, NotFittedError, r"not fitted"),
    (_words, "a0 a1", None, TypeError, r"single string"),
    (_words, None, None, TypeError, r"iterable of documents"),
    (_words, 5, None, TypeError, r"iterable of documents"),
    (_words, [["a0", "a1"]], -1, ValueError, r"length must be an int from 0.*got -1"),
    (_words, [["a0", "a1"]], 1, ValueError, r"2 in-vocabulary words, more than length=1"),
    (_words, [["a0"]], 2.5, TypeError, r"length must be an int or None, got 2.5"),
    (_words, [["a0"]], "3", TypeError, r"length must be an int or None, got '3'"),
    (_words, [["a0"]], True, TypeError, r"length must be an int or None, got True"),
    (_words, [["a0"]], float("nan"), TypeError, r"length must be an int or None, got nan"),
    (_words, [["a0"]], 10**12, ValueError, r"length=1000000000000 pads each document"),
    (_words, [["a0", ["nested"]]], None, TypeError, r"document 0"),
]


@pytest.mark.parametrize(("make", "documents", "length", "error", "message"), BAD_WORD_IDS)
def test_bad_word_ids_arguments_are_named(make, documents, length, error, message):
    with pytest.raises(error, match=message):
        word_ids(make(), documents, length)


def test_word_ids_of_unicode_words_a_generator_and_a_given_length():
    docs = [["ça", "日本", "naïve", "ça"], ["日本", "😀"]] * 10
    est = ACEWord2Vec(n_components=4, min_count=1, sample=0, max_epochs=1, n_jobs=1).fit(docs)
    ids = word_ids(est, (doc for doc in [["😀", "unknown", "ça"], []]), length=5)
    assert ids.shape == (2, 5) and ids.dtype == torch.int64
    assert ids[0, :2].tolist() == [est.vocabulary_["😀"], est.vocabulary_["ça"]]
    assert (ids[0, 2:] == -1).all() and (ids[1] == -1).all()
    assert word_ids(est, []).shape == (0, 0)


# --- to_onnx -----------------------------------------------------------------------------
def _onnx():
    pytest.importorskip("onnxscript")
    return pytest.importorskip("onnxruntime")


BAD_PATHS = [
    (lambda tmp: None, TypeError, r"path must be a str or a path-like object, got None"),
    (lambda tmp: 5, TypeError, r"got 5"),
    (lambda tmp: ["a.onnx"], TypeError, r"got \['a.onnx'\]"),
    (lambda tmp: "", ValueError, r"path is empty"),
    (lambda tmp: tmp, IsADirectoryError, r"is a directory"),
    (lambda tmp: tmp / "missing" / "a.onnx", FileNotFoundError, r"missing"),
    (lambda tmp: str(tmp / "a\x00b.onnx"), ValueError, r"null (byte|character)"),
]


@pytest.mark.parametrize(("make", "error", "message"), BAD_PATHS)
def test_a_bad_onnx_path_is_named(make, error, message, tmp_path):
    _onnx()
    with pytest.raises(error, match=message):
        to_onnx(_classifier(), make(tmp_path))
    assert not list(tmp_path.rglob("*.onnx"))


def test_an_onnx_file_of_a_unicode_name_and_a_bad_method(tmp_path):
    ort = _onnx()
    est = _classifier()
    with pytest.raises(ValueError, match=r"got 'transform'"):
        to_onnx(est, tmp_path / "m.onnx", "transform")
    with pytest.raises(TypeError, match=r"not an sknce estimator"):
        to_onnx(LogisticRegression(), tmp_path / "m.onnx")
    path = to_onnx(est, tmp_path / "modèle ☃.onnx", "predict_log_proba")
    x = _data(POINTS)[0][:4].astype(np.float32)
    (out,) = ort.InferenceSession(str(path)).run(None, {"x": x})
    np.testing.assert_allclose(out, est.predict_log_proba(x), rtol=1e-4, atol=1e-5)


# --- a new estimator exports through the hook, without a change to sknce.export -------------
class _Doubled(ToyNCEClassifier):
    """A toy estimator that exports ``transform``: twice its input."""

    _exported_methods = ("transform",)

    def transform(self, X):
        return 2 * np.asarray(X, dtype=np.float32)

    def _inference_module(self, method):
        from sknce.nn._inference import InferenceModule

        return InferenceModule(_Twice(), self.n_features_in_)


class _Twice(torch.nn.Module):
    def forward(self, x):
        return 2 * x


class _Plain(ToyNCEClassifier):
    _exported_methods = ("transform",)

    def _inference_module(self, method):
        return _Twice()


def test_a_new_estimator_exports_through_its_hook(tmp_path):
    X, y = _data(POINTS)
    estimator = _Doubled(max_epochs=1, random_state=0).fit(X, y)
    x = torch.as_tensor(X[:4], dtype=torch.float32)
    np.testing.assert_allclose(to_torch_module(estimator)(x).numpy(), estimator.transform(X[:4]))
    program = to_torch_export(estimator).module()
    np.testing.assert_allclose(program(x[:1]).numpy(), estimator.transform(X[:1]))
    ort = _onnx()
    path = to_onnx(estimator, tmp_path / "toy.onnx")
    (out,) = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(out, estimator.transform(X[:4]))
    plain = _Plain(max_epochs=1, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match=r"_Plain._inference_module\('transform'\) returned a "):
        to_torch_module(plain)
