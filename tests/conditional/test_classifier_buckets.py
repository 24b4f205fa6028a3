"""The linear model past its table's cap: the features folded into fewer rows.

:class:`~sknce.nn.BagWeighting`'s ``n_buckets`` against a brute-force fold, dense and
sparse alike, its bad settings refused; a fit whose plan folds (the cap lowered, so
that a tiny task passes it) builds the folded table, learns, and predicts, pickles and
exports as it trains.
"""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from test_classifier_plan import _three_rows_per_class

import sknce.conditional._plan as plan_module
from sknce import ConditionalNCEClassifier
from sknce._bags import normalize_bags, smooth_idf
from sknce._data import csr_to_tensor
from sknce.conditional._kernel_step import LinearSoftmaxStep, _weighted_csr
from sknce.export import to_torch_export
from sknce.nn import BagEncoder, BagWeighting


def _counts(seed=0, n=7, n_features=10):
    X = sp.random(n, n_features, density=0.4, random_state=seed, format="lil") * 4
    X[1] = 0  # an empty bag
    return sp.csr_matrix(np.ceil(X.toarray()))


def _brute_fold(dense: np.ndarray, n_buckets: int) -> np.ndarray:
    out = np.zeros((dense.shape[0], n_buckets))
    for j in range(dense.shape[1]):
        out[:, j % n_buckets] += dense[:, j]
    return out


@pytest.mark.parametrize("bag", ["log1p-idf", "counts"])
@pytest.mark.parametrize("n_buckets", [1, 3, 9, 10, 25])
def test_the_fold_sums_each_feature_into_its_row_modulo_the_buckets(bag, n_buckets):
    X = _counts()
    idf = smooth_idf(X) if bag == "log1p-idf" else None
    expected = _brute_fold(normalize_bags(X, bag, idf).toarray(), n_buckets)
    weighting = BagWeighting(bag, idf, n_buckets=n_buckets)
    dense = weighting(torch.as_tensor(X.toarray(), dtype=torch.float32))
    sparse = weighting(csr_to_tensor(X))
    assert dense.shape == sparse.shape == (X.shape[0], n_buckets)
    assert sparse.is_sparse and sparse.is_coalesced()
    np.testing.assert_allclose(dense.numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sparse.to_dense().numpy(), expected, rtol=1e-6, atol=1e-7)


def test_a_folding_encoder_has_one_row_per_bucket_and_reads_dense_and_sparse_alike():
    X = _counts(seed=1)
    weighting = BagWeighting("log1p-idf", smooth_idf(X), n_buckets=4)
    encoder = BagEncoder(X.shape[1], 3, normalize=False, weighting=weighting)
    assert tuple(encoder.weight.shape) == (4, 3)
    dense = encoder(torch.as_tensor(X.toarray(), dtype=torch.float32))
    sparse = encoder(csr_to_tensor(X))
    np.testing.assert_allclose(dense.detach().numpy(), sparse.detach().numpy(), atol=1e-6)


@pytest.mark.parametrize("bag", ["log1p-idf", "counts"])
def test_the_compiled_steps_batch_is_the_folded_weighting(bag):
    X = _counts(seed=2)
    idf = smooth_idf(X) if bag == "log1p-idf" else None
    weighting = BagWeighting(bag, idf, n_buckets=4)
    encoder = BagEncoder(X.shape[1], 3, normalize=False, weighting=weighting)
    indptr, cols, data = _weighted_csr(encoder, csr_to_tensor(X))
    assert cols.max() < 4 and cols.dtype == indptr.dtype == np.int64
    batch = sp.csr_matrix((data, cols, indptr), shape=(X.shape[0], 4))
    expected = weighting(csr_to_tensor(X)).to_dense().numpy()
    np.testing.assert_allclose(batch.toarray(), expected, rtol=1e-6, atol=1e-7)
    assert batch.has_canonical_format  # a row's colliding features summed, as in torch


@pytest.mark.parametrize("n_buckets", [0, -3, 2.5, True, "4", np.float64(3.0)])
def test_a_bad_bucket_count_is_refused_naming_it(n_buckets):
    with pytest.raises(ValueError, match="n_buckets must be a positive integer or None"):
        BagWeighting("counts", n_buckets=n_buckets)


def test_a_weighting_pickled_before_the_fold_reads_as_unfolded():
    weighting = BagWeighting("counts")
    state = weighting.__dict__.copy()
    del state["n_buckets"]
    old = BagWeighting.__new__(BagWeighting)
    old.__setstate__(state)
    assert old.n_buckets is None
    X = torch.as_tensor(_counts().toarray(), dtype=torch.float32)
    assert torch.equal(old(X), X)


@pytest.mark.parametrize("bag", ["auto", "counts"])
def test_a_fit_past_the_table_cap_folds_learns_and_serves_as_it_trains(monkeypatch, bag):
    # 64 classes x 400 features pass a cap of 64 x 300 weights: 300 rows, 100 features
    # sharing a row with another; the factored bag took such data and learnt nothing
    monkeypatch.setattr(plan_module, "LINEAR_MAX_WEIGHTS", 64 * 300)
    X, y = _three_rows_per_class(64, seed=0)
    X_test, y_test = _three_rows_per_class(64, seed=1)
    est = ConditionalNCEClassifier(bag=bag, random_state=0).fit(X, y)
    assert est.plan_.regime == "linear" and est.plan_.n_buckets == 300
    encoder = est.net_.module_.encoder
    assert tuple(encoder.weight.shape) == (300, 64) and encoder.weighting.n_buckets == 300
    assert isinstance(est.net_.step_, LinearSoftmaxStep)  # the compiled step trained it
    assert est.score(X_test, y_test) > 0.8
    proba = est.predict_proba(X_test)
    np.testing.assert_allclose(est.predict_proba(X_test.toarray()), proba, atol=1e-5)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(X_test), proba)
    exported = to_torch_export(est, "predict_proba").module()
    out = exported(torch.as_tensor(X_test.toarray(), dtype=torch.float32))
    np.testing.assert_allclose(out.detach().numpy(), proba, atol=1e-5)


def test_fewer_buckets_degrade_the_fit_gradually():
    X, y = _three_rows_per_class(64, seed=0)
    X_test, y_test = _three_rows_per_class(64, seed=1)
    scores = []
    for rows in (400, 300, 100):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(plan_module, "LINEAR_MAX_WEIGHTS", 64 * rows)
            est = ConditionalNCEClassifier(random_state=0).fit(X, y)
        scores.append(est.score(X_test, y_test))
    assert scores[0] >= scores[1] >= scores[2] > 0.3
