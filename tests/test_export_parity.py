"""Every exported method of every registry entry, in every mode, equals the estimator's own.

For each entry of ``tests/_registry.py``, each of its modes (single-label,
multi-label, the bag kernel, subwords, the weightings, outputs, scalings, the
regressor's...) and each method it exports, the estimator fitted in that mode is
compared, on fresh inputs (dense, and sparse where the estimator takes it, word ids with
unknown words and an empty document for ACEWord2Vec), with its torch module
(:func:`~sknce.export.to_torch_module`), its exported program
(:func:`~sknce.export.to_torch_export`, at two batch sizes) and its ONNX file run in
onnxruntime (:func:`~sknce.export.to_onnx`). A mode that cannot be exported must be
refused with the reason, as listed in ``NOT_EXPORTED``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from test_common import ESTIMATORS, N_SAMPLES, REGISTRY

from sknce.export import to_onnx, to_torch_export, to_torch_module, word_ids

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning",
    r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning",
)

#: (estimator, mode, method) that the estimator refuses to export, and what the
#: refusal must say.
NOT_EXPORTED = {
    ("ConditionalNCERegressor", "mode", "predict"): r"predict_method=.mode.*gradient",
}

TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}

CASES = [
    (name, mode, method)
    for name, cls in ESTIMATORS.items()
    for mode in REGISTRY[name].all_modes()
    for method in cls._exported_methods
]


@cache
def _fitted(name: str, mode_name: str):
    entry = REGISTRY[name]
    mode = entry.all_modes()[mode_name]
    X, y = (mode.data or entry.data).make(N_SAMPLES, 0)
    return entry.fit(ESTIMATORS[name](**{**entry.params, **mode.params}), X, y)


def _queries(name: str, mode_name: str, estimator):
    """Fresh inputs: ``(module input, [estimator inputs])``."""
    entry = REGISTRY[name]
    kind = entry.all_modes()[mode_name].data or entry.data
    X, _ = kind.make(9, 1)
    if not kind.array and isinstance(X[0], str):  # documents as strings
        queries = [*X[:6], "", X[0][:8] + " unknownword", "unknownword"]
        return word_ids(estimator, queries), [queries]
    if not kind.array:  # token lists
        queries = [*X[:6], [], X[0][:3] + ["unknown-word"], ["unknown-word"]]
        return word_ids(estimator, queries), [queries]
    dense = X.toarray() if sp.issparse(X) else np.array(X)
    if sp.issparse(X):
        dense[3] = 0  # an empty document of counts
    inputs = [dense]
    if estimator.__sklearn_tags__().input_tags.sparse:  # a dense-only one refuses sparse X
        inputs.append(sp.csr_matrix(dense))
    return torch.as_tensor(dense, dtype=torch.float32), inputs


@pytest.mark.parametrize(("name", "mode", "method"), CASES)
def test_the_exported_module_gives_the_estimators_output(name, mode, method, tmp_path):
    estimator = _fitted(name, mode)
    refusal = NOT_EXPORTED.get((name, mode, method))
    if refusal is not None:
        with pytest.raises(ValueError, match=refusal):
            to_torch_module(estimator, method)
        return
    x, inputs = _queries(name, mode, estimator)
    expected = getattr(estimator, method)(inputs[0])
    for other in inputs[1:]:  # sparse input gives the same
        np.testing.assert_allclose(getattr(estimator, method)(other), expected, **TOLERANCE)
    module = to_torch_module(estimator, method)
    np.testing.assert_allclose(module(x).numpy(), expected, **TOLERANCE)
    program = to_torch_export(estimator, method).module()
    np.testing.assert_allclose(program(x).numpy(), expected, **TOLERANCE)
    np.testing.assert_allclose(program(x[:1]).numpy(), expected[:1], **TOLERANCE)

    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    path = to_onnx(estimator, tmp_path / "model.onnx", method)
    (out,) = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(out, expected, **TOLERANCE)


def test_a_multilabel_export_gives_each_labels_probability():
    """It gave a softmax over the labels (rows summing to 1) where predict_proba gives
    each label's own probability (rows summing to 1.7-3), up to 0.46 off (issue 30)."""
    estimator = _fitted("ConditionalNCEClassifier", "multilabel")
    assert estimator.multilabel_
    x, inputs = _queries("ConditionalNCEClassifier", "multilabel", estimator)
    proba = to_torch_module(estimator)(x).numpy()
    assert not np.allclose(proba.sum(axis=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(proba, estimator.predict_proba(inputs[0]), **TOLERANCE)


def test_every_registry_entry_exports_a_method():
    assert all(cls._exported_methods for cls in ESTIMATORS.values())
