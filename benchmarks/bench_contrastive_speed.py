"""Training speed of LatentClassNCEEmbedder vs k and batch size, in-batch vs drawn negatives.

Training examples (anchors) per second over one epoch on ``make_latent_classes``
data (10 classes, 64 features), encoder (256, 256) -> 128, logistic loss. With
``negatives="batch"`` the k negatives of an anchor are gathered from the batch's
other encodings (O(B k d), no extra forward pass); with ``negatives="marginal"``
they are drawn from all points and encoded separately (B k extra rows per step).
A warm-up fit runs first (torch's one-off import costs). One torch thread unless
``--threads`` says otherwise; ``--device cuda`` when a GPU is present.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_contrastive_speed.py
"""

from __future__ import annotations

import argparse

import torch
from _common import Timer, report

from sknce import LatentClassNCEEmbedder
from sknce.datasets import make_latent_classes


def fit_seconds(data, *, k: int, batch_size: int, negatives: str, device: str) -> float:
    emb = LatentClassNCEEmbedder(
        n_negatives=k,
        batch_size=batch_size,
        negatives=negatives,
        max_epochs=1,
        device=device,
        random_state=0,
    )
    with Timer() as t:
        emb.fit(data.X, data.y)
    return t.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=8192)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--marginal-ks", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = make_latent_classes(args.n_samples, n_classes=10, n_features=64, random_state=0)
    fit_seconds(data, k=4, batch_size=256, negatives="batch", device=args.device)  # warm-up

    rows = []
    # In-batch negatives need k <= 2B - 2 other encodings (else the sampler falls back to
    # drawing them): such configurations are left out of the "batch" rows.
    configs = [("batch", k, b) for b in args.batch_sizes for k in args.ks if k <= 2 * b - 2]
    configs += [("marginal", k, 256) for k in args.marginal_ks]
    for negatives, k, batch_size in configs:
        seconds = fit_seconds(
            data, k=k, batch_size=batch_size, negatives=negatives, device=args.device
        )
        rows.append(
            {
                "negatives": negatives,
                "batch": batch_size,
                "k": k,
                "epoch s": seconds,
                "examples/s": args.n_samples / seconds,
            }
        )
        print(rows[-1], flush=True)
    report(
        f"contrastive_speed_{args.device.split(':')[0]}",
        rows,
        title=f"LatentClassNCEEmbedder training speed ({args.n_samples} anchors, 1 epoch)",
        params=vars(args),
        device=args.device,
    )


if __name__ == "__main__":
    main()
