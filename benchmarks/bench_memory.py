"""Memory: word vectors and word2vec fits, sknce and gensim side by side.

Every figure comes from its own fresh interpreter, which does one thing and reads
its ``/proc/self/status``: ``rss`` is ``VmRSS`` at the end of a step, ``peak`` the
process's high-water mark ``VmHWM``. The steps:

- ``import``: ``from sknce.words import WordVectors, SubwordVectors`` against
  ``from gensim.models.keyedvectors import KeyedVectors`` (what loading and
  querying vectors needs); ``import trainer``: ``from sknce import ACEWord2Vec``
  against ``from gensim.models import Word2Vec, FastText``;
- ``load``: a file of 100,000 x 300 random float32 vectors (words of 3-12 random
  letters) generated in a temporary directory, read by each library's reader, in
  the word2vec binary and text formats, each library's native format (sknce's
  ``save``/``load``, gensim's pickle), and as a fastText ``.bin`` file with 200,000
  n-gram buckets (gensim's ``load_facebook_vectors`` against sknce's); then a query
  (``most_similar`` of one word, and the vector of an unseen word for fastText);
- ``fit``: the peak of a fit on the Wikipedia excerpt of ``bench_words.py``
  (452,944 tokens; the token lists are held by the process, as a user's corpus
  would be): ``ACEWord2Vec`` NCE and ACE against gensim ``Word2Vec(sg=1)``, and
  ``ACEWord2Vec(subwords=True)`` NCE at its default ``bucket`` and at 2,000,000
  against gensim ``FastText(sg=1)`` (2,000,000 buckets). 100 dimensions, window 5,
  5 negatives, ``min_count=5``, ``sample=1e-3``, 2 threads, ``--epochs`` passes
  (the peak does not grow with the epochs: every table is allocated in the first).

Runs alternate between the systems (sknce, gensim, sknce, ...) within each
repeat; the 1-minute load average is recorded before each run, and at the start
and end. The summary is the median over repeats. Hold the benchmark lock::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_memory.py
    .venv/bin/python benchmarks/bench_memory.py --quick    # 10,000 words, no fits
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import format_table, report

N_WORDS, DIM, BUCKET = 100_000, 300, 200_000
FIT = dict(n_components=100, window=5, min_count=5, sample=1e-3, n_jobs=2)
GENSIM_FIT = dict(vector_size=100, window=5, min_count=5, sample=1e-3, negative=5, workers=2)

SYSTEMS = ("sknce", "gensim")
QUERY = "wv.most_similar(wv.index_to_key[0], topn=10)"
# What loading and querying vectors imports, in each library.
VECTORS = {
    "sknce": "from sknce.words import WordVectors, SubwordVectors",
    "gensim": "from gensim.models.keyedvectors import KeyedVectors",
}
FASTTEXT = {
    "sknce": "from sknce.words import load_facebook_vectors",
    "gensim": "from gensim.models.fasttext import load_facebook_vectors",
}
TRAINER = {
    "sknce": "from sknce import ACEWord2Vec",
    "gensim": "from gensim.models import FastText, Word2Vec",
}


def _import(imports: dict) -> dict:
    return {system: f"{imports[system]}\nmark('import')" for system in SYSTEMS}


def _load(imports: dict, sknce: str, gensim: str, query: str = QUERY) -> dict:
    """Child code of a load case: import, load (into ``wv``), query."""
    return {
        system: f"{imports[system]}\nmark('import')\nwv = {load}\nmark('load')\n{query}\n"
        "mark('query')"
        for system, load in zip(SYSTEMS, (sknce, gensim))
    }


def _fit(sknce_params: str, gensim_call: str) -> dict:
    """Child code of a fit case: the corpus, the import, the fit."""
    sknce = f"ACEWord2Vec(max_epochs=epochs, random_state=0, **FIT, {sknce_params})"
    calls = {"sknce": f"{sknce}.fit(docs)", "gensim": gensim_call}
    return {
        system: f"from bench_words import corpus\ndocs = corpus()\nmark('corpus')\n"
        f"{TRAINER[system]}\nmark('import')\n{calls[system]}\nmark('fit')"
        for system in SYSTEMS
    }


# The NCE fit of fit_nce again, its imports one library at a time (each one's RSS above
# those before), a torch optimizer as sknce builds it (torch's own imports torch._dynamo),
# then the numba kernels (a fit of three words): where the memory of a fit goes.
STAGES = """from bench_words import corpus
docs = corpus()
mark('corpus')
import torch
mark('torch')
import sklearn.base
mark('sklearn')
import skorch
mark('skorch')
import numba
mark('numba')
from sknce import ACEWord2Vec
mark('import')
from sknce._untraced import built_class
built_class(torch.optim.SGD)([torch.zeros(1, requires_grad=True)], lr=0.1)
mark('optimizer')
ACEWord2Vec(adversarial=False, min_count=1, sample=0, max_epochs=1).fit([list('abc')] * 2)
mark('kernels')
ACEWord2Vec(max_epochs=epochs, random_state=0, **FIT, adversarial=False).fit(docs)
mark('fit')"""
# What a fit without torch, skorch and sknce's estimator modules would still hold before
# its data: the corpus, scikit-learn (an estimator's base class), numba and the first
# calls of the NCE fit's three compiled kernels (loaded from numba's cache with a fit's
# types: a compile would cost more). A floor to compare with the 2x line, not a trainer;
# the fit's own data adds what fit_nce_stages measures after 'kernels'.
FLOOR = """from bench_words import corpus
docs = corpus()
mark('corpus')
import sklearn.base
mark('sklearn')
import numpy as np
from sknce.words import _kernels as kernels
mark('numba')
f32, i64 = np.float32, np.int64
w = np.zeros((3, 4), f32)
kernels.window_contexts(np.arange(3, dtype=i64), np.zeros(3, np.int32), np.ones(3, i64), 1, 0, 3)
neg = kernels.sample_alias(np.ones(3), np.arange(3, dtype=i64), 2, 2, 0)
kernels.sgd_pairs(w, w.copy(), np.arange(2, dtype=i64), np.arange(2, dtype=i64), neg,
                  np.ones((2, 2), f32), np.zeros(3, f32), 0.025, 0.025)
for kernel in (kernels.sgd_pairs, kernels.window_contexts, kernels.sample_alias):
    assert not kernel.stats.cache_misses, f'{kernel.__name__} was compiled, not loaded'
mark('fit')  # the kernels' first calls: this case's timed step"""
W2V = "Word2Vec(docs, sg=1, epochs=epochs, seed=0, **GENSIM_FIT)"
FT = "FastText(docs, sg=1, epochs=epochs, seed=0, bucket=2_000_000, **GENSIM_FIT)"
# case -> (step, what, {system: the child's code}); the code runs with ``tmp`` (the
# files' directory), ``epochs``, ``FIT``, ``GENSIM_FIT`` and ``mark(step)`` (which
# records the seconds, CPU seconds and RSS of the step just done) in scope.
CASES = {
    "import": ("import", "vectors", _import(VECTORS)),
    "import_trainer": ("import", "trainer", _import(TRAINER)),
    "w2v_bin": (
        "load",
        "word2vec binary",
        _load(
            VECTORS,
            "WordVectors.load_word2vec_format(tmp / 'vectors.bin', binary=True)",
            "KeyedVectors.load_word2vec_format(str(tmp / 'vectors.bin'), binary=True)",
        ),
    ),
    "w2v_txt": (
        "load",
        "word2vec text",
        _load(
            VECTORS,
            "WordVectors.load_word2vec_format(tmp / 'vectors.txt')",
            "KeyedVectors.load_word2vec_format(str(tmp / 'vectors.txt'))",
        ),
    ),
    "native": (
        "load",
        "native (sknce save, gensim pickle)",
        _load(
            VECTORS,
            "WordVectors.load(tmp / 'sknce.json')",
            "KeyedVectors.load(str(tmp / 'gensim.kv'))",
        ),
    ),
    "native_mmap": (
        "load",
        "native, memory-mapped",
        _load(
            VECTORS,
            "WordVectors.load(tmp / 'sknce.json', mmap='r')",
            "KeyedVectors.load(str(tmp / 'gensim.kv'), mmap='r')",
        ),
    ),
    "fasttext_bin": (
        "load",
        f"fastText .bin ({BUCKET:,} buckets)",
        _load(
            FASTTEXT,
            "load_facebook_vectors(tmp / 'model.bin')",
            "load_facebook_vectors(str(tmp / 'model.bin'))",
            f"{QUERY}\nwv['qzxjunseen']",
        ),
    ),
    "fit_nce": ("fit", "word2vec skip-gram NCE", _fit("adversarial=False", W2V)),
    "fit_nce_stages": (
        "fit",
        "word2vec skip-gram NCE, by stage",
        {"sknce": STAGES, "gensim": _fit("", W2V)["gensim"]},
    ),
    "fit_floor_without_torch": (
        "fit",
        "word2vec NCE's imports and kernels without torch (not a fit)",
        {"sknce": FLOOR, "gensim": _fit("", W2V)["gensim"]},
    ),
    "fit_ace": ("fit", "word2vec skip-gram ACE", _fit("adversarial=True", W2V)),
    "fit_subwords": (
        "fit",
        "subword skip-gram, sknce's default bucket",
        _fit("adversarial=False, subwords=True", FT),
    ),
    "fit_subwords_2m": (
        "fit",
        "subword skip-gram, 2,000,000 buckets",
        _fit("adversarial=False, subwords=True, bucket=2_000_000", FT),
    ),
}
QUICK = ("import", "import_trainer", "w2v_bin", "w2v_txt", "native", "native_mmap", "fasttext_bin")

CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {bench!r})
tmp, epochs = Path({tmp!r}), {epochs}
FIT, GENSIM_FIT = {fit!r}, {gensim_fit!r}
_t0, _marks = time.perf_counter(), {{}}
_c0 = time.process_time()

def _status():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024

def mark(name):
    global _t0, _c0
    rss, _ = _status()
    _marks[name] = dict(s=time.perf_counter() - _t0, cpu_s=time.process_time() - _c0, rss=rss)
    _t0, _c0 = time.perf_counter(), time.process_time()

{code}
import json
print(json.dumps(dict(marks=_marks, peak=_status()[1])))
"""


def make_files(tmp: Path, n_words: int) -> None:
    """The files every load reads, written once by each library's writer."""
    from gensim.models.keyedvectors import KeyedVectors

    from sknce.words import SubwordVectors, WordVectors, save_facebook_model

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = list(
        dict.fromkeys(
            "".join(rng.choice(letters, size=int(rng.integers(3, 13)))) for _ in range(2 * n_words)
        )
    )[:n_words]
    vectors = rng.standard_normal((n_words, DIM), dtype=np.float32)
    wv = WordVectors(words, vectors)
    wv.save_word2vec_format(tmp / "vectors.bin", binary=True)
    wv.save_word2vec_format(tmp / "vectors.txt")
    wv.save(tmp / "sknce.json")
    kv = KeyedVectors(DIM)
    kv.add_vectors(words, vectors)
    kv.save(str(tmp / "gensim.kv"))
    ngrams = rng.standard_normal((BUCKET, DIM), dtype=np.float32)
    save_facebook_model(tmp / "model.bin", SubwordVectors(words, vectors, ngrams))


def run_child(system: str, case: str, tmp: Path, epochs: int) -> dict:
    """One measurement in a fresh interpreter; its marks and peak, in MiB and seconds."""
    code = CHILD.format(
        bench=str(Path(__file__).parent),
        tmp=str(tmp),
        epochs=epochs,
        fit=FIT,
        gensim_fit=GENSIM_FIT,
        code=CASES[case][2][system],
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{system} {case}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def row_of(system: str, case: str, result: dict) -> dict:
    """A flat row: RSS after each step, the peak, and the timed step's seconds."""
    step, what, _ = CASES[case]
    marks = result["marks"]
    row = {"step": step, "what": what, "system": system}
    for name, mark in marks.items():
        row[f"rss_{name}_mib"] = mark["rss"]
    row["peak_mib"] = result["peak"]
    timed = {"import": "import", "load": "load", "fit": "fit"}[step]
    row[f"{timed}_s"] = marks[timed]["s"]
    row[f"{timed}_cpu_s"] = marks[timed]["cpu_s"]
    return row


def summarise(rows: list[dict]) -> list[dict]:
    """Median of each measure per (case, system), with sknce / gensim ratios."""
    summary = []
    for key in dict.fromkeys((r["case"], r["system"]) for r in rows):
        group = [r for r in rows if (r["case"], r["system"]) == key]
        entry = {k: group[0][k] for k in ("case", "step", "what", "system")}
        entry["runs"] = len(group)
        for name in group[0]:
            if name.endswith(("_mib", "_s")) or name == "load":
                entry[name] = float(np.median([r[name] for r in group]))
        summary.append(entry)
    for entry in summary:
        gensim = [e for e in summary if e["case"] == entry["case"] and e["system"] == "gensim"]
        if entry["system"] == "sknce" and gensim:
            entry["peak_vs_gensim"] = entry["peak_mib"] / gensim[0]["peak_mib"]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--quick", action="store_true", help="10,000 words, no fits, 1 repeat")
    parser.add_argument("--name", default="bench_memory", help="results file stem")
    args = parser.parse_args()
    n_words = N_WORDS
    if args.quick:
        n_words, args.repeats, args.name = 10_000, 1, args.name + "_quick"
        args.cases = [c for c in args.cases if c in QUICK]
    if any(CASES[c][0] == "fit" for c in args.cases):
        from bench_words import corpus

        corpus()  # parsed and cached once, before any run
    start_load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        make_files(Path(tmp), n_words)
        for repeat in range(args.repeats):
            for case in args.cases:
                for system in SYSTEMS:
                    load = os.getloadavg()[0]
                    started = time.perf_counter()
                    result = run_child(system, case, Path(tmp), args.epochs)
                    row = {"case": case, "repeat": repeat, "load": load} | row_of(
                        system, case, result
                    )
                    row["wall_s"] = time.perf_counter() - started
                    rows.append(row)
                    print(format_table([row]), flush=True)
    end_load = os.getloadavg()
    report(
        args.name,
        summarise(rows),
        title="Memory (MiB) of word vectors and word2vec fits, sknce vs gensim "
        "(medians over repeats)",
        params={
            "n_words": n_words,
            "dim": DIM,
            "fasttext_bucket": BUCKET,
            "epochs": args.epochs,
            "repeats": args.repeats,
            "fit": FIT,
            "gensim_fit": GENSIM_FIT,
            "load_average_start": start_load,
            "load_average_end": end_load,
            "runs": rows,
            "note": "2 cores shared with other engineers' jobs; 'load' is the 1-minute load "
            "average before each run",
        },
    )
    print(f"load average: start {start_load}, end {end_load}")


if __name__ == "__main__":
    main()
