"""Streaming fit: DirectNCEEmbedder on up to 1,000,000 documents read from .npz chunks.

A topic corpus (K = 20 topics, V = 5000 words, Poisson(100) lengths, document-topic
Dirichlet(0.1); the topics of ``sknce.datasets.make_topic_corpus``) is generated
chunk by chunk and written to ``.npz`` files in a temporary directory
(``save_npz_chunks``); it is never whole in memory. For each corpus size (the first
chunks of the same files), a fresh process fits ``DirectNCEEmbedder`` at its
defaults except ``max_epochs=--epochs`` and ``early_stopping=False`` (the
estimator's parameters are saved in the JSON) on the stream (``NpzChunks``), one
chunk in memory at a time. Each row reports documents/s per epoch (wall clock),
documents per CPU-second of the process (unaffected by other jobs on the machine),
and the process's peak RSS before training (the first pass over the chunks and the
spectral initialisation), after the first epoch and at the end. ``--in-memory N``
adds the same fit on the first N documents loaded as one CSR matrix (the reference,
side by side);
``--paper-network N`` adds a streamed fit with the paper's network
``hidden_layer_sizes=(512, 512)``.

Run::

    flock /tmp/sknce-bench.lock nice -n 5 .venv/bin/python benchmarks/bench_streaming.py
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import Timer, peak_rss_mib, report

#: The network of the paper (Tosh et al. 2021, Section 7), beside the default (linear).
PAPER_NETWORK = (512, 512)


def _cpu_seconds() -> float:
    """CPU time of this process so far (user and system, every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def topic_documents(rng, topics, n: int, mean_length: float, alpha: float) -> sp.csr_matrix:
    """``n`` documents of the topic model, drawn token by token (as LDA generates them).

    Each document draws topic weights from Dirichlet(``alpha``) and a Poisson length,
    splits its length among the topics (multinomial), and each topic's tokens are
    drawn from its word distribution: the same law as a multinomial over the
    mixture of topics, without a dense documents x words block.
    """
    n_topics, n_words = topics.shape
    cumulative = np.cumsum(topics, axis=1)
    weights = rng.dirichlet(np.full(n_topics, alpha), size=n)
    per_topic = rng.multinomial(rng.poisson(mean_length, size=n), weights)
    rows, words = [], []
    for k in range(n_topics):
        rows.append(np.repeat(np.arange(n), per_topic[:, k]))
        u = rng.random(int(per_topic[:, k].sum())) * cumulative[k, -1]
        words.append(np.minimum(np.searchsorted(cumulative[k], u, side="right"), n_words - 1))
    rows, words = np.concatenate(rows), np.concatenate(words)
    counts = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, words)), shape=(n, n_words))
    counts.sum_duplicates()
    return counts


def generate(directory: Path, n_documents: int, chunk_size: int, args) -> float:
    """Write the corpus as chunk files; return the seconds it took."""
    from sknce.datasets import make_topic_corpus, save_npz_chunks

    topics = make_topic_corpus(
        1, n_topics=args.topics, n_words=args.words, random_state=args.seed
    ).topics
    rng = np.random.default_rng(args.seed)
    sizes = [min(chunk_size, n_documents - s) for s in range(0, n_documents, chunk_size)]
    chunks = (topic_documents(rng, topics, n, args.mean_length, 0.1) for n in sizes)
    with Timer() as t:
        save_npz_chunks(chunks, directory)
    return t.seconds


def estimator_params(hidden: tuple[int, ...] | None, epochs: int) -> dict:
    """The parameters the benchmark sets; everything else is the estimator's default."""
    params = {"max_epochs": epochs, "early_stopping": False, "random_state": 0}
    if hidden is not None:
        params["hidden_layer_sizes"] = hidden
    return params


def fit_one(directory: Path, n_chunks: int, args, in_memory: bool) -> dict:
    """Fit on the first ``n_chunks`` chunk files (in this process); one result row."""
    import torch
    from skorch.callbacks import Callback

    from sknce import DirectNCEEmbedder
    from sknce.datasets import NpzChunks

    class Meter(Callback):
        """Records each epoch's CPU seconds and peak RSS, and the peak RSS when training starts."""

        def on_train_begin(self, net, **kwargs):
            self.setup_rss_ = peak_rss_mib()

        def on_epoch_begin(self, net, **kwargs):
            self.start_ = _cpu_seconds()

        def on_epoch_end(self, net, **kwargs):
            net.history.record("cpu", _cpu_seconds() - self.start_)
            net.history.record("peak_rss", peak_rss_mib())

    torch.set_num_threads(args.threads)
    files = sorted(directory.glob("chunk-*.npz"))[:n_chunks]
    chunks = NpzChunks(files)
    X = sp.vstack([chunks[i] for i in range(len(chunks))]).tocsr() if in_memory else chunks
    n_documents = X.shape[0] if in_memory else sum(chunks[i].shape[0] for i in range(n_chunks))
    meter = Meter()
    hidden = tuple(args.hidden) if args.hidden is not None else None
    estimator = DirectNCEEmbedder(**estimator_params(hidden, args.epochs), callbacks=[meter])
    with Timer() as t:
        start = _cpu_seconds()
        estimator.fit(X)
    epochs = estimator.history_
    return {
        "input": "in memory (one CSR)" if in_memory else f"stream of {n_chunks} chunks",
        "hidden_layer_sizes": str(estimator.hidden_layer_sizes),
        "documents": n_documents,
        "epochs": estimator.n_iter_,
        "batch_size": estimator.net_.batch_size,
        "docs/s per epoch": n_documents / float(np.mean([row["dur"] for row in epochs])),
        "docs per CPU-s": n_documents / float(np.mean([row["cpu"] for row in epochs])),
        "fit s (with first pass)": t.seconds,
        "fit CPU s": _cpu_seconds() - start,
        "train loss": float(epochs[-1]["train_loss"]),
        "peak RSS MiB before training": meter.setup_rss_,
        "peak RSS MiB after epoch 1": epochs[0]["peak_rss"],
        "peak RSS MiB": peak_rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250_000, 500_000, 1_000_000])
    parser.add_argument("--chunk-size", type=int, default=25_000)
    parser.add_argument("--in-memory", type=int, nargs="*", default=[250_000, 500_000])
    parser.add_argument("--paper-network", type=int, nargs="*", default=[250_000])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--words", type=int, default=5000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--mean-length", type=float, default=100.0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=None, help="chunk directory (kept)")
    parser.add_argument("--name", default="streaming", help="results/<name>.json")
    parser.add_argument("--hidden", type=int, nargs="*", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, metavar=("N_CHUNKS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:  # one measured fit, in a fresh process so that its peak RSS is its own
        row = fit_one(args.dir, int(args.child[0]), args, in_memory=args.child[1] == "memory")
        print(json.dumps(row))
        return

    runs = [(n, "stream", None) for n in args.sizes]
    runs += [(n, "memory", None) for n in args.in_memory]
    runs += [(n, "stream", PAPER_NETWORK) for n in args.paper_network]
    for size, _, _ in runs:
        if size % args.chunk_size:
            parser.error(f"size {size} is not a multiple of --chunk-size {args.chunk_size}")
    directory = args.dir or Path(tempfile.mkdtemp(prefix="sknce-stream-"))
    largest = max(size for size, _, _ in runs)
    try:
        n_files = len(list(directory.glob("chunk-*.npz")))
        generation = 0.0
        if n_files * args.chunk_size < largest:
            generation = generate(directory, largest, args.chunk_size, args)
            print(f"generated {largest} documents in {generation:.0f} s", flush=True)
        disk = sum(f.stat().st_size for f in directory.glob("chunk-*.npz")) / 2**20
        rows = []
        for size, mode, hidden in runs:
            command = [sys.executable, __file__, "--dir", str(directory)]
            command += ["--epochs", str(args.epochs), "--threads", str(args.threads)]
            command += ["--seed", str(args.seed), "--child", str(size // args.chunk_size), mode]
            if hidden is not None:
                command += ["--hidden", *map(str, hidden)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(output.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    finally:
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)
    import torch

    from sknce import DirectNCEEmbedder

    torch.set_num_threads(args.threads)  # the machine facts state the fits' thread count
    estimator = DirectNCEEmbedder(**estimator_params(None, args.epochs))
    report(
        args.name,
        rows,
        title=(
            f"DirectNCEEmbedder (defaults, {args.epochs} epochs, no early stopping) streamed "
            f"from .npz chunks of {args.chunk_size} documents (V={args.words}, K={args.topics}, "
            f"Poisson({args.mean_length:g}) lengths, {args.threads} torch thread)"
        ),
        params={
            **vars(args),
            "dir": None,
            "disk_MiB": disk,
            "generation_s": generation,
            "estimator": estimator.get_params(),
            "paper_hidden_layer_sizes": PAPER_NETWORK,
        },
    )


if __name__ == "__main__":
    main()
