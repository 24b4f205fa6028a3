"""Conditional NCE at scale: epoch time and test log-likelihood vs the number of classes.

A planted log-linear model with |Y| ∈ {10^3, 10^4, 10^5} labels, d = 32: x ~ N(0, I),
s(x, y) = xᵀθ_y + b_y with θ_y ~ N(0, 4 I/d) and Zipf label biases b_y = -log(rank), so
the label marginal is heavy-tailed as in language modelling and extreme classification;
y drawn from softmax(s) (Gumbel-max, in chunks); 50000 training and 5000 test examples.
The same ``ConditionalNCEClassifier`` log-linear model
(``hidden_layer_sizes=()``) over all |Y| labels (``classes=range(|Y|)``, so the softmax
has |Y| columns even where a label is absent from the training sample) is fitted by

* ranking NCE, K = 64 negatives from the (add-one smoothed) label marginal, Adam;
* the same with ``sparse_embeddings=True`` and ``optimizer=sknce.optim.LazyAdam``, whose
  step touches only the rows of the true and sampled labels;
* the full softmax (``objective="mle"``), Adam,

with the same batch size, learning rate and number of epochs. Reported: seconds per
epoch (skorch's per-epoch ``dur``, mean over epochs), speed-ups over MLE, and the mean
test log-likelihood (exact, normalised over all |Y| labels with chunked
``predict_log_proba``); the planted model's own test log-likelihood is the ceiling.

Run::

    .venv/bin/python benchmarks/bench_conditional_scale.py [--classes 1000 10000 100000]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, peak_rss_mib, report

from sknce import ConditionalNCEClassifier
from sknce.optim import LazyAdam


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


def test_log_likelihood(est, X, y) -> float:
    """Mean log p̂(y|x) over the test set (labels are column indices of classes_)."""
    total = 0.0
    for start in range(0, len(y), 64):
        rows = slice(start, start + 64)
        log_p = est.predict_log_proba(X[rows])
        total += log_p[np.arange(log_p.shape[0]), y[rows]].sum()
    return float(total / len(y))


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
        n_train = args.n_train
        X, y, true_ll = planted(n_train + args.n_test, n_classes, d, seed=0)
        X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        result = {}
        for name, params in [
            ("NCE", dict(objective="ranking", n_negatives=64)),
            (
                "NCE sparse",
                dict(
                    objective="ranking",
                    n_negatives=64,
                    sparse_embeddings=True,
                    optimizer=LazyAdam,
                ),
            ),
            ("MLE", dict(objective="mle")),
        ]:
            est = ConditionalNCEClassifier(
                hidden_layer_sizes=(),
                classes=np.arange(n_classes),
                max_epochs=args.epochs,
                batch_size=args.batch_size,
                lr=args.lr,
                random_state=0,
                **params,
            )
            with Timer() as t:
                est.fit(X_tr, y_tr)
            result[name] = {
                "epoch_s": float(np.mean([h["dur"] for h in est.history_])),
                "ll": test_log_likelihood(est, X_te, y_te),
            }
            print(name, n_classes, result[name], f"fit {t.seconds:.1f} s", flush=True)
        mle = result["MLE"]
        row = {
            "classes": n_classes,
            "labels in train": int(len(np.unique(y_tr))),
            "MLE s/epoch": mle["epoch_s"],
            "NCE s/epoch": result["NCE"]["epoch_s"],
            "NCE sparse s/epoch": result["NCE sparse"]["epoch_s"],
            "speed-up": mle["epoch_s"] / result["NCE"]["epoch_s"],
            "speed-up sparse": mle["epoch_s"] / result["NCE sparse"]["epoch_s"],
            "MLE test LL": mle["ll"],
            "NCE test LL": result["NCE"]["ll"],
            "NCE sparse test LL": result["NCE sparse"]["ll"],
            "NCE/MLE NLL": result["NCE"]["ll"] / mle["ll"],
            "NCE sparse/MLE NLL": result["NCE sparse"]["ll"] / mle["ll"],
            "true-model LL": float(true_ll[n_train:].mean()),
            "peak RSS MiB": peak_rss_mib(),
        }
        rows.append(row)
        print(row, flush=True)
    report(
        "conditional_scale",
        rows,
        title=(
            f"Ranking NCE (K=64) vs full softmax, d={d}, "
            f"{args.epochs} epochs, batch {args.batch_size}, {args.threads} torch thread(s)"
        ),
        params=vars(args),
    )


if __name__ == "__main__":
    main()
