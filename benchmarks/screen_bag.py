"""Screens of the factored bag's plan (issue 29): fits with its constants patched.

``ConditionalNCEClassifier(random_state=seed, n_jobs=2)`` on the
``CountVectorizer(token_pattern=r"\\S+", lowercase=False)`` counts of a task (as
``bench_label_count.py``'s ``sknce defaults``), with ``sknce.conditional._plan``'s
``BAG_*`` constants patched in this process only (the module is not edited). Each
``--setting`` is ``NAME=VALUE,...`` of ``DIM``, ``NEGATIVES``, ``EXAMPLES``,
``LR_PER_ENTRY``, ``LR_MIN`` (the low end of ``BAG_LR_RANGE``), ``EPOCH_MIN`` /
``EPOCH_MAX`` (the ends of ``BAG_EPOCH_RANGE``), ``WIDE_EPOCHS`` (``BAG_WIDE_EPOCHS``:
25 is the plan before it), ``BATCH``, ``HOLD_OUT=1`` (the fit
holds out examples for early stopping whatever its epochs: ``bag_holds_out`` patched to
True), or of the estimator's parameters in lower case (``noise_power=0.75``,
``early_stopping=False``, ``embedding_dim=64``: the default width, which takes the
factored bag where the defaults take the linear model), or ``main`` (nothing patched);
every setting is fitted for every seed, interleaved by seed.

Tasks (``bench_label_count.py``'s): the planted tables ``synthetic-1e5`` (200,000 rows),
``synthetic-1e5-100k``, ``synthetic-1e6-50k`` and ``synthetic-1e6-100k`` are scored by
their expectations over the table (``_planted_eval.py``: no test sample, no test noise);
``centre``, ``centre-<n>k`` (its first ``n`` thousand training windows, a quarter as many
test windows; ``centre-all-<n>k``: every training word a label), ``article``,
``article-<n>tok`` (the article of each ``n``-token chunk) and the
sweep's ``article-K<k>`` and ``centre-K<k>`` (``k`` classes) on their test rows
(accuracy and mean log-likelihood of every row, with each row's hit and log-likelihood
saved to ``/tmp`` for paired comparisons).

Appends one JSON line per fit (the plan's regime, width, negatives, rate, whether it held
out examples, the epochs, the training rows and classes, the figures, CPU seconds, load)
to ``results/screen_bag_<tag>.jsonl``.

Usage::

    nice -n 10 python benchmarks/screen_bag.py --task synthetic-1e5 --seeds 0 1 \\
        --settings main NEGATIVES=32 DIM=100 --tag dev
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import RESULTS  # noqa: E402
from _planted_eval import planted_sample  # noqa: E402
from bench_label_count import ARTICLE_CHUNK, CENTRE_ROWS, PLANTED, SWEPT, task_splits  # noqa: E402

#: setting name -> the plan constant it patches (LR_MIN: the low end of BAG_LR_RANGE)
CONSTANTS = {
    "DIM": "BAG_DIM",
    "NEGATIVES": "BAG_NEGATIVES",
    "EXAMPLES": "BAG_EXAMPLES",
    "LR_PER_ENTRY": "BAG_LR_PER_ENTRY",
    "BATCH": "BAG_BATCH",
    "WIDE_EPOCHS": "BAG_WIDE_EPOCHS",
}


def patched(setting: str) -> tuple[dict, dict]:
    """The plan constants and the estimator parameters of ``setting`` (``main``: none)."""
    import ast

    from sknce.conditional import _plan

    constants, params = {}, {}
    for item in [] if setting == "main" else setting.split(","):
        name, value = item.split("=")
        if name == "LR_MIN":
            constants["BAG_LR_RANGE"] = (float(value), _plan.BAG_LR_RANGE[1])
        elif name in ("EPOCH_MIN", "EPOCH_MAX"):
            low, high = constants.get("BAG_EPOCH_RANGE", _plan.BAG_EPOCH_RANGE)
            low, high = (int(value), high) if name == "EPOCH_MIN" else (low, int(value))
            constants["BAG_EPOCH_RANGE"] = (low, high)
        elif name == "HOLD_OUT":
            if value != "1":
                raise ValueError(
                    f"HOLD_OUT takes 1 only (early_stopping=False holds out none), not {value!r}"
                )
            constants["bag_holds_out"] = lambda n_samples, patience: True
        elif name.islower():
            params[name] = ast.literal_eval(value)
        elif name not in CONSTANTS:
            known = ", ".join([*CONSTANTS, "LR_MIN", "EPOCH_MIN", "EPOCH_MAX", "HOLD_OUT"])
            raise ValueError(
                f"unknown setting {name!r}: one of {known}, or an estimator parameter in "
                "lower case (embedding_dim=64), or main"
            )
        else:
            kind = float if name == "LR_PER_ENTRY" else int
            constants[CONSTANTS[name]] = kind(value)
    return constants, params


def fit_one(task: str, data, setting: str, seed: int, sample) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import ConditionalNCEClassifier
    from sknce.conditional import _plan

    constants, params = patched(setting)
    saved = {name: getattr(_plan, name) for name in constants}
    for name, value in constants.items():
        setattr(_plan, name, value)
    try:
        vectorizer = CountVectorizer(token_pattern=r"\S+", lowercase=False)
        clf = ConditionalNCEClassifier(random_state=seed, n_jobs=2, **params)
        load, cpu, wall = os.getloadavg()[0], time.process_time(), time.perf_counter()
        clf.fit(vectorizer.fit_transform(data[0]), data[1])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        for name, value in saved.items():
            setattr(_plan, name, value)
    plan = clf.plan_
    row = {
        "task": task,
        "setting": setting,
        "seed": seed,
        "width": plan.width,
        "negatives": plan.n_negatives,
        "lr": round(plan.lr, 4),
        "epochs": clf.n_iter_,
        "regime": plan.regime,
        "held_out": plan.early_stopping,
        "n_train": len(data[1]),
        "n_classes": len(clf.classes_),
    }
    if sample is not None:
        X = vectorizer.transform(sample.inputs)
        log_proba = clf.predict_log_proba(X)
        scores = sample.score(seed, setting, clf.classes_, log_proba, clf.predict(X))
        row["acc"] = round(scores["expected_accuracy"], 6)
        row["ll"] = round(scores["expected_log_lik"], 4)
    else:
        X = vectorizer.transform(data[2])
        known = np.isin(data[3], clf.classes_)
        index = np.searchsorted(clf.classes_, data[3])
        hits, lls = np.zeros(len(data[3]), dtype=bool), np.full(len(data[3]), np.nan)
        for start in range(0, X.shape[0], 2000):
            block = slice(start, start + 2000)
            log_proba = clf.predict_log_proba(X[block])
            rows = np.arange(log_proba.shape[0])
            hits[block] = np.argmax(log_proba, axis=1) == index[block]
            lls[block] = log_proba[rows, np.minimum(index[block], len(clf.classes_) - 1)]
        hits &= known
        path = Path("/tmp") / f"screen_bag_{task}_{setting}_{seed}.npz"
        np.savez(path, hits=hits, lls=lls, known=known)
        row["acc"] = round(float(np.mean(hits)), 5)
        row["ll"] = round(float(np.mean(lls[known])), 4)
    row.update(cpu_s=round(cpu, 2), wall_s=round(wall, 2), load=[round(load, 2)])
    row["load"].append(round(os.getloadavg()[0], 2))
    return row


def task_name(task: str) -> str:
    """``task``, when it is one of the screen's tasks (the argument's type)."""
    patterns = (CENTRE_ROWS, ARTICLE_CHUNK, SWEPT)
    if task in ("centre", "article", *PLANTED) or any(p.fullmatch(task) for p in patterns):
        return task
    raise argparse.ArgumentTypeError(
        f"unknown task {task!r}: one of centre, article, {', '.join(PLANTED)}, "
        "centre-<n>k, centre-all-<n>k, article-<n>tok, article-K<k> or centre-K<k>"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=task_name, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--settings", nargs="+", default=["main"])
    parser.add_argument("--tag", default="dev")
    args = parser.parse_args(argv)
    for setting in args.settings:
        patched(setting)  # a bad setting fails before any fit
    (data,), _ = task_splits(args.task, False, {})
    out = RESULTS / f"screen_bag_{args.tag}.jsonl"
    for seed in args.seeds:
        sample = None
        if args.task in PLANTED:
            n_labels, _, _, m_x = PLANTED[args.task][False]
            sample = planted_sample(n_labels, m_x, 1000, data[1], seed)
        for setting in args.settings:
            row = fit_one(args.task, data, setting, seed, sample)
            print(json.dumps(row), flush=True)
            with open(out, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
