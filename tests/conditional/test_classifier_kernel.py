"""The compiled step of ConditionalNCEClassifier on sparse bags, against autograd."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.dummy import DummyClassifier
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from skorch.callbacks import Callback

import sknce.conditional._plan as plan_module
from sknce import ConditionalNCEClassifier
from sknce._data import csr_to_tensor
from sknce._steps import AutogradStep
from sknce._untraced import built_class
from sknce.conditional._kernel_step import BagRankingStep, LinearSoftmaxStep
from sknce.conditional._kernels import sgd_bag_ranking
from sknce.losses import ranking_nce
from sknce.nn import MLP, BagEncoder, LabelScorer, LinearLabelScorer
from sknce.optim import LazyAdam, RowAdagrad

N_FEATURES, DIM, N_CLASSES, K = 9, 5, 7, 4


def _problem(n, seed=0):
    """A float64 bag encoder and scorer, a CSR batch with repeats, labels and negatives."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    scorer = LabelScorer(BagEncoder(N_FEATURES, DIM), DIM, N_CLASSES).double()
    with torch.no_grad():
        for p in scorer.parameters():
            p.copy_(torch.randn_like(p) * 0.7)
    X = sp.random(n, N_FEATURES, density=0.4, random_state=seed, format="lil") * 3
    X[0] = 0  # an empty bag
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    X.data = np.ceil(X.data)  # counts
    labels = rng.integers(0, N_CLASSES, size=n)
    negatives = rng.integers(0, N_CLASSES, size=(n, K))
    negatives[1, :2] = labels[1]  # accidental hits
    negatives[2, 1:3] = negatives[2, 0]  # a repeated negative
    log_noise = np.log(rng.dirichlet(np.ones(N_CLASSES)))
    return scorer, X, labels, negatives, log_noise


def _autograd_step(scorer, X, labels, negatives, log_noise, lr, remove_hits, weights=None):
    """One SGD step of each example in turn, by autograd; the summed loss."""
    total = 0.0
    for i in range(X.shape[0]):
        scorer.zero_grad()
        x = csr_to_tensor(X[i : i + 1]).double()
        y = torch.as_tensor(labels[i : i + 1])
        neg = torch.as_tensor(negatives[i : i + 1])
        scores = scorer(x, labels=y, negatives=neg)
        neg_scores = scores["neg"]
        if remove_hits:
            neg_scores = neg_scores.masked_fill(neg == y.unsqueeze(1), -torch.inf)
        table = torch.as_tensor(log_noise)
        loss = ranking_nce(scores["pos"], neg_scores, table[y], table[neg], reduction="sum")
        if weights is not None:
            loss = loss * weights[i]
        loss.backward()
        with torch.no_grad():
            for p in scorer.parameters():
                p -= lr * p.grad
        total += float(loss.detach())
    return total


def _kernel_step(scorer, X, labels, negatives, log_noise, lr, remove_hits, weights=None):
    w_in = scorer.encoder.weight.detach().numpy()
    w_label = scorer.label_embedding.weight.detach().numpy()
    b_label = scorer.label_bias.detach().numpy().reshape(-1)
    return sgd_bag_ranking(
        w_in,
        w_label,
        b_label,
        X.indptr.astype(np.int64),
        X.indices.astype(np.int64),
        X.data.astype(np.float64),
        labels,
        negatives,
        log_noise[labels],
        log_noise[negatives],
        np.empty(0) if weights is None else weights,
        0,
        X.shape[0],
        lr,
        remove_hits,
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("remove_hits", [False, True])
@pytest.mark.parametrize("rows", [slice(1, 2), slice(0, 6)])
def test_the_kernel_step_is_autograd_sgd_example_by_example(rows, remove_hits, weighted):
    """Same loss and same updated parameters (float64) as autograd's per-example SGD.

    Row 1 has accidental hits, row 2 a repeated negative, row 0 an empty bag; the
    examples of a batch share label and feature rows. ``weighted``: each example's
    loss times its sample weight.
    """
    scorer, X, labels, negatives, log_noise = _problem(6)
    X, labels, negatives = X[rows], labels[rows], negatives[rows]
    weights = np.linspace(0.5, 2.0, X.shape[0]) if weighted else None
    reference = {k: v.clone() for k, v in scorer.state_dict().items()}
    lr = 0.3
    args = (labels, negatives, log_noise, lr, remove_hits, weights)
    expected_loss = _autograd_step(scorer, X, *args)
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(reference)
    loss = _kernel_step(scorer, X, *args)
    assert loss == pytest.approx(expected_loss, rel=1e-10)
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-10, atol=1e-12)
        assert not torch.equal(value, reference[name])  # the step moved every table


def test_the_kernel_gradient_is_the_autograd_gradient_of_one_example():
    """One step with a tiny lr: (before - after) / lr is autograd's gradient."""
    scorer, X, labels, negatives, log_noise = _problem(6, seed=3)
    i = 4
    before = {k: v.clone() for k, v in scorer.state_dict().items()}
    x = csr_to_tensor(X[i : i + 1]).double()
    y, neg = torch.as_tensor(labels[i : i + 1]), torch.as_tensor(negatives[i : i + 1])
    scores = scorer(x, labels=y, negatives=neg)
    table = torch.as_tensor(log_noise)
    ranking_nce(scores["pos"], scores["neg"], table[y], table[neg]).backward()
    grads = {name: p.grad.clone() for name, p in scorer.named_parameters()}
    lr = 1e-3
    _kernel_step(
        scorer, X[i : i + 1], labels[i : i + 1], negatives[i : i + 1], log_noise, lr, False
    )
    for name, p in scorer.named_parameters():
        np.testing.assert_allclose(
            ((before[name] - p.detach()) / lr).numpy(), grads[name].numpy(), atol=1e-9
        )


# --- the classifier in fastText's regime --------------------------------------------------
def _bags(n, n_classes=30, n_words=300, seed=0):
    """Bags of 8 words: each word from its label's 5 signature words w.p. 0.5, else any word."""
    rng = np.random.default_rng(seed)
    y = rng.zipf(1.3, size=n) % n_classes
    signature = rng.integers(0, n_words, size=(n_classes, 5))
    own = rng.random((n, 8)) < 0.5
    words = np.where(
        own, signature[y[:, None], rng.integers(0, 5, (n, 8))], rng.integers(0, n_words, (n, 8))
    )
    texts = [" ".join(f"w{w}" for w in row) for row in words]
    return texts, np.array([f"y{label}" for label in y])


def _pipeline(**params):
    return make_pipeline(
        CountVectorizer(token_pattern=r"\S+"), ConditionalNCEClassifier(random_state=0, **params)
    )


@pytest.mark.parametrize(
    "regime, step, scorer, optimizer",
    [
        ("linear", LinearSoftmaxStep, LinearLabelScorer, RowAdagrad),
        ("bag", BagRankingStep, LabelScorer, torch.optim.SGD),
    ],
)
def test_the_default_pipeline_trains_by_the_compiled_step_and_beats_the_prior(
    monkeypatch, regime, step, scorer, optimizer
):
    if regime == "bag":
        monkeypatch.setattr(plan_module, "LINEAR_COST", 0)
    texts, y = _bags(3000)
    model = _pipeline().fit(texts[:2000], y[:2000])
    clf = model[-1]
    assert clf.plan_.regime == regime and clf.bag_sgd_ is (regime == "bag")
    module = clf.net_.module_
    assert isinstance(module, scorer) and isinstance(module.encoder, BagEncoder)
    assert isinstance(clf.net_.step_, step)
    assert type(clf.net_.optimizer_) is built_class(optimizer)  # SGD: torch's, untraced
    # the linear model's epochs were chosen on held-out examples, then refit on all
    history = clf.selection_history_ if regime == "linear" else clf.history_
    assert "valid_loss" in history[-1]
    assert "lr_decay" in dict(clf.net_.callbacks_)
    prior = DummyClassifier(strategy="prior").fit(texts[:2000], y[:2000])
    X_test, y_test = texts[2000:], y[2000:]
    nll = log_loss(y_test, model.predict_proba(X_test), labels=clf.classes_)
    nll_prior = log_loss(y_test, prior.predict_proba(X_test), labels=clf.classes_)
    assert nll < nll_prior - 0.5
    assert model.score(X_test, y_test) > prior.score(X_test, y_test) + 0.3


def test_a_fit_on_one_thread_is_reproducible():
    texts, y = _bags(800)
    first = _pipeline(max_epochs=3).fit(texts, y).predict_proba(texts[:50])
    again = _pipeline(max_epochs=3).fit(texts, y).predict_proba(texts[:50])
    np.testing.assert_array_equal(first, again)
    other = make_pipeline(
        CountVectorizer(token_pattern=r"\S+"),
        ConditionalNCEClassifier(random_state=1, max_epochs=3),
    )
    assert np.abs(other.fit(texts, y).predict_proba(texts[:50]) - first).max() > 1e-4


def test_two_threads_train_as_well(monkeypatch):
    monkeypatch.setattr(plan_module, "LINEAR_THREAD_WORK", 1)  # threads for tiny models
    texts, y = _bags(3000)
    one = _pipeline().fit(texts[:2000], y[:2000]).score(texts[2000:], y[2000:])
    two = _pipeline(n_jobs=2).fit(texts[:2000], y[:2000])
    assert two[-1].net_.step_.n_jobs == 2
    assert two.score(texts[2000:], y[2000:]) > one - 0.05


@pytest.mark.parametrize("regime", ["linear", "bag"])
# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_callbacks_partial_fit_and_warm_start_keep_working_with_the_compiled_step(
    monkeypatch, regime
):
    if regime == "bag":
        monkeypatch.setattr(plan_module, "LINEAR_COST", 0)
    step = {"linear": LinearSoftmaxStep, "bag": BagRankingStep}[regime]
    texts, y = _bags(600)
    vectorizer = CountVectorizer(token_pattern=r"\S+").fit(texts)
    X = vectorizer.transform(texts)

    class CountBatches(Callback):
        def initialize(self):
            self.batches = 0
            return self

        def on_batch_end(self, net, training=False, **kwargs):
            self.batches += training

    counter = CountBatches()
    clf = ConditionalNCEClassifier(
        random_state=0, max_epochs=2, batch_size=100, callbacks=[counter], warm_start=True
    ).fit(X, y)
    assert isinstance(clf.net_.step_, step)
    assert counter.batches == 2 * 6  # 540 training examples in batches of 100
    clf.fit(X, y)
    assert clf.n_iter_ == 4
    partial = ConditionalNCEClassifier(random_state=0)
    partial.partial_fit(X[:300], y[:300], classes=np.unique(y)).partial_fit(X[300:], y[300:])
    assert partial.n_iter_ == 2 and isinstance(partial.net_.step_, step)


# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_other_optimizers_and_dense_input_keep_the_autograd_path():
    texts, y = _bags(400)
    lazy = _pipeline(optimizer=LazyAdam, max_epochs=2).fit(texts, y)[-1]
    assert not lazy.plan_.kernel and isinstance(lazy.net_.step_, AutogradStep)
    assert isinstance(lazy.net_.module_.encoder, BagEncoder)
    assert lazy.net_.lr == pytest.approx(1e-3)
    X = np.random.default_rng(0).normal(size=(200, 5))
    dense = ConditionalNCEClassifier(random_state=0, max_epochs=2).fit(X, y[:200])
    assert not dense.bag_sgd_ and isinstance(dense.net_.step_, AutogradStep)
    assert isinstance(dense.net_.module_.encoder, MLP)
    assert dense.net_.batch_size == 256 and dense.net_.lr == pytest.approx(1e-3)
    assert isinstance(dense.net_.optimizer_, torch.optim.Adam)


def test_the_bag_encoder_is_the_weighted_mean_of_the_rows_dense_or_sparse():
    encoder = BagEncoder(6, 3).double()
    X = np.array([[2.0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, -1, 0, 0, 0, 3]])
    W = encoder.weight.detach().numpy()
    expected = np.stack([(2 * W[0] + W[2]) / 3, np.zeros(3), (-W[1] + 3 * W[5]) / 4])
    with torch.no_grad():
        dense = encoder(torch.as_tensor(X)).numpy()
        sparse = encoder(csr_to_tensor(sp.csr_matrix(X)).double()).numpy()
    np.testing.assert_allclose(dense, expected, atol=1e-12)
    np.testing.assert_allclose(sparse, expected, atol=1e-12)


# --- few classes: every class is the noise (the exact softmax) ----------------------------
def test_an_exhaustive_batch_makes_the_ranking_loss_the_softmax_cross_entropy():
    from sknce.conditional._sampler import LabelSampler
    from sknce.losses import RankingNCELoss
    from sknce.noise import CategoricalNoise

    rng = np.random.default_rng(0)
    n_classes, n = 6, 5
    X = sp.random(n, 4, density=0.5, random_state=0, format="csr", dtype=np.float32)
    y = torch.as_tensor(rng.integers(0, n_classes, size=n))
    noise = CategoricalNoise(rng.dirichlet(np.ones(n_classes)))
    sampler = LabelSampler(X, y, noise, 3, 0, False, "cpu", exhaustive=True)
    batch = sampler(np.arange(n), rng)
    inputs, targets = batch
    assert torch.equal(inputs["negatives"], torch.arange(n_classes))
    logits = torch.randn(n, n_classes, dtype=torch.float64)
    scores = {"pos": logits[torch.arange(n), y], "neg": logits.expand(n, n_classes)}
    loss = RankingNCELoss()(scores, targets)
    expected = torch.nn.functional.cross_entropy(logits, y)
    assert float(loss) == pytest.approx(float(expected), rel=1e-12)


def _same_step_as_reference(scorer, X, labels, reference_negatives, log_noise, step):
    """Run ``step(params, csr)`` from the state where the reference kernel call started and
    check that it lands where the reference did, with the same loss (float64)."""
    start = {k: v.clone() for k, v in scorer.state_dict().items()}
    expected_loss = _kernel_step(scorer, X, labels, reference_negatives, log_noise, 0.3, True)
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(start)
    params = (
        scorer.encoder.weight.detach().numpy(),
        scorer.label_embedding.weight.detach().numpy(),
        scorer.label_bias.detach().numpy().reshape(-1),
    )
    csr = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float64))
    assert step(params, csr) == pytest.approx(expected_loss, rel=1e-12)
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-12)


def test_the_kernel_skips_the_repeat_search_only_where_labels_are_distinct():
    """On every class once (the label masked), distinct=True is the same step."""
    scorer, X, labels, _, _ = _problem(6, seed=5)
    every = np.broadcast_to(np.arange(N_CLASSES), (6, N_CLASSES)).copy()
    noise = (np.zeros(6), np.zeros((6, N_CLASSES)), np.empty(0))
    _same_step_as_reference(
        scorer,
        X,
        labels,
        every,
        np.zeros(N_CLASSES),
        lambda w, csr: sgd_bag_ranking(*w, *csr, labels, every, *noise, 0, 6, 0.3, True, True),
    )


def test_a_shared_set_of_negatives_is_passed_once_as_one_row():
    """A (1, K) set (and its (1, K) corrections) trains as K negatives copied to each example."""
    scorer, X, labels, negatives, log_noise = _problem(6, seed=7)
    shared = negatives[:1]
    noise = (log_noise[labels], log_noise[shared], np.empty(0))
    _same_step_as_reference(
        scorer,
        X,
        labels,
        np.repeat(shared, 6, axis=0),
        log_noise,
        lambda w, csr: sgd_bag_ranking(*w, *csr, labels, shared, *noise, 0, 6, 0.3, True),
    )
