"""The co-occurrence term of the multi-label score (``cooccurrence_weight``): its table and
term against brute force, every predict path and the exported module with it, its
choice on held-out rows, continued fits, pickling and bad inputs."""

import pickle
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone

from sknce import ConditionalNCEClassifier
from sknce.conditional import _cooccurrence
from sknce.export import to_torch_module

TINY = dict(random_state=0, n_jobs=1, max_epochs=3)


def _planted(n_rows=300, n_features=60, n_labels=12, seed=0):
    """Counts where each label brings its own feature into its rows (features
    ``n_features - n_labels ..``), plus noise counts; every row has a label."""
    rng = np.random.default_rng(seed)
    Y = rng.random((n_rows, n_labels)) < 0.15
    Y[np.arange(n_rows), rng.integers(0, n_labels, n_rows)] = True
    X = rng.poisson(0.2, (n_rows, n_features))
    own = n_features - n_labels + np.arange(n_labels)
    X[:, own] += Y * (rng.random(Y.shape) < 0.8)
    return sp.csr_matrix(X.astype(np.float64)), sp.csr_matrix(Y.astype(np.int64))


def _brute_ppmi(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    n = X.shape[0]
    table = np.zeros((X.shape[1], Y.shape[1]))
    for j in range(X.shape[1]):
        for y in range(Y.shape[1]):
            both = sum(1 for i in range(n) if X[i, j] > 0 and Y[i, y])
            if both < 2:
                continue
            n_j = sum(1 for i in range(n) if X[i, j] > 0)
            n_y = sum(1 for i in range(n) if Y[i, y])
            table[j, y] = max(0.0, np.log(both * n / (n_j * n_y)))
    return table


def _brute_term(X: np.ndarray, idf, table: np.ndarray, weight: float) -> np.ndarray:
    """``weight * sum_j a_j(x) PPMI[j, y]``, ``a``: log(1 + count) * idf of each row,
    summing to 1 (the bag's ``"log1p-idf"``; ``idf=None``: the counts as they are)."""
    read = np.log1p(X) * idf if idf is not None else X.astype(np.float64)
    sums = np.abs(read).sum(axis=1, keepdims=True)
    shares = np.divide(read, sums, out=np.zeros_like(read), where=sums > 0)
    return weight * shares @ table


def _log_odds(log_proba: np.ndarray) -> np.ndarray:
    return log_proba - np.log(-np.expm1(np.minimum(log_proba, -1e-12)))


def _without_term(clf):
    """A copy of ``clf`` that scores without its co-occurrence term."""
    bare = pickle.loads(pickle.dumps(clf))
    bare.plan_ = replace(bare.plan_, cooccurrence=0.0)
    bare.cooccurrence_ = None
    return bare


@pytest.fixture(scope="module")
def weighted():
    X, Y = _planted()
    clf = ConditionalNCEClassifier(cooccurrence_weight=2.0, **TINY).fit(X[:240], Y[:240])
    return clf, X[240:], Y[240:]


# --- the table and the term against brute force -------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    arrays(np.int64, (9, 5), elements=st.integers(0, 3)),
    arrays(np.bool_, (9, 4)),
)
def test_the_table_is_the_positive_pmi_of_pairs_in_two_rows(X, Y):
    table = _cooccurrence.ppmi_table(sp.csr_matrix(X), sp.csr_matrix(Y.astype(np.int8)))
    assert table.dtype == np.float32 and table.shape == (5, 4)
    expected = _brute_ppmi(X, Y)
    np.testing.assert_allclose(table.toarray(), expected, rtol=1e-6, atol=1e-7)
    assert table.nnz == np.count_nonzero(expected)  # no stored zero


@settings(max_examples=30, deadline=None)
@given(
    arrays(np.int64, (6, 5), elements=st.integers(0, 4)),
    arrays(np.float64, (5, 3), elements=st.floats(0, 3)),
    st.sampled_from([0.0, 0.5, 4.0]),
    st.sampled_from(["log1p-idf", "counts"]),
)
def test_the_term_is_the_bags_shares_times_the_table(X, table, weight, bag):
    idf = np.linspace(1.0, 2.0, 5) if bag == "log1p-idf" else None
    out = _cooccurrence.term(sp.csr_matrix(X), bag, idf, sp.csr_matrix(table), weight)
    expected = _brute_term(X, idf, table, weight)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    # by blocks of labels, added to what the block holds
    base = np.ones((6, 2), dtype=np.float32)
    shares = _cooccurrence.row_shares(sp.csr_matrix(X), bag, idf, weight)
    _cooccurrence.add_term(base, shares, sp.csr_matrix(table, dtype=np.float32), start=1)
    np.testing.assert_allclose(base, 1 + expected[:, 1:], rtol=1e-5, atol=1e-6)


def test_the_table_counts_by_blocks_of_labels(monkeypatch):
    X, Y = _planted(n_rows=80, n_features=20, n_labels=7)
    whole = _cooccurrence.ppmi_table(X, Y)
    monkeypatch.setattr(_cooccurrence, "LABEL_BLOCK", 3)  # blocks of 3, 3, 1
    blocks = _cooccurrence.ppmi_table(X, Y)
    assert (blocks != whole).nnz == 0 and blocks.has_sorted_indices
    np.testing.assert_allclose(
        whole.toarray(), _brute_ppmi(X.toarray(), Y.toarray()), rtol=1e-6, atol=1e-7
    )


def test_the_table_of_labels_every_row_shares_is_empty():
    # every row has the same labels: no feature says more about a label than its rate
    X, _ = _planted()
    Y = sp.csr_matrix(np.ones((X.shape[0], 3), dtype=np.int8))
    assert _cooccurrence.ppmi_table(X, Y).nnz == 0


def test_a_label_never_seen_with_a_feature_has_an_empty_column():
    X, Y = _planted()
    Y = sp.hstack([Y, sp.csr_matrix((X.shape[0], 1), dtype=np.int64)]).tocsr()
    table = _cooccurrence.ppmi_table(X, Y)
    assert table[:, -1].nnz == 0 and table.nnz > 0


# --- the choice of the weight -------------------------------------------------------------
def test_the_weight_chosen_is_the_one_that_ranks_the_held_out_rows_best():
    # the network ranks label 2 first everywhere; the term points at each row's label
    truth = torch.from_numpy(np.eye(4, dtype=bool)[[0, 1, 3, 0]])
    scores = torch.tensor([0.0, 0.0, 3.0, 0.0]).repeat(4, 1)
    precisions = _cooccurrence.grid_precision(scores, truth.float(), truth)
    assert _cooccurrence.choose_weight(precisions) == 4.0  # the first above 3
    # a term that says nothing: ties at every weight choose 0
    flat = _cooccurrence.grid_precision(scores, torch.ones(4, 4), truth)
    assert _cooccurrence.choose_weight(flat) == 0.0
    assert _cooccurrence.choose_weight(None) == 0.0


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 70))
def test_the_precision_of_each_weight_is_that_of_a_full_ranking(seed, n_labels):
    # the candidates (the best by score and by term) hold each row's top 5 whenever the
    # scores and terms are not both high for a third label: here, random rankings of
    # up to 70 labels against 2 x 64 candidates
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(6, n_labels, generator=gen, dtype=torch.float64).float()
    terms = torch.rand(6, n_labels, generator=gen, dtype=torch.float64).float()
    truth = torch.rand(6, n_labels, generator=gen) < 0.3
    truth[:, 0] = True
    got = _cooccurrence.grid_precision(scores, terms, truth)
    k = min(5, n_labels)
    for weight, value in zip(_cooccurrence.WEIGHTS, got, strict=True):
        order = (scores + weight * terms).topk(k, dim=1).indices
        hits = truth.gather(1, order).double()
        expected = (hits.cumsum(1) / torch.arange(1, k + 1)).mean()
        assert value == pytest.approx(float(expected), abs=1e-12)


def test_auto_chooses_a_weight_that_pays_and_the_term_helps_on_a_planted_task():
    # 40 labels each tied to its own feature, through 2 dimensions: the factored score
    # cannot tell them apart, the table can
    X, Y = _planted(n_rows=900, n_features=80, n_labels=40, seed=1)
    params = dict(TINY, embedding_dim=2, max_epochs=4)
    with_term = ConditionalNCEClassifier(**params).fit(X[:700], Y[:700])
    without = ConditionalNCEClassifier(cooccurrence_weight=0, **params).fit(X[:700], Y[:700])
    assert with_term.plan_.cooccurrence > 0 and with_term.cooccurrence_.nnz > 0
    assert without.plan_.cooccurrence == 0 and without.cooccurrence_ is None

    def precision(clf):
        top, _ = clf.predict_topk(X[700:], 1)
        return np.asarray(Y[700:][np.arange(200), top[:, 0]]).mean()

    assert precision(with_term) > precision(without) + 0.1


def test_the_network_is_the_same_with_or_without_the_term():
    # the term joins after training: a weight of 0 is the model without it, exactly
    X, Y = _planted()
    auto = ConditionalNCEClassifier(**TINY).fit(X, Y)
    off = ConditionalNCEClassifier(cooccurrence_weight=0, **TINY).fit(X, Y)
    assert auto.plan_.cooccurrence > 0
    for name, value in auto.net_.module_.state_dict().items():
        assert torch.equal(value, off.net_.module_.state_dict()[name]), name
    np.testing.assert_array_equal(
        _without_term(auto).predict_log_proba(X), off.predict_log_proba(X)
    )
    assert not np.array_equal(auto.predict_log_proba(X), off.predict_log_proba(X))


# --- every predict path with the term -----------------------------------------------------
def test_every_predict_path_adds_the_term(weighted):
    clf, X, Y = weighted
    assert clf.plan_.cooccurrence == 2.0
    bare = _without_term(clf)
    expected_term = _brute_term(
        X.toarray(), clf.idf_, clf.cooccurrence_.toarray().astype(np.float64), 2.0
    )
    log_proba = clf.predict_log_proba(X)
    np.testing.assert_allclose(
        _log_odds(log_proba) - _log_odds(bare.predict_log_proba(X)),
        expected_term,
        atol=2e-4,
    )
    np.testing.assert_allclose(clf.predict_proba(X), np.exp(log_proba))
    labels, top_log_proba = clf.predict_topk(X, 3)
    np.testing.assert_allclose(top_log_proba, np.take_along_axis(log_proba, labels, 1))
    assert (np.sort(log_proba, axis=1)[:, -3:][:, ::-1] == top_log_proba).all()
    indicator = clf.predict(X)
    np.testing.assert_array_equal(indicator.toarray(), log_proba > np.log(0.5))
    assert clf.score(X, Y) == np.mean((indicator != Y).sum(axis=1) == 0)
    # batched: rows one at a time give the same
    single = np.vstack([clf.predict_log_proba(X[i]) for i in range(5)])
    np.testing.assert_allclose(single, log_proba[:5], rtol=1e-6)
    # dense rows give the same
    np.testing.assert_allclose(clf.predict_log_proba(X.toarray()), log_proba, rtol=1e-6)


def test_the_term_is_added_by_blocks_of_labels(weighted, monkeypatch):
    from sknce.conditional import _classifier

    clf, X, _ = weighted
    expected = clf.predict_log_proba(X)
    monkeypatch.setattr(_classifier, "_CLASS_CHUNK", 5)  # 12 labels: blocks of 5, 5, 2
    np.testing.assert_allclose(clf.predict_log_proba(X), expected, rtol=1e-6)
    labels, _ = clf.predict_topk(X, 4)
    np.testing.assert_array_equal(labels, np.argsort(-expected, axis=1, kind="stable")[:, :4])


def test_an_empty_row_gets_the_networks_scores(weighted):
    clf, X, _ = weighted
    empty = sp.csr_matrix((2, X.shape[1]))
    np.testing.assert_array_equal(
        clf.predict_log_proba(empty), _without_term(clf).predict_log_proba(empty)
    )


def test_the_exported_module_adds_the_term(weighted, tmp_path):
    from sknce.export import to_onnx, to_torch_export

    clf, X, _ = weighted
    dense = X.toarray()
    dense[1] = 0  # an empty row
    x = torch.as_tensor(dense, dtype=torch.float32)
    expected = clf.predict_proba(dense)
    tolerance = {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(to_torch_module(clf)(x).numpy(), expected, **tolerance)
    logs = to_torch_module(clf, "predict_log_proba")(x).numpy()
    np.testing.assert_allclose(logs, clf.predict_log_proba(dense), **tolerance)
    program = to_torch_export(clf).module()
    np.testing.assert_allclose(program(x[:3]).numpy(), expected[:3], **tolerance)
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    path = to_onnx(clf, tmp_path / "model.onnx")
    (out,) = ort.InferenceSession(str(path)).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(out, expected, **tolerance)


def test_the_exported_term_runs_its_table_in_chunks(monkeypatch):
    table = sp.random(30, 7, density=0.4, format="csr", random_state=0, dtype=np.float32)
    x = torch.rand(4, 30)
    whole = _cooccurrence.CooccurrenceOffset(table, 1.5, None)(x)
    monkeypatch.setattr(_cooccurrence, "EXPORT_CHUNK", 10)
    chunked = _cooccurrence.CooccurrenceOffset(table, 1.5, None)(x)
    torch.testing.assert_close(chunked, whole)
    expected = _brute_term(x.numpy(), None, table.toarray(), 1.5)
    np.testing.assert_allclose(whole.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_pickling_keeps_the_term(weighted):
    clf, X, _ = weighted
    back = pickle.loads(pickle.dumps(clf))
    assert back.plan_.cooccurrence == 2.0
    assert (back.cooccurrence_ != clf.cooccurrence_).nnz == 0
    np.testing.assert_array_equal(back.predict_log_proba(X), clf.predict_log_proba(X))


# --- continued fits ------------------------------------------------------------------------
def test_a_continued_fit_keeps_the_table_and_its_weight(weighted):
    clf, X, Y = weighted
    table = clf.cooccurrence_.copy()
    for how in ("partial_fit", "warm_start"):
        continued = pickle.loads(pickle.dumps(clf))
        if how == "partial_fit":
            continued.partial_fit(X, Y)
        else:
            continued.set_params(warm_start=True, max_epochs=1).fit(X, Y)
        assert continued.plan_.cooccurrence == 2.0, how
        assert (continued.cooccurrence_ != table).nnz == 0, how


def test_a_continued_fit_refuses_a_new_weight(weighted):
    clf, X, Y = weighted
    changed = pickle.loads(pickle.dumps(clf)).set_params(cooccurrence_weight=4.0)
    with pytest.raises(ValueError, match=r"cooccurrence_weight.*co-occurrence table"):
        changed.partial_fit(X, Y)
    assert changed.plan_.cooccurrence == 2.0


def test_partial_fit_from_scratch_holds_no_rows_out_so_auto_is_no_term():
    X, Y = _planted()
    clf = ConditionalNCEClassifier(**TINY).partial_fit(X, Y)
    assert clf.plan_.cooccurrence == 0.0 and clf.cooccurrence_ is None
    fixed = ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY).partial_fit(X, Y)
    assert fixed.plan_.cooccurrence == 1.0
    np.testing.assert_allclose(
        fixed.cooccurrence_.toarray(), _cooccurrence.ppmi_table(X, Y).toarray()
    )
    no_hold_out = ConditionalNCEClassifier(early_stopping=False, **TINY).fit(X, Y)
    assert no_hold_out.plan_.cooccurrence == 0.0


@pytest.mark.filterwarnings("ignore:No epoch of this fit beat")
def test_a_refit_from_scratch_forgets_the_former_table(weighted):
    clf, X, Y = weighted
    again = clone(clf).set_params(cooccurrence_weight=0).fit(X, Y)
    assert again.cooccurrence_ is None
    single = pickle.loads(pickle.dumps(clf)).fit(X, Y.toarray().argmax(axis=1))
    assert single.cooccurrence_ is None and single.plan_.cooccurrence == 0.0


# --- inputs the term cannot take, and bad values ------------------------------------------
@pytest.mark.parametrize(
    ("weight", "error", "match"),
    [
        (-1.0, ValueError, "cooccurrence_weight"),
        ("always", ValueError, "cooccurrence_weight"),
        (float("nan"), ValueError, "cooccurrence_weight"),
        (float("inf"), ValueError, "cooccurrence_weight"),
        (True, ValueError, r"finite number >= 0"),
        ([1.0], ValueError, "cooccurrence_weight"),
    ],
)
def test_a_bad_weight_is_refused_by_name(weight, error, match):
    X, Y = _planted(n_rows=40)
    with pytest.raises(error, match=match):
        ConditionalNCEClassifier(cooccurrence_weight=weight, **TINY).fit(X, Y)


def test_a_weight_for_input_the_term_cannot_read_is_refused_with_the_fix():
    X, Y = _planted(n_rows=60)
    dense = ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY)
    with pytest.raises(ValueError, match=r"sparse X of non-negative.*set it to 0"):
        dense.fit(X.toarray(), Y)
    negative = X.copy()
    negative.data[0] = -1.0
    with pytest.raises(ValueError, match=r"sparse X of non-negative"):
        ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY).fit(negative, Y)
    # "auto" there: no term, no error
    for inputs in (X.toarray(), negative):
        clf = ConditionalNCEClassifier(**TINY).fit(inputs, Y)
        assert clf.plan_.cooccurrence == 0.0 and clf.cooccurrence_ is None


def test_non_finite_input_is_refused_before_the_term(weighted):
    clf, X, _ = weighted
    bad = X.copy().astype(np.float64)
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.predict_proba(bad)
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.predict_topk(bad, 2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:A column-vector y:sklearn.exceptions.DataConversionWarning")
def test_one_label_two_labels_and_labels_every_row_shares():
    X, _ = _planted(n_rows=120)
    rng = np.random.default_rng(0)
    # one column is a binary y (scikit-learn's reading of a column vector): no term
    one = (rng.random((120, 1)) < 0.5).astype(np.int64)
    single = ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY).fit(X, one)
    assert not single.multilabel_ and single.cooccurrence_ is None
    two = sp.csr_matrix(np.column_stack([one[:, 0], 1 - one[:, 0]]))
    clf = ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY).fit(X, two)
    assert clf.predict_topk(X, 2)[0].shape == (120, 2) and clf.cooccurrence_.shape == (60, 2)
    same = sp.csr_matrix(np.ones((120, 3), dtype=np.int64))
    fixed = ConditionalNCEClassifier(cooccurrence_weight=1.0, **TINY).fit(X, same)
    assert fixed.cooccurrence_.nnz == 0  # nothing to add
    np.testing.assert_array_equal(
        fixed.predict_log_proba(X), _without_term(fixed).predict_log_proba(X)
    )
    assert to_torch_module(fixed)(torch.zeros(2, X.shape[1])).shape == (2, 3)


@pytest.mark.filterwarnings("ignore:No epoch of this fit beat")
def test_a_single_label_fit_has_no_term():
    X, Y = _planted(n_rows=120)
    clf = ConditionalNCEClassifier(cooccurrence_weight=3.0, **TINY).fit(X, Y.toarray().argmax(1))
    assert clf.cooccurrence_ is None and clf.plan_.cooccurrence == 0.0


def test_auto_takes_the_weight_of_the_epoch_the_fit_chose():
    from sknce.conditional._multilabel import chosen_epochs

    X, Y = _planted()
    clf = ConditionalNCEClassifier(**dict(TINY, max_epochs=6)).fit(X, Y)
    history = clf.selection_history_  # the held-out fit's: a refit followed
    records = [row.get("cooccurrence_precision") for row in history]
    assert all(len(r) == len(_cooccurrence.WEIGHTS) for r in records)
    epochs = chosen_epochs([row.get("valid_precision") for row in history])
    assert clf.plan_.cooccurrence == _cooccurrence.choose_weight(records[epochs - 1])


def test_the_fitted_net_does_not_carry_the_choices_data():
    # the autograd step restores the best epoch instead of refitting: its net is kept
    X, Y = _planted()
    clf = ConditionalNCEClassifier(optimizer=torch.optim.SGD, lr=0.5, **TINY).fit(X, Y)
    assert not clf.plan_.refit
    choice = dict(clf.net_.callbacks_)["cooccurrence"]
    assert choice.X is None and choice.Y is None and choice.held_out_ is None
    best = dict(clf.net_.callbacks_)["early_stopping"].best_epoch_
    records = [row.get("cooccurrence_precision") for row in clf.history_[:best]]
    assert clf.plan_.cooccurrence == _cooccurrence.choose_weight(records[-1])


def test_the_weight_chosen_is_the_smallest_near_the_best_gain():
    weights = (0.0, 1.0, 2.0, 4.0, 8.0)
    # 4 gains 0.095 of the best 0.1 (at 8): 95% of it
    assert _cooccurrence.choose_weight([0.3, 0.35, 0.37, 0.395, 0.4], weights) == 4.0
    assert _cooccurrence.choose_weight([0.3, 0.35, 0.37, 0.385, 0.4], weights) == 8.0
    # no weight gains: no term
    assert _cooccurrence.choose_weight([0.3, 0.3, 0.2, 0.1, 0.0], weights) == 0.0
