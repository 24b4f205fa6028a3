"""Supervised loss of the NCE-optimal representation vs k (Awasthi et al., Section 4, Figure 1).

For C in {3, ..., 9} classes and class priors drawn from Dirichlet(alpha * 1_C),
alpha in {1, 2, 3, 4} (one prior per (C, alpha), seeded), and k negatives in
{1, 2, 4, ..., 128}: the NCE-optimal Gram matrix (``nce_optimal_gram``, logistic
loss, beta = 1, projected SGD with Higham's projection) and the supervised loss
L_sup of its class embeddings (``supervised_loss``, ||w_c|| <= 1). A curve is the
loss over k for one (C, alpha); we count the curves that are strictly decreasing
and those non-increasing within ``--tol`` (the paper: 22 of 28 strictly
decreasing). A second table checks Theorem 3.8: for uniform priors the optimum is
the simplex ETF, off-diagonal entries -1/(C-1).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_contrastive_gram.py
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _common import RESULTS, Timer, report

from sknce.contrastive import nce_optimal_gram, supervised_loss


def figure(rows: list[dict], ks: list[int], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    alphas = sorted({r["alpha"] for r in rows})
    fig, axes = plt.subplots(1, len(alphas), figsize=(4 * len(alphas), 3.4), sharey=False)
    for ax, alpha in zip(np.atleast_1d(axes), alphas):
        for C in sorted({r["C"] for r in rows}):
            curve = [r for r in rows if r["alpha"] == alpha and r["C"] == C]
            losses = np.array([curve[0][f"k={k}"] for k in ks])
            ax.plot(ks, losses - losses[0], marker="o", ms=3, label=f"C={C}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("k (negatives)")
        ax.set_title(f"Dirichlet alpha = {alpha}")
    np.atleast_1d(axes)[0].set_ylabel("L_sup(k) - L_sup(1) of the NCE optimum")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"saved {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--step-size", type=float, default=50.0)
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    # k = 1 gives the noisiest gradients (one negative per tuple): the ETF check, whose
    # target is 1e-3, uses larger mini-batches.
    parser.add_argument("--etf-batch-size", type=int, default=3000)
    parser.add_argument(
        "--parts", nargs="+", choices=["fig1", "etf", "plot"], default=["fig1", "etf"]
    )
    args = parser.parse_args()
    ks = args.ks
    solver = dict(n_steps=args.n_steps, batch_size=args.batch_size, step_size=args.step_size)

    if "fig1" in args.parts:
        figure1(ks, solver, args.tol)
    if "plot" in args.parts:  # redraw the figure from the saved table
        saved = json.loads((RESULTS / "contrastive_gram_fig1.json").read_text())
        figure(saved["rows"], saved["params"]["ks"], RESULTS / "contrastive_gram_fig1.png")
    if "etf" in args.parts:
        etf_check({**solver, "batch_size": args.etf_batch_size})


def figure1(ks: list[int], solver: dict, tol: float) -> None:
    """L_sup of the NCE optimum vs k for every (C, alpha): the table and the plot."""
    rows = []
    with Timer() as total:
        for alpha in (1, 2, 3, 4):
            for C in range(3, 10):
                probs = np.random.default_rng(1000 * alpha + C).dirichlet(np.full(C, alpha))
                row = {"alpha": alpha, "C": C, "min prior": float(probs.min())}
                for k in ks:
                    _, U = nce_optimal_gram(probs, k, random_state=k, **solver)
                    row[f"k={k}"] = supervised_loss(U, probs)
                losses = np.array([row[f"k={k}"] for k in ks])
                steps = np.diff(losses)
                row["strictly decreasing"] = bool(np.all(steps < 0))
                row["non-increasing (tol)"] = bool(np.all(steps <= tol))
                row["largest increase"] = float(steps.max())
                rows.append(row)
                print(f"alpha={alpha} C={C}: {np.round(losses, 4)}", flush=True)
    n_strict = sum(r["strictly decreasing"] for r in rows)
    n_noninc = sum(r["non-increasing (tol)"] for r in rows)
    report(
        "contrastive_gram_fig1",
        rows,
        title=(
            f"Supervised loss of the NCE optimum vs k: {n_strict}/{len(rows)} curves strictly "
            f"decreasing, {n_noninc}/{len(rows)} non-increasing within {tol} "
            f"({total.seconds:.0f} s)"
        ),
        params={**solver, "ks": ks, "tol": tol, "loss": "logistic", "beta": 1.0},
    )
    figure(rows, ks, RESULTS / "contrastive_gram_fig1.png")


def etf_check(solver: dict) -> None:
    """Theorem 3.8: for uniform priors the optimum's off-diagonal entries are -1/(C-1)."""
    etf_rows = []
    for C in range(3, 10):
        for k in (1, 16, 64):
            gram, _ = nce_optimal_gram(np.full(C, 1 / C), k, random_state=0, **solver)
            off = gram[~np.eye(C, dtype=bool)]
            etf_rows.append(
                {
                    "C": C,
                    "k": k,
                    "-1/(C-1)": -1 / (C - 1),
                    "mean off-diagonal": float(off.mean()),
                    "max |off + 1/(C-1)|": float(np.abs(off + 1 / (C - 1)).max()),
                }
            )
    worst = max(r["max |off + 1/(C-1)|"] for r in etf_rows)
    report(
        "contrastive_gram_etf",
        etf_rows,
        title=f"Uniform priors: NCE optimum vs simplex ETF (largest deviation {worst:.2e})",
        params={**solver, "loss": "logistic", "beta": 1.0},
    )


if __name__ == "__main__":
    main()
