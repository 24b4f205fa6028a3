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
  model that can tie a label to its own token in the input would gain;
- sknce only (fitted with ``cooccurrence_weight=0`` unless ``--params`` says
  otherwise): precision@k after adding ``weight`` times a label-agnostic sparse term
  to the log-odds (the classifier's own co-occurrence term,
  :mod:`sknce.conditional._cooccurrence`): the positive PMI of feature ``j`` and label
  ``y`` over the training rows (pairs found in at least 2 rows), averaged over the
  row's features weighed as the bag
  weighs them (``WEIGHTS``). With ``--held-out`` the same grid is also computed on the
  last 10% of the training rows by models of the first 90%, to choose the weight
  without the test rows.

Usage::

    nice -n 10 python benchmarks/profile_multilabel.py --task neighbours --systems sknce plt
    python benchmarks/profile_multilabel.py --systems sknce --params '{"max_epochs": 5}'
    python benchmarks/profile_multilabel.py --task keywords --systems sknce --held-out
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
#: Weights of the co-occurrence term added to the log-odds.
WEIGHTS = (1.0, 2.0, 4.0, 8.0)


def reranked(clf, X, idf, table, label_sets, extra) -> dict:
    """Precision@k of ``clf``'s log-odds on the rows ``X`` plus each weight of ``extra``
    (a function of the log-odds' shape giving the added term)."""
    log_proba = clf.predict_log_proba(X)  # each label's log sigma(s)
    log_odds = log_proba - np.log(-np.expm1(np.minimum(log_proba, -1e-12)))
    out = {}
    for weight, term in extra(X, idf, table):
        best = np.argsort(-(log_odds + weight * term), axis=1, kind="stable")[:, :TOP]
        out[str(weight)] = _rounded(bench.ranking_scores(best, label_sets))
    return out


def _cooccurrence_terms(X, idf, table):
    from sknce.conditional._cooccurrence import term

    return [(weight, term(X, "log1p-idf", idf, table, 1.0)) for weight in WEIGHTS]


def _fit(texts, label_sets, n_labels: int, seed: int, params: dict):
    """The vectorizer, its training counts and indicator, and the fitted classifier."""
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import ConditionalNCEClassifier

    vectorizer = CountVectorizer(token_pattern=bench.TOKENS, lowercase=False)
    X = vectorizer.fit_transform(texts)
    Y = bench.indicator(label_sets, n_labels)
    # the network alone (its own co-occurrence term off): the re-rankings add theirs
    params = {"cooccurrence_weight": 0, **params}
    clf = ConditionalNCEClassifier(n_jobs=1, random_state=seed, **params)
    start = time.process_time()
    clf.fit(X, Y)
    return vectorizer, X, Y, clf, time.process_time() - start


def fit_sknce(data, seed: int, params: dict, held_out: bool) -> tuple[np.ndarray, dict]:
    """The top labels of the test rows, and the fit's own figures."""
    from sknce._bags import smooth_idf
    from sknce.conditional._cooccurrence import ppmi_table

    n_labels = len(data["vocabulary"])
    if held_out:  # the co-occurrence grid on the last tenth of the training rows
        cut = int(0.9 * len(data["X_train"]))
        vectorizer, X, Y, clf, _ = _fit(
            data["X_train"][:cut], data["L_train"][:cut], n_labels, seed, params
        )
        rows = vectorizer.transform(data["X_train"][cut:])
        table = ppmi_table(X, Y)
        grid_held_out = reranked(
            clf, rows, smooth_idf(X), table, data["L_train"][cut:], _cooccurrence_terms
        )
    vectorizer, X, Y, clf, cpu = _fit(data["X_train"], data["L_train"], n_labels, seed, params)
    X_test = vectorizer.transform(data["X_test"])
    top, _ = clf.predict_topk(X_test, TOP)
    train_top, _ = clf.predict_topk(X[:1500], TOP)
    selection = getattr(clf, "selection_history_", None) or []
    # the labels that are tokens of the row: the feature of the label's own token
    column = np.array([vectorizer.vocabulary_.get(w, -1) for w in data["vocabulary"]])

    def own_tokens(rows, idf, table):
        own = (rows[:, np.clip(column, 0, None)].toarray() > 0) & (column >= 0)
        return [(bonus, own) for bonus in BONUSES]

    idf, table = smooth_idf(X), ppmi_table(X, Y)
    figures = {
        "fit_cpu_s": round(cpu, 2),
        "epochs": clf.n_iter_,
        "train": _rounded(bench.ranking_scores(train_top, data["L_train"][:1500])),
        "held_out_by_epoch": [round(r["valid_precision"], 4) for r in selection],
        "own_token_bonus": reranked(clf, X_test, idf, table, data["L_test"], own_tokens),
        "cooccurrence_term": reranked(
            clf, X_test, idf, table, data["L_test"], _cooccurrence_terms
        ),
    }
    if held_out:
        figures["cooccurrence_term_held_out"] = grid_held_out
    return top, figures


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
    parser.add_argument(
        "--held-out", action="store_true", help="also the co-occurrence grid on held-out rows"
    )
    args = parser.parse_args(argv)
    data = bench.TASKS[args.task]()
    data["task"] = args.task
    for system in args.systems:
        if system == "sknce":
            top, figures = fit_sknce(data, args.seed, json.loads(args.params), args.held_out)
        else:
            top, figures = fit_library(system, data, args.seed)
        row = {"task": args.task, "system": system, "seed": args.seed}
        row.update(_rounded(bench.ranking_scores(top, data["L_test"])), **figures)
        print(json.dumps({**row, **profile(top, data)}), flush=True)


if __name__ == "__main__":
    main()
