"""The compiled skip-gram kernel against autograd of the core losses."""

import numpy as np
import pytest
import torch

from sknce.losses import binary_nce, negative_sampling
from sknce.noise import remove_accidental_hits
from sknce.words._kernels import pair_scores, sgd_pairs

N_WORDS, DIM, K = 40, 6, 3


def _batch(seed):
    """Pairs whose centres are distinct and whose targets never repeat across pairs.

    Then the kernel's sequential per-pair updates touch disjoint rows, so their sum
    equals one gradient step on the summed loss exactly.
    """
    rng = np.random.default_rng(seed)
    w_in = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    w_out = rng.normal(scale=0.5, size=(N_WORDS, DIM)).astype(np.float32)
    centres = np.array([0, 1, 2], dtype=np.int64)
    targets = rng.permutation(np.arange(3, N_WORDS))[: 3 * (K + 1)].reshape(3, K + 1)
    contexts = targets[:, 0].copy()
    negatives = targets[:, 1:].copy()
    negatives[1, 2] = contexts[1]  # an accidental hit: the kernel must skip it
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
