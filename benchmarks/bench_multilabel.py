"""Multi-label ConditionalNCEClassifier against fastText ``ova`` and one-vs-rest logistic
regression (issue 23, item 3).

Task, built from gensim's shipped Wikipedia excerpt (106 articles): tagging. Each
row is a 40-token chunk of an article (non-overlapping), its input the bag of those
tokens; its labels the article's 5 keywords, its words of highest tf-idf among the
words that occur in 2 to 10 articles (so that a keyword tags several articles): a few
hundred labels, 5 per row, label sets that overlap across articles. Chunks are split
80/20 at random (seeded).

Systems, all on the same text:

- sknce: ``make_pipeline(CountVectorizer(token_pattern=r"\\S+"),
  ConditionalNCEClassifier(...))`` fitted on the strings and the sparse label
  indicator (the vectorizer's fit timed too); ``predict_topk(X, 5)``;
- fastText ``loss="ova"``, reading a training file written before the clock starts
  (one ``__label__`` per label of the row), 2 threads; the top 5 per line through the
  single-line binding (its batch form returns wrong probabilities under numpy 2);
- ``OneVsRestClassifier(LogisticRegression())`` on tf-idf of the same tokens
  (``n_jobs=2``), the indicator given dense: one logistic regression per label. It
  runs on a subsample of training rows (``--ovr-rows``), and its fit time is reported
  for it.

Figures: precision@1, @3, @5 (share of the top k that are labels of the row, mean
over test rows) and fit wall seconds.

Usage::

    flock /tmp/sknce-bench.lock python benchmarks/bench_multilabel.py
    python benchmarks/bench_multilabel.py --quick      # fewer rows, for development
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import report  # noqa: E402
from _real_conditional_data import wiki_articles  # noqa: E402

THREADS = 2
KS = (1, 3, 5)


def article_keywords_task(chunk: int = 40, n_keywords: int = 5, seed: int = 0):
    """Rows: ``chunk``-token pieces; labels: their article's ``n_keywords`` keywords.

    An article's keywords are its words of highest tf-idf among the words found in at
    least 2 and at most 10 articles, so that a keyword tags several articles.
    """
    articles = wiki_articles()
    df = Counter(w for a in articles for w in set(a))
    n = len(articles)
    keywords = []
    for art in articles:
        tf = Counter(w for w in art if 2 <= df[w] <= 10)
        ranked = sorted(tf, key=lambda w: (-tf[w] * np.log(n / df[w]), w))
        keywords.append(ranked[:n_keywords])
    vocabulary = sorted({w for k in keywords for w in k})
    index = {w: i for i, w in enumerate(vocabulary)}
    texts, label_sets = [], []
    for art, words in zip(articles, keywords):
        for s in range(0, len(art) - chunk + 1, chunk):
            texts.append(" ".join(art[s : s + chunk]))
            label_sets.append(sorted(index[w] for w in words))
    order = np.random.default_rng(seed).permutation(len(texts))
    n_train = int(round(0.8 * len(texts)))
    train, test = order[:n_train], order[n_train:]
    return (
        [texts[i] for i in train],
        [label_sets[i] for i in train],
        [texts[i] for i in test],
        [label_sets[i] for i in test],
        vocabulary,
    )


def indicator(label_sets, n_labels: int) -> sp.csr_matrix:
    """The sparse 0/1 indicator of lists of label indices."""
    indptr = np.cumsum([0] + [len(s) for s in label_sets])
    indices = np.fromiter((i for s in label_sets for i in s), dtype=np.int64, count=indptr[-1])
    data = np.ones(indptr[-1], dtype=np.int8)
    return sp.csr_matrix((data, indices, indptr), shape=(len(label_sets), n_labels))


def precision_at(top: np.ndarray, label_sets) -> dict:
    """``P@k`` for k in ``KS``: the mean share of a row's top k that are its labels."""
    hits = np.array(
        [[label in set(labels) for label in row] for row, labels in zip(top, label_sets)]
    )
    return {f"P@{k}": float(hits[:, :k].sum(axis=1).mean() / k) for k in KS}


def run_sknce(params: dict, data, seed: int) -> dict:
    import torch
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    from sknce import ConditionalNCEClassifier
    from sknce.optim import LazyAdam

    torch.set_num_threads(THREADS)  # the autograd step's threads, as fastText's
    X_tr, L_tr, X_te, L_te, vocabulary = data
    Y = indicator(L_tr, len(vocabulary))
    model = make_pipeline(
        CountVectorizer(token_pattern=r"\S+", lowercase=False),
        ConditionalNCEClassifier(random_state=seed, **{**params, "optimizer": LazyAdam}),
    )
    start = time.perf_counter()
    model.fit(X_tr, Y)
    fit_s = time.perf_counter() - start
    top, _ = model[-1].predict_topk(model[0].transform(X_te), max(KS))
    return {"fit_s": fit_s, **precision_at(top, L_te), "epochs": model[-1].n_iter_}


def run_fasttext(params: dict, data, tmp: Path) -> dict:
    import fasttext

    X_tr, L_tr, X_te, L_te, vocabulary = data
    path = tmp / "train.txt"
    if not path.exists():
        with open(path, "w", encoding="utf-8") as f:
            for text, labels in zip(X_tr, L_tr):
                f.write("".join(f"__label__{i} " for i in labels) + text + "\n")
    start = time.perf_counter()
    model = fasttext.train_supervised(
        input=str(path), loss="ova", thread=THREADS, verbose=0, **params
    )
    fit_s = time.perf_counter() - start
    prefix = len("__label__")
    top = []
    for text in X_te:
        pairs = model.f.predict(text + "\n", max(KS), 0.0, "strict")
        names = [int(name[prefix:]) for _, name in pairs]
        top.append(names + [-1] * (max(KS) - len(names)))
    return {"fit_s": fit_s, **precision_at(np.asarray(top), L_te)}


def run_ovr(data, n_rows: int, seed: int) -> dict:
    import warnings

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    X_tr, L_tr, X_te, L_te, vocabulary = data
    rows = np.sort(np.random.default_rng(seed).permutation(len(X_tr))[:n_rows])
    # dense int: OneVsRestClassifier fitted on this sparse int8 indicator ranks at chance
    # (sklearn 1.9; the same data dense gives the figures reported)
    Y = indicator([L_tr[i] for i in rows], len(vocabulary)).toarray().astype(np.int64)
    vectorizer = TfidfVectorizer(token_pattern=r"\S+", lowercase=False)
    model = OneVsRestClassifier(LogisticRegression(), n_jobs=THREADS)
    start = time.perf_counter()
    with warnings.catch_warnings():  # labels absent from the subsample: constant predictors
        warnings.simplefilter("ignore", UserWarning)
        model.fit(vectorizer.fit_transform([X_tr[i] for i in rows]), Y)
    fit_s = time.perf_counter() - start
    top = []
    X_te_v = vectorizer.transform(X_te)
    for start_row in range(0, len(X_te), 1000):  # (1000, 2000) float64 blocks
        proba = model.predict_proba(X_te_v[start_row : start_row + 1000])
        top.append(np.argsort(-proba, axis=1, kind="stable")[:, : max(KS)])
    return {"fit_s": fit_s, **precision_at(np.vstack(top), L_te), "train_rows": len(rows)}


def warm_up() -> float:
    """A tiny multi-label fit, untimed: the process's first fit imports torch's stack."""
    from sknce import ConditionalNCEClassifier

    rng = np.random.default_rng(0)
    X = sp.random(200, 50, density=0.1, format="csr", random_state=0)
    Y = sp.csr_matrix((rng.random((200, 8)) < 0.3).astype(np.int8))
    start = time.perf_counter()
    ConditionalNCEClassifier(max_epochs=1, random_state=0).fit(X, Y)
    return time.perf_counter() - start


SKNCE = {
    "sknce (noise='uniform', n_negatives=16, lr=1e-2, LazyAdam, 20 epochs)": {
        "noise": "uniform",
        "n_negatives": 16,
        "lr": 1e-2,
        "optimizer": "LazyAdam",
        "sparse_embeddings": True,
        "max_epochs": 20,
        "early_stopping": False,
    },
}
FASTTEXT = {
    "fastText ova defaults (epoch=5, lr=0.1)": {},
    "fastText ova, epoch=25, lr=0.5": {"epoch": 25, "lr": 0.5},
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ovr-rows", type=int, default=3000)
    parser.add_argument("--quick", action="store_true", help="a quarter of the rows, 1 repeat")
    args = parser.parse_args(argv)
    data = article_keywords_task()
    if args.quick:
        data = (data[0][::4], data[1][::4], data[2][::4], data[3][::4], data[4])
    repeats = 1 if args.quick else args.repeats
    info = {
        "n_train": len(data[0]),
        "n_test": len(data[2]),
        "n_labels": len(data[4]),
        "labels_per_row": float(np.mean([len(s) for s in data[1]])),
    }
    print(info, flush=True)
    warm_up_s = warm_up()
    print(f"warm-up fit (untimed below): {warm_up_s:.1f} s", flush=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            for name, params in SKNCE.items():
                runs.append({"system": name, **run_sknce(params, data, seed=repeat)})
                print(runs[-1], flush=True)
            for name, params in FASTTEXT.items():
                runs.append({"system": name, **run_fasttext(params, data, Path(tmp))})
                print(runs[-1], flush=True)
        runs.append(
            {
                "system": f"OneVsRest(LogisticRegression()), tf-idf, {args.ovr_rows} train rows",
                **run_ovr(data, args.ovr_rows, seed=0),
            }
        )
        print(runs[-1], flush=True)
    summary = []
    for name in dict.fromkeys(r["system"] for r in runs):
        mine = [r for r in runs if r["system"] == name]
        row = {"system": name, "runs": len(mine)}
        for key in ("P@1", "P@3", "P@5", "fit_s"):
            row[key] = float(np.mean([r[key] for r in mine]))
        summary.append(row)
    report(
        "bench_multilabel" + ("_quick" if args.quick else ""),
        summary,
        title=f"Multi-label article-keywords task ({info['n_train']} train rows, {info['n_test']} "
        f"test rows, {info['n_labels']} labels): precision@k and fit seconds, mean over runs",
        params={
            **info,
            "repeats": repeats,
            "threads": THREADS,
            "warm_up_s": warm_up_s,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
