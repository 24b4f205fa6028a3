"""Multi-label ConditionalNCEClassifier: a label-indicator y, per-label probabilities."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import MultiLabelBinarizer

from sknce import ConditionalNCEClassifier
from sknce.conditional._sampler import LabelSetSampler, _outside, _outside_keys
from sknce.losses import multilabel_one_vs_all, one_vs_all_nce
from sknce.noise import CategoricalNoise

FAST = dict(n_negatives=8, hidden_layer_sizes=(), embedding_dim=16, random_state=0)


def _brute_force_ova(scores: torch.Tensor, positives: set) -> float:
    """The one-vs-all logistic loss of a row, over every label."""
    return sum(
        float(F.softplus(-s) if y in positives else F.softplus(s)) for y, s in enumerate(scores)
    )


@pytest.mark.parametrize("seed", range(5))
def test_one_vs_all_nce_with_every_label_once_is_the_full_loss(seed):
    # K = n_labels negatives, each label once, p_N = 1/K: the importance weights are 1,
    # so a row's examples (one per positive, each with share 1/m) sum to the full loss.
    gen = torch.Generator().manual_seed(seed)
    n_labels = 7
    scores = torch.randn(n_labels, generator=gen, dtype=torch.float64) * 3
    positives = [1, 4, 5]
    negatives = torch.arange(n_labels).expand(len(positives), n_labels)
    neg_scores = scores[negatives].masked_fill(
        torch.isin(negatives, torch.tensor(positives)), float("-inf")
    )
    loss = one_vs_all_nce(
        scores[positives],
        neg_scores,
        torch.full(negatives.shape, -np.log(n_labels), dtype=torch.float64),
        neg_weights=torch.full(negatives.shape, 1 / len(positives), dtype=torch.float64),
        reduction="sum",
    )
    assert float(loss) == pytest.approx(_brute_force_ova(scores, set(positives)), rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_one_vs_all_nce_is_unbiased_over_the_noise(seed):
    # K = 1: the expectation over y ~ p_N, enumerated exactly, of the sampled loss is the
    # positive's term plus the sum over every non-positive label.
    gen = torch.Generator().manual_seed(seed)
    n_labels = 6
    scores = torch.randn(n_labels, generator=gen, dtype=torch.float64) * 2
    probs = torch.rand(n_labels, generator=gen, dtype=torch.float64) + 0.1
    probs = probs / probs.sum()
    positives = {0, 3}
    expected = 0.0
    for y in range(n_labels):
        neg = scores[y].reshape(1, 1)
        if y in positives:
            neg = torch.full((1, 1), float("-inf"), dtype=torch.float64)
        loss = one_vs_all_nce(
            scores[0].reshape(1), neg, torch.log(probs[y]).reshape(1, 1), reduction="sum"
        )
        expected += float(probs[y] * loss)
    truth = float(F.softplus(-scores[0])) + sum(
        float(F.softplus(scores[y])) for y in range(n_labels) if y not in positives
    )
    assert expected == pytest.approx(truth, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_multilabel_one_vs_all_is_the_pairs_loss_of_the_row(seed):
    # A row's loss is one_vs_all_nce summed over its positives, each with the share
    # 1/|P| of the negatives' term; padded positives add nothing.
    gen = torch.Generator().manual_seed(seed)
    pos = torch.randn(3, 4, generator=gen, dtype=torch.float64) * 3
    neg = torch.randn(3, 6, generator=gen, dtype=torch.float64) * 3
    neg[1, 2] = -torch.inf  # a masked negative
    log_noise = torch.log(torch.rand(3, 6, generator=gen, dtype=torch.float64))
    pos_mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=torch.bool)
    weight = torch.tensor([0.5, 2.0, 1.5], dtype=torch.float64)
    loss = multilabel_one_vs_all(
        pos, neg, log_noise, pos_mask=pos_mask, sample_weight=weight, reduction="none"
    )
    for i in range(3):
        m = int(pos_mask[i].sum())
        if m == 0:  # an unlabelled row: its negatives' term alone
            expected = float((torch.exp(-log_noise[i]) / 6 * F.softplus(neg[i])).sum())
        else:
            expected = float(
                one_vs_all_nce(
                    pos[i, :m],
                    neg[i].expand(m, 6),
                    log_noise[i].expand(m, 6),
                    neg_weights=torch.full((m, 6), 1 / m, dtype=torch.float64),
                    reduction="sum",
                )
            )
        assert float(loss[i]) == pytest.approx(float(weight[i]) * expected, rel=1e-12)
    assert float(multilabel_one_vs_all(pos, neg, log_noise, pos_mask=pos_mask)) == (
        pytest.approx(float((loss / weight).mean()), rel=1e-12)
    )


def test_multilabel_one_vs_all_with_every_label_once_is_the_full_loss():
    n_labels = 7
    scores = torch.randn(n_labels, generator=torch.Generator().manual_seed(0)) * 3
    positives = [1, 4, 5]
    every = torch.arange(n_labels)
    neg = scores[every].masked_fill(torch.isin(every, torch.tensor(positives)), -torch.inf)
    loss = multilabel_one_vs_all(
        scores[positives].reshape(1, -1),
        neg.reshape(1, -1),
        torch.full((1, n_labels), -np.log(n_labels)),
        reduction="sum",
    )
    assert float(loss) == pytest.approx(_brute_force_ova(scores, set(positives)), rel=1e-6)


def test_multilabel_one_vs_all_gradients_are_finite_at_masked_scores():
    pos = torch.tensor([[2.0, 0.0]], requires_grad=True)
    neg = torch.tensor([[1.0, -torch.inf]], requires_grad=True)
    loss = multilabel_one_vs_all(
        pos, neg, torch.zeros(1, 2), pos_mask=torch.tensor([[True, False]])
    )
    loss.backward()
    assert torch.isfinite(pos.grad).all() and torch.isfinite(neg.grad).all()
    assert float(pos.grad[0, 1]) == 0.0 and float(neg.grad[0, 1]) == 0.0


def test_multilabel_one_vs_all_names_bad_shapes():
    with pytest.raises(ValueError, match="batch, P"):
        multilabel_one_vs_all(torch.zeros(3), torch.zeros(3, 2), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="batch size"):
        multilabel_one_vs_all(torch.zeros(3, 1), torch.zeros(2, 2), torch.zeros(2, 2))


def _sampler(Y, shared, n_negatives=20):
    return LabelSetSampler(
        sp.csr_matrix(np.arange(Y.shape[0] * 2, dtype=np.float32).reshape(-1, 2)),
        Y,
        CategoricalNoise(np.full(Y.shape[1], 1 / Y.shape[1])),
        n_negatives,
        "cpu",
        shared=shared,
    )


@pytest.mark.parametrize("shared", [False, True])
def test_sampler_excludes_every_positive_of_the_row_from_its_noise_and_nothing_else(shared):
    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((50, 6)) < 0.5).astype(np.int8))
    Y[7] = 0  # an unlabelled row
    Y.eliminate_zeros()
    sampler = _sampler(Y, shared)
    assert len(sampler) == 50  # one example per row
    dense = Y.toarray().astype(bool)
    for _ in range(5):
        rows = np.append(rng.permutation(50)[:31], 7)
        batch = sampler(rows, rng)
        negatives = batch.inputs["negatives"]
        negatives = negatives.expand(32, -1) if shared else negatives
        is_positive = dense[rows[:, None], negatives.numpy()]
        np.testing.assert_array_equal(batch.targets.neg_mask.numpy(), ~is_positive)
        # the positives of each row, padded to the batch's largest set
        labels = batch.inputs["labels"].numpy()
        mask = batch.targets.pos_mask.numpy()
        for i, row in enumerate(rows):
            assert sorted(labels[i, mask[i]]) == list(np.flatnonzero(dense[row]))
        assert mask.shape[1] == max(dense[rows].sum(axis=1).max(), 1)
        np.testing.assert_array_equal(batch.inputs["x"].to_dense()[:, 1].numpy(), 2 * rows + 1)
        # the sorted search of the other devices agrees with the compiled scan
        keys = torch.as_tensor(np.flatnonzero(dense.ravel()))
        np.testing.assert_array_equal(
            _outside_keys(keys, torch.as_tensor(rows), batch.inputs["negatives"], 6).numpy(),
            ~is_positive,
        )


@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_noise_draws_are_the_torch_draws_to_the_bit(seed):
    # own draws from alias tables on the CPU: one compiled pass gives what noise.sample,
    # noise.log_prob and the positives scan give from the same generator state
    rng = np.random.default_rng(seed)
    n_labels = 40
    Y = sp.csr_matrix((rng.random((64, n_labels)) < 0.2).astype(np.int8))
    noise = CategoricalNoise(rng.random(n_labels) ** 3)  # skewed: both alias branches
    sampler = LabelSetSampler(Y.astype(np.float32), Y, noise, 50, "cpu")
    rows = rng.permutation(64)[:48]
    positives, mask = sampler.positives(rows)
    counts = mask.sum(axis=1)
    drawn = sampler._noise(rows, positives, counts, torch.Generator().manual_seed(seed))
    negatives = noise.sample((48, 50), generator=torch.Generator().manual_seed(seed))
    expected = (
        negatives,
        noise.log_prob(negatives),
        sampler._not_positive(negatives, rows, positives, counts),
    )
    for got, want in zip(drawn, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got, want)
    assert not drawn[2].all()  # some draws are positives: the mask is exercised


def test_noise_without_alias_tables_still_excludes_the_positives():
    from sknce.noise import UniformNoise

    rng = np.random.default_rng(0)
    Y = sp.csr_matrix((rng.random((30, 5)) < 0.5).astype(np.int8))
    sampler = LabelSetSampler(Y.astype(np.float32), Y, UniformNoise(5), 12, "cpu")
    rows = np.arange(30)
    batch = sampler(rows, rng)
    is_positive = Y.toarray().astype(bool)[rows[:, None], batch.inputs["negatives"].numpy()]
    np.testing.assert_array_equal(batch.targets.neg_mask.numpy(), ~is_positive)
    assert torch.equal(batch.targets.neg_log_noise, torch.full((30, 12), -np.log(5.0)))


def test_the_positives_scan_and_search_agree_with_brute_force_at_the_edges():
    rng = np.random.default_rng(1)
    # no positive at all: nothing is excluded
    empty = _outside(rng.integers(0, 5, (4, 3)), np.zeros((4, 1), np.int64), np.zeros(4, np.int64))
    assert empty.all()
    assert _outside_keys(
        torch.empty(0, dtype=torch.int64), torch.arange(4), torch.zeros(4, 3, dtype=torch.int64), 5
    ).all()
    # every label positive: everything is excluded
    every = np.tile(np.arange(5), (4, 1))
    assert not _outside(rng.integers(0, 5, (4, 3)), every, np.full(4, 5)).any()


def _planted(n=600, n_labels=20, seed=0):
    """Each row's labels: its 3 best-scoring labels under a random linear map."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(10, n_labels)) * 2
    X = rng.normal(size=(n, 10))
    scores = X @ W
    Y = np.zeros((n, n_labels), dtype=np.int64)
    np.put_along_axis(Y, np.argsort(-scores, axis=1)[:, :3], 1, axis=1)
    return X, Y


def _precision_at_1(clf, X, Y):
    top, _ = clf.predict_topk(X, 1)
    return float(np.mean(np.asarray(Y)[np.arange(len(X)), top[:, 0]]))


@pytest.mark.parametrize("sparse_y", [False, True])
def test_planted_labels_are_recovered(sparse_y):
    X, Y = _planted()
    Y_fit = sp.csr_matrix(Y[:500]) if sparse_y else Y[:500]
    clf = ConditionalNCEClassifier(max_epochs=40, **FAST).fit(X[:500], Y_fit)
    # chance is 3 / 20 = 0.15
    assert _precision_at_1(clf, X[500:], Y[500:]) > 0.8
    proba = clf.predict_proba(X[500:])
    assert proba.shape == (100, 20)
    assert proba.min() >= 0 and proba.max() <= 1
    assert not np.allclose(proba.sum(axis=1), 1)  # per-label, not a distribution
    # the per-label probabilities are calibrated roughly: about 3 labels expected per row
    assert 1.5 < proba.sum(axis=1).mean() < 5


def test_output_types_follow_y():
    X, Y = _planted(n=200)
    dense = ConditionalNCEClassifier(max_epochs=3, **FAST).fit(X, Y)
    sparse = ConditionalNCEClassifier(max_epochs=3, **FAST).fit(X, sp.csr_matrix(Y))
    np.testing.assert_array_equal(dense.classes_, np.arange(20))
    assert dense.multilabel_ and not dense.sparse_output_ and sparse.sparse_output_
    pred = dense.predict(X)
    assert isinstance(pred, np.ndarray) and pred.shape == (200, 20)
    assert set(np.unique(pred)) <= {0, 1}
    pred_sparse = sparse.predict(X)
    assert sp.issparse(pred_sparse) and pred_sparse.shape == (200, 20)
    np.testing.assert_array_equal(pred_sparse.toarray(), pred)
    # predict is the indicator of the labels above the threshold
    np.testing.assert_array_equal(pred, (dense.predict_proba(X) > 0.5).astype(int))
    low = ConditionalNCEClassifier(max_epochs=3, multilabel_threshold=0.05, **FAST).fit(X, Y)
    assert low.predict(X).sum() > pred.sum()
    labels, log_proba = dense.predict_topk(X, 4)
    assert labels.shape == log_proba.shape == (200, 4)
    assert np.all(np.diff(log_proba, axis=1) <= 1e-12)
    full = dense.predict_log_proba(X)
    np.testing.assert_allclose(log_proba, np.take_along_axis(full, labels, axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.exp(full), dense.predict_proba(X), rtol=1e-12)
    # score: subset accuracy, as scikit-learn's classifiers
    assert dense.score(X, Y) == pytest.approx(np.mean((pred == Y).all(axis=1)))


def test_score_takes_a_sparse_indicator_and_weights():
    # a sparse fit predicts sparse rows, which have no len(): score and a grid search
    # scored by it used to raise "sparse array length is ambiguous"
    X, Y = _planted(n=200)
    sparse = ConditionalNCEClassifier(max_epochs=3, **FAST).fit(X, sp.csr_matrix(Y))
    pred = sparse.predict(X).toarray()
    exact = (pred == Y).all(axis=1)
    assert sparse.score(X, sp.csr_matrix(Y)) == pytest.approx(exact.mean())
    weights = np.linspace(1.0, 3.0, 200)
    weighted = sparse.score(X, sp.csr_matrix(Y), sample_weight=weights)
    assert weighted == pytest.approx(np.average(exact, weights=weights))
    search = GridSearchCV(
        ConditionalNCEClassifier(max_epochs=2, **FAST), {"n_negatives": [4, 8]}, cv=2
    ).fit(X, sp.csr_matrix(Y))
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_label_sets_through_multilabelbinarizer():
    X, Y = _planted(n=200)
    label_sets = [set(np.flatnonzero(row)) for row in Y]
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        ConditionalNCEClassifier(**FAST).fit(X, label_sets)
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        ConditionalNCEClassifier(**FAST).fit(
            X, [sorted(s)[: 1 + i % 3] for i, s in enumerate(label_sets)]
        )
    binarizer = MultiLabelBinarizer(sparse_output=True)
    clf = ConditionalNCEClassifier(max_epochs=2, **FAST).fit(
        X, binarizer.fit_transform(label_sets)
    )
    labels, _ = clf.predict_topk(X[:3], 2)
    assert binarizer.classes_[labels].shape == (3, 2)


def test_bad_indicators_name_the_fix():
    X, Y = _planted(n=100)
    with pytest.raises(ValueError, match="0/1"):
        ConditionalNCEClassifier(**FAST).fit(X, 2 * Y)
    with pytest.raises(ValueError, match="class_weight"):
        ConditionalNCEClassifier(class_weight="balanced", **FAST).fit(X, Y)
    with pytest.raises(ValueError, match="objective"):
        ConditionalNCEClassifier(objective="binary", **FAST).fit(X, Y)
    with pytest.raises(ValueError, match="classes"):
        ConditionalNCEClassifier(classes=np.arange(5), **FAST).fit(X, Y)


def test_rows_without_labels_are_allowed():
    X, Y = _planted(n=100)
    Y[::4] = 0
    clf = ConditionalNCEClassifier(max_epochs=2, **FAST).fit(X, Y)
    assert clf.predict_proba(X).shape == (100, 20)


def test_sample_weight_is_shared_by_the_positives_of_a_row():
    X, Y = _planted(n=300)
    plain = ConditionalNCEClassifier(max_epochs=5, **FAST).fit(X, Y)
    equal = ConditionalNCEClassifier(max_epochs=5, **FAST).fit(
        X, Y, sample_weight=np.full(300, 3.0)
    )
    np.testing.assert_array_equal(plain.predict_proba(X), equal.predict_proba(X))
    # rows holding label 0 weighted zero: label 0 is never a weighted positive
    longer = dict(FAST, max_epochs=30, batch_size=32, early_stopping=False)
    weight = np.where(Y[:, 0] == 1, 0.0, 1.0)
    seen = ConditionalNCEClassifier(**longer).fit(X, Y)
    unseen = ConditionalNCEClassifier(**longer).fit(X, Y, sample_weight=weight)
    rows = Y[:, 0] == 1
    assert unseen.predict_proba(X)[rows, 0].mean() < 0.5 * seen.predict_proba(X)[rows, 0].mean()


def test_pickle_keeps_the_multilabel_model():
    X, Y = _planted(n=200)
    clf = ConditionalNCEClassifier(max_epochs=2, **FAST).fit(X, sp.csr_matrix(Y))
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    assert (again.predict(X) != clf.predict(X)).nnz == 0


def test_partial_fit_fixes_the_labels_at_the_first_call():
    X, Y = _planted(n=400)
    clf = ConditionalNCEClassifier(batch_size=32, **FAST)
    clf.partial_fit(X[:200], Y[:200])  # no classes= needed: the columns are the labels
    np.testing.assert_array_equal(clf.classes_, np.arange(20))
    for _ in range(20):
        clf.partial_fit(X[200:], sp.csr_matrix(Y[200:]))
    assert _precision_at_1(clf, X[:200], Y[:200]) > 0.6
    with pytest.raises(ValueError, match="20 labels"):
        clf.partial_fit(X[:10], Y[:10, :5])
    with pytest.raises(ValueError, match="label indicator"):
        clf.partial_fit(X[:10], np.arange(10) % 3)


def test_declares_multi_label_support():
    assert ConditionalNCEClassifier().__sklearn_tags__().classifier_tags.multi_label
