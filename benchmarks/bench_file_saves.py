"""What verified, atomic saves cost: each writer of sknce, one tree beside another.

Each save runs in a fresh Python process importing sknce from a tree (``--trees``, e.g.
main's checkout before ``sknce._files`` and this one), interleaved over ``--rounds``
(A, B, A, B, ...); the process times the save alone, wall-clock and CPU seconds
(``time.process_time``), into a directory of ``--directory`` (default: a temporary
directory on the disk of ``/tmp``). Writers: ``WordVectors.save`` (native pair), the
word2vec binary format, fastText's ``.bin`` (``SubwordVectors.save``), ``save_npz_chunks``
(``--chunks`` files) and a checkpoint's ``save_params`` (params, optimizer, history).
The load average is recorded at the start and the end.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_file_saves.py \\
        --trees /work/main=before .=after
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import report

_WORKER = r"""
import json, os, sys, time
from pathlib import Path
import numpy as np

writer, directory, n_words, dims, chunks = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:])
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(n_words)]
vectors = rng.normal(size=(n_words, dims)).astype(np.float32)
if writer == "checkpoint":
    import torch
    from sknce import ConditionalNCEClassifier
    torch.set_num_threads(1)
    X, y = rng.normal(size=(200, dims)).astype(np.float32), np.arange(200) % 5
    net = ConditionalNCEClassifier(hidden_layer_sizes=(n_words // 50,), max_epochs=1,
                                   random_state=0).fit(X, y).net_
elif writer == "fasttext":
    from sknce.words import SubwordVectors
    wv = SubwordVectors(words[: n_words // 10], vectors[: n_words // 10], vectors)
elif writer != "chunks":
    from sknce.words import WordVectors
    wv = WordVectors(words, vectors)
else:
    from sknce.datasets import save_npz_chunks
    blocks = np.array_split(vectors, chunks)

start, cpu = time.perf_counter(), time.process_time()
if writer == "native":
    wv.save(directory / "m.wv")
elif writer == "word2vec-binary":
    wv.save_word2vec_format(directory / "v.bin", binary=True)
elif writer == "fasttext":
    wv.save(directory / "f.bin")
elif writer == "chunks":
    save_npz_chunks(blocks, directory)
elif writer == "checkpoint":
    net.save_params(f_params=str(directory / "params.pt"),
                    f_optimizer=str(directory / "optimizer.pt"),
                    f_history=str(directory / "history.json"))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
size = sum(p.stat().st_size for p in directory.iterdir())
print(json.dumps({"seconds": seconds, "cpu": cpu, "bytes": size}))
"""

WRITERS = ("native", "word2vec-binary", "fasttext", "chunks", "checkpoint")


def _run(tree: Path, writer: str, parent: Path, args) -> dict:
    with tempfile.TemporaryDirectory(dir=parent) as directory:
        env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
        out = subprocess.run(
            [sys.executable, "-c", _WORKER, writer, directory, str(args.n_words),
             str(args.dims), str(args.chunks)],
            capture_output=True, text=True, env=env, check=True,
        ).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", nargs="+", default=[".=this"], help="path=label, ...")
    parser.add_argument("--writers", nargs="+", default=list(WRITERS), choices=WRITERS)
    parser.add_argument("--n-words", type=int, default=200_000)
    parser.add_argument("--dims", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--directory", default=None, help="where the files go")
    parser.add_argument("--name", default="file_saves")
    args = parser.parse_args()
    trees = [(Path(t.split("=")[0]).resolve(), t.split("=")[-1]) for t in args.trees]
    parent = Path(args.directory or tempfile.gettempdir())
    load_start = os.getloadavg()
    runs: dict = {}
    for _ in range(args.rounds):
        for writer in args.writers:
            for tree, label in trees:
                runs.setdefault((writer, label), []).append(_run(tree, writer, parent, args))
    load_end = os.getloadavg()
    rows = []
    for (writer, label), results in runs.items():
        rows.append(
            {
                "writer": writer,
                "tree": label,
                "MiB": round(results[0]["bytes"] / 2**20, 1),
                "median s": statistics.median(r["seconds"] for r in results),
                "median CPU s": statistics.median(r["cpu"] for r in results),
                "runs s": [round(r["seconds"], 3) for r in results],
            }
        )
    params = {**vars(args), "load_start": load_start, "load_end": load_end}
    loads = f"load {load_start[0]:.1f} -> {load_end[0]:.1f}"
    title = f"Saves, {args.rounds} interleaved rounds; {loads}"
    report(args.name, rows, title=title, params=json.loads(json.dumps(params, default=str)))


if __name__ == "__main__":
    main()
