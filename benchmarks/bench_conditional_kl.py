"""Ma & Collins (2018), Section 5.1 / Figure 2: KL(p ‖ p̂) of NCE and MLE on a planted model.

``sknce.datasets.make_loglinear_conditional`` draws the paper's setting (d = 4 features,
m_x input points, m_y labels, y ~ softmax(xᵀθ_y)); ``ConditionalNCEClassifier`` with
``hidden_layer_sizes=()`` fits the log-linear model s(x, y) = xᵀθ_y + b_y. The reported
KL is E_x KL(p(·|x) ‖ p̂(·|x)) over the m_x inputs (uniform), p̂ = ``predict_proba``.

``--part a``: KL vs sample size n and K for ranking NCE, with MLE (full softmax) as
the reference (Figure 2, left). ``--part b``: n = 16000, K = 32, m_x = 100..400 for
ranking, MLE, binary NCE with the input bias b(x) and binary without it (Figure 2,
right; the paper reports 0.19, 0.21, 0.24, 0.26 for binary without b_x).

Each setting uses the first data seed (0, 1, ...) whose sample contains all m_y labels
(an unseen label makes every method's KL infinite). Every fit runs the same number
of Adam steps (``--steps``), so small n gets more epochs; learning rate 0.01, batch 256,
unigram noise (the label marginal).

Run::

    .venv/bin/python benchmarks/bench_conditional_kl.py --part a
    .venv/bin/python benchmarks/bench_conditional_kl.py --part b
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
from _common import Timer, report

from sknce import ConditionalNCEClassifier
from sknce.datasets import make_loglinear_conditional


def kl_divergence(est, truth) -> float:
    """E_x KL(p(.|x) || p_hat(.|x)); labels never seen in training get p_hat = 0 (inf)."""
    p_hat = np.zeros(truth.table.shape)
    p_hat[:, est.classes_] = est.predict_proba(truth.support)
    with np.errstate(divide="ignore"):
        terms = truth.table * (np.log(truth.table) - np.log(p_hat))
    return float(np.mean(np.sum(terms, axis=1)))


def planted(n: int, m_x: int, m_y: int = 100):
    """The first data seed (0, 1, ...) whose sample contains every label.

    A label absent from training gets p_hat = 0 and an infinite KL for every method.
    """
    for seed in range(100):
        X, y, truth = make_loglinear_conditional(n, m_x=m_x, m_y=m_y, random_state=seed)
        if len(np.unique(y)) == m_y:
            return X, y, truth, seed
    raise RuntimeError("no seed below 100 gives a sample with every label")


def fit_kl(X, y, truth, steps: int, batch_size: int, **params) -> tuple[float, float]:
    epochs = max(1, math.ceil(steps * batch_size / X.shape[0]))
    est = ConditionalNCEClassifier(
        hidden_layer_sizes=(),
        max_epochs=epochs,
        batch_size=batch_size,
        lr=0.01,
        random_state=0,
        early_stopping=False,  # the paper's protocol: a fixed number of steps
        init="random",
        **params,
    )
    with Timer() as t:
        est.fit(X, y)
    return kl_divergence(est, truth), t.seconds


def part_a(args) -> None:
    rows = []
    for n in args.ns:
        X, y, truth, seed = planted(n, m_x=200)
        row = {"n": n, "data seed": seed}
        seconds = 0.0
        for k in args.ks:
            row[f"ranking K={k}"], s = fit_kl(X, y, truth, args.steps, 256, n_negatives=k)
            seconds += s
        row["MLE"], s = fit_kl(X, y, truth, args.steps, 256, objective="mle")
        row["fit seconds (all)"] = seconds + s
        rows.append(row)
        print(row, flush=True)
    report(
        "conditional_kl_vs_n",
        rows,
        title="KL(p || p_hat) vs n and K (d=4, m_x=200, m_y=100): ranking NCE vs MLE",
        params=vars(args),
    )


def part_b(args) -> None:
    rows = []
    for m_x in args.m_xs:
        X, y, truth, seed = planted(16_000, m_x=m_x)
        row = {"m_x": m_x, "data seed": seed}
        for name, params in [
            ("ranking", dict(objective="ranking", n_negatives=32)),
            ("MLE", dict(objective="mle")),
            ("binary + b(x)", dict(objective="binary", n_negatives=32, input_bias=True)),
            ("binary, no b(x)", dict(objective="binary", n_negatives=32)),
        ]:
            row[name], _ = fit_kl(X, y, truth, args.steps, 256, **params)
        rows.append(row)
        print(row, flush=True)
    report(
        "conditional_binary_input_bias",
        rows,
        title="KL(p || p_hat) vs m_x (n=16000, d=4, m_y=100, K=32): binary NCE needs b(x)",
        params=vars(args),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["a", "b"], required=True)
    parser.add_argument("--steps", type=int, default=2000, help="Adam steps per fit")
    parser.add_argument("--ns", type=int, nargs="+", default=[2000, 8000, 32000])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--m-xs", type=int, nargs="+", default=[100, 200, 300, 400])
    args = parser.parse_args()
    torch.set_num_threads(1)
    part_a(args) if args.part == "a" else part_b(args)


if __name__ == "__main__":
    main()
