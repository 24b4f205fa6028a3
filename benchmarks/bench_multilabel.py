"""Multi-label ConditionalNCEClassifier against extreme multi-label libraries (issue 31).

Two tagging tasks built from gensim's shipped Wikipedia excerpt (106 articles); each
row is a 40-token chunk of an article (non-overlapping), its input the bag of those
tokens; rows are split 80/20 at random (seeded):

- ``keywords``: the labels of a chunk are its article's 5 keywords, the article's
  words of highest tf-idf among the words found in 2 to 10 articles (so that a keyword
  tags several articles): 480 labels, 5 per row, label sets shared by the chunks of an
  article and overlapping across articles;
- ``neighbours``: the labels of a chunk are the content words of its neighbourhood,
  the 20 tokens before it and the 20 after it in its article: words found in at least 5
  chunks, the 100 most widespread words left out (8,456 labels, about 17 per row).

Systems, each fitted in a child process of its own (so that its peak RSS is its own),
all on the same text, 2 threads each:

- sknce: ``make_pipeline(CountVectorizer(token_pattern=r"\\S+"),
  ConditionalNCEClassifier(n_jobs=2))`` fitted on the strings and the sparse label
  indicator (the vectorizer's fit timed too); ``predict_topk(X, 5)``; where the fit
  has a co-occurrence term, also (untimed, ``without_term``) the precision of the same
  network without it;
- fastText ``loss="ova"``, reading a training file written before the clock starts
  (one ``__label__`` per label of the row); the top 5 per line through the single-line
  binding (its batch form returns wrong probabilities under numpy 2);
- napkinxc ``PLT()`` and ``BR()`` and omikuji (``Model.default_hyper_param()``,
  Parabel-like trees) on ``TfidfVectorizer`` features, the vectorizer timed in the fit;
  omikuji reads its training file (written before the clock starts) and predicts one
  row per call, its Python binding's only form;
- ``OneVsRestClassifier(LogisticRegression())`` on the same tf-idf features
  (``n_jobs=2``, the indicator given dense), on ``keywords`` only: at 8,456 labels it
  would fit 8,456 logistic regressions.

Figures: precision@1, @3, @5 (share of the top k that are labels of the row, mean
over test rows), nDCG@5, fit wall and CPU seconds (the child's own), predict wall
seconds per 1,000 test rows (the top 5, features included), the child's peak RSS. The
repeats are interleaved (every system once, then every system again); the load
average is recorded at the start and end of each repeat.

Usage::

    flock /tmp/sknce-bench.lock python benchmarks/bench_multilabel.py
    python benchmarks/bench_multilabel.py --quick      # a quarter of the rows, 1 repeat
    python benchmarks/bench_multilabel.py --tasks keywords --systems sknce omikuji

The default run leaves out ``sknce-all-rows`` (the defaults without early stopping's
held-out rows) and ``sknce-no-term`` (the defaults without the co-occurrence term,
``cooccurrence_weight=0``); name them in ``--systems`` to compare.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import pickle
import resource
import subprocess
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
TOKENS = r"\S+"


# --- tasks ------------------------------------------------------------------------------
def _chunks(article, chunk: int) -> list[tuple[int, int]]:
    return [(s, s + chunk) for s in range(0, len(article) - chunk + 1, chunk)]


def _split(texts, label_sets, vocabulary, seed: int) -> dict:
    order = np.random.default_rng(seed).permutation(len(texts))
    n_train = int(round(0.8 * len(texts)))
    train, test = order[:n_train], order[n_train:]
    return {
        "X_train": [texts[i] for i in train],
        "L_train": [label_sets[i] for i in train],
        "X_test": [texts[i] for i in test],
        "L_test": [label_sets[i] for i in test],
        "vocabulary": list(vocabulary),
    }


def keywords_task(chunk: int = 40, n_keywords: int = 5, seed: int = 0) -> dict:
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
        for start, stop in _chunks(art, chunk):
            texts.append(" ".join(art[start:stop]))
            label_sets.append(sorted(index[w] for w in words))
    return _split(texts, label_sets, vocabulary, seed)


def neighbours_task(
    chunk: int = 40, reach: int = 20, min_chunks: int = 5, n_common: int = 100, seed: int = 0
) -> dict:
    """Rows: ``chunk``-token pieces; labels: the content words within ``reach`` tokens
    before and after the piece in its article.

    Content words: found in at least ``min_chunks`` pieces, the ``n_common`` most
    widespread left out.
    """
    articles = wiki_articles()
    pieces = [(art, start, stop) for art in articles for start, stop in _chunks(art, chunk)]
    df = Counter(w for art, start, stop in pieces for w in set(art[start:stop]))
    common = {w for w, _ in df.most_common(n_common)}
    vocabulary = sorted(w for w, c in df.items() if c >= min_chunks and w not in common)
    index = {w: i for i, w in enumerate(vocabulary)}
    texts, label_sets = [], []
    for art, start, stop in pieces:
        around = art[max(0, start - reach) : start] + art[stop : stop + reach]
        texts.append(" ".join(art[start:stop]))
        label_sets.append(sorted({index[w] for w in around if w in index}))
    return _split(texts, label_sets, vocabulary, seed)


TASKS = {"keywords": keywords_task, "neighbours": neighbours_task}


def indicator(label_sets, n_labels: int) -> sp.csr_matrix:
    """The sparse 0/1 indicator of lists of label indices."""
    indptr = np.cumsum([0] + [len(s) for s in label_sets])
    indices = np.fromiter((i for s in label_sets for i in s), dtype=np.int64, count=indptr[-1])
    data = np.ones(indptr[-1], dtype=np.int8)
    return sp.csr_matrix((data, indices, indptr), shape=(len(label_sets), n_labels))


def ranking_scores(top: np.ndarray, label_sets) -> dict:
    """``P@k`` for k in ``KS`` and nDCG@5 of the top labels of each row (-1: none)."""
    k_max = max(KS)
    hits = np.array(
        [[label in set(labels) for label in row[:k_max]] for row, labels in zip(top, label_sets)],
        dtype=np.float64,
    )
    out = {f"P@{k}": float(hits[:, :k].sum(axis=1).mean() / k) for k in KS}
    gains = 1.0 / np.log2(np.arange(2, k_max + 2))
    ideal = np.array([gains[: min(len(s), k_max)].sum() for s in label_sets])
    dcg = hits @ gains
    out["nDCG@5"] = float(np.mean(np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)))
    return out


# --- the systems (each runs in a child process) -------------------------------------------
def _clock():
    return time.perf_counter(), time.process_time()


def _since(start) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def _tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(token_pattern=TOKENS, lowercase=False, dtype=np.float32)


def run_sknce(data, seed: int, work: Path, params: dict | None = None) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    from sknce import ConditionalNCEClassifier

    def model(**extra):
        return make_pipeline(
            CountVectorizer(token_pattern=TOKENS, lowercase=False),
            ConditionalNCEClassifier(n_jobs=THREADS, random_state=seed, **extra),
        )

    # untimed: the process's first fit loads torch's stack and the compiled kernels
    warm = model(**(params or {}))
    warm.set_params(conditionalnceclassifier__max_epochs=1)
    warm.fit(data["X_train"][:200], indicator(data["L_train"][:200], len(data["vocabulary"])))
    Y = indicator(data["L_train"], len(data["vocabulary"]))
    pipe = model(**(params or {}))
    start = _clock()
    pipe.fit(data["X_train"], Y)
    fit_s, fit_cpu_s = _since(start)
    start = _clock()
    top, _ = pipe[-1].predict_topk(pipe[0].transform(data["X_test"]), max(KS))
    predict_s = _since(start)[0]
    # paired (untimed): the same network without its co-occurrence term
    clf, without = pipe[-1], None
    if getattr(clf.plan_, "cooccurrence", 0):
        bare = copy.copy(clf)
        bare.plan_ = dataclasses.replace(clf.plan_, cooccurrence=0.0)
        without, _ = bare.predict_topk(pipe[0].transform(data["X_test"]), max(KS))
    return {
        "fit_s": fit_s,
        "fit_cpu_s": fit_cpu_s,
        "predict_s": predict_s,
        "top": top,
        "top_without_term": without,
        "epochs": pipe[-1].n_iter_,  # the refit's own, after a hold-out
        "held_out_epochs": len(getattr(pipe[-1], "selection_history_", [])),
        "cooccurrence_weight": getattr(pipe[-1].plan_, "cooccurrence", None),
    }


def run_fasttext(data, seed: int, work: Path, params: dict) -> dict:
    """fastText ``loss="ova"``; ``params`` by task (a task absent: the defaults)."""
    import fasttext

    params = params.get(data["task"], {})
    path = work / "fasttext_train.txt"
    with open(path, "w", encoding="utf-8") as f:
        for text, labels in zip(data["X_train"], data["L_train"]):
            f.write("".join(f"__label__{i} " for i in labels) + text + "\n")
    start = _clock()
    model = fasttext.train_supervised(
        input=str(path), loss="ova", thread=THREADS, verbose=0, seed=seed, **params
    )
    fit_s, fit_cpu_s = _since(start)
    prefix = len("__label__")
    start = _clock()
    top = []
    for text in data["X_test"]:
        pairs = model.f.predict(text + "\n", max(KS), 0.0, "strict")
        names = [int(name[prefix:]) for _, name in pairs]
        top.append(names + [-1] * (max(KS) - len(names)))
    predict_s = _since(start)[0]
    return {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "predict_s": predict_s, "top": np.asarray(top)}


def run_napkinxc(data, seed: int, work: Path, kind: str) -> dict:
    from napkinxc import models

    start = _clock()
    vectorizer = _tfidf()
    X = vectorizer.fit_transform(data["X_train"])
    model_class = getattr(models, kind)
    extra = {"seed": seed} if kind == "PLT" else {}
    model = model_class(str(work / f"napkinxc_{kind}"), threads=THREADS, **extra)
    model.fit(X, data["L_train"])
    fit_s, fit_cpu_s = _since(start)
    start = _clock()
    predicted = model.predict(vectorizer.transform(data["X_test"]), top_k=max(KS))
    predict_s = _since(start)[0]
    top = np.array([list(p) + [-1] * (max(KS) - len(p)) for p in predicted])
    return {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "predict_s": predict_s, "top": top}


def run_omikuji(data, seed: int, work: Path) -> dict:
    import omikuji

    start = _clock()
    vectorizer = _tfidf()
    X = vectorizer.fit_transform(data["X_train"])
    vectorize_s, vectorize_cpu_s = _since(start)
    # the extreme-classification repository's format, which omikuji trains from
    path = work / "omikuji_train.txt"
    with open(path, "w") as f:
        f.write(f"{X.shape[0]} {X.shape[1]} {len(data['vocabulary'])}\n")
        for i, labels in enumerate(data["L_train"]):
            row = X[i]
            features = " ".join(f"{j}:{v:.6g}" for j, v in zip(row.indices, row.data))
            f.write(",".join(map(str, labels)) + " " + features + "\n")
    hyper = omikuji.Model.default_hyper_param()
    start = _clock()
    model = omikuji.Model.train_on_data(str(path), hyper, n_threads=THREADS)
    train_s, train_cpu_s = _since(start)
    start = _clock()
    X_test = vectorizer.transform(data["X_test"])
    top = []
    for i in range(X_test.shape[0]):
        row = X_test[i]
        predicted = model.predict(list(zip(row.indices.tolist(), row.data.tolist())), max(KS))
        names = [label for label, _ in predicted]
        top.append(names + [-1] * (max(KS) - len(names)))
    predict_s = _since(start)[0]
    return {
        "fit_s": vectorize_s + train_s,
        "fit_cpu_s": vectorize_cpu_s + train_cpu_s,
        "predict_s": predict_s,
        "top": np.asarray(top),
    }


def run_ovr(data, seed: int, work: Path) -> dict:
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    # dense int: OneVsRestClassifier fitted on a sparse int8 indicator ranks at chance
    # (sklearn 1.9; the same data dense gives the figures reported)
    Y = indicator(data["L_train"], len(data["vocabulary"])).toarray().astype(np.int64)
    start = _clock()
    vectorizer = _tfidf()
    model = OneVsRestClassifier(LogisticRegression(), n_jobs=THREADS)
    with warnings.catch_warnings():  # labels absent from the training rows: constants
        warnings.simplefilter("ignore", UserWarning)
        model.fit(vectorizer.fit_transform(data["X_train"]), Y)
    fit_s, fit_cpu_s = _since(start)
    start = _clock()
    X_test = vectorizer.transform(data["X_test"])
    top = []
    for first in range(0, X_test.shape[0], 1000):  # (1000, n_labels) float64 blocks
        proba = model.predict_proba(X_test[first : first + 1000])
        top.append(np.argsort(-proba, axis=1, kind="stable")[:, : max(KS)])
    predict_s = _since(start)[0]
    return {"fit_s": fit_s, "fit_cpu_s": fit_cpu_s, "predict_s": predict_s, "top": np.vstack(top)}


SYSTEMS = {
    "sknce": ("ConditionalNCEClassifier() defaults", run_sknce, {}),
    # the defaults hold out 10% of the rows for early stopping: what training on all costs
    "sknce-all-rows": (
        "ConditionalNCEClassifier(early_stopping=False)",
        run_sknce,
        {"params": {"early_stopping": False}},
    ),
    # main's model: the scores without the co-occurrence term
    "sknce-no-term": (
        "ConditionalNCEClassifier(cooccurrence_weight=0)",
        run_sknce,
        {"params": {"cooccurrence_weight": 0}},
    ),
    "fasttext": ("fastText ova defaults", run_fasttext, {"params": {}}),
    # lr=0.5 diverges (NaN) on neighbours; 0.2 is the best of 0.05-0.2 there
    "fasttext-tuned": (
        "fastText ova, epoch=25, lr=0.5 (neighbours: lr=0.2)",
        run_fasttext,
        {"params": {"keywords": {"epoch": 25, "lr": 0.5}, "neighbours": {"epoch": 25, "lr": 0.2}}},
    ),
    "plt": ("napkinxc PLT() defaults", run_napkinxc, {"kind": "PLT"}),
    "br": ("napkinxc BR() defaults", run_napkinxc, {"kind": "BR"}),
    "omikuji": ("omikuji default_hyper_param()", run_omikuji, {}),
    "ovr": ("OneVsRest(LogisticRegression()), tf-idf", run_ovr, {}),
}
#: Systems left out of a task, and why.
SKIPPED = {("neighbours", "ovr"): "8,456 logistic regressions: minutes per fit"}
#: Systems run in the first repeat only on a task (minutes of CPU per fit there).
ONCE = {("neighbours", "br"), ("neighbours", "fasttext-tuned")}


def child(system: str, task_file: str, seed: int, out: str) -> None:
    """Run one system on one task in this process and write its figures as JSON."""
    with open(task_file, "rb") as f:
        data = pickle.load(f)
    _, runner, options = SYSTEMS[system]
    with tempfile.TemporaryDirectory() as tmp:
        result = runner(data, seed, Path(tmp), **options)
    top = result.pop("top")
    result.update(ranking_scores(top, data["L_test"]))
    without = result.pop("top_without_term", None)
    if without is not None:
        result["without_term"] = ranking_scores(without, data["L_test"])
    result["predict_s_per_1k"] = result.pop("predict_s") / len(data["X_test"]) * 1000
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    Path(out).write_text(json.dumps(result))


def run_child(system: str, task_file: Path, seed: int, work: Path) -> dict:
    """The figures of one child run, or ``{"error": ...}`` with its last line of output."""
    out = work / f"{system}-{seed}.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "MKL_NUM_THREADS": str(THREADS)}
    command = [sys.executable, __file__, "--child", system, str(task_file), str(seed), str(out)]
    # the libraries' progress bars (omikuji's, fastText's) stay out of the table
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        return {"error": lines[-1]}
    return json.loads(out.read_text())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument(
        "--systems",
        nargs="+",
        default=[s for s in SYSTEMS if s not in ("sknce-all-rows", "sknce-no-term")],
        choices=list(SYSTEMS),
    )
    parser.add_argument("--quick", action="store_true", help="a quarter of the rows, 1 repeat")
    parser.add_argument("--name", default="bench_multilabel")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        system, task_file, seed, out = args.child
        child(system, task_file, int(seed), out)
        return
    repeats = 1 if args.quick else args.repeats
    runs, loads, info = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = {}
        for task in args.tasks:
            data = TASKS[task]()
            if args.quick:
                data = {k: v if k == "vocabulary" else v[::4] for k, v in data.items()}
            data["task"] = task
            files[task] = work / f"{task}.pkl"
            files[task].write_bytes(pickle.dumps(data))
            info[task] = {
                "n_train": len(data["X_train"]),
                "n_test": len(data["X_test"]),
                "n_labels": len(data["vocabulary"]),
                "labels_per_row": float(np.mean([len(s) for s in data["L_train"]])),
            }
            print(task, info[task], flush=True)
        for repeat in range(repeats):
            loads.append({"repeat": repeat, "start": os.getloadavg()})
            for task in args.tasks:
                for system in args.systems:
                    if (task, system) in SKIPPED or (repeat and (task, system) in ONCE):
                        continue
                    result = run_child(system, files[task], repeat, work)
                    runs.append({"task": task, "system": system, "repeat": repeat, **result})
                    print(
                        {
                            k: round(v, 4) if isinstance(v, float) else v
                            for k, v in runs[-1].items()
                        },
                        flush=True,
                    )
            loads[-1]["end"] = os.getloadavg()
    keys = (
        "P@1",
        "P@3",
        "P@5",
        "nDCG@5",
        "fit_s",
        "fit_cpu_s",
        "predict_s_per_1k",
        "peak_rss_mib",
    )
    summary = []
    for task in args.tasks:
        for system in args.systems:
            mine = [r for r in runs if r["task"] == task and r["system"] == system]
            if not mine:
                continue
            row = {"task": task, "system": SYSTEMS[system][0], "runs": len(mine)}
            failed = [r["error"] for r in mine if "error" in r]
            mine = [r for r in mine if "error" not in r]
            for key in keys:
                row[key] = float(np.mean([r[key] for r in mine])) if mine else float("nan")
            if failed:
                row["failed"] = f"{len(failed)}: {failed[0]}"
            summary.append(row)
    report(
        args.name + ("_quick" if args.quick else ""),
        summary,
        title="Multi-label tagging: precision@k, nDCG@5, fit s (wall, CPU), predict s per 1k "
        f"rows, peak RSS MiB; mean over runs; load {loads}",
        params={
            "tasks": info,
            "repeats": repeats,
            "threads": THREADS,
            "loadavg": loads,
            "skipped": {f"{t}/{s}": why for (t, s), why in SKIPPED.items()},
            "first_repeat_only": sorted(f"{t}/{s}" for t, s in ONCE),
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
