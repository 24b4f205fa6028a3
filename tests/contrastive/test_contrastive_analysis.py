"""The k-negatives analysis tools against hand-computed and brute-force answers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from sknce.contrastive import nce_optimal_gram, simplex_etf_report, supervised_loss
from sknce.contrastive._gram import nearest_correlation


def simplex(C: int) -> np.ndarray:
    """Unit vectors of a simplex ETF in R^C: centred basis vectors, renormalised."""
    U = np.eye(C) - 1.0 / C
    return U / np.linalg.norm(U, axis=1, keepdims=True)


# --- simplex_etf_report ---------------------------------------------------------------
def test_etf_report_on_a_hand_computed_example():
    # class 0: (1, 0) and (0, 1); class 1: (-1, 0) twice; class 2: (0, -1) twice.
    Z = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [-1.0, 0.0], [0.0, -1.0], [0.0, -1.0]])
    labels = np.array(["a", "a", "b", "b", "c", "c"])
    report = simplex_etf_report(Z, labels)
    assert list(report.classes) == ["a", "b", "c"]
    # class a: mean (.5, .5); each point is at squared distance .5 from it.
    np.testing.assert_allclose(report.intra_var, [0.5, 0.0, 0.0])
    assert report.mean_intra_var == pytest.approx(0.5 / 3)
    np.testing.assert_allclose(report.intra_angle_deg, [np.degrees(np.arccos(0.75)), 0, 0])
    s = 1 / np.sqrt(2)
    expected = np.array([[1, -s, -s], [-s, 1, 0], [-s, 0, 1]])
    np.testing.assert_allclose(report.cosine, expected, atol=1e-12)
    off = np.array([-s, -s, -s, 0, -s, 0])
    assert report.mean_cosine == pytest.approx(off.mean())
    assert report.std_cosine == pytest.approx(off.std())
    assert report.etf_cosine == pytest.approx(-0.5)


def test_etf_report_recognises_a_simplex_etf():
    C = 5
    U = simplex(C)
    labels = np.repeat(np.arange(C), 3)
    report = simplex_etf_report(U[labels], labels)
    assert report.mean_cosine == pytest.approx(-1 / (C - 1))
    assert report.std_cosine == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(report.intra_var, 0.0, atol=1e-12)


def test_etf_report_input_errors():
    with pytest.raises(ValueError, match="at least 2 classes"):
        simplex_etf_report(np.ones((3, 2)), [0, 0, 0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        simplex_etf_report(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="zero vector"):
        simplex_etf_report(np.array([[1.0, 0], [-1.0, 0], [0, 1.0]]), [0, 0, 1])


# --- nearest_correlation ---------------------------------------------------------------
def test_nearest_correlation_projects_onto_correlation_matrices():
    rng = np.random.default_rng(0)
    A = rng.uniform(-1.5, 1.5, size=(5, 5))
    A = (A + A.T) / 2
    Y = nearest_correlation(A)
    np.testing.assert_allclose(np.diag(Y), 1.0)
    assert np.linalg.eigvalsh(Y).min() > -1e-8
    # The projection is the nearest: no random correlation matrix is closer.
    for _ in range(50):
        V = rng.normal(size=(5, 5))
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        assert np.linalg.norm(A - Y) <= np.linalg.norm(A - V @ V.T) + 1e-9
    # A correlation matrix is its own projection.
    np.testing.assert_allclose(nearest_correlation(Y), Y, atol=1e-7)


# --- nce_optimal_gram ------------------------------------------------------------------
@pytest.mark.parametrize("C", [3, 4])
@pytest.mark.parametrize("k", [1, 8])
def test_uniform_classes_give_the_simplex_etf(C, k):
    gram, U = nce_optimal_gram(np.full(C, 1 / C), k, n_steps=400, batch_size=1000, random_state=0)
    off = gram[~np.eye(C, dtype=bool)]
    np.testing.assert_allclose(off, -1 / (C - 1), atol=2e-3)
    np.testing.assert_allclose(U @ U.T, gram, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0)


def test_uniform_classes_hinge_gives_the_simplex_etf():
    # With beta < (C-1)/C the ETF is the unique zero of no hinge term: the unique optimum.
    gram, _ = nce_optimal_gram(
        np.full(3, 1 / 3), 2, loss="hinge", beta=0.5, n_steps=400, batch_size=1000, random_state=0
    )
    np.testing.assert_allclose(gram[~np.eye(3, dtype=bool)], -0.5, atol=5e-3)


def exact_nce_loss(Z: torch.Tensor, probs: np.ndarray, k: int, beta: float = 1.0):
    """Eq. (3) by enumerating every (c, c_1..c_k) in C^{k+1}."""
    combos = np.array(list(itertools.product(range(len(probs)), repeat=k + 1)))
    weights = torch.as_tensor(np.prod(probs[combos], axis=1), dtype=Z.dtype)
    v = 1.0 - Z[combos[:, :1], combos[:, 1:]]  # (C^{k+1}, k)
    return (weights * torch.log1p(torch.exp(-beta * v).sum(dim=1))).sum()


def test_gram_minimises_the_exact_expectation_for_a_skewed_prior():
    probs = np.array([0.6, 0.3, 0.1])
    k = 2
    # Reference: projected gradient descent on the exact, enumerated Eq. (3).
    Z = np.eye(3)
    for _ in range(300):
        Zt = torch.tensor(Z, requires_grad=True)
        exact_nce_loss(Zt, probs, k).backward()
        grad = Zt.grad.numpy()
        grad = (grad + grad.T) / 2
        np.fill_diagonal(grad, 0)
        Z = nearest_correlation(Z - 2.0 * grad)
    reference = float(exact_nce_loss(torch.tensor(Z), probs, k))
    gram, _ = nce_optimal_gram(probs, k, n_steps=600, batch_size=1000, random_state=0)
    found = float(exact_nce_loss(torch.tensor(gram), probs, k))
    assert found == pytest.approx(reference, abs=2e-4)
    np.testing.assert_allclose(gram, Z, atol=2e-2)
    # Not the ETF: the skewed prior moves the optimum away from -1/2.
    assert np.abs(gram[~np.eye(3, dtype=bool)] + 0.5).max() > 0.05


def test_gram_is_reproducible_and_checks_its_input():
    a = nce_optimal_gram([0.5, 0.5], 1, n_steps=20, batch_size=50, random_state=3)[0]
    b = nce_optimal_gram([0.5, 0.5], 1, n_steps=20, batch_size=50, random_state=3)[0]
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="sum to 1"):
        nce_optimal_gram([0.5, 0.6], 1)
    with pytest.raises(ValueError, match="at least 2 classes"):
        nce_optimal_gram([1.0], 1)
    with pytest.raises(ValueError, match="n_negatives"):
        nce_optimal_gram([0.5, 0.5], 0)


# --- supervised_loss -------------------------------------------------------------------
@pytest.mark.parametrize("C", [3, 5])
def test_supervised_loss_of_the_simplex_etf(C):
    # By symmetry w_c = u_c: every margin is 1 + 1/(C-1) = C/(C-1).
    U = simplex(C)
    probs = np.full(C, 1 / C)
    margin = C / (C - 1)
    logistic, W = supervised_loss(U, probs, return_weights=True)
    assert logistic == pytest.approx(np.log1p((C - 1) * np.exp(-margin)), abs=1e-6)
    np.testing.assert_allclose(W, U, atol=1e-3)
    assert supervised_loss(U, probs, loss="hinge", beta=0.5) == pytest.approx(
        1 - 0.5 * margin, abs=1e-6
    )
    assert supervised_loss(U, probs, beta=2.0) == pytest.approx(
        np.log1p((C - 1) * np.exp(-2 * margin)), abs=1e-6
    )


def test_supervised_loss_matches_projected_gradient_on_a_random_representation():
    rng = np.random.default_rng(1)
    U = rng.normal(size=(4, 3))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    probs = rng.dirichlet(np.ones(4))
    # Reference: projected gradient on the product of unit balls, in float64 torch.
    Ut, pt = torch.tensor(U), torch.tensor(probs)
    W = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    for _ in range(2000):
        logits = Ut @ W.T
        loss = -(pt * torch.diagonal(torch.log_softmax(logits, dim=1))).sum()
        (grad,) = torch.autograd.grad(loss, W)
        with torch.no_grad():
            W -= 1.0 * grad
            W /= torch.clamp(W.norm(dim=1, keepdim=True), min=1.0)
    assert supervised_loss(U, probs) == pytest.approx(loss.item(), abs=1e-6)


def test_supervised_loss_hinge_of_a_collapsed_representation_is_one():
    # All classes on one vector: every margin is 0 whatever the weights.
    U = np.tile([[1.0, 0.0]], (3, 1))
    assert supervised_loss(U, np.full(3, 1 / 3), loss="hinge") == pytest.approx(1.0, abs=1e-6)
    assert supervised_loss(U, np.full(3, 1 / 3)) == pytest.approx(np.log(3), abs=1e-6)


def test_supervised_loss_input_errors():
    with pytest.raises(ValueError, match="one embedding per class"):
        supervised_loss(np.eye(3), [0.5, 0.5])
    with pytest.raises(ValueError, match="non-negative"):
        supervised_loss(np.eye(2), [1.5, -0.5])
