"""The sknce demo: contrastive document embeddings against BOW, SVD and LDA.

Run it with ``python -m sknce.demo`` (or ``bash .ci/demo`` from a fresh clone).
It reproduces, in a couple of minutes on two CPU cores, the semi-supervised
protocol of Tosh, Krishnamurthy and Hsu (2021), Section 7:

1. generate a topic-model corpus whose label is each document's top topic
   (10 overlapping topics drawn from Dirichlet(0.5) over 1000 words, document
   topics from Dirichlet(0.2), about 50 words per document);
2. fit every representation on the *unlabeled* documents: bag of words, SVD,
   LDA, :class:`~sknce.DirectNCEEmbedder` and :class:`~sknce.LandmarkNCEEmbedder`;
3. for each, fit a :class:`~sklearn.pipeline.Pipeline` ``representation →
   L2 normalisation → logistic regression`` on a few labelled documents per
   class and print its accuracy on held-out documents.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main", "run_demo"]


def _progress(step: int, total: int, text: str, start: float) -> None:
    print(f"[{step}/{total}] {text:<58} {time.perf_counter() - start:6.1f} s", flush=True)


def _labelled_indices(y: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    """``per_class`` random documents of each class (fewer where a class is rarer)."""
    picks = [rng.permutation(np.flatnonzero(y == k))[:per_class] for k in np.unique(y)]
    return np.concatenate(picks)


def run_demo(
    n_documents: int = 8000,
    n_test: int = 1000,
    n_topics: int = 10,
    n_words: int = 1000,
    labels_per_class: tuple[int, ...] = (10, 50),
    max_epochs: int = 60,
    n_repeats: int = 5,
    random_state: int = 0,
    verbose: int = 0,
) -> list[dict]:
    """Run the demo and print its table; return the rows.

    Parameters
    ----------
    n_documents : int, default=8000
        Unlabeled training documents (the representations are fitted on these).
    n_test : int, default=1000
        Held-out documents on which accuracy is measured.
    n_topics : int, default=10
        Topics of the generating model (and classes: the label is the top topic).
    n_words : int, default=1000
        Vocabulary size.
    labels_per_class : tuple of int, default=(10, 50)
        Numbers of labelled documents per class given to the classifier.
    max_epochs : int, default=60
        Epoch budget of each NCE embedder (early stopping, with the embedders' default
        patience of 10 epochs, usually ends sooner).
    n_repeats : int, default=5
        Draws of the labelled documents; the table reports the mean accuracy.
    random_state : int, default=0
    verbose : int, default=0
        1 also prints the embedders' per-epoch losses.

    Returns
    -------
    list of dict
        One row per representation: its name, fit seconds and mean accuracy per
        number of labels.
    """
    import torch
    from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import Normalizer

    from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder
    from sknce.datasets import make_topic_corpus

    start = time.perf_counter()
    total = 7
    # One thread: on a shared or busy 2-core machine, two torch threads can run 5-50x slower.
    torch.set_num_threads(1)
    corpus = make_topic_corpus(
        n_documents + n_test,
        n_topics=n_topics,
        n_words=n_words,
        topics="dirichlet",
        alpha=0.5,
        beta=0.2,
        mean_length=50,
        random_state=random_state,
    )
    X, y = corpus.X, corpus.target
    X_train, X_test, y_train, y_test = (
        X[:n_documents],
        X[n_documents:],
        y[:n_documents],
        y[n_documents:],
    )
    _progress(
        1,
        total,
        f"topic corpus: {X.shape[0]} documents, {n_topics} topics, {n_words} words",
        start,
    )

    # Smaller networks than the paper's (512, 512) keep the demo to a couple of minutes.
    nce = dict(
        hidden_layer_sizes=(256, 256),
        max_epochs=max_epochs,
        batch_size=128,
        random_state=random_state,
        verbose=verbose,
    )
    representations = [
        ("BOW (tf-idf)", lambda: TfidfTransformer()),
        (
            "BOW + SVD-100",
            lambda: make_pipeline(
                TfidfTransformer(), TruncatedSVD(100, random_state=random_state)
            ),
        ),
        (
            "LDA",
            lambda: LatentDirichletAllocation(
                n_topics, learning_method="batch", max_iter=10, random_state=random_state
            ),
        ),
        ("DirectNCE", lambda: DirectNCEEmbedder(n_components=100, **nce)),
        ("LandmarkNCE", lambda: LandmarkNCEEmbedder(n_landmarks=200, **nce)),
    ]
    fitted = []
    for step, (name, make) in enumerate(representations, start=2):
        t0 = time.perf_counter()
        rep = make().fit(X_train)
        seconds = time.perf_counter() - t0
        extra = f" ({rep.n_iter_} epochs)" if hasattr(rep, "n_iter_") and "NCE" in name else ""
        _progress(step, total, f"fit {name} on unlabeled documents{extra}", start)
        fitted.append((name, rep, seconds))

    rng = np.random.default_rng(random_state)
    draws = {
        m: [_labelled_indices(y_train, m, rng) for _ in range(n_repeats)] for m in labels_per_class
    }
    rows = []
    for name, rep, seconds in fitted:
        row = {"representation": name, "fit s": round(seconds, 1)}
        for m, index_sets in draws.items():
            scores = []
            for idx in index_sets:
                model = Pipeline(
                    [
                        ("represent", FrozenEstimator(rep)),
                        ("normalize", Normalizer()),
                        ("classify", LogisticRegression(C=10.0, max_iter=2000)),
                    ]
                )
                scores.append(model.fit(X_train[idx], y_train[idx]).score(X_test, y_test))
            row[f"{m}/class"] = float(np.mean(scores))
        rows.append(row)
    _progress(
        total,
        total,
        f"logistic regression on {', '.join(map(str, labels_per_class))} "
        f"labels per class x {n_repeats}",
        start,
    )

    print()
    print(
        f"Accuracy on {n_test} held-out documents (label = top topic; chance "
        f"{1 / n_topics:.2f}), mean over {n_repeats} draws of the labelled documents:"
    )
    columns = list(rows[0])
    widths = [max(len(c), 12) for c in columns]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in rows:
        cells = [
            f"{v:.3f}" if isinstance(v, float) and k != "fit s" else str(v) for k, v in row.items()
        ]
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)))
    print(f"\nTotal {time.perf_counter() - start:.0f} s.")
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of ``python -m sknce.demo``."""
    parser = argparse.ArgumentParser(
        prog="python -m sknce.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--documents", type=int, default=8000, help="unlabeled training documents")
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=60, help="epoch budget of each NCE embedder")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a one-minute smoke run")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-epoch NCE losses")
    args = parser.parse_args(argv)
    if args.quick:
        # 30 epochs, not fewer: 5 left both embedders near chance (0.30 and 0.40 at 10/class).
        args.documents, args.words, args.epochs, args.repeats = 1500, 500, 30, 2
    run_demo(
        n_documents=args.documents,
        n_topics=args.topics,
        n_words=args.words,
        max_epochs=args.epochs,
        n_repeats=args.repeats,
        random_state=args.seed,
        verbose=int(args.verbose),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
