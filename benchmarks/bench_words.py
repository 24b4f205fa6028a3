"""Word vectors: gensim's Word2Vec vs ACEWord2Vec (NCE and ACE) on a Wikipedia excerpt.

The corpus is the shortened English Wikipedia dump in gensim's test data
(452,944 tokens, tokenised and lowercased as ``WikiCorpus``; see
``_words_data.py``). All methods use the same hyperparameters: 100 dimensions,
window 5, 5 negatives, min_count 5, sample 1e-3, 2 threads:

- gensim ``Word2Vec(sg=1, negative=5, workers=2)`` at 5, 10 and 20 epochs;
- ``ACEWord2Vec(adversarial=False)`` at its defaults and at gensim's epoch counts;
- ``ACEWord2Vec(adversarial=True)`` at its defaults.

Each (method, seed) runs in a fresh subprocess, so that its peak RSS is its own;
runs alternate between methods within a seed, so gensim and sknce share the
machine's load side by side. Reported per run: fit seconds, seconds per epoch,
corpus words per second (raw tokens x epochs / fit seconds), peak RSS, Spearman
on WordSim353 and SimLex-999, and on their rare-word pairs (both words below the
median corpus count of the evaluated words). Seed 0 of the default NCE and ACE
fits also gives the neighbours 1-5 and 45-50 of queen, king, computer, man and
woman (Table 1 of Bose et al., 2018).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words.py
    .venv/bin/python benchmarks/bench_words.py --seeds 1 --epochs 5   # quick
    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words.py \\
        --methods gensim nce ace --epochs 20   # the README's run
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _common import Timer, format_table, peak_rss_mib, report
from _words_data import load_wiki_corpus, rare_word_pairs, simlex999_path, wordsim353_path

QUERIES = ("queen", "king", "computer", "man", "woman")
COMMON = dict(window=5, min_count=5, sample=1e-3)
CACHE = Path(tempfile.gettempdir()) / "sknce_bench_wiki_corpus.pkl"


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


def run_one(method: str, epochs: int | None, seed: int) -> dict:
    """Fit one model in this process; return its measurements."""
    docs = corpus()
    n_tokens = sum(len(d) for d in docs)
    at_defaults = epochs is None
    if method == "gensim":
        from gensim.models import Word2Vec

        with Timer() as t:
            model = Word2Vec(
                docs,
                vector_size=100,
                sg=1,
                negative=5,
                workers=2,
                epochs=epochs,
                seed=seed,
                **COMMON,
            )
        wv = model.wv
        counts = {w: wv.get_vecattr(w, "count") for w in wv.index_to_key}
        epoch_s = t.seconds / epochs
    else:
        from sknce import ACEWord2Vec

        # compile (or load from cache) the numba kernels outside the timed fit
        ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4).fit([["a", "b"]] * 2)
        params = {"adversarial": method == "ace", "random_state": seed, **COMMON}
        if epochs is not None:
            params["max_epochs"] = epochs
        with Timer() as t:
            model = ACEWord2Vec(**params).fit(docs)
        wv = model.wv_
        counts = dict(zip(wv.words, model.counts_.tolist()))
        epochs = model.n_iter_
        epoch_s = float(np.mean([row["dur"] for row in model.history_]))
    row = {
        "fit_s": t.seconds,
        "epochs": epochs,
        "epoch_s": epoch_s,
        "words_per_s": n_tokens * epochs / t.seconds,
        "peak_rss_mib": peak_rss_mib(),
        "vocab": len(wv),
        **evaluate(wv, counts),
    }
    if seed == 0 and at_defaults:
        row["neighbours"] = neighbours(wv)
    return row


def in_subprocess(method: str, epochs: int | None, seed: int) -> dict:
    """Run :func:`run_one` in a fresh interpreter (its own peak RSS) and parse its JSON."""
    cmd = [sys.executable, __file__, "--one", method, str(epochs or 0), str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, nargs="*", default=[5, 10, 20])
    parser.add_argument(
        "--methods", nargs="+", default=["gensim", "nce", "ace"], choices=["gensim", "nce", "ace"]
    )
    parser.add_argument("--name", default="bench_words", help="results file stem")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, epochs, seed = args.one
        print(json.dumps(run_one(method, int(epochs) or None, int(seed))))
        return

    corpus()  # parse once before any timed run
    plan = [("gensim", e) for e in args.epochs] + [("nce", None)]
    # a fit at the default epoch count would repeat the "(defaults)" row; sknce is
    # imported here, not at the top, so that gensim's subprocesses do not load torch
    from sknce import ACEWord2Vec

    default_epochs = ACEWord2Vec().max_epochs
    plan += [("nce", e) for e in args.epochs if e != default_epochs] + [("ace", None)]
    plan = [(method, epochs) for method, epochs in plan if method in args.methods]
    rows, table1 = [], {}
    for seed in range(args.seeds):
        for method, epochs in plan:
            result = in_subprocess(method, epochs, seed)
            label = {
                "gensim": "gensim Word2Vec",
                "nce": "ACEWord2Vec NCE",
                "ace": "ACEWord2Vec ACE",
            }
            name = label[method] + (" (defaults)" if epochs is None else "")
            if "neighbours" in result:
                table1[name] = result.pop("neighbours")
            rows.append({"method": name, "seed": seed, **result})
            print(format_table([rows[-1]]), flush=True)

    summary = []
    for name in dict.fromkeys(r["method"] for r in rows):
        for epochs in dict.fromkeys(r["epochs"] for r in rows if r["method"] == name):
            group = [r for r in rows if r["method"] == name and r["epochs"] == epochs]
            entry = {"method": name, "epochs": epochs, "runs": len(group)}
            for key in (
                "fit_s",
                "epoch_s",
                "words_per_s",
                "peak_rss_mib",
                "ws353",
                "simlex",
                "ws353_rare",
                "simlex_rare",
            ):
                values = np.array([r[key] for r in group], dtype=float)
                entry[key] = float(values.mean())
                if key in ("ws353", "simlex", "ws353_rare", "simlex_rare", "fit_s"):
                    entry[f"{key}_sd"] = float(values.std())
            summary.append(entry)
    report(
        args.name,
        summary,
        title="Word vectors on the gensim Wikipedia excerpt (mean over seeds)",
        params={
            "seeds": args.seeds,
            "epochs": args.epochs,
            **COMMON,
            "runs": rows,
            "table1": table1,
            "note": "2 cores shared with other engineers' jobs",
        },
    )
    for name, words in table1.items():
        print(f"\n{name}")
        for word, near in words.items():
            print(f"  {word:9s} 1-5: {' '.join(near['1-5'])} | 45-50: {' '.join(near['45-50'])}")


if __name__ == "__main__":
    main()
