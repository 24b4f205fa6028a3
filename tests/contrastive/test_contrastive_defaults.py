"""LatentClassNCEEmbedder's defaults for real data: scaling, the principal start, the schedule,
early stopping on held-out points, and a default pipeline that beats raw features and PCA."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import PCA
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler, normalize

from sknce import LatentClassNCEEmbedder
from sknce.contrastive._sampler import LatentClassDataset, LatentClassSampler
from sknce.contrastive._start import principal_start
from sknce.datasets import make_latent_classes


def _probe(representation, X_train, X_test, y_train, y_test) -> float:
    Z_train = representation.fit_transform(X_train, y_train)
    probe = LogisticRegression(max_iter=1000).fit(Z_train, y_train)
    return probe.score(representation.transform(X_test), y_test)


def test_default_pipeline_beats_raw_features_and_pca_on_planted_latent_classes():
    # 12 Gaussian clusters in 3 dimensions (plus 5 noise features), merged into 3 latent
    # classes of 4 clusters each: no linear function of the input tells the classes apart.
    data = make_latent_classes(
        600, n_classes=12, n_features=3, separation=4.0, noise=0.5, random_state=0
    )
    noise = np.random.default_rng(0).normal(size=(600, 5))
    X, y = np.hstack([data.X, noise]), data.y % 3
    split = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    raw = _probe(FunctionTransformer(), *split)
    pca = _probe(make_pipeline(StandardScaler(), PCA(n_components=0.95)), *split)
    default = _probe(LatentClassNCEEmbedder(random_state=0), *split)
    assert default > max(raw, pca) + 0.1


def test_the_input_is_standardised_inside_so_its_units_do_not_matter():
    data = make_latent_classes(200, n_classes=3, n_features=4, random_state=0)
    units = np.array([1.0, 1000.0, 0.001, 50.0])
    params = dict(max_epochs=3, random_state=0)
    emb = LatentClassNCEEmbedder(**params).fit(data.X, data.y)
    rescaled = LatentClassNCEEmbedder(**params).fit(data.X * units + 7.0, data.y)
    assert emb.scaling_ == "standard"
    np.testing.assert_allclose(rescaled.input_scale_, emb.input_scale_ * units, rtol=1e-6)
    np.testing.assert_allclose(
        rescaled.transform(data.X * units + 7.0), emb.transform(data.X), atol=2e-3
    )
    # The paper's setting takes the input as it comes.
    paper = LatentClassNCEEmbedder(scaling="none", **params).fit(data.X, data.y)
    assert paper.scaling_ == "none" and not hasattr(paper, "input_scale_")


@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
def test_sparse_counts_get_sublinear_tf_idf():
    counts = sp.random(60, 30, density=0.2, format="csr", random_state=0)
    counts.data = np.ceil(counts.data * 5)
    y = np.repeat(np.arange(6), 10)
    emb = LatentClassNCEEmbedder(max_epochs=1, random_state=0).fit(counts, y)
    assert emb.scaling_ == "log1p-idf"
    np.testing.assert_allclose(emb.idf_, TfidfTransformer().fit(counts).idf_)
    expected = normalize(counts.log1p().multiply(emb.idf_).tocsr())
    np.testing.assert_allclose(emb._scale(counts).toarray(), expected.toarray(), rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative counts.*scaling='standard'"):
        LatentClassNCEEmbedder(scaling="log1p-idf").fit(-counts, y)


def test_the_principal_start_is_the_gnomonic_projection_of_the_components():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) * [3.0, 2.0, 1.0, 0.5]
    X -= X.mean(axis=0)
    weight, offset = principal_start(X, 6, rng)
    z = X @ PCA(4).fit(X).components_.T  # principal coordinates, up to sign
    c = np.sqrt(np.mean(np.sum(z**2, axis=1)))
    start = normalize(X @ weight + offset)
    expected = normalize(np.hstack([z, np.full((50, 1), c), np.zeros((50, 1))]))
    np.testing.assert_allclose(np.abs(start), np.abs(expected), atol=1e-5)
    # The typical point's x P + b has norm 1.
    assert np.mean(np.sum((X @ weight + offset) ** 2, axis=1)) == pytest.approx(1.0, rel=1e-5)
    # The fitted embedder with init="pca" is the start when its steps are tiny (lr ~ 0).
    y = np.repeat([0, 1], 25)
    emb = LatentClassNCEEmbedder(n_components=6, init="pca", lr=1e-12, random_state=0).fit(X, y)
    scaled = (X - X.mean(axis=0)) / X.std(axis=0)
    w, b = principal_start(scaled.astype(np.float32), 6, rng)
    np.testing.assert_allclose(
        np.abs(emb.transform(X)), np.abs(normalize(scaled @ w + b)), atol=1e-4
    )


@pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)
def test_auto_width_batch_and_epochs_follow_the_data():
    data = make_latent_classes(300, n_classes=3, n_features=5, random_state=0)
    emb = LatentClassNCEEmbedder(max_epochs=1, random_state=0).fit(data.X, data.y)
    assert emb.n_components_ == 6  # n_features + 1
    assert emb.net_.batch_size == 300 // 8
    many = make_latent_classes(400, n_classes=40, n_features=5, random_state=0)
    assert LatentClassNCEEmbedder(max_epochs=1).fit(many.X, many.y).n_components_ == 40
    wide = np.random.default_rng(0).normal(size=(40, 300))
    narrow = LatentClassNCEEmbedder(max_epochs=1).fit(wide, np.arange(40) % 4)
    assert narrow.n_components_ == 128
    # max_epochs="auto": about 1000 steps at most, between 10 and 200 epochs.
    auto = LatentClassNCEEmbedder()
    assert auto._schedule(300, 270, False) == (37, 125)  # 270 training anchors, 8 steps
    assert auto._schedule(10**6, 9 * 10**5, False) == (256, 10)


def test_early_stopping_is_on_and_stops_on_a_plateau():
    # Overlapping classes: the held-out neighbour rate levels off below 1 (a perfect rate,
    # as with well-separated classes, does not count towards patience).
    data = make_latent_classes(400, n_classes=4, n_features=6, separation=2.0, random_state=0)
    emb = LatentClassNCEEmbedder(random_state=0).fit(data.X, data.y)
    assert all("valid_loss" in row for row in emb.history_)
    assert emb.n_iter_ < emb._schedule(400, 360, False)[1]


def test_held_out_points_take_no_part_in_training():
    codes = np.repeat(np.arange(5), [2, 3, 4, 10, 1])
    X = np.arange(len(codes), dtype=np.float32)[:, None]
    sampler = LatentClassSampler(X, codes, 3, "batch", False, "cpu")
    train, valid = LatentClassDataset(sampler).split(0.25, np.random.default_rng(0))
    held = valid.sampler.anchors
    assert len(held) == int(np.ceil(0.25 * 19))  # of the 19 points with a partner
    assert not np.isin(held, train.sampler.pool).any()
    assert not np.isin(held, train.sampler.anchors).any()
    # Every class keeps a training point, the classes of 3+ points two (held out first).
    kept = np.bincount(codes[train.sampler.pool], minlength=5)
    assert np.all(kept[:4] >= 2)
    rng = np.random.default_rng(1)
    for sampler in (train.sampler, valid.sampler):
        anchors = np.repeat(sampler.anchors, 20)
        positives = sampler.positives(anchors, rng)
        assert np.all(codes[positives] == codes[anchors]) and np.all(positives != anchors)
        assert np.isin(positives, train.sampler.pool).all()
        batch, _ = sampler(np.arange(len(sampler)), rng)
        assert "neg_index" in batch or np.isin(batch["x_neg"][0][:, 0], train.sampler.pool).all()


def test_held_out_points_never_leave_a_class_without_a_training_point():
    codes = np.repeat(np.arange(4), 2)  # pairs only: a held-out point leaves its partner
    sampler = LatentClassSampler(np.zeros((8, 1), np.float32), codes, 2, "batch", False, "cpu")
    train, valid = LatentClassDataset(sampler).split(0.9, np.random.default_rng(0))
    assert len(valid) == 3 and len(train) == 2  # one class keeps its pair
    assert np.all(np.bincount(codes[train.sampler.pool], minlength=4) >= 1)


@pytest.mark.parametrize(
    ("params", "chance"),
    [
        (dict(loss="logistic", n_negatives=16), np.log(17)),
        (dict(loss="hinge", beta=0.5), 1.0),
        (dict(exclude_collisions=True), None),
    ],
)
def test_chance_is_the_loss_of_a_constant_representation(params, chance):
    assert LatentClassNCEEmbedder(**params)._chance_loss() == pytest.approx(chance)
