"""sknce.export: each estimator's exported inference path equals the estimator's output."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sknce import (
    ACEWord2Vec,
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    DirectNCEEmbedder,
    LandmarkNCEEmbedder,
    LatentClassNCEEmbedder,
)
from sknce.export import to_onnx, to_torch_export, to_torch_module, word_ids

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning",
    r"ignore:1 document\(s\) with fewer than 2 tokens:UserWarning",
)
RNG = np.random.default_rng(0)
_counts = RNG.poisson(0.6, size=(60, 25)).astype(np.float64)
_counts[0] = 0  # an empty document: every bag keeps it at zero
COUNTS = sp.csr_matrix(_counts)
POINTS = RNG.normal(size=(60, 5)) * [1, 10, 100, 1, 0.1]
GROUPS = np.repeat(np.arange(12), 5)
LABELS = RNG.integers(0, 4, size=60)
TAGS = (RNG.random((60, 6)) < 0.3).astype(np.int8)  # a label indicator: multi-label


def _fitted(kind, **params):
    """A tiny fit of one estimator, ``params`` over fast defaults."""
    if kind == "latent":
        est = LatentClassNCEEmbedder(**{"n_components": 3, "max_epochs": 2, **params})
        sparse = params.get("scaling") == "log1p-idf"
        return est.set_params(random_state=0).fit(
            sp.csr_matrix(np.abs(POINTS).round()) if sparse else POINTS, GROUPS
        )
    defaults = {"hidden_layer_sizes": (8,), "max_epochs": 2, "random_state": 0}
    if kind == "direct":
        return DirectNCEEmbedder(**{**defaults, "n_components": 4, **params}).fit(COUNTS)
    if kind == "landmark":
        return LandmarkNCEEmbedder(**{**defaults, "n_landmarks": 5, **params}).fit(COUNTS)
    if kind == "multilabel":
        est = ConditionalNCEClassifier(**{**defaults, "n_negatives": 2, **params})
        return est.fit(POINTS, TAGS)
    if kind == "multilabel-bag":  # the defaults on counts: the compiled regime's idf bag
        est = ConditionalNCEClassifier(max_epochs=2, random_state=0, **params)
        return est.fit(COUNTS, sp.csr_matrix(TAGS))
    est = ConditionalNCEClassifier(**{**defaults, "n_negatives": 2, **params})
    return est.fit(POINTS, LABELS)


CASES = [
    ("latent", {}, "transform"),
    ("latent", {"scaling": "none"}, "transform"),
    ("latent", {"scaling": "log1p-idf"}, "transform"),
    ("direct", {}, "transform"),
    ("direct", {"output": "raw", "bag": "tf"}, "transform"),
    ("direct", {"bag": "log1p", "hidden_layer_sizes": (8, 6)}, "transform"),
    ("landmark", {}, "transform"),
    ("landmark", {"output": "exp", "bag": "counts"}, "transform"),
    ("landmark", {"output": "log-odds", "hidden_layer_sizes": ()}, "transform"),
    ("landmark", {"output": "standardized"}, "transform"),
    ("classifier", {}, "predict_proba"),
    ("classifier", {}, "predict_log_proba"),
    ("multilabel", {}, "predict_proba"),
    ("multilabel", {}, "predict_log_proba"),
    ("multilabel-bag", {}, "predict_proba"),
    ("multilabel-bag", {}, "predict_log_proba"),
]


def _inputs(kind, est):
    """Random inputs of the estimator's kind, not the training rows."""
    rng = np.random.default_rng(1)
    if (
        kind in ("direct", "landmark", "multilabel-bag")
        or getattr(est, "scaling_", "") == "log1p-idf"
    ):
        X = rng.poisson(0.8, size=(9, est.n_features_in_)).astype(np.float64)
        X[3] = 0
        return X, sp.csr_matrix(X)
    X = rng.normal(size=(9, est.n_features_in_)) * [1, 10, 100, 1, 0.1]
    return X, X


@pytest.mark.parametrize(("kind", "params", "method"), CASES)
def test_module_and_exported_program_equal_the_estimator(kind, params, method):
    est = _fitted(kind, **params)
    X, X_est = _inputs(kind, est)
    expected = getattr(est, method)(X_est)
    x = torch.as_tensor(X, dtype=torch.float32)
    module = to_torch_module(est, method)
    np.testing.assert_allclose(module(x).numpy(), expected, rtol=1e-4, atol=1e-5)
    program = to_torch_export(est, method)
    np.testing.assert_allclose(program.module()(x).numpy(), expected, rtol=1e-4, atol=1e-5)
    one_row = program.module()(x[:1]).numpy()  # any batch size
    np.testing.assert_allclose(one_row, expected[:1], rtol=1e-4, atol=1e-5)


def test_module_is_a_copy_independent_of_the_estimator():
    est = _fitted("classifier")
    module = to_torch_module(est)
    x = torch.as_tensor(POINTS[:5], dtype=torch.float32)
    before = module(x).clone()
    with torch.no_grad():
        for p in est.net_.module_.parameters():
            p.add_(1.0)
    assert torch.equal(module(x), before)
    assert not any(p.requires_grad for p in module.parameters())


@pytest.mark.parametrize("weighting", ["mean", "tfidf", "sif"])
def test_word_vectors_transform_from_word_ids(weighting):
    docs = [[w for w in "abcdefgh" if RNG.random() < 0.7] + ["a", "b"] for _ in range(40)]
    est = ACEWord2Vec(
        n_components=6,
        min_count=1,
        sample=0,
        max_epochs=1,
        n_jobs=1,
        random_state=0,
        weighting=weighting,
    ).fit(docs)
    queries = [["a", "zzz", "c"], [], ["zzz"], ["h", "h", "b", "e"]]
    ids = word_ids(est, queries)
    assert ids.shape == (4, 4) and int(ids[2, 0]) == -1
    expected = est.transform(queries)
    np.testing.assert_allclose(to_torch_module(est)(ids).numpy(), expected, atol=1e-6)
    program = to_torch_export(est)
    np.testing.assert_allclose(program.module()(ids).numpy(), expected, atol=1e-6)
    with pytest.raises(ValueError, match="larger length"):
        word_ids(est, queries, length=2)


def test_unsupported_estimator_and_method_are_named():
    reg = ConditionalNCERegressor(n_negatives=2, max_epochs=1, random_state=0)
    reg.fit(POINTS, POINTS[:, 0])
    with pytest.raises(TypeError, match="ConditionalNCERegressor"):
        to_torch_module(reg)
    with pytest.raises(ValueError, match="'predict_proba' or 'predict_log_proba'"):
        to_torch_module(_fitted("classifier"), "transform")


def test_onnx_model_equals_the_estimator(tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    est = _fitted("direct")
    X, X_est = _inputs("direct", est)
    path = to_onnx(est, tmp_path / "direct.onnx")
    session = ort.InferenceSession(str(path))
    (out,) = session.run(None, {"x": X.astype(np.float32)})
    np.testing.assert_allclose(out, est.transform(X_est), rtol=1e-4, atol=1e-5)


def test_onnx_model_of_a_multilabel_fit_gives_each_labels_probability(tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    est = _fitted("multilabel-bag")
    X, X_est = _inputs("multilabel-bag", est)
    path = to_onnx(est, tmp_path / "tags.onnx")
    (out,) = ort.InferenceSession(str(path)).run(None, {"x": X.astype(np.float32)})
    np.testing.assert_allclose(out, est.predict_proba(X_est), rtol=1e-4, atol=1e-5)
    assert not np.allclose(out.sum(axis=1), 1.0)  # per label, not a distribution
