"""ConditionalNCERegressor vs sklearn on a bimodal, heteroscedastic 1-D target.

Data: x ~ U(0, 1); y = ±(1 + x) (equal odds) + (0.05 + 0.25 x) ε, ε ~ N(0, 1): two
modes whose gap and width grow with x. Each method is scored on held-out data by the
mean negative log-likelihood (NLL, nats per example, lower is better) and by the
empirical coverage of its central 90% interval (target 0.90).

* ``ConditionalNCERegressor()`` at its defaults (a ridge Student-t base refined by
  the energy, early stopping on the held-out likelihood, sizes "auto"), and with the
  paper's settings (no base, no early stopping, hidden (64, 64), 60 epochs, lr 3e-3,
  batch 128): ``score_samples`` and ``predict_interval(coverage=0.9)``.
* ``MLPRegressor`` + Gaussian residual: the MLP's prediction as the mean and the
  standard deviation of its training residuals as σ; interval mean ± 1.645 σ.
* ``GradientBoostingRegressor(loss="quantile")``: one model per quantile level
  0.05, 0.15, ..., 0.95; interval [q0.05, q0.95]. Its density, for the NLL, is
  piecewise constant between consecutive (sorted) predicted quantiles (mass 0.1
  each) with exponential tails of mass 0.05 beyond q0.05 and q0.95, of scale equal
  to the width of the adjacent bin.

Run::

    flock /tmp/sknce-bench.lock nice -n 5 .venv/bin/python \
        benchmarks/bench_conditional_regressor.py [--n-train 4000]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, report
from scipy.stats import norm
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.neural_network import MLPRegressor

from sknce import ConditionalNCERegressor

LEVELS = np.round(np.arange(0.05, 1.0, 0.1), 2)  # 0.05, 0.15, ..., 0.95


def make_data(n: int, rng: np.random.Generator):
    X = rng.uniform(0, 1, size=(n, 1))
    sign = rng.choice([-1.0, 1.0], size=n)
    y = sign * (1 + X[:, 0]) + (0.05 + 0.25 * X[:, 0]) * rng.normal(size=n)
    return X, y


def coverage(bounds: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((bounds[:, 0] <= y) & (y <= bounds[:, 1])))


def quantile_nll(q: np.ndarray, y: np.ndarray) -> float:
    """NLL of the piecewise density defined by sorted quantiles q (n, len(LEVELS))."""
    q = np.sort(q, axis=1)
    q = q + 1e-6 * np.arange(q.shape[1])  # strictly increasing
    nll = np.empty(len(y))
    for i, (qi, yi) in enumerate(zip(q, y)):
        if yi < qi[0]:
            scale = qi[1] - qi[0]
            nll[i] = -(np.log(0.05 / scale) - (qi[0] - yi) / scale)
        elif yi > qi[-1]:
            scale = qi[-1] - qi[-2]
            nll[i] = -(np.log(0.05 / scale) - (yi - qi[-1]) / scale)
        else:
            j = min(np.searchsorted(qi, yi, side="right") - 1, len(qi) - 2)
            nll[i] = -np.log(0.1 / (qi[j + 1] - qi[j]))
    return float(nll.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=60, help="of the paper-settings fit")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X, y = make_data(args.n_train, rng)
    X_te, y_te = make_data(args.n_test, rng)
    rows = []
    paper = dict(
        base=None,
        early_stopping=False,
        hidden_layer_sizes=(64, 64),
        embedding_dim=32,
        max_epochs=args.epochs,
        batch_size=128,
        lr=3e-3,
    )
    for name, params in [("defaults", {}), (f"paper, {args.epochs} epochs", paper)]:
        nce = ConditionalNCERegressor(random_state=0, **params)
        with Timer() as t:
            nce.fit(X, y)
        rows.append(
            {
                "method": f"ConditionalNCERegressor ({name})",
                "test NLL": float(-nce.score_samples(X_te, y_te).mean()),
                "90% coverage": coverage(nce.predict_interval(X_te, coverage=0.9), y_te),
                "fit s": t.seconds,
                "epochs": nce.n_iter_,
            }
        )

    mlp = MLPRegressor(hidden_layer_sizes=(64, 64), max_iter=500, random_state=0)
    with Timer() as t:
        mlp.fit(X, y)
    sigma = float(np.std(y - mlp.predict(X)))
    mean = mlp.predict(X_te)
    rows.append(
        {
            "method": "MLPRegressor + Gaussian residual",
            "test NLL": float(-norm.logpdf(y_te, mean, sigma).mean()),
            "90% coverage": coverage(np.c_[mean - 1.645 * sigma, mean + 1.645 * sigma], y_te),
            "fit s": t.seconds,
        }
    )

    with Timer() as t:
        models = [
            GradientBoostingRegressor(loss="quantile", alpha=a, random_state=0).fit(X, y)
            for a in LEVELS
        ]
    q = np.column_stack([m.predict(X_te) for m in models])
    rows.append(
        {
            "method": 'GradientBoostingRegressor(loss="quantile"), 10 levels',
            "test NLL": quantile_nll(q, y_te),
            "90% coverage": coverage(np.sort(q, axis=1)[:, [0, -1]], y_te),
            "fit s": t.seconds,
        }
    )
    report(
        "conditional_regressor",
        rows,
        title=(
            f"Bimodal heteroscedastic 1-D target, {args.n_train} train / {args.n_test} test: "
            "NLL (lower is better) and 90% interval coverage"
        ),
        params=vars(args),
    )


if __name__ == "__main__":
    main()
