"""Where a multi-label fit loses precision: by label frequency, and on labels found in the input.

For one task of ``bench_multilabel.py`` (same split, features and systems), fits the
systems named (sknce with optional parameters, napkinxc ``PLT``/``BR``, omikuji) in
this process, one after the other, and prints for each:

- precision@1, @3, @5 on the test rows (sknce: also on 1,500 training rows, and the
  held-out precision of each epoch of the choosing fit, ``selection_history_``);
- by band of the labels' training frequency (positive rows): the share of the top 5
  predictions in the band, their precision, and the band's share of the true labels;
- the top 5 predictions whose label is a token of the row's own text (on the
  ``neighbours`` task, a word of the chunk that is also one of its neighbourhood's):
  their share, their precision, the precision of the others, and the share of the
  true labels that are tokens of the row;
- sknce only: precision@k after adding ``bonus`` to the log-odds of each label that is
  a token of the row (``BONUSES``; an analysis on the test rows, not a model): what a
  model that can tie a label to its own token in the input would gain.

Usage::

    nice -n 10 python benchmarks/profile_multilabel.py --task neighbours --systems sknce plt
    python benchmarks/profile_multilabel.py --systems sknce --params '{"max_epochs": 5}'
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
import bench_multilabel as bench  # noqa: E402

#: Bands of a label's positive training rows, (low, high] (the first [0, 10]).
BANDS = ((0, 10), (10, 20), (20, 50), (50, 100), (100, None))
TOP = 5
#: Added to the log-odds of the labels that are tokens of the row (sknce's re-ranking).
BONUSES = (0.5, 1.0, 2.0)


def fit_sknce(data, seed: int, params: dict) -> tuple[np.ndarray, dict]:
    """The top labels of the test rows, and the fit's own figures."""
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import ConditionalNCEClassifier

    vectorizer = CountVectorizer(token_pattern=bench.TOKENS, lowercase=False)
    X = vectorizer.fit_transform(data["X_train"])
    Y = bench.indicator(data["L_train"], len(data["vocabulary"]))
    clf = ConditionalNCEClassifier(n_jobs=1, random_state=seed, **params)
    start = time.process_time()
    clf.fit(X, Y)
    cpu = time.process_time() - start
    X_test = vectorizer.transform(data["X_test"])
    top, _ = clf.predict_topk(X_test, TOP)
    train_top, _ = clf.predict_topk(X[:1500], TOP)
    selection = getattr(clf, "selection_history_", None) or []
    # the labels that are tokens of the row: the feature of the label's own token
    column = np.array([vectorizer.vocabulary_.get(w, -1) for w in data["vocabulary"]])
    own = (X_test[:, np.clip(column, 0, None)].toarray() > 0) & (column >= 0)
    log_proba = clf.predict_log_proba(X_test)  # each label's log sigma(s)
    log_odds = log_proba - np.log(-np.expm1(np.minimum(log_proba, -1e-12)))
    reranked = {}
    for bonus in BONUSES:
        best = np.argsort(-(log_odds + bonus * own), axis=1, kind="stable")[:, :TOP]
        reranked[str(bonus)] = _rounded(bench.ranking_scores(best, data["L_test"]))
    return top, {
        "fit_cpu_s": round(cpu, 2),
        "epochs": clf.n_iter_,
        "train": _rounded(bench.ranking_scores(train_top, data["L_train"][:1500])),
        "held_out_by_epoch": [round(r["valid_precision"], 4) for r in selection],
        "own_token_bonus": reranked,
    }


def fit_library(system: str, data, seed: int) -> tuple[np.ndarray, dict]:
    """The top labels of the test rows by ``bench_multilabel``'s runner of ``system``."""
    with tempfile.TemporaryDirectory() as tmp:
        if system == "omikuji":
            result = bench.run_omikuji(data, seed, Path(tmp))
        else:
            result = bench.run_napkinxc(data, seed, Path(tmp), system.upper())
    return result["top"], {"fit_cpu_s": round(result["fit_cpu_s"], 2)}


def _rounded(scores: dict) -> dict:
    return {k: round(v, 4) for k, v in scores.items()}


def profile(top: np.ndarray, data) -> dict:
    """The band and own-token figures of the top labels ``top`` of the test rows."""
    counts = bench.indicator(data["L_train"], len(data["vocabulary"])).sum(axis=0).A1
    top = top[:, :TOP]
    hits = np.array([[y in set(s) for y in row] for row, s in zip(top, data["L_test"])])
    truth = np.concatenate([np.asarray(s, dtype=np.int64) for s in data["L_test"]])
    bands = {}
    for low, high in BANDS:
        upper = np.inf if high is None else high
        floor = low if low else -1  # the first band counts the labels of no training row

        def within(labels, floor=floor, upper=upper):
            return (counts[labels] > floor) & (counts[labels] <= upper)

        inside = within(top)
        true_share = np.mean(within(truth))
        bands[f"({low}, {high or 'inf'}]"] = {
            "share": round(float(inside.mean()), 3),
            "precision": round(float(hits[inside].mean()), 3) if inside.any() else None,
            "true_share": round(float(true_share), 3),
        }
    vocabulary = data["vocabulary"]
    tokens = [set(text.split()) for text in data["X_test"]]
    own = np.array([[vocabulary[y] in t for y in row] for row, t in zip(top, tokens)])
    true_own = [vocabulary[y] in t for s, t in zip(data["L_test"], tokens) for y in s]
    return {
        "bands": bands,
        "own_tokens": {
            "share": round(float(own.mean()), 3),
            "precision": round(float(hits[own].mean()), 3),
            "precision_of_others": round(float(hits[~own].mean()), 3),
            "true_share": round(float(np.mean(true_own)), 3),
        },
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="neighbours", choices=list(bench.TASKS))
    parser.add_argument(
        "--systems", nargs="+", default=["sknce", "plt"], choices=["sknce", "plt", "br", "omikuji"]
    )
    parser.add_argument("--params", default="{}", help="sknce's parameters, as JSON")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    data = bench.TASKS[args.task]()
    data["task"] = args.task
    for system in args.systems:
        if system == "sknce":
            top, figures = fit_sknce(data, args.seed, json.loads(args.params))
        else:
            top, figures = fit_library(system, data, args.seed)
        row = {"task": args.task, "system": system, "seed": args.seed}
        row.update(_rounded(bench.ranking_scores(top, data["L_test"])), **figures)
        print(json.dumps({**row, **profile(top, data)}), flush=True)


if __name__ == "__main__":
    main()
