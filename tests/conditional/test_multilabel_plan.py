"""The plan of a multi-label fit, its held-out rows and their precision monitor."""

import dataclasses
import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from sknce import ConditionalNCEClassifier
from sknce._engine import HoldOut
from sknce._steps import AutogradStep
from sknce.conditional import _multilabel
from sknce.conditional._kernel_step import BagOneVsAllStep
from sknce.conditional._multilabel import (
    auto_negatives,
    chosen_epochs,
    held_out_precision,
    refit_start,
    resolve_plan,
)
from sknce.conditional._plan import DataFacts
from sknce.conditional._plan import resolve_plan as classifier_plan
from sknce.nn import BagEncoder, BagWeighting
from sknce.optim import LazyAdam


def _counts(n=300, n_features=50, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, n_features, density=0.1, format="csr", random_state=seed)
    X.data = np.ceil(X.data * 3)
    Y = sp.csr_matrix((rng.random((n, 12)) < 0.25).astype(np.int8))
    return X, Y


def _plan(X, Y, **params):
    return resolve_plan(ConditionalNCEClassifier(**params), X, Y)


def _classifier_plan(X, Y, **params):
    """The classifier's plan that a multi-label plan fills (as a fit resolves it)."""
    estimator = ConditionalNCEClassifier(**params)
    facts = DataFacts(Y.shape[1], X.shape[1], X.nnz / X.shape[0], True, multilabel=True)
    return classifier_plan(estimator, facts, 1, resolve_plan(estimator, X, Y))


def test_the_defaults_on_sparse_counts_are_the_compiled_regime():
    X, Y = _counts()
    plan = _plan(X, Y)
    assert plan.bag and plan.compiled and plan.weigh_bags
    assert plan.optimizer is torch.optim.Adagrad
    assert (plan.dim, plan.n_negatives, plan.batch_size, plan.lr) == (
        _multilabel.DIM,
        auto_negatives(12),
        _multilabel.BATCH,
        _multilabel.LR,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.lr = 1.0


def test_only_counts_are_weighed_by_idf():
    X, Y = _counts()
    tfidf = X.multiply(1 / (1 + np.arange(X.shape[1]))).tocsr()  # not integers
    assert not _plan(tfidf, Y).weigh_bags and _plan(tfidf, Y).compiled
    signed = X.copy()
    signed.data[::2] *= -1
    assert not _plan(signed, Y).weigh_bags


@pytest.mark.parametrize(
    "params",
    [
        {"optimizer": LazyAdam},
        {"optimizer": torch.optim.SGD},
        {"optimizer_kwargs": {"weight_decay": 1e-4}},
        {"dropout": 0.1},
        {"input_bias": True},
    ],
)
def test_other_training_settings_leave_the_compiled_regime(params):
    X, Y = _counts()
    plan = _plan(X, Y, **params)
    assert plan.bag and not plan.compiled and plan.lr is None
    assert plan.optimizer is params.get("optimizer", torch.optim.Adam)
    assert _classifier_plan(X, Y, **params).epoch_rule == (0, 0, 0)  # the classifier's own rule


def test_dense_input_or_an_own_encoder_is_no_bag():
    X, Y = _counts()
    assert not _plan(X.toarray(), Y).bag
    assert not _plan(X, Y, hidden_layer_sizes=(8,)).bag
    assert not _plan(X, Y, encoder=torch.nn.Linear(50, 4)).bag


def test_autograd_batches_hold_about_256_positive_labels():
    X, _ = _counts()
    for per_row, expected in ((1, 256), (4, 64), (32, 16), (0, 256)):
        Y = sp.csr_matrix(np.tile(np.arange(40) < per_row, (300, 1)).astype(np.int8))
        assert _plan(X.toarray(), Y).batch_size == expected


@pytest.mark.parametrize(
    "n_labels, expected",
    [(1, 64), (480, 64), (2048, 64), (4096, 128), (8456, 256), (10**6, 256)],
)
def test_noise_labels_grow_with_the_label_count(n_labels, expected):
    assert auto_negatives(n_labels) == expected


@pytest.mark.parametrize("n_train, expected", [(1, 20), (5000, 20), (8112, 12), (10**6, 5)])
def test_max_epochs_auto_is_about_a_fixed_number_of_row_updates(n_train, expected):
    X, Y = _counts()
    assert _classifier_plan(X, Y).epochs(n_train, None) == expected


def _texts(n=400, seed=0):
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, 8, size=n)
    words = np.where(
        rng.random((n, 10)) < 0.6,
        topic[:, None] * 10 + rng.integers(0, 10, (n, 10)),
        rng.integers(0, 200, (n, 10)),
    )
    texts = [" ".join(f"w{w}" for w in row) for row in words]
    Y = np.zeros((n, 24), dtype=np.int8)
    Y[np.arange(n), topic] = 1
    Y[np.arange(n), 8 + topic] = 1
    Y[np.arange(n), 16 + topic // 2] = 1
    return texts, sp.csr_matrix(Y)


def test_early_stopping_holds_out_rows_and_monitors_their_precision():
    texts, Y = _texts(400)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts).toarray()  # autograd
    clf = ConditionalNCEClassifier(max_epochs=4, random_state=0).fit(X, Y)
    assert not clf.plan_.refit and not hasattr(clf, "selection_history_")
    first = clf.net_.history[0]["batches"]
    held_out = sum(b["valid_batch_size"] for b in first if "valid_batch_size" in b)
    trained = sum(b["train_batch_size"] for b in first if "train_batch_size" in b)
    # rows, not (row, label) pairs: 3 labels a row would make 1,200 examples
    assert held_out == math.ceil(0.1 * 400) and trained == 400 - held_out
    assert all(0 <= row["valid_precision"] <= 1 for row in clf.history_)
    assert any(row["valid_precision_best"] for row in clf.history_)


def test_the_compiled_regime_refits_every_row_for_the_held_out_rows_best_epoch(monkeypatch):
    splits = []
    split = HoldOut.__call__

    def recorded(self, dataset, y=None, **fit_params):
        train, valid = split(self, dataset, y, **fit_params)
        splits.append((len(train), len(valid)))
        return train, valid

    monkeypatch.setattr(HoldOut, "__call__", recorded)
    texts, Y = _texts(400)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=6, random_state=0).fit(X, Y)
    assert clf.plan_.refit and clf.plan_.early_stopping
    # the choosing fit held out rows (each with all its labels), not (row, label) pairs
    assert splits and set(splits) == {(400 - math.ceil(0.1 * 400), math.ceil(0.1 * 400))}
    selection = clf.selection_history_
    best = chosen_epochs([row["valid_precision"] for row in selection])
    # the refit continues the held-out fit from a third of its 6 epochs, or starts anew
    assert clf.n_iter_ == best - refit_start(best, 6) and len(selection) >= best
    # the refit trains every row (none held out) and validates none
    first = clf.net_.history[0]["batches"]
    assert sum(b["train_batch_size"] for b in first if "train_batch_size" in b) == 400
    assert not any("valid_batch_size" in b for b in first)
    assert "valid_precision" not in clf.history_[-1]


@pytest.mark.parametrize(
    "params, sparse, stops, refit",
    [
        ({}, True, True, True),  # the compiled regime: rows held out, then a refit
        ({"early_stopping": False}, True, False, True),  # every row, max_epochs: no refit
        ({}, False, True, False),  # dense: autograd keeps the held-out fit's best epoch
        ({"optimizer": LazyAdam}, True, True, False),  # sparse but autograd
        ({"early_stopping": False}, False, False, False),
    ],
)
def test_the_plan_says_whether_rows_are_held_out_and_then_refitted(params, sparse, stops, refit):
    X, Y = _counts()
    X = X if sparse else X.toarray()
    plan = _classifier_plan(X, Y, **params) if sparse else None
    clf = ConditionalNCEClassifier(max_epochs=2, random_state=0, **params).fit(X, Y)
    assert (clf.plan_.early_stopping, clf.plan_.refit) == (stops, refit)
    assert plan is None or (plan.early_stopping, plan.refit) == (stops, refit)
    assert hasattr(clf, "selection_history_") is (stops and refit)
    # the fitted network's history validates only where no refit followed the hold-out
    assert ("valid_loss" in clf.history_[-1]) is (stops and not refit)


def test_a_fit_without_early_stopping_or_a_partial_fit_does_not_refit():
    texts, Y = _texts(200)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=3, early_stopping=False, random_state=0)
    assert clf.fit(X, Y).n_iter_ == 3 and not hasattr(clf, "selection_history_")
    partial = ConditionalNCEClassifier(random_state=0).partial_fit(X, Y)
    assert partial.n_iter_ == 1 and not hasattr(partial, "selection_history_")
    refitted = ConditionalNCEClassifier(max_epochs=3, random_state=0).fit(X, Y)
    assert hasattr(refitted, "selection_history_")
    refitted.set_params(early_stopping=False).fit(X, Y)
    assert not hasattr(refitted, "selection_history_")  # not a former fit's


def test_a_continued_fit_does_not_refit():
    texts, Y = _texts(200)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=3, warm_start=True, random_state=0).fit(X, Y)
    first = clf.n_iter_
    clf.fit(X, Y)
    assert clf.n_iter_ > first  # the held-out net continued: no new network


def test_held_out_precision_is_the_mean_precision_at_1_to_5_of_the_labelled_rows():
    texts, Y = _texts(300, seed=1)
    Y = Y.tolil()
    Y[:5] = 0  # unlabelled rows are left out of the mean
    Y = Y.tocsr()
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=3, early_stopping=False, random_state=0)
    clf.fit(X, Y)
    clf._classifier_plan = clf.plan_  # a fit's own plan, dropped after it
    dataset = clf._make_dataset(_multilabel_data(clf, X, Y), "cpu")
    dataset.rows = np.arange(300)
    top, _ = clf.predict_topk(X[5:], 5)
    dense = Y.toarray().astype(bool)[5:]
    hits = dense[np.arange(295)[:, None], top]
    expected = np.mean([hits[:, :k].sum(axis=1).mean() / k for k in range(1, 6)])
    assert held_out_precision(clf, dataset) == pytest.approx(expected, rel=1e-12)
    dataset.rows = np.arange(5)  # no labelled row: no figure
    assert held_out_precision(clf, dataset) is None


def _multilabel_data(clf, X, Y):
    from sknce.conditional._classifier import _Labelled

    return _Labelled(X.astype(np.float32), Y, None)


def test_a_user_optimizer_trains_the_bag_by_autograd():
    texts, Y = _texts(400)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(optimizer=LazyAdam, lr=1e-2, max_epochs=15, random_state=0).fit(
        X[:300], Y[:300]
    )
    assert type(clf.net_.step_) is AutogradStep
    assert isinstance(clf.net_.module_.encoder, BagEncoder)
    top, _ = clf.predict_topk(X[300:], 1)
    assert Y[300:].toarray()[np.arange(100), top[:, 0]].mean() > 0.8


def test_tf_idf_input_trains_without_a_second_idf():
    texts, Y = _texts(400)
    X = TfidfVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=10, random_state=0).fit(X[:300], Y[:300])
    assert isinstance(clf.net_.step_, BagOneVsAllStep)
    assert clf.net_.module_.encoder.weighting is None
    top, _ = clf.predict_topk(X[300:], 1)
    assert Y[300:].toarray()[np.arange(100), top[:, 0]].mean() > 0.8


def test_a_single_label_fit_after_a_multilabel_one_drops_the_plan():
    texts, Y = _texts(200)
    X = CountVectorizer(token_pattern=r"\S+").fit_transform(texts)
    clf = ConditionalNCEClassifier(max_epochs=2, random_state=0).fit(X, Y)
    assert clf._multilabel_plan.compiled
    clf.fit(X, Y.indices[::3])
    assert clf._multilabel_plan is None and not clf.multilabel_
    assert clf.plan_.objective != "ova"


@pytest.mark.parametrize(
    "idf, match",
    [
        (np.ones(3), "one value per feature"),
        (np.ones((5, 1)), "one value per feature"),
        ([np.nan] * 5, "finite and non-negative"),
        ([np.inf] * 5, "finite and non-negative"),
        ([-1.0] * 5, "finite and non-negative"),
    ],
)
def test_bag_encoder_refuses_a_bad_idf(idf, match):
    with pytest.raises(ValueError, match=match):
        BagEncoder(5, 2, weighting=BagWeighting("log1p-idf", idf))


def test_bag_encoder_idf_weighs_log_counts_dense_and_sparse_alike():
    idf = np.array([1.0, 2.0, 0.5])
    encoder = BagEncoder(3, 2, weighting=BagWeighting("log1p-idf", idf)).double()
    x = torch.tensor([[2.0, 0.0, 1.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    weights = np.log1p(x.numpy()) * idf
    expected = weights[0] / weights[0].sum() @ encoder.weight.detach().numpy()
    for batch in (x, x.to_sparse()):
        h = encoder(batch).detach().numpy()
        np.testing.assert_allclose(h[0], expected, rtol=1e-6)
        np.testing.assert_array_equal(h[1], 0.0)  # an empty bag maps to zero
