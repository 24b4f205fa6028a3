"""The NCE objectives against brute-force NumPy formulas and the papers' theory."""

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sknce.losses import (
    binary_nce,
    k_negative,
    negative_sampling,
    pair_logistic,
    ranking_nce,
    self_normalization_penalty,
)
from sknce.noise import remove_accidental_hits

# --- brute-force references, written as the papers state them --------------------


def np_ranking(pos, neg, lp_pos, lp_neg):
    sbar = np.concatenate([(pos - lp_pos)[:, None], neg - lp_neg], axis=1)
    out = []
    for row in sbar:
        out.append(-np.log(np.exp(row[0]) / np.exp(row).sum()))
    return np.array(out)


def np_binary(pos, neg, lp_pos, lp_neg, gamma):
    K = neg.shape[1]

    def g(s):
        return np.exp(s - gamma) / (np.exp(s - gamma) + K)

    return -np.log(g(pos - lp_pos)) - np.log(1 - g(neg - lp_neg)).sum(axis=1)


def np_k_negative(a, p, n, loss, beta):
    v = np.einsum("bd,bd->b", a, p)[:, None] - np.einsum("bd,bkd->bk", a, n)
    if loss == "logistic":
        return np.log(1 + np.exp(-beta * v).sum(axis=1))
    return np.maximum(0, (1 - beta * v).max(axis=1))


def _t(x, dtype=torch.float64):
    return torch.as_tensor(np.asarray(x), dtype=dtype)


score_values = st.floats(-5, 5, allow_nan=False, width=32)


@st.composite
def batches(draw, max_batch=6, max_k=5):
    b = draw(st.integers(1, max_batch))
    k = draw(st.integers(1, max_k))
    pos = draw(arrays(np.float64, (b,), elements=score_values))
    neg = draw(arrays(np.float64, (b, k), elements=score_values))
    lp_pos = draw(arrays(np.float64, (b,), elements=st.floats(-6, 0, width=32)))
    lp_neg = draw(arrays(np.float64, (b, k), elements=st.floats(-6, 0, width=32)))
    return pos, neg, lp_pos, lp_neg


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
@settings(max_examples=40, deadline=None)
@given(data=batches(), gamma=st.floats(-3, 3))
def test_ranking_and_binary_match_brute_force(dtype, tol, data, gamma):
    pos, neg, lp_pos, lp_neg = data
    got_r = ranking_nce(
        _t(pos, dtype), _t(neg, dtype), _t(lp_pos, dtype), _t(lp_neg, dtype), reduction="none"
    )
    np.testing.assert_allclose(
        got_r.numpy(), np_ranking(pos, neg, lp_pos, lp_neg), rtol=tol, atol=tol
    )
    got_b = binary_nce(
        _t(pos, dtype),
        _t(neg, dtype),
        _t(lp_pos, dtype),
        _t(lp_neg, dtype),
        gamma,
        reduction="none",
    )
    np.testing.assert_allclose(
        got_b.numpy(), np_binary(pos, neg, lp_pos, lp_neg, gamma), rtol=tol, atol=tol
    )


@settings(max_examples=30, deadline=None)
@given(data=batches())
def test_negative_sampling_is_word2vec_objective(data):
    pos, neg, _, _ = data
    expected = -np.log(1 / (1 + np.exp(-pos))) - np.log(1 / (1 + np.exp(neg))).sum(axis=1)
    got = negative_sampling(_t(pos), _t(neg), reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)


def test_negative_sampling_weights_multiply_each_negative_term():
    rng = np.random.default_rng(0)
    pos, neg, w = rng.normal(size=7), rng.normal(size=(7, 4)), rng.uniform(0, 3, size=(7, 4))
    neg[2, 1] = -np.inf  # a removed negative stays absent whatever its weight
    expected = np.log1p(np.exp(-pos)) + (w * np.log1p(np.exp(neg))).sum(axis=1)
    got = negative_sampling(_t(pos), _t(neg), neg_weights=_t(w), reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    unit = negative_sampling(_t(pos), _t(neg), neg_weights=_t(np.ones((7, 4))))
    assert float(unit) == pytest.approx(float(negative_sampling(_t(pos), _t(neg))))


@settings(max_examples=30, deadline=None)
@given(
    scores=arrays(np.float64, st.integers(1, 8), elements=score_values),
    seed=st.integers(0, 2**16),
)
def test_pair_logistic_matches_eq1(scores, seed):
    labels = np.random.default_rng(seed).integers(0, 2, size=scores.shape)
    expected = np.log(1 + np.exp(-(2 * labels - 1) * scores))
    got = pair_logistic(_t(scores), _t(labels), reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@settings(max_examples=30, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 5), st.integers(1, 6), st.integers(1, 4)),
    beta=st.floats(0.1, 5),
    seed=st.integers(0, 2**16),
)
def test_k_negative_matches_definition_2_1(loss, shape, beta, seed):
    b, k, d = shape
    rng = np.random.default_rng(seed)
    a, p, n = rng.normal(size=(b, d)), rng.normal(size=(b, d)), rng.normal(size=(b, k, d))
    got = k_negative(_t(a), _t(p), _t(n), loss=loss, beta=beta, reduction="none")
    np.testing.assert_allclose(
        got.numpy(), np_k_negative(a, p, n, loss, beta), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_k_negative_mask_drops_negatives(loss):
    rng = np.random.default_rng(0)
    a, p, n = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 5, 4))
    mask = np.ones((3, 5), dtype=bool)
    mask[:, 2:] = False
    got = k_negative(
        _t(a), _t(p), _t(n), loss=loss, negative_mask=torch.as_tensor(mask), reduction="none"
    )
    expected = np_k_negative(a, p, n[:, :2], loss, 1.0)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)


def test_self_normalization_penalty_brute_force():
    rng = np.random.default_rng(1)
    s, lp = rng.normal(size=(4, 7)), np.log(rng.dirichlet(np.ones(7), size=4))
    expected = 0.3 * np.log(np.exp(s - lp).mean(axis=1)) ** 2
    got = self_normalization_penalty(_t(s), _t(lp), alpha=0.3, reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)


def test_reductions():
    pos, neg = torch.randn(5), torch.randn(5, 3)
    per = ranking_nce(pos, neg, reduction="none")
    assert torch.isclose(ranking_nce(pos, neg), per.mean())
    assert torch.isclose(ranking_nce(pos, neg, reduction="sum"), per.sum())
    with pytest.raises(ValueError, match="reduction"):
        ranking_nce(pos, neg, reduction="max")


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"\(batch, K\)"):
        ranking_nce(torch.randn(4), torch.randn(4))
    with pytest.raises(ValueError, match="batch size"):
        binary_nce(torch.randn(4), torch.randn(3, 2))
    with pytest.raises(ValueError, match="same shape"):
        pair_logistic(torch.randn(4), torch.ones(3))
    with pytest.raises(ValueError, match="negatives"):
        k_negative(torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3))
    with pytest.raises(ValueError, match="hinge"):
        k_negative(torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 1, 3), loss="l2")


@pytest.mark.parametrize("magnitude", [1e4, -1e4])
def test_extreme_scores_give_finite_losses_and_gradients(magnitude):
    pos = torch.full((3,), magnitude, requires_grad=True)
    neg = torch.full((3, 4), -magnitude, requires_grad=True)
    emb = torch.full((3, 2), magnitude / 100, requires_grad=True)
    losses = [
        ranking_nce(pos, neg, torch.zeros(3), torch.zeros(3, 4)),
        binary_nce(pos, neg, torch.zeros(3), torch.zeros(3, 4), 0.5),
        negative_sampling(pos, neg),
        pair_logistic(pos, torch.tensor([1.0, 0.0, 1.0])),
        self_normalization_penalty(neg, torch.zeros(3, 4)),
        k_negative(emb, -emb, emb.unsqueeze(1).repeat(1, 3, 1), loss="logistic"),
        k_negative(emb, -emb, emb.unsqueeze(1).repeat(1, 3, 1), loss="hinge"),
    ]
    for loss in losses:
        assert torch.isfinite(loss)
        grads = torch.autograd.grad(loss, [pos, neg, emb], allow_unused=True)
        assert all(g is None or torch.isfinite(g).all() for g in grads)


def test_removed_accidental_hits_are_absent_negatives():
    pos = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    neg = torch.tensor(
        [[0.5, 1.0, -1.0], [2.0, 0.1, 0.2]], dtype=torch.float64, requires_grad=True
    )
    ids_pos = torch.tensor([4, 7])
    ids_neg = torch.tensor([[4, 1, 2], [3, 7, 7]])
    for fn in (ranking_nce, binary_nce, negative_sampling):
        cleaned = remove_accidental_hits(neg, ids_pos, ids_neg)
        if fn is binary_nce:
            # binary NCE's log K counts the drawn negatives, hits included.
            got = fn(pos, cleaned, reduction="none")

            def g(s):
                return math.exp(s) / (math.exp(s) + 3)  # K = 3 drawn negatives

            expected = [
                -math.log(g(0.3)) - math.log(1 - g(1.0)) - math.log(1 - g(-1.0)),
                -math.log(g(-0.2)) - math.log(1 - g(2.0)),
            ]
        else:
            got = fn(pos, cleaned, reduction="none")
            expected = [
                float(fn(pos[:1], neg[:1, 1:], reduction="none").detach()),
                float(fn(pos[1:], neg[1:, :1], reduction="none").detach()),
            ]
        np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-12)
        grad = torch.autograd.grad(got.sum(), neg)[0]
        assert grad[0, 0] == 0 and grad[1, 1] == 0 and grad[1, 2] == 0
        assert torch.isfinite(grad).all()


# --- Ma & Collins: population objectives by exact enumeration --------------------


def _population_ranking(scores, p_xy, p_noise, K):
    """L_R^∞ (as a loss): exact expectation over x, y0 and all K-tuples of negatives."""
    n_x, n_y = p_xy.shape
    total = 0.0
    log_noise = torch.log(p_noise)
    for x in range(n_x):
        for y0 in range(n_y):
            for tup in itertools.product(range(n_y), repeat=K):
                weight = p_xy[x, y0] * torch.prod(p_noise[list(tup)])
                loss = ranking_nce(
                    scores[x, y0].reshape(1),
                    scores[x, list(tup)].reshape(1, K),
                    log_noise[y0].reshape(1),
                    log_noise[list(tup)].reshape(1, K),
                )
                total = total + weight * loss
    return total


def _population_binary(scores, gamma, p_xy, p_noise, K):
    """L_B^∞ (as a loss): exact expectation over x, y0 and all K-tuples of negatives."""
    n_x, n_y = p_xy.shape
    total = 0.0
    log_noise = torch.log(p_noise)
    for x in range(n_x):
        for y0 in range(n_y):
            for tup in itertools.product(range(n_y), repeat=K):
                weight = p_xy[x, y0] * torch.prod(p_noise[list(tup)])
                loss = binary_nce(
                    scores[x, y0].reshape(1),
                    scores[x, list(tup)].reshape(1, K),
                    log_noise[y0].reshape(1),
                    log_noise[list(tup)].reshape(1, K),
                    gamma,
                )
                total = total + weight * loss
    return total


def test_ranking_population_gradient_vanishes_at_truth():
    """Ma & Collins Theorem 4.1: θ* maximises L_R^∞ (|Y| = 3, K = 2, log-linear model)."""
    torch.manual_seed(0)
    features = torch.tensor([[1.0, 0.5], [-0.3, 1.2]], dtype=torch.float64)  # two inputs
    theta_true = torch.tensor([[0.4, -1.0], [1.1, 0.3], [-0.7, 0.8]], dtype=torch.float64)
    p_x = torch.tensor([0.4, 0.6], dtype=torch.float64)
    p_y_x = torch.softmax(features @ theta_true.T, dim=1)
    p_xy = p_x[:, None] * p_y_x
    p_noise = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)

    def grad_at(theta):
        theta = theta.clone().requires_grad_(True)
        loss = _population_ranking(features @ theta.T, p_xy, p_noise, K=2)
        return torch.autograd.grad(loss, theta)[0]

    assert grad_at(theta_true).abs().max() < 1e-12
    assert grad_at(theta_true + 0.3).abs().max() < 1e-12  # a shift of all θ_y is invisible
    perturbed = theta_true.clone()
    perturbed[0, 0] += 0.5
    assert grad_at(perturbed).abs().max() > 1e-3


def _counterexample():
    p_xy = torch.tensor([[1 / 8, 3 / 8], [1 / 4, 1 / 4]], dtype=torch.float64)
    p_noise = torch.tensor([0.5, 0.5], dtype=torch.float64)
    return p_xy, p_noise


def _table_scores(log_theta):
    # s(x1, y1) = log θ1; s(x1, y2) = s(x2, y1) = s(x2, y2) = log θ2 (Section 4.3).
    a1, a2 = log_theta[0], log_theta[1]
    return torch.stack([torch.stack([a1, a2]), torch.stack([a2, a2])])


def _maximise(loss_fn, n_params):
    params = torch.zeros(n_params, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [params],
        max_iter=500,
        tolerance_grad=1e-12,
        tolerance_change=1e-15,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = loss_fn(params)
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    return params.detach()


@pytest.mark.parametrize("K", [1, 2])
def test_binary_nce_counterexample_gives_3_over_7(K):
    """Ma & Collins §4.3: binary NCE converges to θ1/θ2 = 3/7, not the true 1/3."""
    p_xy, p_noise = _counterexample()
    params = _maximise(
        lambda p: _population_binary(_table_scores(p[:2]), p[2], p_xy, p_noise, K), 3
    )
    ratio = math.exp(params[0] - params[1])
    assert ratio == pytest.approx(3 / 7, abs=1e-6)
    # the closed form of the paper: θ1 = exp(γ)/4, θ2 = 7 exp(γ)/12
    assert math.exp(params[0] - params[2]) == pytest.approx(1 / 4, abs=1e-6)
    assert math.exp(params[1] - params[2]) == pytest.approx(7 / 12, abs=1e-6)


@pytest.mark.parametrize("K", [1, 2])
def test_ranking_nce_counterexample_gives_true_1_over_3(K):
    p_xy, p_noise = _counterexample()
    params = _maximise(lambda p: _population_ranking(_table_scores(p), p_xy, p_noise, K), 2)
    assert math.exp(params[0] - params[1]) == pytest.approx(1 / 3, abs=1e-6)
