"""Document representations on real text, each at its defaults, in the pipeline a user writes.

Tasks come from corpora shipped inside installed packages (``_real_data.py``: Wikipedia
chunks -> article, stemmed Wikipedia chunks -> article, newsgroups -> group, movie-review
sentences -> polarity). For every task and method:

1. the representation is fitted once, without labels, on all the task's documents
   (transductive, as in Tosh et al.'s semi-supervised protocol, Section 7.2), through
   ``make_pipeline(CountVectorizer(), representation)``; the fit is timed;
2. for each of ``--draws`` draws of ``m`` labelled documents per class (``--budgets``),
   ``LogisticRegression()`` is trained on their features and scored on all the other
   documents of the task;
3. the table shows the mean accuracy and a 95% Student-t interval over the draws.

Every estimator runs at its defaults (``random_state=0`` where it has one; ``n_jobs=1``
for ``ACEWord2Vec``, whose default uses every core): no per-method tuning, no stop
words, no feature scaling that a user would have to add.

Grouped sentences (``lee_sentences``) for the latent-class embedder are measured by
``bench_real_latent.py``.

``--baseline DIR`` adds the rows "DirectNCE, previous defaults" and "LandmarkNCE,
previous defaults": the two embedders at the defaults of the sknce source tree in ``DIR``
(e.g. ``git archive cef18c0 | tar -x -C /tmp/pre-engine``, the last commit before the
defaults for real text), run by this script in a second process that imports that tree.

Run::

    flock /tmp/sknce-bench.lock nice -n 10 .venv/bin/python benchmarks/bench_real_documents.py
    flock /tmp/sknce-bench.lock nice -n 10 .venv/bin/python benchmarks/bench_real_documents.py \
        --baseline /tmp/pre-engine
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import _common
import numpy as np
import torch
from _common import Timer, report
from _real_data import DOCUMENT_TASKS, Task, load_task
from scipy import stats
from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from sknce import ACEWord2Vec, DirectNCEEmbedder, LandmarkNCEEmbedder

#: name -> factory of an unfitted transformer of raw texts
DOCUMENT_METHODS: dict[str, Callable[[], object]] = {
    "tf-idf": lambda: make_pipeline(CountVectorizer(), TfidfTransformer()),
    "tf-idf+SVD-100": lambda: make_pipeline(
        CountVectorizer(), TfidfTransformer(), TruncatedSVD(100, random_state=0)
    ),
    "LDA-20": lambda: make_pipeline(
        CountVectorizer(), LatentDirichletAllocation(20, random_state=0)
    ),
    "LDA-50": lambda: make_pipeline(
        CountVectorizer(), LatentDirichletAllocation(50, random_state=0)
    ),
    "ACEWord2Vec (mean)": lambda: ACEWord2Vec(n_jobs=1, random_state=0),
    "DirectNCE": lambda: make_pipeline(CountVectorizer(), DirectNCEEmbedder(random_state=0)),
    "LandmarkNCE": lambda: make_pipeline(CountVectorizer(), LandmarkNCEEmbedder(random_state=0)),
}


def interval(scores) -> tuple[float, float]:
    """Mean and half-width of the 95% Student-t interval."""
    scores = np.asarray(scores, dtype=float)
    if len(scores) < 2:
        return float(scores.mean()), float("nan")
    half = stats.t.ppf(0.975, len(scores) - 1) * scores.std(ddof=1) / np.sqrt(len(scores))
    return float(scores.mean()), float(half)


def label_draws(y: np.ndarray, per_class: int, n_draws: int, seed: int):
    """``n_draws`` (labelled, test) index pairs, ``per_class`` labelled documents per class.

    The draws depend only on ``(y, per_class, seed)``, so every method sees the same ones.
    """
    rng = np.random.default_rng([seed, per_class])
    draws = []
    for _ in range(n_draws):
        labelled = np.concatenate(
            [rng.permutation(np.flatnonzero(y == k))[:per_class] for k in np.unique(y)]
        )
        draws.append((labelled, np.setdiff1d(np.arange(len(y)), labelled)))
    return draws


def probe_scores(Z, y, draws) -> list[float]:
    """Accuracy of ``LogisticRegression()`` trained on each draw's labelled rows."""
    scores = []
    with warnings.catch_warnings():
        # the plain pipeline: default max_iter; unscaled features may not converge
        warnings.simplefilter("ignore", ConvergenceWarning)
        for labelled, test in draws:
            clf = LogisticRegression().fit(Z[labelled], y[labelled])
            scores.append(float(clf.score(Z[test], y[test])))
    return scores


def evaluate_representation(
    task: Task, name: str, factory, budgets, n_draws: int, seed: int = 0
) -> dict:
    """Fit ``factory()`` on the task's texts, then probe it; one table row."""
    rep = factory()
    with Timer() as t:
        rep.fit(task.texts)
    Z = rep.transform(task.texts)  # sparse for tf-idf: LogisticRegression takes it
    row = {"task": task.name, "method": name, "fit s": round(t.seconds, 1)}
    last = rep[-1] if hasattr(rep, "steps") else rep
    if hasattr(last, "n_iter_") and not isinstance(last, LatentDirichletAllocation):
        row["epochs"] = int(last.n_iter_)
    for m in budgets:
        mean, half = interval(probe_scores(Z, task.y, label_draws(task.y, m, n_draws, seed)))
        row[f"{m}/class"] = f"{mean:.3f} ± {half:.3f}"
        row[f"_{m}"] = [mean, half]
    return row


def previous_defaults(source: str, args: argparse.Namespace) -> list[dict]:
    """Rows of the embedders at the defaults of the sknce tree in ``source`` (a subprocess)."""
    with tempfile.TemporaryDirectory() as tmp:
        name = f"previous_defaults_{os.getpid()}"
        command = [sys.executable, __file__, "--methods", "DirectNCE", "LandmarkNCE"]
        command += ["--budgets", *map(str, args.budgets), "--draws", str(args.draws)]
        command += ["--threads", str(args.threads), "--name", name, "--results", tmp]
        if args.tasks:
            command += ["--tasks", *args.tasks]
        env = {**os.environ, "PYTHONPATH": os.path.abspath(source)}
        subprocess.run(command, check=True, env=env)
        result = json.loads((Path(tmp) / f"{name}.json").read_text())
    rows = [{**row, **raw} for row, raw in zip(result["rows"], result["params"]["raw"])]
    return [{**row, "method": f"{row['method']}, previous defaults"} for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=None, help="default: all")
    parser.add_argument("--methods", nargs="+", default=None, help="default: all")
    parser.add_argument("--budgets", nargs="+", type=int, default=[10, 3])
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default=None, help="results file stem")
    parser.add_argument("--baseline", default=None, metavar="DIR", help="older sknce tree")
    parser.add_argument("--results", default=None, help=argparse.SUPPRESS)  # the subprocess's
    args = parser.parse_args()
    if args.results:
        _common.RESULTS = Path(args.results)
    torch.set_num_threads(args.threads)
    tasks = args.tasks or list(DOCUMENT_TASKS)
    names = args.methods or list(DOCUMENT_METHODS)
    rows = []
    for task_name in tasks:
        task = load_task(task_name)
        print(task.summary(), flush=True)
        for name in names:
            row = evaluate_representation(
                task, name, DOCUMENT_METHODS[name], args.budgets, args.draws
            )
            print({k: v for k, v in row.items() if not k.startswith("_")}, flush=True)
            rows.append(row)
    if args.baseline:
        rows += previous_defaults(args.baseline, args)
    summaries = [load_task(t).summary() for t in tasks]
    report(
        args.name or "real_documents",
        [{k: v for k, v in row.items() if not k.startswith("_")} for row in rows],
        title="Real-data document tasks: CountVectorizer -> representation (defaults) -> "
        "LogisticRegression(); accuracy, mean ± 95% t-interval over label draws",
        params={
            **vars(args),
            "tasks": summaries,
            "raw": [
                {k: v for k, v in row.items() if k in ("task", "method") or k[0] == "_"}
                for row in rows
            ],
        },
    )


if __name__ == "__main__":
    main()
