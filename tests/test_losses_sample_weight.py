"""Per-example weights in every objective of sknce.losses, against brute-force formulas."""

import numpy as np
import pytest
import torch

from sknce.losses import (
    binary_nce,
    k_negative,
    negative_sampling,
    pair_logistic,
    ranking_nce,
    self_normalization_penalty,
)


def _t(x):
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _np_ranking(pos, neg, lp_pos, lp_neg):
    sbar = np.concatenate([(pos - lp_pos)[:, None], neg - lp_neg], axis=1)
    return np.log(np.exp(sbar).sum(axis=1)) - sbar[:, 0]


def _np_binary(pos, neg, lp_pos, lp_neg, gamma):
    k = neg.shape[1]

    def g(s):
        return np.exp(s - gamma) / (np.exp(s - gamma) + k)

    return -np.log(g(pos - lp_pos)) - np.log(1 - g(neg - lp_neg)).sum(axis=1)


def _np_k_negative(a, p, n, beta):
    v = np.einsum("bd,bd->b", a, p)[:, None] - np.einsum("bd,bkd->bk", a, n)
    return np.log(1 + np.exp(-beta * v).sum(axis=1))


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    b, k = 6, 4
    return {
        "pos": rng.normal(size=b),
        "neg": rng.normal(size=(b, k)),
        "lp_pos": np.log(rng.uniform(0.01, 1, size=b)),
        "lp_neg": np.log(rng.uniform(0.01, 1, size=(b, k))),
        "w": np.array([0.0, 0.5, 1.0, 2.0, 3.5, 0.25]),
    }


def _cases(d):
    """(weighted loss function, per-example brute force) for each objective."""
    pos, neg, lpp, lpn = d["pos"], d["neg"], d["lp_pos"], d["lp_neg"]
    rng = np.random.default_rng(1)
    a, p, n = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 4, 3))
    labels = rng.integers(0, 2, size=6)
    return {
        "ranking": (
            lambda **kw: ranking_nce(_t(pos), _t(neg), _t(lpp), _t(lpn), **kw),
            _np_ranking(pos, neg, lpp, lpn),
        ),
        "binary": (
            lambda **kw: binary_nce(_t(pos), _t(neg), _t(lpp), _t(lpn), gamma=0.7, **kw),
            _np_binary(pos, neg, lpp, lpn, 0.7),
        ),
        "negative_sampling": (
            lambda **kw: negative_sampling(_t(pos), _t(neg), **kw),
            np.log1p(np.exp(-pos)) + np.log1p(np.exp(neg)).sum(axis=1),
        ),
        "pair_logistic": (
            lambda **kw: pair_logistic(_t(pos), _t(labels), **kw),
            np.log1p(np.exp(-(2 * labels - 1) * pos)),
        ),
        "k_negative": (
            lambda **kw: k_negative(_t(a), _t(p), _t(n), beta=0.5, **kw),
            _np_k_negative(a, p, n, 0.5),
        ),
        "self_normalization": (
            lambda **kw: self_normalization_penalty(_t(neg), _t(lpn), alpha=0.3, **kw),
            0.3 * np.log(np.exp(neg - lpn).mean(axis=1)) ** 2,
        ),
    }


OBJECTIVES = [
    "ranking",
    "binary",
    "negative_sampling",
    "pair_logistic",
    "k_negative",
    "self_normalization",
]


@pytest.mark.parametrize("name", OBJECTIVES)
def test_sample_weight_multiplies_each_example_loss(data, name):
    loss, brute = _cases(data)[name]
    w = data["w"]
    np.testing.assert_allclose(
        loss(sample_weight=_t(w), reduction="none").numpy(), w * brute, rtol=1e-10
    )
    # The mean divides the weighted sum by the batch size (weights are scaled to mean 1
    # over a training set by the estimators), the sum is the weighted sum.
    assert float(loss(sample_weight=_t(w))) == pytest.approx((w * brute).mean(), rel=1e-10)
    assert float(loss(sample_weight=_t(w), reduction="sum")) == pytest.approx(
        (w * brute).sum(), rel=1e-10
    )
    # Unit weights are no weights; a zero weight takes the example out of the gradient.
    assert float(loss(sample_weight=_t(np.ones(6)))) == pytest.approx(float(loss()), rel=1e-12)


def test_zero_weight_examples_get_no_gradient(data):
    pos = _t(data["pos"]).requires_grad_()
    neg = _t(data["neg"]).requires_grad_()
    ranking_nce(pos, neg, sample_weight=_t(data["w"])).backward()
    assert pos.grad[0] == 0 and torch.all(neg.grad[0] == 0)
    assert torch.all(pos.grad[1:] != 0)


def test_sample_weight_shape_error_names_the_fix(data):
    with pytest.raises(ValueError, match="one weight per example"):
        ranking_nce(_t(data["pos"]), _t(data["neg"]), sample_weight=torch.ones(5))


def test_objective_modules_weight_each_example_through_the_targets(data):
    from sknce._data import Targets
    from sknce.losses import (
        BinaryNCELoss,
        KNegativeLoss,
        NegativeSamplingLoss,
        PairLogisticLoss,
        RankingNCELoss,
        SelfNormalized,
        SoftmaxLoss,
    )

    pos, neg, w = _t(data["pos"]), _t(data["neg"]), _t(data["w"])
    lpp, lpn = _t(data["lp_pos"]), _t(data["lp_neg"])
    rng = np.random.default_rng(2)
    a, p, n = (_t(rng.normal(size=s)) for s in [(6, 3), (6, 3), (6, 4, 3)])
    logits, labels = _t(rng.normal(size=(6, 5))), torch.as_tensor(rng.integers(0, 5, size=6))
    scores = {"pos": pos, "neg": neg, "norm": neg, "logits": logits}
    scores.update(anchor=a, positive=p, negatives=n)
    base = {"pos_log_noise": lpp, "neg_log_noise": lpn, "norm_log_noise": lpn, "labels": labels}
    pair_logits = torch.cat([pos, neg.reshape(-1)])
    pair_labels = torch.cat([torch.ones(6), torch.zeros(24)]).double()
    pair_w = torch.cat([w, w.repeat_interleave(4)])
    per_example = {
        RankingNCELoss(): ranking_nce(pos, neg, lpp, lpn, reduction="none") * w,
        BinaryNCELoss(learn_gamma=False): binary_nce(pos, neg, lpp, lpn, reduction="none") * w,
        NegativeSamplingLoss(): negative_sampling(pos, neg, reduction="none") * w,
        PairLogisticLoss(): pair_logistic(pair_logits, pair_labels, reduction="none") * pair_w,
        KNegativeLoss(): k_negative(a, p, n, reduction="none") * w,
        SoftmaxLoss(): torch.nn.functional.cross_entropy(logits, labels, reduction="none") * w,
        SelfNormalized(RankingNCELoss(), alpha=0.5): (
            ranking_nce(pos, neg, lpp, lpn, reduction="none")
            + self_normalization_penalty(neg, lpn, alpha=0.5, reduction="none")
        )
        * w,
    }
    for objective, expected in per_example.items():
        got = objective(scores, Targets(**base, sample_weight=w))
        assert float(got) == pytest.approx(float(expected.mean()), rel=1e-10), objective
        unweighted = objective(scores, Targets(**base))
        ones = objective(scores, Targets(**base, sample_weight=torch.ones(6).double()))
        assert float(ones) == pytest.approx(float(unweighted), rel=1e-12), objective
