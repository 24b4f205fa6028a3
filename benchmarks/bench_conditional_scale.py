"""Conditional NCE at scale: epoch time and test log-likelihood vs the number of classes.

A planted log-linear model with |Y| ∈ {10^3, 10^4, 10^5} labels: x ~ N(0, I_d) with
d = 32, s(x, y) = xᵀθ_y + b_y with θ_y ~ N(0, I/d)·2 and Zipf label biases
b_y = -log(rank), y drawn from softmax(s) (Gumbel-max, in chunks). The same
``ConditionalNCEClassifier`` log-linear model (``hidden_layer_sizes=()``) is fitted by
ranking NCE (K = 64 negatives from the label marginal) and by the full softmax
(``objective="mle"``) on the same data, with the same batch size, learning rate and
number of epochs. Reported: seconds per epoch (skorch's per-epoch ``dur``, mean over
epochs), the speed-up, and the mean test log-likelihood (exact, normalised over all
classes with chunked ``predict_log_proba``) over test examples whose label was seen
in training; the planted model's own test log-likelihood is the ceiling.

Run::

    .venv/bin/python benchmarks/bench_conditional_scale.py [--classes 1000 10000 100000]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, peak_rss_mib, report

from sknce import ConditionalNCEClassifier


def planted(n: int, n_classes: int, d: int, seed: int):
    """Inputs, labels and the true log-likelihood of each label."""
    gen = torch.Generator().manual_seed(seed)
    theta = torch.randn(n_classes, d, generator=gen) * (2.0 / d**0.5)
    bias = -torch.log(torch.arange(1, n_classes + 1, dtype=torch.float32))
    X = torch.randn(n, d, generator=gen)
    y = torch.empty(n, dtype=torch.int64)
    true_ll = torch.empty(n)
    for start in range(0, n, 256):
        rows = slice(start, min(start + 256, n))
        logits = X[rows] @ theta.T + bias
        u = torch.rand(logits.shape, generator=gen).clamp_min(1e-20)
        y[rows] = torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
        log_p = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        true_ll[rows] = log_p.gather(1, y[rows].unsqueeze(1)).squeeze(1)
    return X.numpy(), y.numpy(), true_ll.numpy()


def test_log_likelihood(est, X, y) -> tuple[float, float]:
    """Mean log p̂(y|x) over examples whose label is in classes_, and their fraction."""
    seen = np.isin(y, est.classes_)
    X, y = X[seen], y[seen]
    col = np.searchsorted(est.classes_, y)
    total = 0.0
    for start in range(0, len(y), 64):
        rows = slice(start, start + 64)
        log_p = est.predict_log_proba(X[rows])
        total += log_p[np.arange(log_p.shape[0]), col[rows]].sum()
    return total / len(y), float(seen.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--n-train", type=int, default=50_000)
    parser.add_argument("--n-test", type=int, default=5_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    d = 32
    rows = []
    for n_classes in args.classes:
        X, y, true_ll = planted(args.n_train + args.n_test, n_classes, d, seed=0)
        X_tr, y_tr, X_te, y_te = (
            X[: args.n_train],
            y[: args.n_train],
            X[args.n_train :],
            y[args.n_train :],
        )
        result = {}
        for name, params in [
            ("NCE", dict(objective="ranking", n_negatives=64)),
            ("MLE", dict(objective="mle")),
        ]:
            est = ConditionalNCEClassifier(
                hidden_layer_sizes=(),
                max_epochs=args.epochs,
                batch_size=args.batch_size,
                lr=args.lr,
                random_state=0,
                **params,
            )
            with Timer() as t:
                est.fit(X_tr, y_tr)
            ll, seen = test_log_likelihood(est, X_te, y_te)
            result[name] = {
                "epoch_s": float(np.mean([h["dur"] for h in est.history_])),
                "fit_s": t.seconds,
                "ll": ll,
            }
        row = {
            "classes": n_classes,
            "classes seen": int(len(np.unique(y_tr))),
            "NCE s/epoch": result["NCE"]["epoch_s"],
            "MLE s/epoch": result["MLE"]["epoch_s"],
            "speed-up": result["MLE"]["epoch_s"] / result["NCE"]["epoch_s"],
            "NCE test LL": result["NCE"]["ll"],
            "MLE test LL": result["MLE"]["ll"],
            "NCE/MLE NLL": result["NCE"]["ll"] / result["MLE"]["ll"],
            "true-model LL": float(true_ll[args.n_train :][np.isin(y_te, y_tr)].mean()),
            "test labels seen": seen,
            "peak RSS MiB": peak_rss_mib(),
        }
        rows.append(row)
        print(row, flush=True)
    report(
        "conditional_scale",
        rows,
        title=(
            f"Ranking NCE (K=64) vs full softmax: {args.n_train} training examples, d={d}, "
            f"{args.epochs} epochs, batch {args.batch_size}, {args.threads} torch thread(s)"
        ),
        params=vars(args),
    )


if __name__ == "__main__":
    main()
