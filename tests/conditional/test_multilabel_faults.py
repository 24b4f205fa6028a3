"""Multi-label ConditionalNCEClassifier on bad or extreme input, in its compiled regime
(a sparse X of counts, the defaults): a clear error naming the problem, or a fit that
does the right thing; nothing crashes in torch or the kernel, nothing wrong passes."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sknce import ConditionalNCEClassifier
from sknce.exceptions import TrainingDivergedError

N, N_FEATURES, N_LABELS = 120, 30, 10


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.poisson(0.5, (N, N_FEATURES)).astype(np.float64))
    Y = (rng.random((N, N_LABELS)) < 0.3).astype(np.int8)
    return X, Y


def _fit(X, Y, **params):
    params = {"max_epochs": 1, "random_state": 0, **params}
    return ConditionalNCEClassifier(**params).fit(X, Y)


def test_the_faults_run_in_the_compiled_regime():
    X, Y = _data()
    assert _fit(X, Y)._multilabel_plan.compiled


@pytest.mark.parametrize("value, match", [(np.nan, "contains NaN"), (np.inf, "contains infinity")])
def test_a_non_finite_label_indicator_is_named(value, match):
    X, Y = _data()
    Y = Y.astype(np.float64)
    Y[3, 2] = value
    with pytest.raises(ValueError, match=match):
        _fit(X, Y)


@pytest.mark.parametrize("Y", [lambda Y: -Y, lambda Y: 2 * Y, lambda Y: 0.5 * Y])
def test_values_other_than_0_and_1_name_the_binarization(Y):
    X, Y0 = _data()
    with pytest.raises(ValueError, match="0/1 values"):
        _fit(X, Y(Y0))


def test_an_indicator_without_columns_or_of_other_rows_is_refused():
    X, Y = _data()
    with pytest.raises(ValueError, match="label-indicator matrix"):
        _fit(X, np.zeros((N, 0), dtype=np.int8))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        _fit(X, Y[:-1])


def test_ragged_label_lists_name_the_binarizer():
    X, _ = _data()
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        _fit(X, [[0, 1]] * (N - 1) + [[2]])


@pytest.mark.parametrize("where", ["fit", "predict"])
@pytest.mark.parametrize("value, match", [(np.nan, "contains NaN"), (np.inf, "infinity")])
def test_a_non_finite_x_is_named(where, value, match):
    X, Y = _data()
    bad = X.copy()
    bad.data[0] = value
    if where == "fit":
        with pytest.raises(ValueError, match=match):
            _fit(bad, Y)
    else:
        clf = _fit(X, Y)
        for method in (clf.predict, clf.predict_proba, lambda x: clf.predict_topk(x, 2)):
            with pytest.raises(ValueError, match=match):
                method(bad[:2])


def test_counts_beyond_float32_name_the_scaling():
    X, Y = _data()
    with pytest.raises(ValueError, match="Scale X"):
        _fit(X * 1e30, Y)


def test_x_of_another_width_at_predict_is_refused():
    X, Y = _data()
    clf = _fit(X, Y)
    with pytest.raises(ValueError, match=f"expecting {N_FEATURES} features"):
        clf.predict_topk(sp.csr_matrix((2, N_FEATURES + 1)), 2)


@pytest.mark.parametrize("k", [0, -1, N_LABELS + 1, 2.5, "3"])
def test_predict_topk_names_a_bad_k(k):
    X, Y = _data()
    clf = _fit(X, Y)
    with pytest.raises(ValueError, match=f"k must be an int from 1 to .*{N_LABELS}"):
        clf.predict_topk(X[:2], k)


def test_empty_bags_train_and_rank_by_the_label_biases_alone():
    X, Y = _data()
    clf = _fit(sp.csr_matrix(X.shape), Y, max_epochs=3)
    labels, log_proba = clf.predict_topk(X[:4], 3)
    assert np.isfinite(log_proba).all()
    # every row's bag is empty at fit: the ranking does not depend on the row
    assert (labels == labels[0]).all()


def test_rows_holding_every_label_push_every_label_up():
    # no label is left for a row's noise: only the positives train
    X, _ = _data()
    clf = _fit(X, np.ones((N, N_LABELS), dtype=np.int8), max_epochs=5)
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all() and (proba > 0.5).all()
    assert clf.predict(X).all()


def test_an_indicator_without_any_label_is_an_error_on_the_compiled_path():
    # issue 30: it fitted on nothing, silently; a row without labels among labelled
    # ones still trains (test_multilabel), an indicator of zeros alone is refused
    X, _ = _data()
    with pytest.raises(ValueError, match="label indicator without any label"):
        _fit(X, np.zeros((N, N_LABELS), dtype=np.int8), max_epochs=5)


def test_a_boolean_indicator_is_a_0_1_indicator():
    X, Y = _data()
    expected = _fit(X, Y).predict_proba(X[:5])
    for Y_bool in (Y.astype(bool), sp.csr_matrix(Y.astype(bool))):
        np.testing.assert_array_equal(_fit(X, Y_bool).predict_proba(X[:5]), expected)


def test_two_hundred_thousand_labels_on_twenty_rows_rank_without_a_dense_block():
    X, _ = _data()
    Y = sp.random(20, 200_000, density=1e-4, format="csr", random_state=0, data_rvs=np.ones)
    clf = _fit(X[:20], Y)
    assert clf._multilabel_plan.n_negatives == 256  # the top of the auto range
    labels, log_proba = clf.predict_topk(X[:3], 3)
    assert labels.shape == (3, 3) and labels.max() < 200_000
    assert np.isfinite(log_proba).all()


def test_one_training_row_fits_without_early_stopping_and_says_so():
    X, Y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = _fit(X[:1].toarray(), Y[:1])  # dense: the regime that holds rows out
    assert any("early stopping is off" in str(w.message) for w in caught)
    assert clf.predict_proba(X[:2].toarray()).shape == (2, N_LABELS)


def test_one_training_row_fits_in_the_compiled_regime_which_holds_none_out():
    X, Y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = _fit(X[:1], Y[:1])
    assert not any("early stopping" in str(w.message) for w in caught)
    assert not clf.plan_.early_stopping
    assert clf.predict_proba(X[:2]).shape == (2, N_LABELS)


@pytest.mark.parametrize(
    "weight, match",
    [(np.r_[np.nan, np.ones(N - 1)], "sample_weight contains NaN"), (-np.ones(N), "Negative")],
)
def test_bad_sample_weights_are_named(weight, match):
    X, Y = _data()
    with pytest.raises(ValueError, match=match):
        ConditionalNCEClassifier(max_epochs=1).fit(X, Y, sample_weight=weight)


def test_zero_threads_are_refused():
    X, Y = _data()
    with pytest.raises(ValueError, match="n_jobs"):
        _fit(X, Y, n_jobs=0)


def test_a_diverging_rate_raises_and_keeps_the_fitted_model():
    X, Y = _data()
    clf = _fit(X, Y)
    before = clf.predict_proba(X[:5])
    with pytest.raises(TrainingDivergedError, match="Lower lr"):
        clf.set_params(lr=1e6, max_epochs=3).fit(X, Y)
    np.testing.assert_array_equal(clf.predict_proba(X[:5]), before)
