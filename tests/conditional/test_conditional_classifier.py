"""ConditionalNCEClassifier: planted-model recovery, exact chunked prediction, options."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import sknce.conditional._classifier as classifier_module
from sknce import ConditionalNCEClassifier
from sknce.datasets import make_loglinear_conditional


def _kl(est, truth):
    """E_x KL(p(.|x) || p_hat(.|x)) over the support (uniform x)."""
    p_hat = np.full(truth.table.shape, 1e-300)
    p_hat[:, est.classes_] = est.predict_proba(truth.support)
    return float(np.mean(np.sum(truth.table * (np.log(truth.table) - np.log(p_hat)), axis=1)))


@pytest.fixture(scope="module")
def planted():
    # log Z(x) of this draw is far from linear in x, so the log-linear family
    # cannot self-normalise: the setting of Ma & Collins' Section 4.3 / 5.1.
    return make_loglinear_conditional(8000, m_x=20, m_y=10, random_state=0)


def _loglinear(**params):
    settings = dict(
        hidden_layer_sizes=(),
        n_negatives=8,
        max_epochs=20,
        lr=0.03,
        batch_size=128,
        random_state=0,
    )
    return ConditionalNCEClassifier(**{**settings, **params})


def test_ranking_recovers_planted_model_where_binary_without_bias_does_not(planted):
    X, y, truth = planted
    kl_ranking = _kl(_loglinear(objective="ranking").fit(X, y), truth)
    kl_binary = _kl(_loglinear(objective="binary").fit(X, y), truth)
    kl_binary_bias = _kl(_loglinear(objective="binary", input_bias=True).fit(X, y), truth)
    # Measured: ranking 0.011, binary 0.063, binary + b(x) 0.008.
    assert kl_ranking < 0.025
    assert kl_binary > 0.04
    assert kl_binary > 3 * kl_ranking
    assert kl_binary_bias < 0.025


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=2, size=(10, 6))
    y = rng.integers(0, 10, size=300)
    X = centers[y] + rng.normal(size=(300, 6))
    labels = np.array([f"label-{i}" for i in range(10)], dtype=object)
    est = ConditionalNCEClassifier(
        hidden_layer_sizes=(16,),
        embedding_dim=8,
        n_negatives=4,
        max_epochs=5,
        lr=0.02,
        random_state=0,
    ).fit(X, labels[y])
    return est, X, labels[y]


def _brute_force_log_proba(est, X):
    scorer = est.net_.module_
    with torch.no_grad():
        h = scorer.encoder(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
    E = scorer.label_embedding.weight.detach().double().numpy()
    b = scorer.label_bias.detach().double().numpy()[:, 0]
    s = h @ E.T + b
    s -= s.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def test_predict_proba_is_a_normalised_brute_force_softmax(fitted):
    est, X, y = fitted
    proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], 10)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-10)
    np.testing.assert_allclose(est.predict_log_proba(X), _brute_force_log_proba(est, X), atol=1e-5)
    assert set(est.classes_) == set(y)


def test_chunked_inference_equals_one_chunk(fitted, monkeypatch):
    est, X, _ = fitted
    proba, pred = est.predict_proba(X), est.predict(X)
    monkeypatch.setattr(classifier_module, "_CLASS_CHUNK", 3)  # 10 classes: 4 chunks
    np.testing.assert_allclose(est.predict_proba(X), proba, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X), pred)
    np.testing.assert_array_equal(pred, est.classes_[proba.argmax(axis=1)])


# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_sparse_input_matches_dense():
    rng = np.random.default_rng(1)
    X = (rng.random((120, 30)) < 0.2) * rng.integers(1, 4, size=(120, 30)).astype(float)
    y = rng.integers(0, 5, size=120)
    params = dict(hidden_layer_sizes=(8,), n_negatives=3, max_epochs=2, random_state=0)
    dense = ConditionalNCEClassifier(**params).fit(X, y)
    sparse = ConditionalNCEClassifier(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(
        sparse.predict_proba(sp.csr_matrix(X)), dense.predict_proba(X), atol=1e-5
    )
    # The identity encoder of the log-linear model densifies one batch at a time.
    linear = ConditionalNCEClassifier(**{**params, "hidden_layer_sizes": ()})
    np.testing.assert_allclose(
        linear.fit(sp.csr_matrix(X), y).predict_proba(sp.csr_matrix(X)),
        ConditionalNCEClassifier(**{**params, "hidden_layer_sizes": ()})
        .fit(X, y)
        .predict_proba(X),
        atol=1e-5,
    )


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="mle"),
        dict(noise="uniform"),
        dict(noise=np.full(4, 0.25)),
        dict(noise_power=0.75, remove_accidental_hits=True),
        dict(self_normalization=0.5, n_norm_samples=8),
        dict(objective="binary", input_bias=True, input_bias_layer_sizes=()),
    ],
)
def test_objective_and_noise_options_fit(params):
    rng = np.random.default_rng(2)
    y = rng.integers(0, 4, size=80)
    X = np.eye(4)[y] * 3 + rng.normal(size=(80, 4))
    est = ConditionalNCEClassifier(
        hidden_layer_sizes=(), n_negatives=4, max_epochs=20, lr=0.05, random_state=0, **params
    ).fit(X, y)
    assert np.isfinite(est.history_[-1]["train_loss"])
    assert est.score(X, y) > 0.8


def test_self_normalization_drives_log_z_towards_zero():
    X, y, truth = make_loglinear_conditional(3000, m_x=20, m_y=10, random_state=1)

    def mean_abs_log_z(alpha):
        est = _loglinear(self_normalization=alpha, n_norm_samples=16, max_epochs=8).fit(X, y)
        scorer = est.net_.module_
        with torch.no_grad():
            h, b = scorer.encode(torch.as_tensor(truth.support, dtype=torch.float32))
            log_z = torch.logsumexp(scorer.score_range(h, b), dim=1)
        return float(log_z.abs().mean())

    assert mean_abs_log_z(1.0) < 0.5 * mean_abs_log_z(0.0)


def test_bad_noise_arrays_are_rejected_clearly():
    X, y = np.eye(3), np.array([0, 1, 2])
    with pytest.raises(ValueError, match="one probability per class"):
        ConditionalNCEClassifier(noise=[0.5, 0.5]).fit(X, y)
    with pytest.raises(ValueError, match="strictly positive"):
        ConditionalNCEClassifier(noise=[0.5, 0.5, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="objective"):
        ConditionalNCEClassifier(objective="hinge").fit(X, y)


@pytest.mark.filterwarnings("ignore:The number of unique classes:UserWarning")
# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_many_classes_train_and_predict_without_dense_blocks():
    # 20,000 classes, 2,000 examples: one epoch of ranking NCE, chunked inference.
    rng = np.random.default_rng(3)
    n_classes = 20_000
    y = rng.integers(0, n_classes, size=2000)
    X = rng.normal(size=(2000, 8))
    est = ConditionalNCEClassifier(
        hidden_layer_sizes=(), embedding_dim=8, n_negatives=16, max_epochs=1, random_state=0
    ).fit(X, y)
    assert len(est.classes_) == len(np.unique(y))
    pred = est.predict(X[:50])
    proba = est.predict_proba(X[:50])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_array_equal(pred, est.classes_[proba.argmax(axis=1)])


def test_lazy_adam_first_step_equals_adam_and_sparse_fit_works():
    from sknce.nn import LabelScorer
    from sknce.optim import LazyAdam

    torch.manual_seed(0)
    dense = LabelScorer(torch.nn.Identity(), 3, 50)
    sparse = LabelScorer(torch.nn.Identity(), 3, 50, sparse=True)
    sparse.load_state_dict(dense.state_dict())
    h, labels = torch.randn(6, 3), torch.randint(50, (6, 5))
    for scorer, opt_class in [(dense, torch.optim.Adam), (sparse, LazyAdam)]:
        opt = opt_class(scorer.parameters(), lr=0.1)
        scorer.score(h, None, labels).square().sum().backward()
        assert scorer.label_embedding.weight.grad.is_sparse == (scorer is sparse)
        opt.step()
    # From zero moments, an untouched row moves by 0 under Adam too: one step agrees.
    for a, b in zip(dense.parameters(), sparse.parameters()):
        torch.testing.assert_close(a, b)

    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, size=80)
    X = np.eye(4)[y] * 3 + rng.normal(size=(80, 4))
    params = dict(hidden_layer_sizes=(), n_negatives=4, max_epochs=20, lr=0.05, random_state=0)
    est = ConditionalNCEClassifier(sparse_embeddings=True, optimizer=LazyAdam, **params)
    assert est.fit(X, y).score(X, y) > 0.8
    with pytest.raises(ValueError, match="LazyAdam"):
        ConditionalNCEClassifier(sparse_embeddings=True, **params).fit(X, y)


def test_declared_classes_include_labels_absent_from_y():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 4, size=60)
    X = np.eye(4)[y] * 3 + rng.normal(size=(60, 4))
    est = ConditionalNCEClassifier(
        classes=np.arange(6),
        hidden_layer_sizes=(),
        n_negatives=4,
        max_epochs=20,
        lr=0.05,
        random_state=0,
    ).fit(X, y)
    np.testing.assert_array_equal(est.classes_, np.arange(6))
    proba = est.predict_proba(X)
    assert proba.shape == (60, 6) and proba[:, 4:].mean() < 0.1
    assert est.score(X, y) > 0.8
    with pytest.raises(ValueError, match="not in classes"):
        ConditionalNCEClassifier(classes=[0, 1]).fit(X, y)
