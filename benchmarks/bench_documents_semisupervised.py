"""Semi-supervised document classification (Tosh et al., Section 7 protocol, Figure 4).

Every representation is fitted on the unlabeled documents; a
``LogisticRegressionCV`` on L2-normalised features is then trained on a few
labelled documents per class and scored on held-out documents. Mean accuracy and
95% interval (normal approximation) over draws of the labelled documents (the same
draws for every representation).

* ``--dataset synthetic``: a topic corpus (K = 10 topics drawn from
  Dirichlet(0.5) over V = 1000 words, w ~ Dirichlet(0.2), Poisson(50) lengths),
  label = top topic; 4000 unlabeled training documents, 1000 test documents.
  The comparators are tf-idf, SVD and LDA as the paper fits it, with 50 topics (it fits
  50 to 1000: the number of topics of real text is unknown); LDA with the true K = 10
  is an oracle the paper's protocol does not have, reported but not a target; LDA-20
  shows what a misjudged K costs.
* ``--dataset newsgroups``: the 200-document, 2-class 20-Newsgroups subset shipped
  in gensim's test data (alt.atheism vs sci.space); representations fitted on all
  200 documents without labels, classifier on 5/10/25/50 per class, tested on the rest;
  LDA with 20 and 50 topics.

The embedders run twice: in the paper's setting at a CPU budget ("paper setting":
``hidden_layer_sizes=(256, 256)``, ``batch_size=128``, at most ``--epochs`` epochs,
``bag="tf"``, ``lr=1e-3``; for DirectNCE also ``init="random", tied=False,
output="raw"``, for LandmarkNCE the network of the pair, ``scorer="pair"``,
``output="exp"`` and 200 landmarks), and at their defaults.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_documents_semisupervised.py \
        --dataset synthetic

``--methods`` runs some rows only, ``--n-train`` changes the number of unlabeled
synthetic documents (4000).
"""

from __future__ import annotations

import argparse
import io
import pickle
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch
from _common import RESULTS, Timer, report
from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegressionCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import normalize
from sklearn.utils import Bunch

from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus


class _BunchUnpickler(pickle.Unpickler):
    """gensim's file is a Python 2 pickle of ``sklearn.datasets.base.Bunch``."""

    def find_class(self, module, name):
        return Bunch if name == "Bunch" else super().find_class(module, name)


def newsgroups():
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "mini_newsgroup"
    raw = zlib.decompress(path.read_bytes())
    data = _BunchUnpickler(io.BytesIO(raw), encoding="latin1").load()
    X = CountVectorizer(stop_words="english", min_df=2).fit_transform(data["data"])
    y = np.asarray(data["target"])
    return X.astype(np.float64), y, np.arange(len(y)), (5, 10, 25, 50), [20, 50]


#: Topics of the synthetic corpus (the K that LDA's oracle row is given).
SYNTHETIC_TOPICS = 10


def synthetic(n_train=4000, n_test=1000):
    c = make_topic_corpus(
        n_train + n_test,
        n_topics=SYNTHETIC_TOPICS,
        n_words=1000,
        alpha=0.5,
        beta=0.2,
        mean_length=50,
        random_state=0,
    )
    return c.X, c.target, np.arange(n_train), (10, 50, 100, 250), [10, 20, 50]


#: The embedders' parameters for Tosh et al.'s networks and training (Sections 6.2, 7.2).
PAPER_DIRECT = dict(bag="tf", init="random", tied=False, output="raw", lr=1e-3)
PAPER_LANDMARK = dict(scorer="pair", bag="tf", output="exp", lr=1e-3)


def lda_name(k: int, true_k: int | None) -> str:
    """``LDA-k``, marked as the oracle (the true K) or as the paper's comparator (50+)."""
    if k == true_k:
        return f"LDA-{k} (true K, oracle)"
    return f"LDA-{k} (as the paper fits it)" if k >= 50 else f"LDA-{k}"


def representations(
    lda_dims: list[int], n_docs: int, epochs: int, seed: int, true_k: int | None = None
):
    nce = dict(
        hidden_layer_sizes=(256, 256),
        max_epochs=epochs,
        batch_size=min(128, n_docs // 4),
        random_state=seed,
    )
    return [
        ("BOW (tf-idf)", TfidfTransformer()),
        (
            "BOW+SVD-100",
            make_pipeline(
                TfidfTransformer(), TruncatedSVD(min(100, n_docs - 1), random_state=seed)
            ),
        ),
        *[
            (
                lda_name(k, true_k),
                LatentDirichletAllocation(
                    k, learning_method="batch", max_iter=20, random_state=seed
                ),
            )
            for k in lda_dims
        ],
        (
            "DirectNCE (paper setting)",
            DirectNCEEmbedder(n_components=100, **PAPER_DIRECT, **nce),
        ),
        ("DirectNCE (defaults)", DirectNCEEmbedder(random_state=seed)),
        (
            "LandmarkNCE (paper setting)",
            LandmarkNCEEmbedder(n_landmarks=min(200, n_docs), **PAPER_LANDMARK, **nce),
        ),
        ("LandmarkNCE (defaults)", LandmarkNCEEmbedder(random_state=seed)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=["synthetic", "newsgroups"], default="synthetic")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-train", type=int, default=4000, help="synthetic unlabeled documents")
    parser.add_argument("--methods", nargs="+", default=None, help="rows to run (default: all)")
    parser.add_argument("--name", default=None, help="results file stem")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # LogisticRegressionCV announces default changes of sklearn 1.10/1.11 at every fit.
    warnings.filterwarnings("ignore", category=FutureWarning)
    X, y, unlabeled, sizes, lda_dims = (
        newsgroups() if args.dataset == "newsgroups" else synthetic(n_train=args.n_train)
    )
    rows = []
    true_k = SYNTHETIC_TOPICS if args.dataset == "synthetic" else None
    for name, rep in representations(lda_dims, len(unlabeled), args.epochs, 0, true_k):
        if args.methods and name not in args.methods:
            continue
        with Timer() as t:
            rep.fit(X[unlabeled])
        Z = normalize(rep.transform(X))
        row = {"representation": name, "fit s": t.seconds}
        rng = np.random.default_rng(0)  # the same label draws for every representation
        for m in sizes:
            scores = []
            for _ in range(args.repeats):
                labelled = np.concatenate(
                    [
                        rng.permutation(np.intersect1d(np.flatnonzero(y == k), unlabeled))[:m]
                        for k in np.unique(y)
                    ]
                )
                test = np.setdiff1d(
                    np.arange(len(y)), labelled if args.dataset == "newsgroups" else unlabeled
                )
                clf = LogisticRegressionCV(Cs=5, cv=3, max_iter=3000)
                scores.append(clf.fit(Z[labelled], y[labelled]).score(Z[test], y[test]))
            half = 1.96 * np.std(scores, ddof=1) / np.sqrt(len(scores))
            row[f"{m}/class"] = f"{np.mean(scores):.3f} ± {half:.3f}"
            row[f"_{m}"] = (float(np.mean(scores)), float(half))
        print(row, flush=True)
        rows.append(row)
    name = args.name or f"documents_semisupervised_{args.dataset}"
    plot(rows, sizes, args.dataset, name)
    report(
        name,
        [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
        title=f"Semi-supervised accuracy ({args.dataset}): LogisticRegressionCV on L2-normalised "
        f"features, mean ± 95% interval over {args.repeats} draws of the labels",
        params=vars(args),
    )


def plot(rows, sizes, dataset: str, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for row in rows:
        means = [row[f"_{m}"][0] for m in sizes]
        halves = [row[f"_{m}"][1] for m in sizes]
        ax.errorbar(sizes, means, yerr=halves, marker="o", capsize=3, label=row["representation"])
    ax.set_xscale("log")
    ax.set_xticks(sizes, [str(m) for m in sizes])
    ax.minorticks_off()
    ax.set_xlabel("labelled documents per class")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"Semi-supervised ({dataset}), cf. Tosh et al. Fig. 4")
    ax.legend(fontsize=8)
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
