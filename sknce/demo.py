"""The sknce demo: contrastive document embeddings against tf-idf, SVD and LDA on real text.

Run it with ``python -m sknce.demo`` (or ``bash .ci/demo`` from a fresh clone); it takes
a couple of minutes on two CPU cores, ``--quick`` well under one. It runs the
semi-supervised protocol of Tosh, Krishnamurthy and Hsu (2021), Section 7, on text that
ships with gensim's test data:

1. the corpus: 250 stemmed Wikipedia articles (``head500.noblanks.cor``) cut into
   40-word chunks; a chunk's label is its article (articles with 30 chunks or more,
   their first 40: 4,074 chunks of 106 articles; ``--quick``: the first 25 articles);
2. word counts of every chunk (:class:`~sklearn.feature_extraction.text.CountVectorizer`);
3. every representation is fitted on all chunks *without labels*: tf-idf, tf-idf + SVD,
   LDA with 20 and 50 topics, :class:`~sknce.DirectNCEEmbedder` and
   :class:`~sknce.LandmarkNCEEmbedder` at their defaults; at its defaults LandmarkNCE
   trains the very network DirectNCE trains, so it takes DirectNCE's
   (``LandmarkNCEEmbedder(scorer=direct)``: the same output, without the second
   training);
4. :class:`~sklearn.linear_model.LogisticRegression` at its defaults is trained on the
   representation of 10 (and 3) labelled chunks per article and scored on all the others.

Without gensim the demo says so and runs on a synthetic topic corpus instead.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from sknce import datasets

__all__ = ["main", "run_demo"]


def __getattr__(name: str):
    # The loader's old home: it moved to sknce.datasets.
    if name == "load_wiki_chunks":
        warnings.warn(
            "sknce.demo.load_wiki_chunks moved to sknce.datasets.load_wiki_chunks; import it "
            "from there (this path will be removed in a future release).",
            DeprecationWarning,
            stacklevel=2,
        )
        return datasets.load_wiki_chunks
    raise AttributeError(f"module 'sknce.demo' has no attribute {name!r}")


def _synthetic_counts(n_documents: int, random_state: int):
    """A topic-model corpus (the fallback without gensim): counts, label = top topic."""
    from sknce.datasets import make_topic_corpus

    corpus = make_topic_corpus(
        n_documents,
        n_topics=10,
        n_words=1000,
        alpha=0.5,
        beta=0.2,
        mean_length=50,
        random_state=random_state,
    )
    return corpus.X, corpus.target


class _LiveLine:
    """A progress line: rewritten in place on a terminal; in a log file (stdout is not a
    terminal), the lines passed with ``keep=True``, one after another."""

    def __init__(self) -> None:
        self.terminal = sys.stdout.isatty()
        self.width = 0

    def show(self, text: str, keep: bool = False) -> None:
        if self.terminal:
            self.width = max(self.width, len(text))
            print(f"\r{text:<{self.width}}", end="", flush=True)
        elif keep:
            print(text, flush=True)

    def close(self) -> None:
        """End the line on a terminal (a log file's lines are already ended)."""
        if self.terminal and self.width:
            print(flush=True)
        self.width = 0


def _epoch_line():
    """A skorch callback that shows each fit's progress: epoch, losses, seconds."""
    from skorch.callbacks import Callback

    class EpochLine(Callback):
        def on_train_begin(self, net, **kwargs):
            self.start_ = time.perf_counter()
            self.line_ = _LiveLine()

        def on_epoch_end(self, net, **kwargs):
            row = net.history[-1]
            valid = f"  valid loss {row['valid_loss']:.4f}" if "valid_loss" in row else ""
            self.line_.show(
                f"      epoch {row['epoch']:>3}/{net.max_epochs}  train loss "
                f"{row['train_loss']:.4f}{valid}  {time.perf_counter() - self.start_:5.1f} s",
                keep=True,
            )

        def on_train_end(self, net, **kwargs):
            self.line_.close()

    return EpochLine()


def _interval(scores) -> tuple[float, float]:
    """Mean and half-width of the 95% Student-t interval."""
    from scipy import stats

    scores = np.asarray(scores, dtype=float)
    if len(scores) < 2:
        return float(scores.mean()), float("nan")
    half = stats.t.ppf(0.975, len(scores) - 1) * scores.std(ddof=1) / np.sqrt(len(scores))
    return float(scores.mean()), float(half)


def run_demo(
    quick: bool = False,
    corpus: str = "wiki",
    n_articles: int | None = None,
    n_documents: int | None = None,
    labels_per_class: tuple[int, ...] = (10, 3),
    n_repeats: int = 5,
    n_landmarks: int = 1000,
    random_state: int = 0,
) -> list[dict]:
    """Run the demo and print its table; return the rows.

    Parameters
    ----------
    quick : bool, default=False
        The first 25 articles instead of all 106 (1000 synthetic documents instead of
        4000).
    corpus : {"wiki", "synthetic"}, default="wiki"
        ``"wiki"``: :func:`~sknce.datasets.load_wiki_chunks` (falls back to ``"synthetic"``, with a
        message, when gensim is missing); ``"synthetic"``: a topic-model corpus of
        4000 documents (1000 with ``quick``), label = top topic.
    n_articles : int or None, default=None
        Articles of the wiki corpus (all 106, or 25 with ``quick``, when None).
    n_documents : int or None, default=None
        Documents of the synthetic corpus (4000, or 1000 with ``quick``, when None).
    labels_per_class : tuple of int, default=(10, 3)
        Labelled chunks per class given to the classifier (one column each).
    n_repeats : int, default=5
        Draws of the labelled chunks.
    n_landmarks : int, default=1000
        Landmarks of the LandmarkNCE embedding (its default).
    random_state : int, default=0
        Seeds the representations and the draws of the labelled chunks.

    Returns
    -------
    list of dict
        One row per representation: its name, fit seconds and, per number of labels,
        the mean accuracy and the half-width of its 95% interval.
    """
    from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from threadpoolctl import threadpool_limits

    from sknce import DirectNCEEmbedder, LandmarkNCEEmbedder

    # Each maker takes the representations fitted before it (LandmarkNCE takes DirectNCE's).
    representations = [
        ("tf-idf", "", lambda fitted: TfidfTransformer()),
        (
            "tf-idf + SVD-100",
            "",
            lambda fitted: make_pipeline(TfidfTransformer(), TruncatedSVD(100, random_state=0)),
        ),
        ("LDA-20", "", lambda fitted: LatentDirichletAllocation(20, random_state=random_state)),
        ("LDA-50", "", lambda fitted: LatentDirichletAllocation(50, random_state=random_state)),
        (
            "DirectNCE",
            "",
            lambda fitted: DirectNCEEmbedder(random_state=random_state, callbacks=[_epoch_line()]),
        ),
        (
            "LandmarkNCE",
            ", on the network DirectNCE trained (its landmarks and statistics only)",
            lambda fitted: LandmarkNCEEmbedder(
                n_landmarks=n_landmarks, scorer=fitted["DirectNCE"], random_state=random_state
            ),
        ),
    ]
    total = 2 + len(representations) + 1
    step = 0

    def start(text: str) -> float:
        nonlocal step
        step += 1
        print(f"[{step}/{total}] {text}", flush=True)
        return time.perf_counter()

    def done(t0: float, text: str = "") -> float:
        seconds = time.perf_counter() - t0
        print(f"      {text}{seconds:.1f} s", flush=True)
        return seconds

    t0 = start("load the corpus")
    texts = None
    if corpus == "wiki":
        try:
            texts, y = datasets.load_wiki_chunks(n_articles=n_articles or (25 if quick else None))
        except ImportError as error:
            print(
                f"      gensim is missing ({error}); the real-text corpus is unavailable. "
                "Falling back to a SYNTHETIC topic corpus (label = top topic).",
                flush=True,
            )
            corpus = "synthetic"
    if corpus == "synthetic":
        X, y = _synthetic_counts(n_documents or (1000 if quick else 4000), random_state)
        what = f"synthetic topic corpus: {X.shape[0]} documents, 10 topics, 1000 words"
    else:
        what = (
            f"{len(texts)} chunks of 40 words from {len(np.unique(y))} stemmed Wikipedia "
            "articles (gensim's test data); label = article"
        )
    done(t0, what + "; ")
    t0 = start("word counts (CountVectorizer)")
    if texts is not None:
        X = CountVectorizer().fit_transform(texts)
    done(t0, f"{X.shape[0]} x {X.shape[1]} counts; ")

    # scikit-learn's steps (SVD, LDA, the classifiers) on one BLAS thread, as sknce's small
    # steps run: on a busy 2-core machine two threads wait for each other (a classifier on
    # LandmarkNCE's features took 25x as long); on an idle one, the second buys little.
    with threadpool_limits(limits=1, user_api="blas"):
        fitted, estimators = [], {}
        for name, how, make in representations:
            t0 = start(f"fit {name} on all {X.shape[0]} documents, without labels{how}")
            rep = make(estimators)
            rep.fit(X)
            estimators[name] = rep
            epochs = f"{rep.n_iter_} epochs; " if getattr(rep, "n_iter_", 0) else ""
            fitted.append((name, rep.transform(X), done(t0, epochs)))

        t0 = start(
            f"LogisticRegression() on {' and '.join(map(str, labels_per_class))} labelled "
            f"documents per class, {n_repeats} draws"
        )
        rng = np.random.default_rng(random_state)
        draws = {
            m: [
                np.concatenate([rng.permutation(np.flatnonzero(y == k))[:m] for k in np.unique(y)])
                for _ in range(n_repeats)
            ]
            for m in labels_per_class
        }
        rows = []
        line = _LiveLine()
        n_fits, n_done = len(fitted) * len(draws) * n_repeats, 0
        with warnings.catch_warnings():
            # Defaults everywhere: LogisticRegression's 100 iterations may stop short on some
            # representations, as in any user's first pipeline.
            warnings.simplefilter("ignore", ConvergenceWarning)
            for name, Z, seconds in fitted:
                row = {"representation": name, "fit s": round(seconds, 1)}
                for m, index_sets in draws.items():
                    scores = []
                    for draw, labelled in enumerate(index_sets, 1):
                        test = np.setdiff1d(np.arange(len(y)), labelled)
                        clf = LogisticRegression().fit(Z[labelled], y[labelled])
                        scores.append(clf.score(Z[test], y[test]))
                        n_done += 1
                        line.show(
                            f"      {n_done:>3}/{n_fits}  {name}, "
                            f"{m}/class, draw {draw}/{n_repeats}: accuracy {np.mean(scores):.3f}  "
                            f"{time.perf_counter() - t0:5.1f} s",
                            keep=draw == n_repeats,
                        )
                    row[f"{m}/class"] = _interval(scores)
                rows.append(row)
        line.close()
        done(t0)
    _print_table(rows, labels_per_class, n_repeats, len(np.unique(y)), corpus)
    return rows


def _print_table(rows, labels_per_class, n_repeats: int, n_classes: int, corpus: str) -> None:
    print()
    what = "article" if corpus == "wiki" else "top topic"
    print(
        f"Accuracy of LogisticRegression() predicting each document's {what} "
        f"({n_classes} classes, chance {1 / n_classes:.3f}):"
    )
    width = max(len(row["representation"]) for row in rows)
    columns = [f"{m}/class" for m in labels_per_class]
    print(
        f"  {'representation':<{width}}  {'fit s':>6}  " + "  ".join(f"{c:>13}" for c in columns)
    )
    for row in rows:
        cells = []
        for c in columns:
            mean, half = row[c]
            cells.append(f"{mean:.3f} ± {half:.3f}" if np.isfinite(half) else f"{mean:.3f}")
        print(
            f"  {row['representation']:<{width}}  {row['fit s']:>6.1f}  "
            + "  ".join(f"{cell:>13}" for cell in cells)
        )
    print(
        "\n  fit s: seconds to fit the representation on all documents without labels "
        "(this machine,\n  one BLAS thread; LandmarkNCE: its landmarks and statistics on the "
        "network DirectNCE\n  trained, which its own defaults would train again). k/class: "
        "accuracy of\n  LogisticRegression() trained on k labelled documents per class and "
        "tested on all the\n  others; mean ± half-width of the 95% interval over "
        f"{n_repeats} draws of the labelled\n  documents. Every representation runs at its "
        "defaults."
    )
    for c in columns:
        best = max(rows, key=lambda row: row[c][0])
        print(f"  Best at {c}: {best['representation']} ({best[c][0]:.3f}).")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of ``python -m sknce.demo``.

    Parameters
    ----------
    argv : list of str or None, default=None
        The command-line arguments (``--quick``, ``--corpus``, ``--repeats``,
        ``--seed``); None reads ``sys.argv``.

    Returns
    -------
    int
        The exit status, 0 on success.
    """
    parser = argparse.ArgumentParser(
        prog="python -m sknce.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run of well under a minute")
    parser.add_argument(
        "--corpus",
        choices=["wiki", "synthetic"],
        default="wiki",
        help="real text from gensim's test data (default), or a synthetic topic corpus",
    )
    parser.add_argument("--repeats", type=int, default=5, help="draws of the labels")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    run_demo(quick=args.quick, corpus=args.corpus, n_repeats=args.repeats, random_state=args.seed)
    print(f"\nTotal {time.perf_counter() - start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
