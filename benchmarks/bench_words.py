"""Word vectors: gensim's Word2Vec vs ACEWord2Vec (NCE, ACE, CBOW) on a Wikipedia excerpt.

The corpus is the shortened English Wikipedia dump in gensim's test data
(452,944 tokens, tokenised and lowercased as ``WikiCorpus``; see
``_words_data.py``). All methods use the same hyperparameters: 100 dimensions,
window 5, 5 negatives, min_count 5, sample 1e-3, 2 threads:

- ``gensim``: ``Word2Vec(sg=1, negative=5, workers=2)``; ``gensim_cbow``: ``sg=0``
  (``cbow_mean=1``);
- ``nce``: ``ACEWord2Vec(adversarial=False, n_jobs=2)``; ``ace``:
  ``ACEWord2Vec(n_jobs=2)``; ``cbow``: ``ACEWord2Vec(architecture="cbow",
  adversarial=False, n_jobs=2)``; ``cbow_ace``: ``architecture="cbow"`` with ACE
  (these six are the default ``--methods``); ``nce_es``, ``ace_es``: NCE and ACE
  with ``early_stopping=True``;
- with ``--baseline PATH`` (repeatable, ``PATH=LABEL`` to name it), the sknce
  methods again from another checkout (``PYTHONPATH=PATH``), e.g. a ``git
  worktree`` of an older commit, so before/after figures come from one run.
  A method the checkout lacks (CBOW before it existed) is skipped.

Each (method, seed) runs in a fresh subprocess, so that its peak RSS is its own;
runs alternate between methods within a seed, so all share the machine's load
side by side; the load average is recorded before each run. Reported per run:
fit seconds (wall; the numba kernels are compiled before the timed fit), CPU
seconds of the process, seconds per epoch, corpus words per second (raw tokens x
epochs / fit seconds), peak RSS, Spearman on WordSim353 and SimLex-999, and on
their rare-word pairs (both words below the median corpus count of the evaluated
words). The summary gives the median fit seconds over seeds, the ratio of
medians to gensim of the same architecture, and the quality as mean ± sd. Seed
0 of NCE and ACE also gives the neighbours 1-5 and 45-50 of queen, king,
computer, man and woman (Table 1 of Bose et al., 2018).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words.py \\
        --methods gensim gensim_cbow nce ace cbow --epochs 20 --seeds 3 \\
        --baseline /tmp/pre-engine=pre-engine
    .venv/bin/python benchmarks/bench_words.py --seeds 1 --epochs 5   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import Timer, format_table, peak_rss_mib, report
from _words_data import load_wiki_corpus, rare_word_pairs, simlex999_path, wordsim353_path

QUERIES = ("queen", "king", "computer", "man", "woman")
COMMON = dict(window=5, min_count=5, sample=1e-3)
CACHE = Path(tempfile.gettempdir()) / "sknce_bench_wiki_corpus.pkl"
METHODS = {
    "gensim": "gensim Word2Vec (sg=1)",
    "gensim_cbow": "gensim Word2Vec (sg=0)",
    "nce": "ACEWord2Vec NCE",
    "ace": "ACEWord2Vec ACE",
    "cbow": "ACEWord2Vec CBOW NCE",
    "cbow_ace": "ACEWord2Vec CBOW ACE",
    "nce_es": "ACEWord2Vec NCE early stopping",
    "ace_es": "ACEWord2Vec ACE early stopping",
}
#: The gensim run each sknce method is timed against.
REFERENCE = {
    "nce": "gensim",
    "ace": "gensim",
    "cbow": "gensim_cbow",
    "cbow_ace": "gensim_cbow",
    "nce_es": "gensim",
    "ace_es": "gensim",
}
SKNCE_PARAMS = {
    "nce": dict(adversarial=False),
    "ace": dict(adversarial=True),
    "cbow": dict(architecture="cbow", adversarial=False),
    "cbow_ace": dict(architecture="cbow", adversarial=True),
    "nce_es": dict(adversarial=False, early_stopping=True),
    "ace_es": dict(adversarial=True, early_stopping=True),
}
DEFAULT_METHODS = ["gensim", "gensim_cbow", "nce", "ace", "cbow", "cbow_ace"]


def corpus() -> list[list[str]]:
    """The Wikipedia excerpt, parsed once and cached (parsing the dump takes ~5 s)."""
    if CACHE.exists():
        return pickle.loads(CACHE.read_bytes())
    docs = load_wiki_corpus()
    CACHE.write_bytes(pickle.dumps(docs))
    return docs


def evaluate(wv, counts: dict) -> dict:
    """Spearman on WordSim353 / SimLex-999 and on their rare-word pairs."""
    out = {}
    for name, path in (("ws353", wordsim353_path()), ("simlex", simlex999_path())):
        out[name] = float(wv.evaluate_word_pairs(path)[1][0])
        rare = rare_word_pairs(path, counts)
        # gensim reads pairs only from a file: write the rare ones as one
        with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as f:
            f.writelines(f"{a}\t{b}\t{score}\n" for a, b, score in rare)
        out[f"{name}_rare"] = float(wv.evaluate_word_pairs(f.name)[1][0])
        os.unlink(f.name)
        out[f"{name}_rare_pairs"] = len(rare)
    return out


def neighbours(wv) -> dict:
    """Neighbours 1-5 and 45-50 of the Table 1 words present in the vocabulary."""
    found = {}
    for word in QUERIES:
        if word in wv:
            near = [w for w, _ in wv.most_similar(word, topn=50)]
            found[word] = {"1-5": near[:5], "45-50": near[44:50]}
    return found


def run_one(method: str, epochs: int, seed: int) -> dict:
    """Fit one model in this process; return its measurements."""
    docs = corpus()
    n_tokens = sum(len(d) for d in docs)
    if method.startswith("gensim"):
        from gensim.models import Word2Vec

        cpu = time.process_time()
        with Timer() as t:
            model = Word2Vec(
                docs,
                vector_size=100,
                sg=0 if method == "gensim_cbow" else 1,
                negative=5,
                workers=2,
                epochs=epochs,
                seed=seed,
                **COMMON,
            )
        cpu = time.process_time() - cpu
        wv = model.wv
        counts = {w: wv.get_vecattr(w, "count") for w in wv.index_to_key}
        epoch_s = t.seconds / epochs
    else:
        from sknce import ACEWord2Vec

        params = {**SKNCE_PARAMS[method], "random_state": seed, "max_epochs": epochs, **COMMON}
        # compile (or load from cache) the numba kernels outside the timed fit
        warm = {k: v for k, v in SKNCE_PARAMS[method].items() if k == "architecture"}
        ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4, **warm).fit(
            [["a", "b", "c"]] * 2
        )
        cpu = time.process_time()
        with Timer() as t:
            model = ACEWord2Vec(n_jobs=2, **params).fit(docs)
        cpu = time.process_time() - cpu
        wv = model.wv_
        counts = dict(zip(model.vocabulary_, model.counts_.tolist()))
        epochs = model.n_iter_
        epoch_s = float(np.median([row["dur"] for row in model.history_]))
    row = {
        "fit_s": t.seconds,
        "cpu_s": cpu,
        "epochs": epochs,
        "epoch_s": epoch_s,
        "words_per_s": n_tokens * epochs / t.seconds,
        "peak_rss_mib": peak_rss_mib(),
        "vocab": len(counts),
        **evaluate(wv, counts),
    }
    if seed == 0 and method in ("nce", "ace"):
        row["neighbours"] = neighbours(wv)
    return row


def in_subprocess(method: str, epochs: int, seed: int, pythonpath: str | None) -> dict | None:
    """Run :func:`run_one` in a fresh interpreter and parse its JSON (None if it failed)."""
    cmd = [sys.executable, __file__, "--one", method, str(epochs), str(seed)]
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, env.get("PYTHONPATH", "")])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        if pythonpath is None:
            raise RuntimeError(out.stderr)
        print(f"  skipped ({pythonpath} cannot run {method}): {out.stderr.strip()[-200:]}")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _baselines(values: list[str]) -> list[tuple[str, str]]:
    """``(path, label)`` of each ``--baseline PATH[=LABEL]``."""
    found = []
    for value in values:
        path, _, label = value.partition("=")
        found.append((str(Path(path).resolve()), label or Path(path).name))
    return found


def summarise(rows: list[dict]) -> list[dict]:
    """Median fit time and mean ± sd quality per (method, epochs), with ratios to gensim."""
    summary = []
    for name in dict.fromkeys(r["method"] for r in rows):
        for epochs in dict.fromkeys(r["epochs"] for r in rows if r["method"] == name):
            group = [r for r in rows if r["method"] == name and r["epochs"] == epochs]
            entry = {"method": name, "epochs": epochs, "runs": len(group)}
            entry["key"], entry["origin"] = group[0]["key"], group[0]["origin"]
            for key in ("fit_s", "cpu_s", "epoch_s", "words_per_s", "peak_rss_mib", "load"):
                entry[key] = float(np.median([r[key] for r in group]))
            for key in ("ws353", "simlex", "ws353_rare", "simlex_rare"):
                values = np.array([r[key] for r in group], dtype=float)
                entry[key] = float(values.mean())
                entry[f"{key}_sd"] = float(values.std())
            summary.append(entry)
    for entry in summary:
        reference = REFERENCE.get(entry["key"])
        match = [
            e
            for e in summary
            if e["key"] == reference and e["epochs"] == entry["epochs"] and e["origin"] == ""
        ]
        if match:
            entry["time_vs_gensim"] = entry["fit_s"] / match[0]["fit_s"]
            entry["ws353_vs_gensim"] = entry["ws353"] - match[0]["ws353"]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, nargs="+", default=[20])
    parser.add_argument("--methods", nargs="+", default=DEFAULT_METHODS, choices=list(METHODS))
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="PATH[=LABEL]",
        help="run the sknce methods again from this checkout (PYTHONPATH=PATH)",
    )
    parser.add_argument("--name", default="bench_words", help="results file stem")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, epochs, seed = args.one
        print(json.dumps(run_one(method, int(epochs), int(seed))))
        return

    corpus()  # parse once before any timed run
    origins = [(None, "")] + _baselines(args.baseline)
    plan = [
        (method, epochs, path, label)
        for epochs in args.epochs
        for method in args.methods
        for path, label in origins
        if not (method.startswith("gensim") and path is not None)
    ]
    rows, table1 = [], {}
    for seed in range(args.seeds):
        for method, epochs, path, label in plan:
            load = os.getloadavg()[0]
            result = in_subprocess(method, epochs, seed, path)
            if result is None:
                continue
            name = METHODS[method] + (f" [{label}]" if label else "")
            if "neighbours" in result:
                table1[name] = result.pop("neighbours")
            rows.append(
                {"method": name, "key": method, "origin": label, "seed": seed, "load": load}
                | result
            )
            print(format_table([rows[-1]]), flush=True)
    summary = summarise(rows)
    report(
        args.name,
        summary,
        title="Word vectors on the gensim Wikipedia excerpt (median time, mean quality)",
        params={
            "seeds": args.seeds,
            "epochs": args.epochs,
            "baselines": args.baseline,
            **COMMON,
            "runs": rows,
            "table1": table1,
            "note": "2 cores shared with other engineers' jobs; 'load' is the 1-minute load "
            "average before each run (median over the runs of a row)",
        },
    )
    for name, words in table1.items():
        print(f"\n{name}")
        for word, near in words.items():
            print(f"  {word:9s} 1-5: {' '.join(near['1-5'])} | 45-50: {' '.join(near['45-50'])}")


if __name__ == "__main__":
    main()
