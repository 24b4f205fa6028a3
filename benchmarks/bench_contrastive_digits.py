"""Latent-class NCE on sklearn's digits vs k and C (Awasthi et al., Section 5, Figures 2-3).

The paper's CIFAR protocol on data available offline: positives are two images of
the same class (no augmentation), negatives are images of the marginal, the
encoder is trained with the logistic k-negative loss, and the representation is
measured by

* the test accuracy of a linear probe (``LogisticRegression``) trained on the
  training images' representations;
* the mean (and std) cosine similarity of the class means of the test
  representations, against the simplex-ETF value -1/(C-1);
* the mean Intra-Var (Eq. 4) of the test representations.

The reference is the same linear probe on the raw pixels (``--parts baseline``).
Part 1 varies k in {1, 4, 16, 64, 256} over all 10 classes (several seeds);
part 2 subsamples the classes to C in {2, ..., 10} (the first C digits) at fixed
k (Figure 3).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_contrastive_digits.py
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import RESULTS, Timer, report
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from sknce import LatentClassNCEEmbedder
from sknce.contrastive import simplex_etf_report


def run(X, y, k: int, seed: int, args) -> dict:
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    emb = LatentClassNCEEmbedder(
        n_components=args.n_components,
        n_negatives=k,
        hidden_layer_sizes=tuple(args.hidden),
        max_epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        random_state=seed,
    )
    with Timer() as fit:
        emb.fit(X_train, y_train)
    Z_train, Z_test = emb.transform(X_train), emb.transform(X_test)
    probe = LogisticRegression(max_iter=2000).fit(Z_train, y_train)
    etf = simplex_etf_report(Z_test, y_test)
    return {
        "C": len(np.unique(y)),
        "k": k,
        "seed": seed,
        "probe acc": float(probe.score(Z_test, y_test)),
        "mean CS": etf.mean_cosine,
        "std CS": etf.std_cosine,
        "-1/(C-1)": etf.etf_cosine,
        "mean Intra-Var": etf.mean_intra_var,
        "final loss": emb.history_[-1]["train_loss"],
        "fit s": fit.seconds,
    }


def mean_rows(rows: list[dict], key: str) -> list[dict]:
    """Average the numeric columns over seeds, one row per value of ``key``."""
    out = []
    for value in sorted({r[key] for r in rows}):
        group = [r for r in rows if r[key] == value]
        row = {key: value, "seeds": len(group)}
        for col in ("probe acc", "mean CS", "-1/(C-1)", "mean Intra-Var", "fit s"):
            vals = np.array([r[col] for r in group])
            row[col] = float(vals.mean())
            if col in ("probe acc", "mean CS"):
                row[f"{col} sd"] = float(vals.std())
        out.append(row)
    return out


def figure(by_k: list[dict], by_c: list[dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    ks = [r["k"] for r in by_k]
    axes[0].errorbar(
        ks, [r["probe acc"] for r in by_k], [r["probe acc sd"] for r in by_k], marker="o"
    )
    axes[0].set_xscale("log", base=2)
    axes[0].set(xlabel="k (negatives)", ylabel="linear-probe test accuracy", title="C = 10")
    Cs = [r["C"] for r in by_c]
    axes[1].errorbar(
        Cs,
        [r["mean CS"] for r in by_c],
        [r["mean CS sd"] for r in by_c],
        marker="o",
        label="mean CS of class means",
    )
    axes[1].plot(Cs, [-1 / (C - 1) for C in Cs], "k--", label="-1/(C-1)")
    axes[1].set(xlabel="classes C", ylabel="cosine", title="inter-class cosine")
    axes[1].legend(fontsize=8)
    axes[2].plot(Cs, [r["mean Intra-Var"] for r in by_c], marker="o")
    axes[2].set(xlabel="classes C", ylabel="mean Intra-Var (Eq. 4)", title="intra-class variance")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"saved {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--k-fixed", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--n-components", type=int, default=64)
    parser.add_argument("--hidden", type=int, nargs="*", default=[256, 256])
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["k", "classes", "baseline"],
        default=["k", "classes", "baseline"],
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    digits = load_digits()
    X, y = digits.data / 16.0, digits.target
    params = {k: v for k, v in vars(args).items()}

    if "baseline" in args.parts:
        baseline(X, y, args.seeds)
    if "k" in args.parts:
        by_k = part_k(X, y, args, params)
        if "classes" in args.parts:
            by_c = part_classes(X, y, args, params)
            figure(by_k, by_c, RESULTS / "contrastive_digits.png")


def baseline(X, y, seeds: list[int]) -> None:
    """The linear probe on raw pixels, per number of classes, on the same splits."""
    rows = []
    for C in range(2, 11):
        keep = y < C
        accs = []
        for seed in seeds:
            X_train, X_test, y_train, y_test = train_test_split(
                X[keep], y[keep], test_size=0.3, stratify=y[keep], random_state=seed
            )
            probe = LogisticRegression(max_iter=2000).fit(X_train, y_train)
            accs.append(probe.score(X_test, y_test))
        rows.append(
            {
                "C": C,
                "seeds": len(seeds),
                "probe acc (raw pixels)": float(np.mean(accs)),
                "sd": float(np.std(accs)),
            }
        )
    report("contrastive_digits_baseline", rows, title="Digits: linear probe on raw pixels")


def part_k(X, y, args, params: dict) -> list[dict]:
    rows_k = []
    for k in args.ks:
        for seed in args.seeds:
            rows_k.append(run(X, y, k, seed, args))
            print(rows_k[-1], flush=True)
    report("contrastive_digits_k", rows_k, title="Digits, 10 classes: per run", params=params)
    by_k = mean_rows(rows_k, "k")
    report(
        "contrastive_digits_k_mean",
        by_k,
        title="Digits, 10 classes: mean over seeds vs k",
        params=params,
    )
    return by_k


def part_classes(X, y, args, params: dict) -> list[dict]:
    rows_c = []
    for C in range(2, 11):
        keep = y < C
        for seed in args.seeds:
            rows_c.append(run(X[keep], y[keep], args.k_fixed, seed, args))
            print(rows_c[-1], flush=True)
    by_c = mean_rows(rows_c, "C")
    report(
        "contrastive_digits_classes",
        by_c,
        title=f"Digits subsampled to C classes, k = {args.k_fixed}: mean over seeds",
        params=params,
    )
    return by_c


if __name__ == "__main__":
    main()
