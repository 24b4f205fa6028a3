"""Ma & Collins (2018), Section 4.3: binary NCE is inconsistent when Z(x) varies with x.

Two inputs x1, x2 (equally likely), two labels y1, y2, and the *tied* two-parameter
table of the paper, s(x1, y1) = log θ1 and s(x1, y2) = s(x2, y1) = s(x2, y2) = log θ2,
with truth θ* = (1, 3), so p(y1 | x1) / p(y2 | x1) = 1/3 and Z(x1) = 4 ≠ Z(x2) = 6.
Noise is uniform over the labels. The table (log θ1, log θ2, and γ for the binary
objective) is fitted by maximising the empirical objectives of Figure 1, built with
``sknce.losses.ranking_nce`` / ``binary_nce``, on n examples with K negatives each
(full-batch Adam). The paper shows that the binary optimum has θ1/θ2 = 3/7 for every K,
the ranking optimum the true 1/3.

For contrast, ``ConditionalNCEClassifier(objective="binary")`` on the same data with
one-hot inputs and its log-linear model (a *free* 2×2 table, which can absorb log Z(x))
recovers 1/3: the failure is the tied family's, which cannot self-normalise.

Run::

    .venv/bin/python benchmarks/bench_conditional_counterexample.py [--n 200000]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, report

from sknce import ConditionalNCEClassifier
from sknce.losses import binary_nce, ranking_nce
from sknce.noise import UniformNoise

TRUE_JOINT = np.array([[1 / 8, 3 / 8], [1 / 4, 1 / 4]])  # p(x, y), rows x1, x2


def sample(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    flat = rng.choice(4, size=n, p=TRUE_JOINT.ravel())
    return flat // 2, flat % 2


def tied_scores(log_theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """s(x, y) of the paper's table: log θ1 at (x1, y1), log θ2 elsewhere."""
    return torch.where((x == 0) & (y == 0), log_theta[0], log_theta[1])


def fit_tied(objective: str, x, y, k: int, seed: int, steps: int = 1500) -> float:
    """θ1/θ2 maximising the empirical objective with negatives drawn once (Figure 1)."""
    gen = torch.Generator().manual_seed(seed)
    noise = UniformNoise(2)
    x_t, y_t = torch.as_tensor(x), torch.as_tensor(y)
    neg = noise.sample((len(y), k), generator=gen)
    pos_ln, neg_ln = noise.log_prob(y_t), noise.log_prob(neg)
    log_theta = torch.zeros(2, requires_grad=True)
    gamma = torch.zeros((), requires_grad=True)
    opt = torch.optim.Adam([log_theta, gamma], lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        pos = tied_scores(log_theta, x_t, y_t)
        neg_s = tied_scores(log_theta, x_t.unsqueeze(1).expand_as(neg), neg)
        if objective == "ranking":
            loss = ranking_nce(pos, neg_s, pos_ln, neg_ln)
        else:
            loss = binary_nce(pos, neg_s, pos_ln, neg_ln, gamma=gamma)
        loss.backward()
        opt.step()
    return float(torch.exp(log_theta[0] - log_theta[1]).detach())


def estimator_ratio(objective: str, x, y, k: int) -> float:
    """p̂(y1|x1)/p̂(y2|x1) of ConditionalNCEClassifier with one-hot x (free table)."""
    X = np.eye(2)[x]
    est = ConditionalNCEClassifier(
        objective=objective,
        n_negatives=k,
        noise="uniform",
        hidden_layer_sizes=(),
        max_epochs=3,
        batch_size=512,
        lr=0.02,
        random_state=0,
        early_stopping=False,  # the paper's protocol: a fixed number of steps
        init="random",
    ).fit(X, y)
    p = est.predict_proba(np.eye(2)[:1])[0]
    return float(p[0] / p[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    torch.set_num_threads(1)
    x, y = sample(args.n, np.random.default_rng(0))
    rows = []
    for k in args.ks:
        for objective in ("binary", "ranking"):
            with Timer() as t:
                tied = fit_tied(objective, x, y, k, seed=k)
            free = estimator_ratio(objective, x, y, k)
            rows.append(
                {
                    "objective": objective,
                    "K": k,
                    "tied θ1/θ2": tied,
                    "paper's limit": 3 / 7 if objective == "binary" else 1 / 3,
                    "free table (estimator)": free,
                    "true": 1 / 3,
                    "tied fit s": t.seconds,
                }
            )
    report(
        "conditional_counterexample",
        rows,
        title=f"Ma & Collins §4.3 counterexample, n={args.n}: fitted p(y1|x1)/p(y2|x1)",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
