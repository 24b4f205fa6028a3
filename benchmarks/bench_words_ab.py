"""Fit time of ACEWord2Vec from two checkouts, interleaved fit by fit (attribution runs).

``bench_words.py --baseline`` runs every fit of one checkout, then every fit of the
other, so a change in the machine's load during the run lands on one side. Here each
round fits once from each checkout in turn, each fit in a fresh interpreter (the numba
kernels compiled or loaded from the cache untimed first), and the table gives the
median and the minimum over the rounds, the CPU time and the median epoch time::

    python benchmarks/bench_words_ab.py /path/to/old/checkout . --method nce --rounds 6
    python benchmarks/bench_words_ab.py OLD . --n-jobs 1        # without kernel threads

The corpus is the Wikipedia excerpt of ``bench_words.py`` (its cache is reused).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report  # noqa: E402

_ONE_FIT = r"""
import json, sys, time
sys.path.insert(0, {tree!r})
import sknce
sys.path.insert(1, {bench!r})
import bench_words
from sknce import ACEWord2Vec
assert sknce.__file__.startswith({tree!r}), sknce.__file__
docs = bench_words.corpus()
ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4).fit([["a", "b", "c"]] * 2)
params = {{**bench_words.SKNCE_PARAMS[{method!r}], "random_state": 0,
          "max_epochs": {epochs}, **bench_words.COMMON}}
wall, cpu = time.perf_counter(), time.process_time()
model = ACEWord2Vec(n_jobs={n_jobs}, **params).fit(docs)
print(json.dumps({{"fit_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
                  "epochs_s": [row["dur"] for row in model.history_]}}))
"""


def one_fit(tree: str, method: str, epochs: int, n_jobs: int) -> dict:
    """One timed fit from ``tree`` in a fresh interpreter."""
    code = _ONE_FIT.format(
        tree=str(Path(tree).resolve()),
        bench=str(Path(__file__).resolve().parent),
        method=method,
        epochs=epochs,
        n_jobs=n_jobs,
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", help="sknce checkouts to compare")
    parser.add_argument("--method", choices=["nce", "ace"], default="nce")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--name", default="words_ab")
    args = parser.parse_args(argv)
    fits: dict[str, list[dict]] = {tree: [] for tree in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            fits[tree].append(one_fit(tree, args.method, args.epochs, args.n_jobs))
    first = args.trees[0]
    rows = []
    for tree, runs in fits.items():
        wall = [run["fit_s"] for run in runs]
        epochs = [s for run in runs for s in run["epochs_s"]]
        rows.append(
            {
                "tree": tree,
                "fits": len(runs),
                "fit_s_median": statistics.median(wall),
                "fit_s_min": min(wall),
                "vs_first": statistics.median(wall)
                / statistics.median(r["fit_s"] for r in fits[first]),
                "cpu_s_median": statistics.median(run["cpu_s"] for run in runs),
                "epoch_s_median": statistics.median(epochs),
                "fit_s_all": [round(w, 3) for w in wall],
            }
        )
    report(
        args.name,
        rows,
        title=f"ACEWord2Vec {args.method} fit, {args.epochs} epochs, n_jobs={args.n_jobs}, "
        f"{args.rounds} interleaved rounds",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
