"""Where the article sweep's accuracy goes as the rows per class fall (issue 29).

On ``article_k(K)`` each class is a run of consecutive chunks of one article, so an
error is either the wrong article or the right article at the wrong position (a
neighbouring run, or one further away). For each ``K`` this fits
``ConditionalNCEClassifier(random_state=0, n_jobs=1)`` on the
``CountVectorizer(token_pattern=r"\\S+", lowercase=False)`` counts (as
``screen_fewrows.py``), and ``TfidfVectorizer()`` with ``LinearSVC()`` and
``SGDClassifier(random_state=0)``, and writes per system: the accuracy, the share of
test chunks given their own article (``article_acc``), the errors by kind, and the
accuracy by the training rows of the true class (counts of 50 test chunks or more).
One JSON file, ``results/screen_fewrows_<tag>_profile.json``.

Usage::

    nice -n 10 python benchmarks/profile_fewrows.py --k 1000 1500 2000 --tag ben_s7
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import RESULTS  # noqa: E402
from _label_count_tasks import _chunks, _parts, article_k  # noqa: E402


def class_index(labels) -> np.ndarray:
    """``article_k``'s labels ``"c<v>"`` as the integers ``v``."""
    return np.array([int(label[1:]) for label in labels])


def errors(predicted, truth, article_of, train_count) -> dict:
    """The accuracy, the right article's share and the errors by kind."""
    p, t = class_index(predicted), class_index(truth)
    wrong = p != t
    same = article_of[p] == article_of[t]
    adjacent = same & (np.abs(p - t) == 1)
    counts = train_count[t]
    return {
        "acc": round(float(np.mean(~wrong)), 4),
        "article_acc": round(float(np.mean(same)), 4),
        "err_adjacent": round(float(np.mean(wrong & adjacent)), 4),
        "err_same_article_far": round(float(np.mean(wrong & same & ~adjacent)), 4),
        "err_other_article": round(float(np.mean(~same)), 4),
        "acc_by_train_count": {
            int(c): round(float(np.mean(~wrong[counts == c])), 3)
            for c in np.unique(counts)
            if np.sum(counts == c) >= 50
        },
    }


def profile(k: int) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    from sknce import ConditionalNCEClassifier

    _, articles, _, _ = _chunks()
    parts = _parts(np.bincount(articles), k)
    article_of = np.repeat(np.arange(len(parts)), parts)  # class -> its article
    X_train, y_train, X_test, y_test = article_k(k)
    train_count = np.bincount(class_index(y_train), minlength=k)
    counts = CountVectorizer(token_pattern=r"\S+", lowercase=False)
    A, B = counts.fit_transform(X_train), None
    B = counts.transform(X_test)
    tfidf = TfidfVectorizer()
    At, Bt = tfidf.fit_transform(X_train), None
    Bt = tfidf.transform(X_test)
    load = os.getloadavg()[0]
    predictions = {
        "sknce": ConditionalNCEClassifier(random_state=0, n_jobs=1).fit(A, y_train).predict(B),
        "LinearSVC": LinearSVC().fit(At, y_train).predict(Bt),
        "SGD": SGDClassifier(random_state=0).fit(At, y_train).predict(Bt),
    }
    row = {"k": k, "n_classes": len(set(y_train)), "n_articles": len(parts)}
    for name, predicted in predictions.items():
        row[name] = errors(predicted, y_test, article_of, train_count)
    row["load"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", required=True)
    parser.add_argument("--tag", default="ben_s7")
    args = parser.parse_args(argv)
    rows = []
    for k in args.k:
        rows.append(profile(k))
        print(json.dumps(rows[-1]), flush=True)
    with open(RESULTS / f"screen_fewrows_{args.tag}_profile.json", "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
