"""Word-vector files and queries at scale: sknce's WordVectors beside gensim's KeyedVectors.

(a) Loading a word2vec file of ``--n-words`` x ``--dims`` random float32
vectors (random words, every seventh one non-ASCII), text and binary, sknce
and gensim side by side, each load in a fresh Python process: seconds and the
peak resident memory above the process's baseline after its imports (the
kernel's peak counter is reset just before the load), against the size of
the matrix. sknce's native format (``save``/``load``, and ``load(mmap="r")``)
is timed the same way; for a memory map the resident pages are the shared
page cache of the file, so the anonymous memory after the load is given too.

(b) ``most_similar(word, topn=10)`` at the same size: the first query (which
computes the norms), the median of ``--queries`` later queries, sknce beside
gensim and beside the former approach that renormalised every vector at each
call.

BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` and friends, set before
numpy loads) so that other jobs on the machine disturb the timings less.

Run::

    nice -n 10 .venv/bin/python benchmarks/bench_words_io.py
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import Timer, report

_NON_ASCII = ["é", "ß", "日本", "ñ", "ø", "доб", "λ"]

_WORKER = r"""
import json, sys, time
from pathlib import Path


def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0  # kB -> MiB
    raise KeyError(field)


lib, fmt, path = sys.argv[1:4]
import numpy as np
if lib == "gensim":
    from gensim.models import KeyedVectors
else:
    from sknce.words import WordVectors
baseline, anon_baseline = status("VmRSS"), status("RssAnon")
try:
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS counter (VmHWM)
except OSError:
    pass
start = time.perf_counter()
if lib == "gensim":
    kv = KeyedVectors.load_word2vec_format(path, binary=fmt == "binary")
    shape = kv.vectors.shape
elif fmt in ("text", "binary"):
    wv = WordVectors.load_word2vec_format(path, binary=fmt == "binary")
    shape = wv.vectors.shape
else:
    wv = WordVectors.load(path, mmap="r" if fmt == "native mmap" else None)
    shape = wv.vectors.shape
seconds = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds,
    "peak_mib": status("VmHWM") - baseline,
    "anon_mib": status("RssAnon") - anon_baseline,
    "shape": list(shape),
}))
"""


def make_vectors(n_words: int, dims: int, seed: int = 0):
    """Random words (some non-ASCII) and float32 vectors."""
    rng = np.random.default_rng(seed)
    words = []
    for i in range(n_words):
        stem = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(3, 10)))
        suffix = _NON_ASCII[i % len(_NON_ASCII)] if i % 7 == 0 else ""
        words.append(f"{stem}{suffix}{i}")
    return words, rng.normal(size=(n_words, dims)).astype(np.float32)


def load_in_subprocess(lib: str, fmt: str, path: Path) -> dict:
    """One load in a fresh interpreter; its seconds and memory."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, lib, fmt, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_loads(tmp: Path, words, vectors, with_gensim_text: bool) -> list[dict]:
    from sknce.words import WordVectors

    matrix_mib = vectors.nbytes / 2**20
    wv = WordVectors(words, vectors)
    files = {}
    saves = {}
    for fmt, name, save in (
        ("text", "vectors.txt", lambda p: wv.save_word2vec_format(p, binary=False)),
        ("binary", "vectors.bin", lambda p: wv.save_word2vec_format(p, binary=True)),
        ("native", "vectors.wv", wv.save),
    ):
        files[fmt] = tmp / name
        with Timer() as t:
            save(files[fmt])
        saves[fmt] = t.seconds
        print(f"saved {fmt} in {t.seconds:.1f} s", flush=True)
    files["native mmap"] = files["native"]
    runs = [("sknce", "text"), ("gensim", "text"), ("sknce", "binary"), ("gensim", "binary")]
    if not with_gensim_text:
        runs.remove(("gensim", "text"))
    runs += [("sknce", "native"), ("sknce", "native mmap")]
    rows = []
    for lib, fmt in runs:
        result = load_in_subprocess(lib, fmt, files[fmt])
        assert result["shape"] == list(vectors.shape), result
        row = {
            "format": fmt,
            "library": lib,
            "load_s": result["seconds"],
            "peak_rss_mib": result["peak_mib"],
            "peak / matrix": result["peak_mib"] / matrix_mib,
            "anon_mib": result["anon_mib"],
            "save_s": saves[fmt.split()[0]] if lib == "sknce" and fmt != "native mmap" else "",
        }
        print(row, flush=True)
        rows.append(row)
    return rows


def bench_queries(tmp: Path, words, vectors, n_queries: int) -> list[dict]:
    from gensim.models import KeyedVectors

    from sknce.words import WordVectors

    rng = np.random.default_rng(1)
    queries = [words[i] for i in rng.choice(len(words), size=n_queries + 1, replace=False)]
    wv = WordVectors(words, vectors)
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(words, vectors)

    def renormalise_each_call(word):  # the former WordVectors.most_similar
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = vectors / np.where(norms > 0, norms, 1)
        query = unit[wv.key_to_index[word]]
        sims = unit @ query
        sims[wv.key_to_index[word]] = -np.inf
        top = np.argpartition(-sims, 9)[:10]
        return top[np.argsort(-sims[top])]

    rows = []
    for name, query in (
        ("sknce WordVectors (cached norms)", lambda w: wv.most_similar(w, topn=10)),
        ("gensim KeyedVectors", lambda w: kv.most_similar(w, topn=10)),
        ("renormalise every call (former sknce)", renormalise_each_call),
    ):
        start = time.perf_counter()
        query(queries[0])
        first = time.perf_counter() - start
        times = []
        for word in queries[1:]:
            start = time.perf_counter()
            query(word)
            times.append(time.perf_counter() - start)
        rows.append(
            {
                "most_similar": name,
                "first_query_ms": first * 1e3,
                "median_query_ms": statistics.median(times) * 1e3,
            }
        )
        print(rows[-1], flush=True)
    ours = wv.most_similar(queries[1], topn=10)
    theirs = kv.most_similar(queries[1], topn=10)
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-words", type=int, default=200_000)
    parser.add_argument("--dims", type=int, default=300)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument(
        "--skip-gensim-text", action="store_true", help="skip gensim's (slow) text load"
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    words, vectors = make_vectors(args.n_words, args.dims)
    params = {
        "n_words": args.n_words,
        "dims": args.dims,
        "matrix_mib": vectors.nbytes / 2**20,
        "queries": args.queries,
        "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        load_rows = bench_loads(Path(tmp), words, vectors, not args.skip_gensim_text)
        query_rows = bench_queries(Path(tmp), words, vectors, args.queries)
    report(
        "words_io_load",
        load_rows,
        title=(
            f"Loading {args.n_words} x {args.dims} word vectors "
            f"(matrix {params['matrix_mib']:.0f} MiB), one fresh process per load"
        ),
        params=params,
    )
    report(
        "words_io_query",
        query_rows,
        title=f"most_similar(word, topn=10) at V = {args.n_words}, {args.dims} dimensions",
        params=params,
    )


if __name__ == "__main__":
    main()
