"""Document embedders: fit and transform speed, and memory, at V = 5k and 50k words.

For each vocabulary size: a topic corpus (K = 20, Poisson(100) lengths); one fit
epoch of ``DirectNCEEmbedder`` (n_components=100) and ``LandmarkNCEEmbedder``
(M = 1000 landmarks), both with the paper's ``hidden_layer_sizes=(512, 512)`` (DirectNCE
in the paper's setting: two MLPs from a random start on term frequencies, ``PAPER``);
transform rates of both, of ``LandmarkNCEEmbedder`` with one hidden layer
``(512,)`` (where the pair-dependent part of the network is one LayerNorm and a
dot product), and of the naive landmark evaluation (the whole network run on
each (document, landmark) pair, landmark by landmark) that the cached landmark
side replaces; fit epochs of both with ``sparse_embeddings=True`` and
``sknce.nn.LazyAdam`` (first-layer updates for the words of the batch only) beside
the dense Adam default. Peak memory is the process's peak RSS after each step.

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
from sknce.documents._split import normalize_bags
from sknce.nn import LazyAdam


def naive_landmark_rate(emb: LandmarkNCEEmbedder, X, n_docs: int) -> float:
    """Documents/s of evaluating f(x, l_i) pair by pair, recomputing both first-layer sides."""
    scorer = emb.net_.module_.scorer
    landmarks = normalize_bags(emb.landmarks_, emb.bag)
    with torch.no_grad(), Timer() as t:
        for i in range(n_docs):
            x = csr_to_tensor(normalize_bags(X[i : i + 1], emb.bag))
            for j in range(landmarks.shape[0]):
                lm = csr_to_tensor(landmarks[j : j + 1])
                torch.exp(scorer.combine(scorer.encode_left(x), scorer.encode_right(lm)))
    return n_docs / t.seconds


#: DirectNCEEmbedder as Tosh et al. train it (its defaults are a linear spectral encoder).
PAPER = dict(hidden_layer_sizes=(512, 512), init="random", tied=False, bag="tf", output="raw")


def rate(estimator, X) -> float:
    """Documents/s of ``estimator.transform(X)``."""
    with Timer() as t:
        estimator.transform(X)
    return X.shape[0] / t.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=4000, help="training documents")
    parser.add_argument("--transform-docs", type=int, default=1000)
    parser.add_argument(
        "--landmark-docs", type=int, default=100, help="docs for (512, 512) M=1000"
    )
    parser.add_argument("--naive-docs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for n_words in (5000, 50000):
        corpus = make_topic_corpus(args.documents, n_topics=20, n_words=n_words, random_state=0)
        X = corpus.X
        common = dict(max_epochs=1, early_stopping=False, batch_size=256, random_state=0)
        direct = DirectNCEEmbedder(n_components=100, **PAPER, **common).fit(X)
        fit_direct = args.documents / direct.history_[-1]["dur"]
        t_direct = rate(direct, X[: args.transform_docs])
        rows.append(
            {
                "V": n_words,
                "estimator": "DirectNCE (512,512)",
                "M": "-",
                "fit docs/s": fit_direct,
                "transform docs/s": t_direct,
                "peak MiB": peak_rss_mib(),
            }
        )
        sparse = dict(common, sparse_embeddings=True, optimizer=LazyAdam)
        direct_sparse = DirectNCEEmbedder(n_components=100, **PAPER, **sparse).fit(X)
        rows.append(
            {
                "V": n_words,
                "estimator": "DirectNCE (512,512), sparse_embeddings + LazyAdam",
                "M": "-",
                "fit docs/s": args.documents / direct_sparse.history_[-1]["dur"],
                "transform docs/s": rate(direct_sparse, X[: args.transform_docs]),
                "peak MiB": peak_rss_mib(),
            }
        )
        land_sparse = LandmarkNCEEmbedder(n_landmarks=1000, **sparse).fit(X)
        rows.append(
            {
                "V": n_words,
                "estimator": "LandmarkNCE (512,512), sparse_embeddings + LazyAdam",
                "M": 1000,
                "fit docs/s": args.documents / land_sparse.history_[-1]["dur"],
                "transform docs/s": np.nan,
                "peak MiB": peak_rss_mib(),
            }
        )
        for hidden, n_docs in (((512, 512), args.landmark_docs), ((512,), args.transform_docs)):
            land = LandmarkNCEEmbedder(n_landmarks=1000, hidden_layer_sizes=hidden, **common).fit(
                X
            )
            fit_land = args.documents / land.history_[-1]["dur"]
            t_land = rate(land, X[:n_docs])
            rows.append(
                {
                    "V": n_words,
                    "estimator": f"LandmarkNCE {hidden}",
                    "M": 1000,
                    "fit docs/s": fit_land,
                    "transform docs/s": t_land,
                    "peak MiB": peak_rss_mib(),
                    "transform vs Direct": t_direct / t_land,
                }
            )
            if hidden == (512, 512):
                naive = naive_landmark_rate(land, X, args.naive_docs)
                rows.append(
                    {
                        "V": n_words,
                        "estimator": "LandmarkNCE (512,512) naive",
                        "M": 1000,
                        "fit docs/s": np.nan,
                        "transform docs/s": naive,
                        "peak MiB": peak_rss_mib(),
                        "transform vs Direct": t_direct / naive,
                    }
                )
    report(
        "documents_speed",
        rows,
        title="Document embedders: fit (one epoch) and transform documents/second, peak RSS",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
