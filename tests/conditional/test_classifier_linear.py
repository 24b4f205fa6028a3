"""The parts of the classifier's full-rank linear model, each against a reference.

The compiled step against autograd with :class:`~sknce.optim.RowAdagrad` (float64,
example by example), the optimizer against its formula, the margin loss, the input
weighting against :func:`sknce._bags.normalize_bags`, the scorer's three ways of
scoring against each other, and the temperature against a planted one.
"""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sknce._bags import normalize_bags, smooth_idf
from sknce._data import csr_to_tensor
from sknce.conditional._kernel_step import _weighted_csr
from sknce.conditional._kernels import sgd_linear_softmax
from sknce.conditional._temperature import fit_temperature
from sknce.losses import MarginSoftmaxLoss, SoftmaxLoss
from sknce.nn import BagEncoder, BagWeighting, LinearLabelScorer
from sknce.optim import RowAdagrad

N_FEATURES, N_CLASSES = 8, 5


def _problem(n, seed=0, dtype=torch.float64):
    """A float64 linear scorer on weighted bags, a CSR batch of counts and labels."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    X = sp.random(n, N_FEATURES, density=0.4, random_state=seed, format="lil") * 4
    X[0] = 0  # an empty bag
    X = sp.csr_matrix(np.ceil(X.toarray()))
    idf = smooth_idf(X)
    encoder = BagEncoder(
        N_FEATURES, N_CLASSES, normalize=False, weighting=BagWeighting("log1p-idf", idf)
    )
    scorer = LinearLabelScorer(encoder, N_CLASSES).to(dtype)
    with torch.no_grad():
        for p in scorer.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    labels = rng.integers(0, N_CLASSES, size=n)
    return scorer, X, idf, labels


def _rival_term(logits, y, threshold=0.0):
    """Brute force: ``softplus(t - s_y) + softplus(s_c - t)``, ``c`` the first best other
    class."""
    others = [k for k in range(N_CLASSES) if k != y]
    best = others[int(np.argmax(logits[0, others].detach().numpy()))]
    return torch.nn.functional.softplus(threshold - logits[0, y]) + torch.nn.functional.softplus(
        logits[0, best] - threshold
    )


def _autograd_steps(scorer, optimizer, X, labels, margin, weights, rival=0.0, threshold=0.0):
    """One optimizer step per example in turn, by autograd; the summed weighted loss."""
    total = 0.0
    for i in range(X.shape[0]):
        optimizer.zero_grad()
        h, b = scorer.encode(csr_to_tensor(X[i : i + 1]).double())
        logits = scorer.score_range(h, b)
        y = torch.as_tensor(labels[i : i + 1])
        term = _rival_term(logits, int(y[0]), threshold)
        logits = logits - margin * torch.nn.functional.one_hot(y, N_CLASSES)
        loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum") + rival * term
        if weights is not None:
            loss = loss * weights[i]
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total


def _kernel_steps(scorer, optimizer, X, idf, labels, margin, weights, rival=0.0, threshold=0.0):
    adagrad = isinstance(optimizer, RowAdagrad)
    weight, bias = scorer.encoder.weight, scorer.label_bias
    # the weighted batch as the step prepares it: the encoder's own weighting
    dense = scorer.encoder.weighting(torch.as_tensor(X.toarray(), dtype=weight.dtype))
    W = sp.csr_matrix(dense.numpy())
    empty = np.empty(0)

    def view(t):
        return t.detach().numpy().reshape(-1)

    return sgd_linear_softmax(
        weight.detach().numpy(),
        view(bias),
        view(optimizer.state[weight]["sum"]) if adagrad else empty,
        view(optimizer.state[bias]["sum"]) if adagrad else empty,
        W.indptr.astype(np.int64),
        W.indices.astype(np.int64),
        W.data,
        labels,
        empty if weights is None else weights,
        0,
        X.shape[0],
        optimizer.param_groups[0]["lr"],
        margin,
        optimizer.param_groups[0].get("eps", 0.0),
        rival,
        threshold,
    )


@pytest.mark.parametrize(
    "optimizer_class, options",
    [(RowAdagrad, {}), (RowAdagrad, {"eps": 2.0}), (torch.optim.SGD, {})],
    ids=["adagrad", "damped-adagrad", "sgd"],
)
@pytest.mark.parametrize("margin", [0.0, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_the_linear_kernel_is_autograd_example_by_example(
    optimizer_class, options, margin, weighted
):
    """Same losses and parameters (and AdaGrad sums) as autograd's per-example steps."""
    scorer, X, idf, labels = _problem(7)
    weights = np.linspace(0.5, 2.0, 7) if weighted else None
    start = {k: v.clone() for k, v in scorer.state_dict().items()}
    optimizer = optimizer_class(scorer.parameters(), lr=0.4, **options)
    expected_loss = _autograd_steps(scorer, optimizer, X, labels, margin, weights)
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    expected_sums = [s["sum"].clone() for s in optimizer.state.values() if "sum" in s]
    scorer.load_state_dict(start)
    optimizer = optimizer_class(scorer.parameters(), lr=0.4, **options)
    loss = _kernel_steps(scorer, optimizer, X, idf, labels, margin, weights)
    assert loss == pytest.approx(expected_loss, rel=1e-9)
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-9, atol=1e-12)
    sums = [s["sum"] for s in optimizer.state.values() if "sum" in s]
    for got, want in zip(sums, expected_sums):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "optimizer_class, options",
    [(RowAdagrad, {}), (RowAdagrad, {"eps": 2.0}), (torch.optim.SGD, {})],
    ids=["adagrad", "damped-adagrad", "sgd"],
)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("threshold", [0.0, -2.5])
def test_the_rival_term_of_the_kernel_is_autograd_example_by_example(
    optimizer_class, options, weighted, threshold
):
    """With the one-vs-all term of the label and its best rival: autograd's steps."""
    scorer, X, idf, labels = _problem(9, seed=3)
    weights = np.linspace(0.5, 2.0, 9) if weighted else None
    start = {k: v.clone() for k, v in scorer.state_dict().items()}
    optimizer = optimizer_class(scorer.parameters(), lr=0.4, **options)
    expected_loss = _autograd_steps(
        scorer, optimizer, X, labels, 1.5, weights, rival=0.7, threshold=threshold
    )
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(start)
    optimizer = optimizer_class(scorer.parameters(), lr=0.4, **options)
    loss = _kernel_steps(
        scorer, optimizer, X, idf, labels, 1.5, weights, rival=0.7, threshold=threshold
    )
    assert loss == pytest.approx(expected_loss, rel=1e-9)
    for name, value in scorer.state_dict().items():
        np.testing.assert_allclose(value.numpy(), expected[name].numpy(), rtol=1e-9, atol=1e-12)
    assert not np.allclose(expected["encoder.weight"], start["encoder.weight"])  # it moved
    # the term changed the update: without it the parameters end elsewhere
    scorer.load_state_dict(start)
    optimizer = optimizer_class(scorer.parameters(), lr=0.4, **options)
    _kernel_steps(scorer, optimizer, X, idf, labels, 1.5, weights)
    assert not np.allclose(scorer.encoder.weight.detach().numpy(), expected["encoder.weight"])


@pytest.mark.parametrize("t", [0.0, -3.0, 1.5])
def test_the_rival_term_is_its_formula_and_the_loss_reads_it_in_training_only(t):
    """The kernel's loss (nothing moves) and ``MarginSoftmaxLoss(rival=r,
    rival_threshold=t)`` against ``CE(s - m e_y) + r (log(1 + exp(t - s_y)) +
    log(1 + exp(s_c - t)))``, written out in numpy."""
    scorer, X, idf, labels = _problem(6, seed=4)
    h, b = scorer.encode(torch.as_tensor(X.toarray(), dtype=torch.float64))
    logits = scorer.score_range(h, b).detach()
    s = logits.numpy()
    expected = []
    for i, y in enumerate(labels):
        shifted = s[i].copy()
        shifted[y] -= 0.6
        ce = np.log(np.sum(np.exp(shifted))) - shifted[y]
        rival = max((v, -k) for k, v in enumerate(s[i]) if k != y)[0]
        term = np.log1p(np.exp(t - s[i, y])) + np.log1p(np.exp(rival - t))
        expected.append(ce + 0.25 * term)
    weights = np.array([0.5, 1.0, 2.0, 1.5, 3.0, 1.0])
    optimizer = torch.optim.SGD(scorer.parameters(), lr=0.0)  # nothing moves
    loss = _kernel_steps(scorer, optimizer, X, idf, labels, 0.6, weights, rival=0.25, threshold=t)
    assert loss == pytest.approx(float(np.dot(weights, expected)), rel=1e-10)
    criterion = MarginSoftmaxLoss(0.6, rival=0.25, rival_threshold=t).train()
    targets = {"labels": torch.as_tensor(labels)}
    assert float(criterion({"logits": logits}, targets)) == pytest.approx(
        float(np.mean(expected)), rel=1e-10
    )
    weighted = {**targets, "sample_weight": torch.as_tensor(weights)}
    assert float(criterion({"logits": logits}, weighted)) == pytest.approx(
        float(np.dot(weights, expected) / 6), rel=1e-10
    )
    plain = SoftmaxLoss()({"logits": logits}, targets)
    assert float(criterion.eval()({"logits": logits}, targets)) == float(plain)


@pytest.mark.parametrize("rival", [-0.1, math.nan, math.inf])
def test_the_margin_loss_refuses_a_rival_weight_that_is_not_a_finite_non_negative(rival):
    with pytest.raises(ValueError, match="rival must be a finite number >= 0"):
        MarginSoftmaxLoss(1.0, rival=rival)


@pytest.mark.parametrize("threshold", [math.nan, math.inf, -math.inf, "high", None])
def test_the_margin_loss_refuses_a_rival_threshold_that_is_not_a_finite_number(threshold):
    with pytest.raises(ValueError, match="rival_threshold must be a finite number, got"):
        MarginSoftmaxLoss(1.0, rival=0.03, rival_threshold=threshold)


def test_a_margin_loss_pickled_before_the_rival_term_trains_without_it():
    """A loss whose pickle has no ``rival`` or ``rival_threshold`` (an estimator saved
    before they existed, trained on) loads as the margin loss it was."""
    old = MarginSoftmaxLoss(0.6, rival=0.25, rival_threshold=-2.0)
    state = old.__getstate__()
    del state["rival"], state["rival_threshold"]
    loaded = MarginSoftmaxLoss.__new__(MarginSoftmaxLoss)
    loaded.__setstate__(state)
    assert (loaded.rival, loaded.rival_threshold) == (0.0, 0.0)
    logits = torch.tensor([[0.3, -1.0, 2.0], [1.5, 0.2, -0.4]], dtype=torch.float64)
    targets = {"labels": torch.tensor([2, 0])}
    expected = MarginSoftmaxLoss(0.6).train()({"logits": logits}, targets)
    assert float(loaded.train()({"logits": logits}, targets)) == float(expected)
    reloaded = pickle.loads(pickle.dumps(old))  # a current pickle keeps its term
    assert (reloaded.rival, reloaded.rival_threshold) == (0.25, -2.0)


def test_the_loss_of_the_kernel_is_the_weighted_margin_cross_entropy():
    scorer, X, idf, labels = _problem(5, seed=2)
    optimizer = torch.optim.SGD(scorer.parameters(), lr=0.0)  # nothing moves
    weights = np.array([0.5, 1.0, 2.0, 1.5, 3.0])
    loss = _kernel_steps(scorer, optimizer, X, idf, labels, 0.7, weights)
    h, b = scorer.encode(torch.as_tensor(X.toarray(), dtype=torch.float64))
    logits = scorer.score_range(h, b).detach()
    logits[torch.arange(5), torch.as_tensor(labels)] -= 0.7
    each = torch.nn.functional.cross_entropy(logits, torch.as_tensor(labels), reduction="none")
    assert loss == pytest.approx(float((each * torch.as_tensor(weights)).sum()), rel=1e-10)


def test_float32_tables_train_as_float64_ones():
    scorer, X, idf, labels = _problem(6, seed=4)
    single = _problem(6, seed=4, dtype=torch.float32)[0]
    single.load_state_dict({k: v.float() for k, v in scorer.state_dict().items()})
    for model in (scorer, single):
        _kernel_steps(model, RowAdagrad(model.parameters(), lr=0.3), X, idf, labels, 1.0, None)
    for (name, a), b in zip(scorer.state_dict().items(), single.state_dict().values()):
        np.testing.assert_allclose(b.double().numpy(), a.numpy(), atol=1e-5, err_msg=name)


# --- RowAdagrad --------------------------------------------------------------------------------
def test_row_adagrad_is_its_formula_on_dense_and_sparse_gradients():
    torch.manual_seed(0)
    table = torch.nn.Parameter(torch.randn(6, 3, dtype=torch.float64))
    vector = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))
    optimizer = RowAdagrad([table, vector], lr=0.5, eps=1e-10)
    before_t, before_v = table.detach().clone(), vector.detach().clone()
    grads = [torch.randn(6, 3, dtype=torch.float64) for _ in range(2)]
    grad_v = torch.randn(4, dtype=torch.float64)
    expected_sum = torch.zeros(6, dtype=torch.float64)
    expected = before_t.clone()
    for grad in grads:
        grad[2] = 0.0  # a row without a gradient does not move
        table.grad, vector.grad = grad.clone(), grad_v.clone()
        optimizer.step()
        expected_sum += grad.square().sum(dim=1)
        expected -= 0.5 * grad / (expected_sum.sqrt() + 1e-10).unsqueeze(1)
    np.testing.assert_allclose(table.detach().numpy(), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(optimizer.state[table]["sum"].numpy(), expected_sum.numpy())
    total = 2 * grad_v.square().sum()
    steps = grad_v / (grad_v.square().sum().sqrt() + 1e-10) + grad_v / (total.sqrt() + 1e-10)
    np.testing.assert_allclose(vector.detach().numpy(), (before_v - 0.5 * steps).numpy())
    # a sparse gradient of the same rows: the same step
    sparse_table = torch.nn.Parameter(before_t.clone())
    sparse = RowAdagrad([sparse_table], lr=0.5, eps=1e-10)
    for grad in grads:
        rows = torch.tensor([0, 1, 3, 4, 5])
        sparse_table.grad = torch.sparse_coo_tensor(
            rows.unsqueeze(0), grad[rows], (6, 3), check_invariants=True
        )
        sparse.step()
    np.testing.assert_allclose(sparse_table.detach().numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("options", [{"lr": 0.0}, {"lr": -1.0}, {"eps": 0.0}])
def test_row_adagrad_refuses_a_rate_or_eps_that_cannot_train(options):
    with pytest.raises(ValueError, match="RowAdagrad needs lr > 0 and eps > 0"):
        RowAdagrad([torch.nn.Parameter(torch.zeros(2, 2))], **options)


# --- the margin loss ---------------------------------------------------------------------------
def test_the_margin_loss_trains_with_the_margin_and_evaluates_the_likelihood():
    torch.manual_seed(0)
    logits, labels = torch.randn(6, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 3, 0, 1])
    loss = MarginSoftmaxLoss(0.8)
    shifted = logits.clone()
    shifted[torch.arange(6), labels] -= 0.8
    expected = torch.nn.functional.cross_entropy(shifted, labels)
    assert float(loss.train()({"logits": logits}, {"labels": labels})) == pytest.approx(
        float(expected), rel=1e-12
    )
    plain = SoftmaxLoss()({"logits": logits}, {"labels": labels})
    assert float(loss.eval()({"logits": logits}, {"labels": labels})) == pytest.approx(
        float(plain), rel=1e-12
    )
    weights = torch.tensor([1.0, 2.0, 0.5, 1.0, 1.0, 0.5], dtype=torch.float64)
    weighted = loss.train()({"logits": logits}, {"labels": labels, "sample_weight": weights})
    each = torch.nn.functional.cross_entropy(shifted, labels, reduction="none")
    assert float(weighted) == pytest.approx(float((each * weights).sum() / weights.sum()))


# --- the weighting and the scorer ---------------------------------------------------------------
@pytest.mark.parametrize("bag", ["log1p-idf", "tf", "log1p", "counts"])
def test_the_bag_weighting_is_normalize_bags_dense_or_sparse(bag):
    X = sp.csr_matrix(np.array([[2.0, 0, 1, 0], [0, 0, 0, 0], [0, 3, 0, 5], [1, 1, 1, 1]]))
    idf = smooth_idf(X) if bag == "log1p-idf" else None
    expected = normalize_bags(X, bag, idf).toarray()
    weighting = BagWeighting(bag, idf)
    dense = weighting(torch.as_tensor(X.toarray(), dtype=torch.float32))
    sparse = weighting(csr_to_tensor(X)).to_dense()
    np.testing.assert_allclose(dense.numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sparse.numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bag", ["log1p-idf", "tf", "log1p", "counts"])
def test_the_compiled_weighting_of_a_batch_is_the_bag_weighting(bag, dtype):
    """The kernel steps' one-pass weighting and CSR conversion of a batch of counts
    against :class:`BagWeighting`'s torch computation (empty and all-zero rows, a row
    whose sum is negative included)."""
    A = np.ceil(sp.random(40, 30, density=0.2, random_state=1).toarray() * 5)
    A[3] = 0  # an empty row
    A[5] = 0
    A[5, 2] = 1.0  # to be stored as an explicit zero: a row of norm 0
    if bag in ("tf", "counts"):
        A[7, 4], A[7, 9] = -3.0, 1.0  # a negative sum: not scaled
    X = sp.csr_matrix(A)
    X.data[X.indptr[5]] = 0.0
    idf = smooth_idf(X) if bag == "log1p-idf" else None
    weighting = BagWeighting(bag, idf).to(dtype)
    encoder = BagEncoder(30, 4, normalize=False, weighting=weighting)
    x = csr_to_tensor(X).to(dtype)
    expected = weighting(x).to_dense().numpy()
    indptr, indices, data = _weighted_csr(encoder, x)
    got = sp.csr_matrix((data, indices, indptr), shape=X.shape).toarray()
    assert data.dtype == expected.dtype
    rtol = 1e-6 if dtype == torch.float32 else 1e-14
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol / 10)
    unweighted = _weighted_csr(BagEncoder(30, 4, normalize=False), x)
    np.testing.assert_array_equal(unweighted[2], x.coalesce().values().numpy())


@pytest.mark.parametrize(
    "bag, idf, message",
    [("tfidf", None, "bag must be"), ("log1p-idf", None, "needs idf"), ("tf", [1.0], "only it")],
)
def test_the_bag_weighting_names_a_bad_setting(bag, idf, message):
    with pytest.raises(ValueError, match=message):
        BagWeighting(bag, idf)


def test_the_linear_scorer_scores_alike_given_labels_a_shared_set_and_a_range():
    scorer, X, _, labels = _problem(6, seed=1)
    h, b = scorer.encode(csr_to_tensor(X).double())
    every = scorer.score_range(h, b)
    y = torch.as_tensor(labels)
    np.testing.assert_allclose(scorer.score(h, b, y).detach(), every[torch.arange(6), y].detach())
    pairs = torch.as_tensor(np.stack([labels, (labels + 1) % N_CLASSES], axis=1))
    np.testing.assert_allclose(scorer.score(h, b, pairs).detach(), every.gather(1, pairs).detach())
    shared = torch.tensor([4, 0, 2])
    np.testing.assert_allclose(
        scorer.score_shared(h, b, shared).detach(), every[:, shared].detach()
    )
    np.testing.assert_allclose(scorer.score_range(h, b, 1, 4).detach(), every[:, 1:4].detach())
    out = scorer(csr_to_tensor(X).double(), labels=y, negatives=shared)
    np.testing.assert_allclose(out["neg"].detach(), every[:, shared].detach())


def test_the_linear_scorer_starts_at_the_prior_for_every_input():
    scorer, X, _, _ = _problem(4, seed=3)
    prior = torch.log(torch.tensor([0.1, 0.2, 0.3, 0.15, 0.25], dtype=torch.float64))
    scorer.start_at_prior(prior)
    h, b = scorer.encode(csr_to_tensor(X).double())
    logp = torch.log_softmax(scorer.score_range(h, b), dim=1)
    np.testing.assert_allclose(logp.detach().numpy(), prior.expand(4, -1).numpy(), atol=1e-12)
    assert scorer.label_tables()[0] is scorer.encoder.weight


# --- the temperature ---------------------------------------------------------------------------
def test_the_temperature_recovers_a_planted_one():
    rng = np.random.default_rng(0)
    logits = torch.as_tensor(rng.normal(scale=2.0, size=(20000, 6)))
    labels = torch.distributions.Categorical(logits=logits).sample()
    for planted in (0.5, 1.0, 3.0):
        assert fit_temperature(logits * planted, labels) == pytest.approx(planted, rel=0.05)


def test_the_temperature_of_few_examples_stays_near_one_and_of_none_is_one():
    logits = torch.tensor([[5.0, 0.0], [0.0, 5.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1])
    # two confidently right examples would sharpen without bound; the prior holds T
    assert 0.1 < fit_temperature(logits, labels) < 1.0
    assert fit_temperature(torch.empty(0, 3), torch.empty(0, dtype=torch.int64)) == 1.0
    weights = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert math.isfinite(fit_temperature(logits, labels, weights))


@pytest.mark.parametrize("weighted", [False, True])
def test_the_temperature_maximises_its_objective_over_a_fine_grid(weighted):
    """The search finds the maximiser of the penalised log-likelihood of
    ``log_softmax(logits / T)``, computed by torch over a grid of ``log T``."""
    rng = np.random.default_rng(3)
    logits = torch.as_tensor(rng.normal(scale=3.0, size=(300, 7)), dtype=torch.float32)
    labels = torch.as_tensor(rng.integers(0, 7, size=300))
    weights = torch.as_tensor(rng.uniform(0.1, 3.0, size=300)) if weighted else None
    w = torch.ones(300, dtype=torch.float64) if weights is None else weights * 300 / weights.sum()
    grid = torch.linspace(-3.0, 3.0, 3001, dtype=torch.float64)
    values = [
        float(w @ torch.log_softmax(logits.double() * math.exp(-u), dim=1)[range(300), labels])
        - float(u) ** 2 / 2
        for u in grid
    ]
    best = math.exp(float(grid[int(np.argmax(values))]))
    assert fit_temperature(logits, labels, weights) == pytest.approx(best, rel=2e-3)
