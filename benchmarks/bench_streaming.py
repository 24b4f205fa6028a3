"""Streaming fit: DirectNCEEmbedder on up to 1,000,000 documents read from .npz chunks.

A topic corpus (K = 20 topics, V = 5000 words, Poisson(100) lengths; the topics
of ``sknce.datasets.make_topic_corpus``) is generated chunk by chunk and written
to ``.npz`` files in a temporary directory (``save_npz_chunks``); it is never
whole in memory. For each corpus size (the first chunks of the same files), a
fresh process fits ``DirectNCEEmbedder`` (the defaults: ``hidden_layer_sizes=(512,
512)``, ``n_components=100``, ``batch_size=256``) for ``--epochs`` epochs on the
stream (``NpzChunks``), one chunk in memory at a time, and reports documents/s
per epoch and the process's peak RSS. With ``--in-memory N``, the same fit on
the first N documents loaded as one CSR matrix is the reference row.

Run::

    nice flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_streaming.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import Timer, peak_rss_mib, report

#: Rows of the dense (documents x words) probability block drawn at once while generating.
_GEN_ROWS = 800


def generate(directory: Path, n_documents: int, chunk_size: int, args) -> float:
    """Write the corpus as chunk files; return the seconds it took."""
    from sknce.datasets import make_topic_corpus, save_npz_chunks

    topics = make_topic_corpus(
        1, n_topics=args.topics, n_words=args.words, random_state=args.seed
    ).topics
    rng = np.random.default_rng(args.seed)

    def chunks():
        for start in range(0, n_documents, chunk_size):
            n = min(chunk_size, n_documents - start)
            blocks = []
            for lo in range(0, n, _GEN_ROWS):
                m = min(_GEN_ROWS, n - lo)
                probs = rng.dirichlet(np.full(args.topics, 0.1), size=m) @ topics
                probs /= probs.sum(axis=1, keepdims=True)
                lengths = rng.poisson(args.mean_length, size=m)
                counts = rng.multinomial(lengths, probs).astype(np.float32)
                blocks.append(sp.csr_matrix(counts))
            yield sp.vstack(blocks).tocsr()

    with Timer() as t:
        save_npz_chunks(chunks(), directory)
    return t.seconds


def fit_one(directory: Path, n_chunks: int, args, in_memory: bool) -> dict:
    """Fit on the first ``n_chunks`` chunk files (in this process); one result row."""
    import torch

    from sknce import DirectNCEEmbedder
    from sknce.datasets import NpzChunks

    torch.set_num_threads(args.threads)
    files = sorted(directory.glob("chunk-*.npz"))[:n_chunks]
    chunks = NpzChunks(files)
    X = sp.vstack([chunks[i] for i in range(len(chunks))]).tocsr() if in_memory else chunks
    n_documents = X.shape[0] if in_memory else sum(chunks[i].shape[0] for i in range(n_chunks))
    estimator = DirectNCEEmbedder(
        hidden_layer_sizes=tuple(args.hidden),
        max_epochs=args.epochs,
        early_stopping=False,
        random_state=0,
    )
    with Timer() as t:
        estimator.fit(X)
    epoch_seconds = [row["dur"] for row in estimator.history_]
    return {
        "input": "in memory (one CSR)" if in_memory else f"stream of {n_chunks} chunks",
        "documents": n_documents,
        "epochs": estimator.n_iter_,
        "docs/s per epoch": n_documents / float(np.mean(epoch_seconds)),
        "fit s (with first pass)": t.seconds,
        "train loss": float(estimator.history_[-1]["train_loss"]),
        "peak RSS MiB": peak_rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250_000, 500_000, 1_000_000])
    parser.add_argument("--chunk-size", type=int, default=25_000)
    parser.add_argument("--in-memory", type=int, nargs="*", default=[250_000])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--hidden", type=int, nargs="*", default=[512, 512])
    parser.add_argument("--words", type=int, default=5000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--mean-length", type=float, default=100.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="chunk directory (kept)")
    parser.add_argument("--child", nargs=2, metavar=("N_CHUNKS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # one measured fit, in a fresh process so that its peak RSS is its own
        row = fit_one(args.dir, int(args.child[0]), args, in_memory=args.child[1] == "memory")
        print(json.dumps(row))
        return

    for size in args.sizes + args.in_memory:
        if size % args.chunk_size:
            parser.error(f"size {size} is not a multiple of --chunk-size {args.chunk_size}")
    directory = args.dir or Path(tempfile.mkdtemp(prefix="sknce-stream-"))
    largest = max(args.sizes + args.in_memory)
    try:
        n_files = len(list(directory.glob("chunk-*.npz")))
        generation = 0.0
        if n_files * args.chunk_size < largest:
            generation = generate(directory, largest, args.chunk_size, args)
            print(f"generated {largest} documents in {generation:.0f} s", flush=True)
        disk = sum(f.stat().st_size for f in directory.glob("chunk-*.npz")) / 2**20
        rows = []
        runs = [(n, "stream") for n in args.sizes] + [(n, "memory") for n in args.in_memory]
        for size, mode in runs:
            command = [sys.executable, __file__, "--dir", str(directory)]
            command += ["--epochs", str(args.epochs), "--threads", str(args.threads)]
            command += ["--hidden", *map(str, args.hidden), "--seed", str(args.seed)]
            command += ["--child", str(size // args.chunk_size), mode]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(output.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    import torch

    torch.set_num_threads(args.threads)  # the machine facts state the fits' thread count
    report(
        "streaming",
        rows,
        title=(
            f"DirectNCEEmbedder streamed from .npz chunks of {args.chunk_size} documents "
            f"(V={args.words}, K={args.topics}, Poisson({args.mean_length:g}) lengths, "
            f"hidden {tuple(args.hidden)}, {args.epochs} epoch(s), {args.threads} torch thread)"
        ),
        params={**vars(args), "dir": None, "disk_MiB": disk, "generation_s": generation},
    )


if __name__ == "__main__":
    main()
