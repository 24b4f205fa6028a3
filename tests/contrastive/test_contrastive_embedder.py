"""LatentClassNCEEmbedder: it learns planted classes, its tuples follow the theory's model."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.linear_model import LogisticRegression

from sknce import LatentClassNCEEmbedder
from sknce.contrastive import simplex_etf_report
from sknce.contrastive._sampler import LatentClassSampler
from sknce.datasets import make_latent_classes

FAST = dict(n_components=8, hidden_layer_sizes=(32,), batch_size=64, random_state=0)


@pytest.fixture(scope="module")
def planted():
    return make_latent_classes(
        500, n_classes=4, n_features=10, separation=3.0, noise=1.0, random_state=0
    )


def probe_accuracy(emb, data, n_train=350) -> float:
    Z = emb.transform(data.X)
    clf = LogisticRegression(max_iter=500).fit(Z[:n_train], data.y[:n_train])
    return clf.score(Z[n_train:], data.y[n_train:])


def test_embedder_separates_planted_classes_towards_the_simplex_etf(planted):
    untrained = LatentClassNCEEmbedder(n_negatives=8, max_epochs=1, lr=1e-9, **FAST)
    untrained.fit(planted.X[:350], planted.y[:350])
    emb = LatentClassNCEEmbedder(n_negatives=8, max_epochs=15, **FAST)
    emb.fit(planted.X[:350], planted.y[:350])
    Z = emb.transform(planted.X[350:])
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, rtol=1e-5)
    report = simplex_etf_report(Z, planted.y[350:])
    before = simplex_etf_report(untrained.transform(planted.X[350:]), planted.y[350:])
    # Class means spread out towards -1/(C-1) = -1/3 and the loss drops.
    assert abs(report.mean_cosine - report.etf_cosine) < 0.1
    assert report.mean_cosine < before.mean_cosine - 0.2
    assert emb.history_[-1]["train_loss"] < emb.history_[0]["train_loss"] - 0.1
    assert probe_accuracy(emb, planted) > 0.9
    assert emb.score(planted.X[350:], planted.y[350:]) > untrained.score(
        planted.X[350:], planted.y[350:]
    )


@pytest.mark.parametrize(
    "params",
    [
        dict(loss="logistic", beta=1.0),
        # Collisions give the hinge a constant worst term (v = 0): exclude them, as for k large
        # almost every tuple has one.
        dict(loss="hinge", beta=0.5, exclude_collisions=True),
        dict(loss="logistic", negatives="marginal"),
    ],
)
def test_hinge_and_logistic_both_train(planted, params):
    emb = LatentClassNCEEmbedder(n_negatives=4, max_epochs=15, **FAST, **params)
    emb.fit(planted.X[:350], planted.y[:350])
    losses = [row["train_loss"] for row in emb.history_]
    assert losses[-1] < 0.85 * losses[0]
    assert probe_accuracy(emb, planted) > 0.75


def test_sparse_input_gives_the_dense_result(planted):
    X = np.where(np.abs(planted.X) > 0.5, planted.X, 0.0)
    # The network's sparse path: the same scaling (none) and start (random) for both.
    same = dict(n_negatives=4, max_epochs=2, scaling="none", init="random", **FAST)
    dense = LatentClassNCEEmbedder(**same).fit(X, planted.y)
    sparse = LatentClassNCEEmbedder(**same)
    sparse.fit(sp.csr_matrix(X), planted.y)
    np.testing.assert_allclose(
        sparse.transform(sp.csr_matrix(X)), dense.transform(X), rtol=1e-4, atol=1e-5
    )


def test_transform_does_not_depend_on_the_batch_and_score_is_repeatable(planted):
    emb = LatentClassNCEEmbedder(n_negatives=4, max_epochs=2, **FAST)
    emb.fit(planted.X, planted.y)
    whole = emb.transform(planted.X)
    np.testing.assert_allclose(emb.transform(planted.X[7:19]), whole[7:19], rtol=1e-5, atol=1e-6)
    assert emb.transform(planted.X.astype(np.float32)).dtype == np.float32
    assert emb.score(planted.X, planted.y) == emb.score(planted.X, planted.y)


# --- the sampler ---------------------------------------------------------------------
def sampler_for(codes, k, negatives="batch", exclude=False):
    X = np.arange(len(codes), dtype=np.float32)[:, None]  # row i holds the value i
    return LatentClassSampler(X, np.asarray(codes), k, negatives, exclude, "cpu")


def test_positives_are_other_members_of_the_anchor_class():
    codes = np.array([0, 1, 0, 2, 1, 0, 1, 3])  # class 2 and 3 are singletons
    sampler = sampler_for(codes, 2)
    np.testing.assert_array_equal(sampler.anchors, [0, 1, 2, 4, 5, 6])
    rng = np.random.default_rng(0)
    anchors = np.repeat(sampler.anchors, 200)
    positives = sampler.positives(anchors, rng)
    assert np.all(positives != anchors)
    assert np.all(codes[positives] == codes[anchors])
    # Uniform over the other members: anchor 0's positives are 2 and 5, half each.
    share = np.mean(positives[anchors == 0] == 2)
    assert 0.4 < share < 0.6


def test_in_batch_negatives_exclude_the_anchor_and_its_positive():
    codes = np.repeat(np.arange(5), 4)
    sampler = sampler_for(codes, 6)
    batch, _ = sampler(np.arange(8), np.random.default_rng(0))
    index = batch["neg_index"].numpy()
    assert index.shape == (8, 6) and "x_neg" not in batch
    own = np.arange(8)[:, None]
    assert np.all((index != own) & (index != own + 8))
    assert index.min() >= 0 and index.max() < 16
    # The batch's rows are the anchors and then their positives.
    values = torch.cat([batch["x"], batch["x_pos"]])[:, 0].numpy().astype(int)
    assert np.all(codes[values[:8]] == codes[values[8:]])


def test_marginal_negatives_when_the_batch_is_too_small():
    codes = np.repeat(np.arange(3), 5)
    rng = np.random.default_rng(0)
    small, _ = sampler_for(codes, 4)(np.arange(2), rng)  # 2 anchors: only 2 other rows
    forced, _ = sampler_for(codes, 2, negatives="marginal")(np.arange(10), rng)
    for batch, k, n in ((small, 4, 2), (forced, 2, 10)):
        assert "neg_index" not in batch
        assert len(batch["x_neg"]) == k
        assert all(block.shape == (n, 1) for block in batch["x_neg"])


def test_exclude_collisions_masks_negatives_of_the_anchor_class():
    codes = np.repeat(np.arange(2), 10)
    sampler = sampler_for(codes, 5, exclude=True)
    batch, targets = sampler(np.arange(20), np.random.default_rng(0))
    values = torch.cat([batch["x"], batch["x_pos"]])[:, 0].numpy().astype(int)
    neg_codes = codes[values[batch["neg_index"].numpy()]]
    expected = neg_codes != codes[values[:20]][:, None]
    np.testing.assert_array_equal(targets["neg_mask"].numpy(), expected)
    assert not expected.all() and expected.any()


# --- input errors ---------------------------------------------------------------------
def test_y_is_required():
    with pytest.raises(ValueError, match="requires y"):
        LatentClassNCEEmbedder(**FAST).fit(np.ones((10, 2)))


def test_singleton_classes_warn_and_no_pairs_raises():
    X = np.random.default_rng(0).normal(size=(6, 3))
    with pytest.warns(UserWarning, match="2 class\\(es\\) of y have a single member"):
        LatentClassNCEEmbedder(n_negatives=2, max_epochs=1, **FAST).fit(X, [0, 0, 1, 1, 2, 3])
    with pytest.raises(ValueError, match="no class of y has two members"):
        LatentClassNCEEmbedder(**FAST).fit(X, np.arange(6))


def test_early_stopping_holds_out_at_least_one_anchor_and_warns_when_none_trains():
    X = np.random.default_rng(0).normal(size=(6, 3))
    emb = LatentClassNCEEmbedder(early_stopping=True, validation_fraction=0.1, **FAST)
    emb.fit(X, [0, 0, 0, 1, 1, 1])
    assert all("valid_loss" in row for row in emb.history_)
    emb.set_params(validation_fraction=0.9)
    with pytest.warns(UserWarning, match="early stopping is off for this fit"):
        emb.fit(X[:4], [0, 0, 1, 1])
    assert not any("valid_loss" in row for row in emb.history_)


def test_scorer_in_batch_and_drawn_negatives_agree_with_the_core_loss():
    from sknce.losses import KNegativeLoss, k_negative
    from sknce.nn import MLP, LatentClassScorer, SphereEncoder

    with torch.random.fork_rng():
        torch.manual_seed(0)
        module = LatentClassScorer(SphereEncoder(MLP(5, (7,), 3)))
        x, x_pos = torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    module = module.double()
    objective = KNegativeLoss(loss="logistic", beta=2.0)
    neg_index = torch.tensor([[1, 5, 7], [0, 6, 6], [3, 4, 1], [0, 1, 2]])
    rows = torch.cat([x, x_pos])
    # The same negatives, passed as k drawn blocks of B rows (block j = negative j).
    x_neg = [rows[neg_index[:, j]] for j in range(3)]
    with torch.no_grad():
        z = module.encoder(rows)
        expected = float(k_negative(z[:4], z[4:], z[neg_index], loss="logistic", beta=2.0))
        in_batch = float(objective(module(x, x_pos, neg_index=neg_index)))
        drawn = float(objective(module(x, x_pos, x_neg=x_neg)))
    np.testing.assert_allclose(torch.linalg.norm(z, dim=1), 1.0)
    assert in_batch == pytest.approx(expected, rel=1e-12)
    assert drawn == pytest.approx(expected, rel=1e-12)
