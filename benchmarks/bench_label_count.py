"""ConditionalNCEClassifier at every label count against the tools a user would try (issue 29).

Every system runs as a user would run it, at its defaults, in the same process,
2 threads where it takes threads, interleaved (each repeat runs every system of a
task in turn, so a drift of the machine's speed lands on all of them):

- ``sknce defaults``: ``make_pipeline(CountVectorizer(...), ConditionalNCEClassifier(n_jobs=2))``;
- ``sknce MLP``: the same with ``hidden_layer_sizes=(256,)`` (the MLP path);
- ``tf-idf + LinearSVC`` / ``SGDClassifier`` / ``LogisticRegression``:
  ``make_pipeline(TfidfVectorizer(...), estimator)`` (SGD with ``n_jobs=2``);
- ``fastText hs`` (``train_supervised`` defaults), ``fastText ns``, ``fastText tutorial``
  (``loss="softmax", epoch=25, lr=1.0``), ``thread=2``, on a training file written
  before the clock starts.

The vectorizers of a task take the same tokens for every system: whitespace
tokens of the pre-tokenised Wikipedia tasks (as fastText reads them), scikit-learn's
default tokens for the raw newsgroup messages (fastText then reads them lowercased,
one line per message).

Tasks (``_label_count_tasks.py`` and ``bench_vs_fasttext.py`` build them from
gensim's shipped test data):

- ``article`` (105 classes), ``centre`` (7,650), ``synthetic-1e5`` (as in
  ``bench_vs_fasttext.py``);
- ``newsgroups`` (2 classes, 200 messages) and ``wiki10`` (the first 10 stemmed
  Wikipedia articles, 400 chunks): the few-class tasks, 5 stratified folds each;
- ``wiki_stemmed`` (106 stemmed articles, 4,074 chunks, 80/20): a corpus the
  defaults were not tuned on;
- ``centre-<n>k`` / ``centre-all-<n>k``: the centre task's first ``n`` thousand
  training windows (``-all``: every training word a label), and
  ``synthetic-1e5-100k``, ``synthetic-1e6-50k``, ``synthetic-1e6-100k``: planted
  tables of 10^5 / 10^6 labels at 50,000-100,000 rows: fits of the factored bag
  smaller than ``centre`` and ``synthetic-1e5`` (``centre-80k``, ``centre-100k``,
  ``centre-all-60k`` and these take it at the defaults; ``centre-60k`` and smaller,
  the linear model);
- ``article-<n>tok``: the article of each ``n``-token chunk (``article``: 40 tokens);
- ``article-K<k>``: the article task merged or refined to ``k`` classes, and
  ``centre-K<k>``: the centre word among the ``k`` most frequent (60,000 training
  windows at most): the label-count sweep (``--sweep``).

Figures per run: fit wall and CPU seconds (the vectorizer's fit included),
accuracy, top-5 accuracy, the mean test log-likelihood of the true label (systems
with probabilities; fastText's exactly from its matrices), predict seconds per
10,000 rows (the top 10: sknce ``predict_topk``, fastText ``predict(k=10)``). The
summary gives means and ranges over repeats (and folds), the fit time over
``tf-idf + LinearSVC``'s and fastText ``hs``'s of the same task, and for each
sweep (``--sweep``, or the label counts ``--tasks`` names) the accuracy drops
between neighbouring label counts against ``SGDClassifier``'s (the ruler).
``--plot`` draws the sweep into
``benchmarks/results/<name>_sweep.png``. ``--from JSON ...`` runs nothing: it summarises
(and with ``--plot`` draws) the runs saved in those files together, as if one run had
made them (repeats or label counts measured in several holds of the lock; the runs of a
task and system in several files count as its repeats).

``--test-rows N`` scores the planted table's systems (``synthetic-1e5``) again on ``N``
rows drawn afresh from the same table in each repeat (``_planted_eval.py``), beside its
10,000 test rows: accuracy and log-likelihood with their standard errors, their
expectations over the table itself (no test sample), the paired differences between the
systems of a repeat on the same rows (McNemar's counts: the rows one system gets right
and the other wrong), and the Bayes classifier's figures. Each system is scored once on
the table's distinct inputs, so ``N`` costs no predict time. ``N`` must be a positive
integer; it needs a planted task in ``--tasks`` and runs neither with ``--from`` nor
with ``--trees``.

``--trees PATH=LABEL ...`` compares checkouts of sknce (e.g. a snapshot of ``main``
before a change, and this one after it): each repeat runs one process per tree in
turn (before, after, before, after...), each importing sknce from its tree and
running every system of every task, so the two trees' ``sknce defaults`` are
interleaved and each is timed beside the other systems of its own process; their
rows are named ``sknce defaults [LABEL]``.

Usage::

    python benchmarks/bench_label_count.py                       # every task, 3 repeats
    python benchmarks/bench_label_count.py --tasks article newsgroups --repeats 1
    python benchmarks/bench_label_count.py --sweep article --repeats 3 --tag sweep
    python benchmarks/bench_label_count.py --quick               # small, for development
    python benchmarks/bench_label_count.py --tasks article --trees /tmp/main=before .=after
    python benchmarks/bench_label_count.py --tasks synthetic-1e5 --test-rows 200000
    python benchmarks/bench_label_count.py --from results/a.json results/b.json --plot --tag ab
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import RESULTS, report  # noqa: E402
from _label_count_tasks import article_k, centre_k, few_class_folds  # noqa: E402
from _planted_eval import planted_sample  # noqa: E402
from bench_vs_fasttext import (  # noqa: E402
    THREADS,
    article_task,
    centre_task,
    fasttext_log_likelihood,
    fasttext_log_proba,
    print_row,
    result_name,
    synthetic_task,
    warm_up,
)

TOP = 5
#: The label counts of the sweeps.
SWEEP = {
    "article": (
        *(2, 5, 10, 20, 50, 105, 128, 129, 200, 500),
        # steps of 250 to 2,000 classes: the excess drop over the ruler is a drop between
        # neighbours, and steps of 500 sum that of two (both grids are reported)
        *(750, 1000, 1250, 1500, 1750, 2000, 2500, 3000),
        # K4525 / K4530: 4,408 / 4,417 classes with a training chunk, either side of the
        # linear table's cap (4,409 classes of 30,439 features)
        *(3200, 4000, 4525, 4530, 6000),
    ),
    "centre": (2, 10, 100, 500, 1000, 2000, 3000, 5000),
}
WHITESPACE = r"\S+"
#: A task of a sweep: its kind and label count.
SWEPT = re.compile(r"(article|centre)-K(\d+)")
#: The planted tasks: (labels, training rows, test rows, inputs), full and ``--quick``.
#: The smaller tables are fits of the factored bag at 50,000-100,000 rows (the 10^6
#: table is the guide's third planted task, ``bench_vs_fasttext.py``'s).
PLANTED = {
    "synthetic-1e5": {False: (10**5, 200_000, 10_000, 200), True: (10**5, 20000, 2000, 20)},
    "synthetic-1e5-100k": {False: (10**5, 100_000, 10_000, 200), True: (10**5, 20000, 2000, 20)},
    "synthetic-1e6-50k": {False: (10**6, 50_000, 10_000, 40), True: (10**6, 20000, 2000, 20)},
    "synthetic-1e6-100k": {False: (10**6, 100_000, 10_000, 40), True: (10**6, 20000, 2000, 20)},
}
#: The centre task's first ``N`` thousand training windows (a quarter as many test
#: windows); ``-all``: every training word a label (``min_count=1``).
CENTRE_ROWS = re.compile(r"centre(-all)?-(\d+)k")
#: The article of each ``n``-token chunk (the article task's 40 tokens: 9,014 chunks).
ARTICLE_CHUNK = re.compile(r"article-(\d+)tok")


# --- tasks ------------------------------------------------------------------------------
def task_splits(task: str, quick: bool, cache: dict):
    """The splits ``[(X_train, y_train, X_test, y_test)]`` of a task and its token pattern."""
    if task == "article":
        return [article_task()], WHITESPACE
    match = ARTICLE_CHUNK.fullmatch(task)
    if match:
        return [article_task(chunk=int(match.group(1)))], WHITESPACE
    if task in ("newsgroups", "wiki10"):
        name = "newsgroups" if task == "newsgroups" else "wiki_stemmed-10"
        pattern = None if task == "newsgroups" else WHITESPACE
        return list(few_class_folds(name)), pattern
    if task == "wiki_stemmed":
        (split,) = list(few_class_folds("wiki_stemmed-106", n_splits=5))[:1]
        return [split], WHITESPACE
    match = SWEPT.fullmatch(task)
    if match:
        kind, k = match.group(1), int(match.group(2))
        if kind == "article":
            return [article_k(k)], WHITESPACE
        if "centre" not in cache:
            cache["centre"] = centre_task(max_train=40000 if quick else None)
        return [centre_k(k, cache["centre"], max_train=20000 if quick else 60000)], WHITESPACE
    if task == "centre":
        return [centre_task(max_train=40000 if quick else None)], WHITESPACE
    match = CENTRE_ROWS.fullmatch(task)
    if match:
        n_train = min(int(match.group(2)) * 1000, 40000 if quick else 10**9)
        min_count = 1 if match.group(1) else 5
        return [centre_task(min_count=min_count, max_train=n_train)], WHITESPACE
    if task in PLANTED:
        n_labels, n_train, n_test, m_x = PLANTED[task][quick]
        return [synthetic_task(n_labels, n_train, n_test, m_x=m_x)], WHITESPACE
    raise ValueError(f"unknown task {task!r}")


# --- systems ----------------------------------------------------------------------------
def _vectorizer(kind: str, pattern: str | None):
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    options = {} if pattern is None else {"token_pattern": pattern, "lowercase": False}
    return (TfidfVectorizer if kind == "tfidf" else CountVectorizer)(**options)


def _scores_report(classes, scores, y_test, log_proba=None) -> dict:
    """Accuracy and top-5 from ``scores`` (rows x classes), log-likelihood from ``log_proba``."""
    known = np.isin(y_test, classes)
    index = np.searchsorted(classes, y_test)
    top = np.argsort(-scores, axis=1)[:, :TOP]
    hits = (top == np.where(known, index, -1)[:, None]) & known[:, None]
    out = {"accuracy": float(np.mean(hits[:, 0])), "top5": float(np.mean(hits.any(axis=1)))}
    if log_proba is not None:
        rows = np.flatnonzero(known)
        out["log_lik"] = float(np.mean(log_proba[rows, index[rows]]))
    return out


def run_sklearn(estimator, data, pattern) -> dict:
    from sklearn.pipeline import make_pipeline

    X_train, y_train, X_test, y_test = data
    model = make_pipeline(_vectorizer("tfidf", pattern), estimator)
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    classes = model.classes_
    if len(classes) == 2 and not hasattr(estimator, "predict_proba"):
        margin = model.decision_function(X_test)
        scores = np.column_stack([-margin, margin])
    else:
        scores = model.decision_function(X_test)
        scores = scores.reshape(len(X_test), -1) if scores.ndim == 1 else scores
    log_proba = None
    if hasattr(estimator, "predict_proba"):
        log_proba = np.log(np.maximum(model.predict_proba(X_test), 1e-300))
        scores = log_proba
    return {"fit_s": wall, "fit_cpu_s": cpu, **_scores_report(classes, scores, y_test, log_proba)}


def run_sknce(params: dict, data, pattern, seed: int, probe=None) -> dict:
    from sklearn.pipeline import make_pipeline

    from sknce import ConditionalNCEClassifier

    X_train, y_train, X_test, y_test = data
    model = make_pipeline(
        _vectorizer("counts", pattern),
        ConditionalNCEClassifier(random_state=seed, n_jobs=THREADS, **params),
    )
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    vectorizer, clf = model[0], model[-1]
    start = time.perf_counter()
    X = vectorizer.transform(X_test)
    top, top_log_proba = clf.predict_topk(X, min(10, len(clf.classes_)))
    predict_s = (time.perf_counter() - start) / len(X_test) * 1e4
    known = np.isin(y_test, clf.classes_)
    hits = top == y_test[:, None]
    out = {
        "fit_s": wall,
        "fit_cpu_s": cpu,
        "accuracy": float(np.mean(hits[:, 0])),
        "top5": float(np.mean(hits[:, :TOP].any(axis=1))),
        "predict_s_per_10k": predict_s,
        "epochs": clf.n_iter_,
        "regime": clf.plan_.regime,
        "n_buckets": clf.plan_.n_buckets,
    }
    rows = np.flatnonzero(known)[:5000]
    index = np.searchsorted(clf.classes_, y_test[rows])
    step = max(1, 20_000_000 // len(clf.classes_))
    ll = [
        clf.predict_log_proba(X[rows[i : i + step]])[
            np.arange(len(rows[i : i + step])), index[i : i + step]
        ]
        for i in range(0, len(rows), step)
    ]
    out["log_lik"] = float(np.mean(np.concatenate(ll))) if ll else float("nan")
    if probe is not None:
        X = vectorizer.transform(probe)
        out["probe"] = (clf.classes_, clf.predict_log_proba(X), clf.predict(X))
    return out


def _fasttext_line(text: str, pattern: str | None) -> str:
    return " ".join(text.split()) if pattern else " ".join(text.lower().split())


def run_fasttext(params: dict, data, pattern, tmp: Path, probe=None) -> dict:
    import fasttext

    X_train, y_train, X_test, y_test = data
    path = tmp / "train.txt"
    with open(path, "w", encoding="utf-8") as f:
        for text, label in zip(X_train, y_train):
            f.write(f"__label__{label} {_fasttext_line(text, pattern)}\n")
    wall, cpu = time.perf_counter(), time.process_time()
    model = fasttext.train_supervised(input=str(path), thread=THREADS, verbose=0, **params)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    lines = [_fasttext_line(t, pattern) for t in X_test]
    start = time.perf_counter()
    top = [model.f.predict(line + "\n", 10, 0.0, "strict") for line in lines]
    predict_s = (time.perf_counter() - start) / len(lines) * 1e4
    prefix = len("__label__")
    hits = np.array(
        [
            [name[prefix:] == label for _, name in pairs[:TOP]]
            + [False] * (TOP - len(pairs[:TOP]))
            for pairs, label in zip(top, y_test)
        ]
    )
    # as sknce's: the rows whose label has a training row (every row of the full tasks)
    known = np.flatnonzero(np.isin(y_test, np.unique(y_train)))
    rows = np.random.default_rng(0).permutation(known)[:5000]
    ll = fasttext_log_likelihood(model, [lines[i] for i in rows], y_test[rows], params["loss"])
    out = {
        "fit_s": wall,
        "fit_cpu_s": cpu,
        "accuracy": float(np.mean(hits[:, 0])),
        "top5": float(np.mean(hits.any(axis=1))),
        "log_lik": float(np.mean(ll)),
        "predict_s_per_10k": predict_s,
    }
    if probe is not None:
        lines = [_fasttext_line(t, pattern) for t in probe]
        top1 = [model.f.predict(line + "\n", 1, 0.0, "strict")[0][1][prefix:] for line in lines]
        out["probe"] = (*fasttext_log_proba(model, lines, params["loss"]), top1)
    return out


def _sklearn(name: str):
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.svm import LinearSVC

    return {
        "tf-idf + LinearSVC": LinearSVC,
        "tf-idf + SGDClassifier": lambda: SGDClassifier(n_jobs=THREADS),
        "tf-idf + LogisticRegression": LogisticRegression,
    }[name]()


#: name -> (kind, parameters)
SYSTEMS = {
    "sknce defaults": ("sknce", {}),
    "sknce MLP": ("sknce", {"hidden_layer_sizes": (256,)}),
    "tf-idf + LinearSVC": ("sklearn", None),
    "tf-idf + SGDClassifier": ("sklearn", None),
    "tf-idf + LogisticRegression": ("sklearn", None),
    "fastText hs": ("fasttext", {"loss": "hs"}),
    "fastText ns": ("fasttext", {"loss": "ns"}),
    "fastText tutorial": ("fasttext", {"loss": "softmax", "epoch": 25, "lr": 1.0}),
}


def task_systems(task: str) -> list[str]:
    """The systems run on ``task``: the slow ones only where they finish in minutes."""
    if task in ("centre", *PLANTED) or CENTRE_ROWS.fullmatch(task):
        return ["fastText hs", "fastText ns", "sknce defaults"]
    systems = ["sknce defaults", "tf-idf + LinearSVC", "tf-idf + SGDClassifier", "fastText hs"]
    systems.append("fastText tutorial")
    match = SWEPT.fullmatch(task)
    k = int(match.group(2)) if match else 0
    if not match or k <= 105:
        systems.append("tf-idf + LogisticRegression")
    if not match:
        systems.append("sknce MLP")
    if match and match.group(1) == "centre":
        # one-vs-rest over thousands of classes and 60,000 windows: hours on 2 cores
        systems = [s for s in systems if k <= 1000 or s not in ("tf-idf + LinearSVC",)]
        if k > 1000:
            systems.remove("fastText tutorial")
    return systems


def run_system(name: str, data, pattern, seed: int, tmp: Path, probe=None) -> dict:
    """One fit and its figures; with ``probe`` (texts), also ``"probe"``: the labels, the
    log-probability of each for each text, and the predicted label of each text."""
    kind, params = SYSTEMS[name]
    if kind == "sknce":
        return run_sknce(params, data, pattern, seed, probe)
    if kind == "fasttext":
        return run_fasttext(params, data, pattern, tmp, probe)
    if probe is not None:
        raise ValueError(f"{name} cannot be scored on a planted sample (no probabilities)")
    return run_sklearn(_sklearn(name), data, pattern)


# --- summaries --------------------------------------------------------------------------
KEYS = ("fit_s", "fit_cpu_s", "accuracy", "top5", "log_lik", "predict_s_per_10k")
#: The figures of ``--test-rows`` (``_planted_eval.py``).
PLANTED_KEYS = (
    "planted_accuracy",
    "planted_accuracy_se",
    "planted_log_lik",
    "planted_log_lik_se",
    "expected_accuracy",
    "expected_log_lik",
)


def summarise(rows: list[dict]) -> list[dict]:
    """One row per (task, system): means and ranges over repeats and folds, time ratios."""
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["task"], row["system"]), []).append(row)
    out = []
    for (task, system), group in groups.items():
        entry = {"task": task, "system": system, "n": len(group)}
        for key in KEYS + PLANTED_KEYS:
            values = np.array([r[key] for r in group if key in r], dtype=float)
            if values.size:
                entry[key] = float(values.mean())
                if values.size > 1:
                    entry[key + "_range"] = f"{values.min():.4g}-{values.max():.4g}"
        for reference, label in (("tf-idf + LinearSVC", "svc"), ("fastText hs", "hs")):
            other = groups.get((task, reference))
            if other:
                entry[f"fit_vs_{label}"] = entry["fit_s"] / np.mean([r["fit_s"] for r in other])
                cpu = np.mean([r["fit_cpu_s"] for r in other])
                entry[f"cpu_vs_{label}"] = entry["fit_cpu_s"] / cpu
        out.append(entry)
    return out


def cliffs(summary: list[dict], kind: str, ruler: str = "tf-idf + SGDClassifier") -> list[dict]:
    """For neighbouring label counts of a sweep: sknce's accuracy drop less the ruler's."""

    def accuracy(system):
        found = {}
        for row in summary:
            match = re.fullmatch(rf"{kind}-K(\d+)", row["task"])
            if match and row["system"] == system:
                found[int(match.group(1))] = row["accuracy"]
        return found

    ours, theirs = accuracy("sknce defaults"), accuracy(ruler)
    ks = sorted(set(ours) & set(theirs))
    return [
        {
            "sweep": kind,
            "from_K": a,
            "to_K": b,
            "sknce_drop": ours[a] - ours[b],
            "ruler_drop": theirs[a] - theirs[b],
            "excess": (ours[a] - ours[b]) - (theirs[a] - theirs[b]),
        }
        for a, b in zip(ks, ks[1:])
    ]


def plot_sweeps(summary: list[dict], path: Path) -> None:
    """Accuracy against the label count, one panel per sweep, one line per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({m.group(1) for r in summary if (m := re.fullmatch(r"(\w+)-K\d+", r["task"]))})
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        lines: dict = {}
        for row in summary:
            match = re.fullmatch(rf"{kind}-K(\d+)", row["task"])
            if match:
                lines.setdefault(row["system"], []).append((int(match.group(1)), row["accuracy"]))
        for system, points in sorted(lines.items()):
            k, acc = zip(*sorted(points))
            style = {"lw": 2.5, "color": "black"} if system == "sknce defaults" else {"lw": 1}
            ax.plot(k, acc, marker="o", ms=3, label=system, **style)
        ax.set_xscale("log")
        ax.set_xlabel("number of classes K")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{kind} task, labels merged or refined to K")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"saved {path}")


def saved_runs(paths: list[str]) -> tuple[list[dict], list, list]:
    """The runs saved in the results ``paths``, and each file's load at start and end."""
    runs, starts, ends = [], [], []
    for path in paths:
        params = json.loads(Path(path).read_text())["params"]
        if "runs" not in params:
            raise ValueError(f"{path} holds no runs: is it a bench_label_count result?")
        runs += params["runs"]
        starts.append(params.get("load_start"))
        ends.append(params.get("load_end"))
    return runs, starts, ends


def _planted_scores(task: str, data, sample, probes: dict, rows: dict) -> list[dict]:
    """``--test-rows``: a repeat's systems scored on the fresh rows of ``sample``, each
    against every other on the same rows, and the Bayes classifier.

    ``probes``: system -> (labels, log-probabilities, predicted labels) on
    ``sample.inputs``; each system's row of ``rows`` gains its figures. Returns the Bayes
    classifier's figures and the pairs'.
    """
    where = {text: i for i, text in enumerate(sample.inputs)}
    test_x = np.array([where[text] for text in data[2]])
    repeat = next(iter(rows.values()))["repeat"]
    for name, (labels, log_proba, top1) in probes.items():
        # the distinct inputs' predictions must give the system's own test accuracy back
        again = float(np.mean(np.asarray(top1, dtype=object)[test_x] == data[3]))
        if abs(again - rows[name]["accuracy"]) > 1e-9:
            raise RuntimeError(
                f"{task} {name}: the accuracy from the distinct inputs ({again}) is not the "
                f"accuracy of the test rows ({rows[name]['accuracy']})"
            )
        rows[name].update(sample.score(repeat, name, labels, log_proba, top1))
    extra = [{"task": task, "repeat": repeat, "system": "Bayes", **sample.bayes()}]
    systems = sorted(probes, key=lambda name: not name.startswith("sknce"))  # sknce - others
    extra += [
        {"task": task, **sample.paired(repeat, a, b)}
        for i, a in enumerate(systems)
        for b in systems[i + 1 :]
    ]
    for row in [*(rows[name] for name in systems), *extra]:
        print_row(row)
    return extra


def run_tasks(tasks: list[str], args, planted: list | None = None) -> list[dict]:
    """Every run of every system of ``tasks``: ``args.repeats`` repeats from seed
    ``args.first_seed``, interleaved, one row each (with the load when it ended).

    With ``args.test_rows``, the planted tasks' runs are also scored on that many fresh
    rows of their table in each repeat (:func:`_planted_scores`), whose Bayes and paired
    figures are appended to ``planted``.
    """
    rows, cache = [], {}
    for task in tasks:
        splits, pattern = task_splits(task, args.quick, cache)
        systems = task_systems(task)
        if args.only is not None:
            systems = [s for s in systems if s in args.only]
        n_classes = len(set(splits[0][1]))
        print(
            {
                "task": task,
                "folds": len(splits),
                "n_classes": n_classes,
                "n_train": len(splits[0][0]),
                "systems": systems,
            },
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp:
            for repeat in range(args.first_seed, args.first_seed + args.repeats):
                for fold, data in enumerate(splits):
                    sample = probes = None
                    if args.test_rows is not None and task in PLANTED:
                        n_labels, _, _, m_x = PLANTED[task][args.quick]
                        sample = planted_sample(n_labels, m_x, args.test_rows, data[1], repeat)
                        probes = {}
                    repeat_rows = {}
                    for name in systems:
                        probe = None if sample is None else sample.inputs
                        result = run_system(name, data, pattern, repeat, Path(tmp), probe)
                        if sample is not None:
                            probes[name] = result.pop("probe")
                        row = {
                            "task": task,
                            "system": name,
                            "repeat": repeat,
                            "fold": fold,
                            "n_classes": n_classes,
                            **result,
                            "load": os.getloadavg()[0],
                        }
                        print_row(row)
                        rows.append(row)
                        repeat_rows[name] = row
                    if sample is not None:
                        planted += _planted_scores(task, data, sample, probes, repeat_rows)
    return rows


def run_trees(trees: list[str], argv: list[str], repeats: int) -> list[dict]:
    """The runs of ``--trees PATH=LABEL ...``: per repeat, one process per tree in turn,
    each with ``--tree PATH --repeats 1``; the sknce systems' rows renamed
    ``<system> [LABEL]``."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            for spec in trees:
                path, _, label = spec.partition("=")
                out = Path(tmp) / "rows.json"
                command = [sys.executable, __file__, *argv, "--tree", path]
                command += ["--repeats", "1", "--first-seed", str(repeat), "--rows-out", str(out)]
                print(f"--- repeat {repeat}, tree {label}: {path}", flush=True)
                subprocess.run(command, check=True)
                for row in json.loads(out.read_text()):
                    if row["system"].startswith("sknce"):
                        row["system"] = f"{row['system']} [{label or path}]"
                    rows.append({**row, "tree": label or path})
    return rows


def _without_trees(argv: list[str]) -> list[str]:
    """``argv`` less ``--trees`` and its values, and less ``--repeats N``."""
    out, skipping = [], False
    for arg in argv:
        if arg.startswith("--"):
            skipping = arg in ("--trees", "--repeats")
        if not skipping:
            out.append(arg)
    return out


def positive_int(text: str) -> int:
    """An argparse type: a positive integer, or a clear error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive: give 1 or more")
    return value


def planted_summary(planted: list[dict]) -> list[dict]:
    """``--test-rows``: per task and pair of systems (and the Bayes classifier), the means
    over repeats. The repeats' fresh rows are independent, so the standard error of a mean
    is the root of the summed squared errors over the number of repeats (test noise only;
    ``expected_accuracy`` of the runs has none)."""
    groups: dict = {}
    for row in planted:
        names = (row["system"],) if "system" in row else (row["a"], row["b"])
        key = (row["task"], *names)
        groups.setdefault(key, []).append(row)
    out = []
    for key, group in groups.items():
        entry = {"task": key[0], "pair": " - ".join(key[1:]), "repeats": len(group)}
        for name in ("planted_accuracy", "planted_log_lik", "accuracy_diff", "log_lik_diff"):
            if name in group[0]:
                entry[name] = float(np.mean([r[name] for r in group]))
                se = np.sqrt(np.sum([r[name + "_se"] ** 2 for r in group])) / len(group)
                entry[name + "_se"] = float(se)
        for name in ("a_only", "b_only", "expected_accuracy", "expected_log_lik"):
            if name in group[0]:
                entry[name] = float(np.mean([r[name] for r in group]))
        out.append(entry)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        nargs="*",
        default=["article", "newsgroups", "wiki10", "wiki_stemmed", "centre", "synthetic-1e5"],
    )
    parser.add_argument("--sweep", nargs="*", default=[], choices=sorted(SWEEP))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first repeat")
    parser.add_argument("--only", nargs="*", default=None, help="run only these systems")
    parser.add_argument("--quick", action="store_true", help="small data, 1 repeat")
    parser.add_argument("--plot", action="store_true", help="draw the sweeps")
    parser.add_argument(
        "--from", dest="saved", nargs="*", default=None, help="JSON ...: summarise saved runs"
    )
    parser.add_argument("--tag", default="")
    parser.add_argument(
        "--trees", nargs="*", default=None, help="PATH=LABEL ...: compare sknce checkouts"
    )
    parser.add_argument("--tree", default=None, help="import sknce from this checkout")
    parser.add_argument("--rows-out", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--test-rows",
        type=positive_int,
        default=None,
        help="N: score the planted tasks again on N fresh rows of their table per repeat",
    )
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.tree is not None:
        if "sknce" in sys.modules:
            raise RuntimeError("sknce was imported before --tree could choose its checkout")
        sys.path.insert(0, str(Path(args.tree).resolve()))
    repeats = 1 if args.quick else args.repeats
    tasks = list(args.tasks)
    for kind in args.sweep:
        tasks += [f"{kind}-K{k}" for k in SWEEP[kind]]
    if args.test_rows is not None:
        if args.saved is not None or args.trees:
            parser.error("--test-rows runs fits: it cannot summarise --from files or run --trees")
        if not any(task in PLANTED for task in tasks):
            parser.error(f"--test-rows needs a planted task in --tasks ({', '.join(PLANTED)})")
    planted: list[dict] = []
    load_start = os.getloadavg()
    warm_up_s = None
    if args.saved is not None:
        if not args.tag:
            parser.error("--from needs a --tag to name its summary")
        rows, load_start, load_end = saved_runs(args.saved)
        tasks, repeats = list(dict.fromkeys(row["task"] for row in rows)), None
    elif args.trees:
        rows = run_trees(args.trees, _without_trees(argv), repeats)
    else:
        warm_up_s = warm_up()
        print(f"warm-up fit (untimed below): {warm_up_s:.1f} s; load {load_start}", flush=True)
        args.repeats = repeats
        rows = run_tasks(tasks, args, planted)
    if args.rows_out is not None:
        Path(args.rows_out).write_text(json.dumps(rows, default=str))
        return
    if args.saved is None:
        load_end = os.getloadavg()
    summary = summarise(rows)
    name = result_name("bench_label_count", args.tag, args.quick)
    # the sweeps asked for, and those whose label counts --tasks names (article-K3200 ...)
    kinds = dict.fromkeys([*args.sweep, *(m.group(1) for t in tasks if (m := SWEPT.fullmatch(t)))])
    sweep_cliffs = [c for kind in kinds for c in cliffs(summary, kind)]
    report(
        name,
        summary,
        title="ConditionalNCEClassifier at every label count (2 threads each): means over "
        "repeats and folds; fit time over tf-idf + LinearSVC's and fastText hs's",
        params={
            "repeats": repeats,
            "threads": THREADS,
            "trees": args.trees,
            "warm_up_s": warm_up_s,
            "load_start": load_start,
            "load_end": load_end,
            "from": args.saved,
            "cliffs": sweep_cliffs,
            "test_rows": args.test_rows,
            "planted": planted,
            "planted_summary": planted_summary(planted),
            "runs": rows,
        },
    )
    if sweep_cliffs:
        from _common import format_table

        print("\nAccuracy drops between neighbouring label counts (sknce less the ruler)")
        print(format_table(sweep_cliffs))
    if planted:
        from _common import format_table

        print("\nThe planted table on fresh rows: means over repeats (a - b for the pairs)")
        print(format_table(planted_summary(planted)))
    print(f"load at start {load_start}, at end {load_end}")
    if args.plot and kinds:
        plot_sweeps(summary, RESULTS / f"{name}_sweep.png")


if __name__ == "__main__":
    main()
