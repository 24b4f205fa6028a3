"""Document embedders: fit and transform speed, landmark transform vs dense matmul, memory.

For each vocabulary size (V = 5k and 50k words): a topic corpus (K = 20, Poisson(100)
lengths) and

* one fit epoch (``batch_size=256``, 1 negative per positive) and the transform rate of
  ``DirectNCEEmbedder`` at its defaults (a tied linear encoder, d = 100) and in the
  paper's setting (two ``(512, 512)`` MLPs, ``PAPER``), the latter also with
  ``sparse_embeddings=True`` and ``sknce.optim.LazyAdam`` (first-layer updates for the
  words of the batch only) beside the dense Adam default;
* the same for ``LandmarkNCEEmbedder`` with M = 1000 landmarks: at its defaults (a
  bilinear scorer: the log-odds against the landmarks are one matrix product of the
  encodings) and with the paper's network of the pair (``scorer="pair"``), ``(512, 512)``
  and ``(512,)``; and the naive evaluation (the whole network run on each (document,
  landmark) pair) that the cached landmark side replaces.

The landmark transform against the machine's dense matmul throughput, measured in the
same process (issue 3's decision 1): the pair-dependent matrix products of a landmark
transform are ``2 d`` flops per (document, landmark) pair for the bilinear scorer, and
``sum 2 h_i h_(i+1)`` over the layers after the first (the last one to a single output)
for the network of the pair. ``landmark GFLOP/s`` divides those flops by the time of
``transform``; ``matmul GFLOP/s`` is ``torch.mm`` at the same shapes (the bilinear
scorer's ``(256, d) @ (d, M)`` block of documents; the network's ``(512, h_i) @ (h_i,
h_(i+1))`` block of landmarks per document), one thread, in the same run;
``ratio`` = landmark / matmul. ``ratio, scoring`` leaves out the time that encoding the
documents' bags takes (``transform`` minus the encoding alone): the landmark stage's own
efficiency. Each rate is the best of ``--repeats`` runs, transform and matmul runs
interleaved so that both see the same load. Peak memory is the process's peak RSS after
each step. There is no GPU figure: run with a GPU present to add one (not done here).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_documents_speed.py
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, peak_rss_mib, report

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce._data import csr_to_tensor
from sknce.datasets import make_topic_corpus
from sknce.documents._embedders import _DOCUMENT_BLOCK, _PAIR_BLOCK
from sknce.documents._split import normalize_bags
from sknce.nn import BilinearScorer
from sknce.optim import LazyAdam

#: DirectNCEEmbedder as Tosh et al. train it (its defaults are a linear spectral encoder).
PAPER = dict(hidden_layer_sizes=(512, 512), init="random", tied=False, bag="tf", output="raw")

#: LandmarkNCEEmbedder's network of the pair, as Tosh et al. train it.
LANDMARK_PAPER = dict(scorer="pair", bag="tf", output="exp")

#: Landmarks of every LandmarkNCE row.
M = 1000


def best_seconds(run, repeats: int) -> float:
    """Shortest wall-clock time of ``repeats`` calls of ``run``."""
    times = []
    for _ in range(repeats):
        with Timer() as t:
            run()
        times.append(t.seconds)
    return min(times)


def naive_landmark_rate(emb: LandmarkNCEEmbedder, X, n_docs: int) -> float:
    """Documents/s of evaluating f(x, l_i) pair by pair, recomputing both first-layer sides."""
    scorer = emb.net_.module_
    landmarks = normalize_bags(emb.landmarks_, emb.bag)
    with torch.no_grad(), Timer() as t:
        for i in range(n_docs):
            x = csr_to_tensor(normalize_bags(X[i : i + 1], emb.bag))
            for j in range(landmarks.shape[0]):
                lm = csr_to_tensor(landmarks[j : j + 1])
                torch.exp(scorer.combine(scorer.encode_left(x), scorer.encode_right(lm)))
    return n_docs / t.seconds


def pair_shapes(emb: LandmarkNCEEmbedder, n_docs: int) -> list[tuple[int, int, int, int]]:
    """``(m, k, n, count)``: the pair-dependent ``(m, k) @ (k, n)`` products of a transform.

    ``count`` is how many of them the transform of ``n_docs`` documents runs.
    """
    if isinstance(emb.net_.module_, BilinearScorer):
        # One (256, d) @ (d, M) product per block of 256 documents.
        return [(_DOCUMENT_BLOCK, emb.n_components_, M, -(-n_docs // _DOCUMENT_BLOCK))]
    widths = [*emb.hidden_layer_sizes, 1]
    block = min(M, max(1, _PAIR_BLOCK // widths[0]))
    blocks = -(-M // block)  # blocks of landmarks per document
    # The layers after the first: hidden to hidden, and the last one to a single output.
    return [(block, k, n, n_docs * blocks) for k, n in zip(widths[:-1], widths[1:])]


def landmark_throughput(emb: LandmarkNCEEmbedder, X, repeats: int) -> dict:
    """Transform rate, pair-dependent GFLOP/s and torch.mm GFLOP/s at the same shapes."""
    n_docs = X.shape[0]
    shapes = pair_shapes(emb, n_docs)
    # Flops of the (document, landmark) pairs themselves (the padding of blocks excluded).
    if isinstance(emb.net_.module_, BilinearScorer):
        flops = 2 * emb.n_components_ * M * n_docs
    else:
        flops = M * sum(2 * k * n for _, k, n, _ in shapes) * n_docs
    operands = [(torch.randn(m, k), torch.randn(k, n), torch.empty(m, n)) for m, k, n, _ in shapes]

    def matmuls():  # the same products, as many as the transform runs
        for (a, b, out), (*_, count) in zip(operands, shapes):
            for _ in range(count):
                torch.mm(a, b, out=out)

    t_transform = t_encode = t_mm = np.inf
    for _ in range(repeats):  # interleaved: the three see the same load
        t_transform = min(t_transform, best_seconds(lambda: emb.transform(X), 1))
        t_encode = min(t_encode, best_seconds(lambda: emb._encode(X, "left"), 1))
        t_mm = min(t_mm, best_seconds(matmuls, 1))
    matmul = sum(2 * m * k * n * count for m, k, n, count in shapes) / t_mm / 1e9
    landmark = flops / t_transform / 1e9
    scoring = flops / max(t_transform - t_encode, 1e-9) / 1e9
    return {
        "transform docs/s": n_docs / t_transform,
        "landmark GFLOP/s": landmark,
        "matmul GFLOP/s": matmul,
        "ratio": landmark / matmul,
        "ratio, scoring": scoring / matmul,
    }


def fit_row(V: int, name: str, estimator, X, n_documents: int, m="-") -> dict:
    """One fit epoch of ``estimator`` on ``X``: a table row with its documents/s."""
    estimator.fit(X)
    return {
        "V": V,
        "estimator": name,
        "M": m,
        "fit docs/s": n_documents / estimator.history_[-1]["dur"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=4000, help="training documents")
    parser.add_argument("--vocabularies", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--transform-docs", type=int, default=1000)
    parser.add_argument(
        "--landmark-docs", type=int, default=100, help="documents for the (512, 512) pair net"
    )
    parser.add_argument("--naive-docs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="best of, for the rates")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default="documents_speed", help="results file stem")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []

    def rate(estimator, X) -> float:
        return X.shape[0] / best_seconds(lambda: estimator.transform(X), args.repeats)

    for V in args.vocabularies:
        X = make_topic_corpus(args.documents, n_topics=20, n_words=V, random_state=0).X
        common = dict(max_epochs=1, early_stopping=False, batch_size=256, random_state=0)
        sparse = dict(common, sparse_embeddings=True, optimizer=LazyAdam)
        few = X[: args.transform_docs]
        for name, est in (
            ("DirectNCE, defaults (d = 100)", DirectNCEEmbedder(**common)),
            ("DirectNCE (512, 512)", DirectNCEEmbedder(n_components=100, **PAPER, **common)),
            (
                "DirectNCE (512, 512), sparse_embeddings + LazyAdam",
                DirectNCEEmbedder(n_components=100, **PAPER, **sparse),
            ),
        ):
            row = fit_row(V, name, est, X, args.documents)
            row["transform docs/s"] = rate(est, few)
            rows.append({**row, "peak MiB": peak_rss_mib()})
            print(rows[-1], flush=True)
        est = LandmarkNCEEmbedder(
            n_landmarks=M, hidden_layer_sizes=(512, 512), **LANDMARK_PAPER, **sparse
        )
        row = fit_row(
            V,
            "LandmarkNCE pair (512, 512), sparse_embeddings + LazyAdam",
            est,
            X,
            args.documents,
            M,
        )
        rows.append({**row, "peak MiB": peak_rss_mib()})
        for name, params, n_docs in (
            ("LandmarkNCE, defaults (bilinear, d = 100)", {}, args.documents),
            (
                "LandmarkNCE pair (512, 512)",
                dict(hidden_layer_sizes=(512, 512), **LANDMARK_PAPER),
                args.landmark_docs,
            ),
            (
                "LandmarkNCE pair (512,)",
                dict(hidden_layer_sizes=(512,), **LANDMARK_PAPER),
                args.transform_docs,
            ),
        ):
            est = LandmarkNCEEmbedder(n_landmarks=M, **params, **common)
            row = fit_row(V, name, est, X, args.documents, M)
            row.update(landmark_throughput(est, X[:n_docs], args.repeats))
            rows.append({**row, "peak MiB": peak_rss_mib()})
            print(rows[-1], flush=True)
            if params.get("hidden_layer_sizes") == (512, 512):
                naive = naive_landmark_rate(est, X, args.naive_docs)
                rows.append(
                    {
                        "V": V,
                        "estimator": "LandmarkNCE pair (512, 512), naive pair by pair",
                        "M": M,
                        "transform docs/s": naive,
                        "peak MiB": peak_rss_mib(),
                    }
                )
    report(
        args.name,
        rows,
        title="Document embedders: fit (one epoch) and transform documents/s; landmark "
        "transform GFLOP/s against torch.mm at the same shapes (same run); peak RSS",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
