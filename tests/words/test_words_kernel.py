"""The compiled kernels against autograd of the core losses, and the compiled noise draws."""

import numpy as np
import pytest
import torch

from sknce.losses import binary_nce, negative_sampling
from sknce.nn import bag_mean
from sknce.noise import alias_tables, remove_accidental_hits
from sknce.words._kernels import (
    _log_sigmoid,
    _sigmoid,
    pair_scores,
    sample_alias,
    sample_uniform,
    sgd_cbow,
    sgd_pairs,
)

N_WORDS, DIM, K = 40, 6, 3


def _batch(seed):
    """Pairs whose centres are distinct and whose targets never repeat across pairs.

    Then the kernel's sequential per-pair updates touch disjoint rows, so their sum
    equals one gradient step on the summed loss exactly (within a pair the kernel
    scores every target before moving any row, so a repeated negative is exact too).
    """
    rng = np.random.default_rng(seed)
    w_in = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    w_out = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    centres = np.array([0, 1, 2], dtype=np.int64)
    targets = rng.permutation(np.arange(3, N_WORDS))[: 3 * (K + 1)].reshape(3, K + 1)
    contexts = targets[:, 0].copy()
    negatives = targets[:, 1:].copy()
    negatives[1, 2] = contexts[1]  # an accidental hit: the kernel must skip it
    negatives[2, 1] = negatives[2, 0]  # a repeated negative: its gradient counts twice
    return w_in, w_out, centres, contexts, negatives


def _autograd(w_in, w_out, centres, contexts, negatives, objective, log_kpn):
    u = torch.tensor(w_in, dtype=torch.float64, requires_grad=True)
    v = torch.tensor(w_out, dtype=torch.float64, requires_grad=True)
    c, x, n = (torch.from_numpy(a) for a in (centres, contexts, negatives))
    pos = (u[c] * v[x]).sum(-1)
    neg = torch.einsum("bd,bkd->bk", u[c], v[n])
    neg = remove_accidental_hits(neg, x, n)
    if objective == "nce":
        log_pn = torch.as_tensor(log_kpn, dtype=torch.float64) - np.log(K)
        loss = binary_nce(pos, neg, log_pn[x], log_pn[n], reduction="sum")
    else:
        loss = negative_sampling(pos, neg, reduction="sum")
    loss.backward()
    return float(loss.detach()), u.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize("objective", ["negative_sampling", "nce"])
def test_kernel_step_is_minus_lr_times_the_core_loss_gradient(objective):
    w_in, w_out, centres, contexts, negatives = _batch(0)
    log_kpn = np.zeros(N_WORDS, dtype=np.float32)
    if objective == "nce":
        probs = np.random.default_rng(1).dirichlet(np.ones(N_WORDS))
        log_kpn = np.log(K * probs).astype(np.float32)
    loss, grad_in, grad_out = _autograd(
        w_in, w_out, centres, contexts, negatives, objective, log_kpn
    )
    lr = 0.01
    new_in, new_out = w_in.copy(), w_out.copy()
    kernel_loss = sgd_pairs(
        new_in,
        new_out,
        centres,
        contexts,
        negatives,
        np.ones(negatives.shape, dtype=np.float32),
        log_kpn,
        lr,
        lr,
    )
    assert kernel_loss == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(new_in - w_in, -lr * grad_in, atol=1e-6)
    np.testing.assert_allclose(new_out - w_out, -lr * grad_out, atol=1e-6)


def test_kernel_weights_multiply_each_negative_term():
    w_in, w_out, centres, contexts, negatives = _batch(2)
    weights = np.random.default_rng(3).uniform(0, 2, size=negatives.shape).astype(np.float32)
    weights[0, 1] = 0.0
    u = torch.tensor(w_in, dtype=torch.float64, requires_grad=True)
    v = torch.tensor(w_out, dtype=torch.float64, requires_grad=True)
    c, x, n = (torch.from_numpy(a) for a in (centres, contexts, negatives))
    neg = remove_accidental_hits(torch.einsum("bd,bkd->bk", u[c], v[n]), x, n)
    loss = negative_sampling(
        (u[c] * v[x]).sum(-1), neg, neg_weights=torch.from_numpy(weights), reduction="sum"
    )
    loss.backward()
    lr = 0.02
    new_in, new_out = w_in.copy(), w_out.copy()
    kernel_loss = sgd_pairs(
        new_in,
        new_out,
        centres,
        contexts,
        negatives,
        weights,
        np.zeros(N_WORDS, dtype=np.float32),
        lr,
        lr,
    )
    assert kernel_loss == pytest.approx(float(loss.detach()), rel=1e-5)
    np.testing.assert_allclose(new_in - w_in, -lr * u.grad.numpy(), atol=1e-6)
    np.testing.assert_allclose(new_out - w_out, -lr * v.grad.numpy(), atol=1e-6)


def test_learning_rate_decays_linearly_within_a_call():
    w_in, w_out, centres, contexts, negatives = _batch(4)
    ones = np.ones(negatives.shape, dtype=np.float32)
    zeros = np.zeros(N_WORDS, dtype=np.float32)
    frozen_in, frozen_out = w_in.copy(), w_out.copy()
    sgd_pairs(frozen_in, frozen_out, centres, contexts, negatives, ones, zeros, 0.0, 0.0)
    np.testing.assert_array_equal(frozen_in, w_in)
    # with lr going 0.1 -> 0, the last pair (centre 2) is not updated at all
    decayed_in = w_in.copy()
    sgd_pairs(decayed_in, w_out.copy(), centres, contexts, negatives, ones, zeros, 0.1, 0.0)
    np.testing.assert_array_equal(decayed_in[2], w_in[2])
    assert not np.allclose(decayed_in[0], w_in[0])


def test_pair_scores_are_dot_products():
    w_in, w_out, centres, contexts, _ = _batch(5)
    np.testing.assert_allclose(
        pair_scores(w_in, w_out, centres, contexts),
        (w_in[centres] * w_out[contexts]).sum(1),
        rtol=1e-5,
    )


def _cbow_autograd(w_in, w_out, ptr, bag_words, centres, negatives, objective, log_kpn):
    """Loss and gradients of the CBOW objective with word2vec's bag gradient (bag_mean)."""
    u = torch.nn.Embedding.from_pretrained(torch.tensor(w_in, dtype=torch.float64), freeze=False)
    v = torch.tensor(w_out, dtype=torch.float64, requires_grad=True)
    x, n = torch.from_numpy(centres), torch.from_numpy(negatives)
    h = bag_mean(u, torch.from_numpy(bag_words), torch.from_numpy(ptr[:-1]))
    pos = (h * v[x]).sum(-1)
    neg = remove_accidental_hits(torch.einsum("bd,bkd->bk", h, v[n]), x, n)
    if objective == "nce":
        log_pn = torch.as_tensor(log_kpn, dtype=torch.float64) - np.log(K)
        loss = binary_nce(pos, neg, log_pn[x], log_pn[n], reduction="sum")
    else:
        loss = negative_sampling(pos, neg, reduction="sum")
    loss.backward()
    return float(loss.detach()), u.weight.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize("objective", ["negative_sampling", "nce"])
def test_cbow_kernel_step_is_minus_lr_times_the_gradient_of_bag_mean(objective):
    """Each context word moves by the whole gradient of the mean (word2vec's CBOW)."""
    rng = np.random.default_rng(7)
    w_in = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    w_out = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    # disjoint bags (1, 2 and 3 context words) and disjoint targets across examples
    words = rng.permutation(N_WORDS)
    ptr = np.array([0, 1, 3, 6], dtype=np.int64)
    bag_words = words[:6].astype(np.int64)
    targets = words[6 : 6 + 3 * (K + 1)].reshape(3, K + 1).astype(np.int64)
    centres, negatives = targets[:, 0].copy(), targets[:, 1:].copy()
    negatives[0, 1] = centres[0]  # an accidental hit
    log_kpn = np.zeros(N_WORDS, dtype=np.float32)
    if objective == "nce":
        log_kpn = np.log(K * rng.dirichlet(np.ones(N_WORDS))).astype(np.float32)
    loss, grad_in, grad_out = _cbow_autograd(
        w_in, w_out, ptr, bag_words, centres, negatives, objective, log_kpn
    )
    lr = 0.01
    new_in, new_out = w_in.copy(), w_out.copy()
    empty = np.ones((0, K), dtype=np.float32)
    kernel_loss = sgd_cbow(
        new_in, new_out, ptr, bag_words, centres, negatives, empty, log_kpn, lr, lr
    )
    assert kernel_loss == pytest.approx(loss, rel=1e-5)
    np.testing.assert_allclose(new_in - w_in, -lr * grad_in, atol=1e-6)
    np.testing.assert_allclose(new_out - w_out, -lr * grad_out, atol=1e-6)
    assert np.abs(new_in - w_in)[bag_words[3:]].min(axis=1).max() > 0  # a 3-word bag moved


def test_cbow_with_one_word_bags_is_skip_gram():
    w_in, w_out, centres, contexts, negatives = _batch(8)
    ones = np.ones((0, K), dtype=np.float32)
    zeros = np.zeros(N_WORDS, dtype=np.float32)
    sg_in, sg_out = w_in.copy(), w_out.copy()
    sg_loss = sgd_pairs(sg_in, sg_out, centres, contexts, negatives, ones, zeros, 0.1, 0.05)
    ptr = np.arange(len(centres) + 1, dtype=np.int64)
    cb_in, cb_out = w_in.copy(), w_out.copy()
    cb_loss = sgd_cbow(cb_in, cb_out, ptr, centres, contexts, negatives, ones, zeros, 0.1, 0.05)
    assert cb_loss == pytest.approx(sg_loss, rel=1e-6)
    np.testing.assert_allclose(cb_in, sg_in, atol=1e-7)
    np.testing.assert_allclose(cb_out, sg_out, atol=1e-7)


def test_sigmoid_tables_are_exact_to_two_millionths():
    grid = np.linspace(-40, 40, 20001)
    exact = 1 / (1 + np.exp(-grid))
    ours = np.array([_sigmoid(a) for a in grid])
    np.testing.assert_allclose(ours, exact, atol=1e-6)
    exact_log = -np.logaddexp(0, -grid)
    ours_log = np.array([_log_sigmoid(a) for a in grid])
    np.testing.assert_allclose(ours_log, exact_log, atol=2e-6)


def test_alias_draws_follow_the_noise_and_repeat_with_the_seed():
    probs = np.random.default_rng(0).dirichlet(np.ones(7) * 0.5)
    accept, alias = alias_tables(probs)
    draws = sample_alias(accept, alias, 50000, 4, 123)
    assert draws.shape == (50000, 4) and draws.dtype == np.int64
    freq = np.bincount(draws.ravel(), minlength=7) / draws.size
    np.testing.assert_allclose(freq, probs, atol=0.004)
    np.testing.assert_array_equal(sample_alias(accept, alias, 50000, 4, 123), draws)
    assert not np.array_equal(sample_alias(accept, alias, 50000, 4, 124), draws)
    uniforms = sample_uniform(100000, 5)
    assert uniforms.min() >= 0 and uniforms.max() < 1
    assert abs(uniforms.mean() - 0.5) < 0.005 and abs(uniforms.var() - 1 / 12) < 0.002


def _word2vec_c(w_in, w_out, bags, targets, lr):
    """word2vec.c's negative-sampling update, example by example, in float64.

    Example ``i`` has the input rows ``bags[i]`` (one row: skip-gram; several: CBOW,
    ``cbow_mean=1``) and the targets ``targets[i]`` (the true one first, label 1;
    the negatives, label 0, skipped when equal to the true one). For each target in
    turn: ``g = (label - sigmoid(h . v)) * lr``, ``work += g v``, ``v += g h``; then
    every input row of the example (once per occurrence) moves by the whole ``work``.
    """
    w_in, w_out = w_in.astype(np.float64), w_out.astype(np.float64)
    for bag, example in zip(bags, targets):
        h = w_in[bag].mean(axis=0)
        work = np.zeros_like(h)
        for d, target in enumerate(example):
            if d and target == example[0]:
                continue
            g = ((d == 0) - 1 / (1 + np.exp(-h @ w_out[target]))) * lr
            work += g * w_out[target]
            w_out[target] += g * h
        for row in bag:
            w_in[row] += work
    return w_in, w_out


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
def test_kernels_apply_word2vec_c_rule_example_by_example(architecture):
    """Examples sharing rows, run in sequence, as word2vec.c and gensim train them."""
    rng = np.random.default_rng(11)
    w_in = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    w_out = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    n = 30
    # each example's targets are distinct (word2vec scores a repeated one after moving
    # it; the kernel sums its terms), but rows repeat across examples and bags
    targets = np.stack([rng.choice(N_WORDS, K + 1, replace=False) for _ in range(n)])
    targets[3, 2] = targets[3, 0]  # an accidental hit, skipped by both
    lr = 0.05
    new_in, new_out = w_in.copy(), w_out.copy()
    ones = np.ones((0, K), dtype=np.float32)
    zeros = np.zeros(N_WORDS, dtype=np.float32)
    if architecture == "skipgram":
        centres = rng.integers(0, N_WORDS, n)
        bags = [[c] for c in centres]
        sgd_pairs(new_in, new_out, centres, targets[:, 0], targets[:, 1:], ones, zeros, lr, lr)
    else:
        bags = [list(rng.integers(0, N_WORDS, rng.integers(1, 6))) for _ in range(n)]
        bags[0] = [5, 5, 9]  # a word twice in a window moves twice
        ptr = np.cumsum([0] + [len(b) for b in bags])
        words = np.concatenate(bags).astype(np.int64)
        sgd_cbow(new_in, new_out, ptr, words, targets[:, 0], targets[:, 1:], ones, zeros, lr, lr)
    ref_in, ref_out = _word2vec_c(w_in, w_out, bags, targets, lr)
    np.testing.assert_allclose(new_in, ref_in, atol=2e-5)
    np.testing.assert_allclose(new_out, ref_out, atol=2e-5)
    assert np.abs(ref_in - w_in).max() > 0.01  # the examples moved the rows
