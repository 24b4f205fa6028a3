"""ConditionalNCEClassifier at large label sets: top-k, sparse tables, shared negatives, device."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning

import sknce.conditional._classifier as classifier_module
import sknce.conditional._plan as plan_module
import sknce.conditional._sampler as sampler_module
from sknce import ConditionalNCEClassifier
from sknce._untraced import built_class
from sknce.conditional._sampler import LabelSampler
from sknce.losses import RankingNCELoss
from sknce.nn import LabelScorer
from sknce.noise import UnigramNoise
from sknce.optim import LazyAdam


def _blobs(n=300, n_classes=10, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2, size=(n_classes, 6))
    y = rng.integers(0, n_classes, size=n)
    return centers[y] + rng.normal(size=(n, 6)), y


FAST = dict(hidden_layer_sizes=(16,), embedding_dim=8, n_negatives=4, lr=0.02, random_state=0)


@pytest.fixture(scope="module")
def fitted():
    X, y = _blobs()
    labels = np.array([f"label-{i}" for i in range(10)], dtype=object)
    return ConditionalNCEClassifier(**FAST, max_epochs=5).fit(X, labels[y]), X


def _brute_force_topk(est, X, k):
    log_proba = est.predict_log_proba(X)
    order = np.argsort(-log_proba, axis=1, kind="stable")[:, :k]
    return est.classes_[order], np.take_along_axis(log_proba, order, axis=1), log_proba


# --- predict_topk --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 4, 10])
@pytest.mark.parametrize("class_chunk", [4096, 3])  # one chunk; 4 chunks of 3 labels
def test_predict_topk_equals_a_brute_force_top_k(fitted, monkeypatch, k, class_chunk):
    est, X = fitted
    monkeypatch.setattr(classifier_module, "_CLASS_CHUNK", class_chunk)
    labels, log_proba = est.predict_topk(X, k)
    expected_labels, expected_log_proba, _ = _brute_force_topk(est, X, k)
    assert labels.shape == log_proba.shape == (X.shape[0], k)
    np.testing.assert_allclose(log_proba, expected_log_proba, atol=1e-6)
    np.testing.assert_array_equal(labels, expected_labels)
    assert np.all(np.diff(log_proba, axis=1) <= 0)
    np.testing.assert_array_equal(labels[:, 0], est.predict(X))


def test_predict_topk_of_tied_classes_gives_their_exact_log_probabilities(fitted, monkeypatch):
    est, X = fitted
    scorer = est.net_.module_
    saved = {name: p.detach().clone() for name, p in scorer.named_parameters()}
    with torch.no_grad():  # classes 1 and 8 (in different chunks of 3) become one class twice
        scorer.label_embedding.weight[8] = scorer.label_embedding.weight[1]
        scorer.label_bias[8] = scorer.label_bias[1]
    try:
        monkeypatch.setattr(classifier_module, "_CLASS_CHUNK", 3)
        labels, log_proba = est.predict_topk(X, 5)
        _, expected, full = _brute_force_topk(est, X, 5)
        np.testing.assert_allclose(log_proba, expected, atol=1e-6)
        # whatever the order among equals, each returned label has its own log-probability
        columns = np.searchsorted(est.classes_, labels)
        np.testing.assert_allclose(np.take_along_axis(full, columns, 1), log_proba, atol=1e-6)
    finally:
        scorer.load_state_dict(saved, strict=False)


def test_predict_topk_takes_sparse_input_and_rejects_a_bad_k(fitted):
    est, X = fitted
    labels, log_proba = est.predict_topk(sp.csr_matrix(X), 3)
    expected_labels, expected, _ = _brute_force_topk(est, X, 3)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_allclose(log_proba, expected, atol=1e-6)
    for k in (0, 11, 2.0, True):
        with pytest.raises(ValueError, match="k must be an int from 1 to the number of classes"):
            est.predict_topk(X, k)


def test_non_finite_scores_are_an_error_not_the_first_class(fitted):
    est, X = fitted
    bias = est.net_.module_.encoder.hidden[-1].bias
    saved = bias.detach().clone()
    with torch.no_grad():
        bias.fill_(float("nan"))  # every score NaN: predict used to answer classes_[0]
    try:
        for method in (est.predict, est.predict_proba, lambda X: est.predict_topk(X, 2)):
            with pytest.raises(ValueError, match="non-finite values for 300 of 300 sample"):
                method(X)
    finally:
        with torch.no_grad():
            bias.copy_(saved)


# --- sparse_embeddings="auto" ----------------------------------------------------------------
def _fit_auto(monkeypatch, ratio, X=None, **params):
    """A fit of 10 classes, batches of 8 and K = 4: a step scores 8 × (1 + 4) = 40 rows."""
    monkeypatch.setattr(plan_module, "SPARSE_RATIO", ratio)
    blobs, y = _blobs(200)
    params = {**FAST, "max_epochs": 2, "batch_size": 8, **params}
    return ConditionalNCEClassifier(**params).fit(blobs if X is None else X, y)


def test_auto_sparse_embeddings_switch_at_the_threshold_to_lazy_adam(monkeypatch):
    dense = _fit_auto(monkeypatch, 0.26)  # sparse from 10.4 classes on
    assert not dense.sparse_embeddings_
    assert type(dense.net_.optimizer_) is built_class(torch.optim.Adam)
    sparse = _fit_auto(monkeypatch, 0.25)  # from 10 classes on
    assert sparse.sparse_embeddings_ and type(sparse.net_.optimizer_) is LazyAdam
    assert sparse.net_.module_.sparse
    assert sparse.get_params()["optimizer"] is torch.optim.Adam  # the parameter is untouched
    # a shared set: a step scores 8 + 4 rows, so sparse pays from fewer classes
    assert _fit_auto(monkeypatch, 0.8, shared_negatives=True).sparse_embeddings_
    assert not _fit_auto(monkeypatch, 0.8).sparse_embeddings_


@pytest.mark.parametrize(
    "params, sparse, optimizer",
    [
        (dict(optimizer=torch.optim.SGD), True, torch.optim.SGD),  # takes sparse gradients
        (dict(optimizer=torch.optim.AdamW), False, torch.optim.AdamW),  # does not
        (dict(optimizer_kwargs={"amsgrad": True}), False, torch.optim.Adam),  # not LazyAdam's
        (dict(objective="mle"), False, torch.optim.Adam),  # every label scored: dense anyway
        (dict(sparse_embeddings=False), False, torch.optim.Adam),
        (dict(sparse_embeddings=True, optimizer=LazyAdam), True, LazyAdam),
    ],
)
def test_auto_sparse_embeddings_keep_the_users_choices(monkeypatch, params, sparse, optimizer):
    est = _fit_auto(monkeypatch, 0.01, **params)
    assert est.sparse_embeddings_ is sparse and type(est.net_.optimizer_) is built_class(optimizer)


class _TwoProcesses:
    num_processes = 2

    def prepare(self, *args):  # pragma: no cover - never called
        return args

    def unwrap_model(self, model):  # pragma: no cover
        return model


def test_auto_sparse_embeddings_stay_dense_under_a_multi_process_accelerator(monkeypatch):
    monkeypatch.setattr(plan_module, "SPARSE_RATIO", 1e-4)  # sparse from 1.7 classes on
    est = ConditionalNCEClassifier(**FAST)
    facts = plan_module.DataFacts(n_classes=10, n_features=6, entries=None)
    assert plan_module.resolve_plan(est, facts, accelerator_processes=2).sparse_embeddings is False
    assert plan_module.resolve_plan(est, facts).sparse_embeddings is True


# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_auto_sparse_embeddings_give_a_wide_sparse_input_layer_sparse_gradients(monkeypatch):
    rng = np.random.default_rng(0)
    X, y = _blobs(200)
    wide = sp.csr_matrix((np.ones(200), rng.integers(0, 300, 200), np.arange(201)), (200, 300))
    # one stored entry per row, batches of 8: a step reads 8 of the 300 feature rows
    est = _fit_auto(monkeypatch, 3, X=wide)
    assert est.sparse_input_ and not est.sparse_embeddings_
    assert type(est.net_.optimizer_) is LazyAdam and est.net_.module_.encoder.input.sparse_grad
    assert not _fit_auto(monkeypatch, 3).sparse_input_  # a dense X
    assert not _fit_auto(monkeypatch, 38, X=wide).sparse_input_  # 300 < 38 * 8
    linear = _fit_auto(monkeypatch, 3, X=wide, hidden_layer_sizes=(), embedding_dim=None)
    assert not linear.sparse_input_  # the identity encoder has no first layer


# --- shared negatives ------------------------------------------------------------------------
def _ranking_by_hand(s_pos, s_neg, log_pos, log_neg, keep):
    """-log(exp(s̄_0) / Σ_k exp(s̄_k)) per example in float64, skipping dropped negatives."""
    out = []
    for i in range(s_pos.shape[0]):
        terms = [s_pos[i] - log_pos[i]] + [
            s_neg[i, k] - log_neg[i, k] for k in range(s_neg.shape[1]) if keep[i, k]
        ]
        out.append(np.log(np.sum(np.exp(terms))) - terms[0])
    return float(np.mean(out))


@pytest.mark.parametrize("remove_hits", [False, True])
def test_a_shared_candidate_set_gives_each_example_the_ranking_loss(remove_hits):
    torch.manual_seed(0)
    n_classes, n, k = 12, 16, 5
    counts = np.arange(1, n_classes + 1)
    noise = UnigramNoise(counts, ns_exponent=1.0)
    y = torch.randint(n_classes, (n,))
    X = np.random.default_rng(0).normal(size=(n, 3)).astype(np.float32)
    sampler = LabelSampler(X, y, noise, k, 0, remove_hits, "cpu", shared=True)
    inputs, targets = sampler(np.arange(n), np.random.default_rng(1))
    negatives = inputs["negatives"]
    assert negatives.shape == (k,) and targets["neg_log_noise"].shape == (n, k)
    scorer = LabelScorer(torch.nn.Identity(), 3, n_classes)
    torch.nn.init.normal_(scorer.label_bias)
    scores = scorer(torch.as_tensor(X), inputs["labels"], negatives)
    # one matrix product equals scoring the set against each example
    per_example = scorer.score(torch.as_tensor(X), None, negatives.expand(n, k))
    torch.testing.assert_close(scores["neg"], per_example)
    loss = RankingNCELoss()(scores, targets)
    keep = np.ones((n, k), dtype=bool)
    if remove_hits:
        keep = negatives.numpy()[None, :] != y.numpy()[:, None]
        np.testing.assert_array_equal(targets["neg_mask"].numpy(), keep)
    log_p = np.log(noise.probs)
    expected = _ranking_by_hand(
        scores["pos"].double().detach().numpy(),
        scores["neg"].double().detach().numpy(),
        log_p[y.numpy()],
        np.broadcast_to(log_p[negatives.numpy()], (n, k)),
        keep,
    )
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)


def test_shared_negatives_learn_as_per_example_negatives():
    X, y = _blobs(600)
    params = dict(FAST, max_epochs=15, batch_size=32, early_stopping=False)
    per_example = ConditionalNCEClassifier(**params).fit(X, y)
    shared = ConditionalNCEClassifier(**params, shared_negatives=True).fit(X, y)
    assert shared.score(X, y) > 0.8  # chance 0.1; per-example negatives reach 0.88
    assert shared.score(X, y) >= per_example.score(X, y) - 0.03
    for sparse in (True, False):  # the shared set's rows get sparse gradients too
        est = ConditionalNCEClassifier(
            **{**params, "max_epochs": 1},
            shared_negatives=True,
            sparse_embeddings=sparse,
            optimizer=LazyAdam,
            self_normalization=0.1,
            n_norm_samples=3,
        ).fit(X, y)
        assert np.isfinite(est.history_[-1]["train_loss"])


# --- device and pickling -----------------------------------------------------------------
_HOST_READS = ("item", "cpu", "numpy", "tolist", "__bool__", "__int__", "__float__")


def test_building_a_batch_reads_nothing_back_from_the_device(monkeypatch):
    """On a GPU each of these reads would wait for the device: a batch uses none."""
    noise = UnigramNoise(np.arange(1, 9), ns_exponent=1.0)
    y = torch.randint(8, (50,))
    X = np.random.default_rng(0).normal(size=(50, 3)).astype(np.float32)
    for shared in (False, True):
        sampler = LabelSampler(X, y, noise, 4, 3, True, "cpu", shared=shared)
        for name in _HOST_READS:
            monkeypatch.setattr(torch.Tensor, name, _forbidden(name), raising=False)
        try:
            inputs, targets = sampler(np.arange(10), np.random.default_rng(0))
        finally:
            monkeypatch.undo()
        assert inputs["labels"].device == sampler.y.device
        assert {t.device.type for t in (*inputs.values(), *targets.values())} == {"cpu"}


def _forbidden(name):
    def read(*args, **kwargs):
        raise AssertionError(f"Tensor.{name} reads a device value back to the host")

    return read


@pytest.mark.cuda
def test_cuda_labels_and_negatives_are_drawn_without_synchronising(monkeypatch):
    X, y = _blobs(400)
    x = torch.zeros(64, X.shape[1], device="cuda")  # the inputs' copy is _data's concern
    monkeypatch.setattr(sampler_module, "rows_to_tensor", lambda *args: x)
    noise = UnigramNoise(np.bincount(y), ns_exponent=1.0).to("cuda")
    for shared in (False, True):
        sampler = LabelSampler(X, torch.as_tensor(y), noise, 4, 2, True, "cuda", shared=shared)
        torch.cuda.set_sync_debug_mode("error")
        try:
            inputs, targets = sampler(np.arange(64), np.random.default_rng(0))
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert all(t.is_cuda for t in (*inputs.values(), *targets.values()))


def test_the_noise_tables_are_on_the_cpu_between_fits(fitted):
    est, _ = fitted
    assert est.noise_.device.type == "cpu"


def test_many_classes_raise_no_regression_warning():
    # sklearn warns when labels outnumber half the samples: the intended use here.
    rng = np.random.default_rng(3)
    y = rng.integers(0, 5000, size=400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # one epoch on random labels keeps the prior start, and says so
        warnings.filterwarnings("ignore", "No epoch of this fit beat", ConvergenceWarning)
        ConditionalNCEClassifier(**FAST, max_epochs=1).fit(rng.normal(size=(400, 4)), y)
    with pytest.raises(ValueError, match="Unknown label type: continuous.*Regressor"):
        ConditionalNCEClassifier(**FAST, max_epochs=1).fit(rng.normal(size=(400, 4)), y + 0.5)
