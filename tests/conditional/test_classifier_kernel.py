"""The compiled step of ConditionalNCEClassifier on sparse bags, against autograd."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sknce._data import csr_to_tensor
from sknce.conditional._kernels import sgd_bag_ranking
from sknce.losses import ranking_nce
from sknce.nn import BagEncoder, LabelScorer

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


def _autograd_step(scorer, X, labels, negatives, log_noise, lr, remove_hits):
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
        loss.backward()
        with torch.no_grad():
            for p in scorer.parameters():
                p -= lr * p.grad
        total += float(loss.detach())
    return total


def _kernel_step(scorer, X, labels, negatives, log_noise, lr, remove_hits):
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
        0,
        X.shape[0],
        lr,
        remove_hits,
    )


@pytest.mark.parametrize("remove_hits", [False, True])
@pytest.mark.parametrize("rows", [slice(1, 2), slice(0, 6)])
def test_the_kernel_step_is_autograd_sgd_example_by_example(rows, remove_hits):
    """Same loss and same updated parameters (float64) as autograd's per-example SGD.

    Row 1 has accidental hits, row 2 a repeated negative, row 0 an empty bag; the
    examples of a batch share label and feature rows.
    """
    scorer, X, labels, negatives, log_noise = _problem(6)
    X, labels, negatives = X[rows], labels[rows], negatives[rows]
    reference = {k: v.clone() for k, v in scorer.state_dict().items()}
    lr = 0.3
    expected_loss = _autograd_step(scorer, X, labels, negatives, log_noise, lr, remove_hits)
    expected = {k: v.clone() for k, v in scorer.state_dict().items()}
    scorer.load_state_dict(reference)
    loss = _kernel_step(scorer, X, labels, negatives, log_noise, lr, remove_hits)
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
