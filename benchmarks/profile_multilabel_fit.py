"""Where a multi-label fit spends its CPU time: cProfile of one default fit, in CPU seconds.

On a task of ``bench_multilabel.py`` (same split, ``CountVectorizer`` features outside
the profile), fits ``ConditionalNCEClassifier(n_jobs=..., random_state=seed)`` on the
label indicator after an untimed one-epoch fit (the compiled kernels' first load),
under ``cProfile`` with the process's CPU clock (with one thread, the fit's own CPU
seconds; with more, the kernel threads' time is in the fit's total but not in the
functions' rows). Prints the fit's wall and CPU seconds, its test precision@k and
epochs (held-out fit, refit), then the functions by own time and by cumulative time.

Usage::

    nice -n 10 python benchmarks/profile_multilabel_fit.py --task keywords --jobs 1
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
import bench_multilabel as bench  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="keywords", choices=list(bench.TASKS))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=25, help="functions listed per table")
    args = parser.parse_args(argv)

    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import ConditionalNCEClassifier

    data = bench.TASKS[args.task]()
    vectorizer = CountVectorizer(token_pattern=bench.TOKENS, lowercase=False)
    X, X_test = vectorizer.fit_transform(data["X_train"]), vectorizer.transform(data["X_test"])
    Y = bench.indicator(data["L_train"], len(data["vocabulary"]))
    warm = ConditionalNCEClassifier(n_jobs=args.jobs, random_state=args.seed, max_epochs=1)
    warm.fit(X[:200], Y[:200])
    clf = ConditionalNCEClassifier(n_jobs=args.jobs, random_state=args.seed)
    profile = cProfile.Profile(time.process_time)
    wall, cpu = time.perf_counter(), time.process_time()
    profile.enable()
    clf.fit(X, Y)
    profile.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    top, _ = clf.predict_topk(X_test, max(bench.KS))
    scores = {k: round(v, 4) for k, v in bench.ranking_scores(top, data["L_test"]).items()}
    held_out = len(getattr(clf, "selection_history_", []))
    print(f"fit {wall:.2f} s wall, {cpu:.2f} s CPU; {scores}; epochs {held_out} + {clf.n_iter_}")
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(args.rows)
    stats.sort_stats("cumulative").print_stats(args.rows)


if __name__ == "__main__":
    main()
