"""ACEWord2Vec's autograd path (a GPU's) against its compiled kernel and gensim, on the CPU.

On a GPU (or with an accelerator, or optimizer options) ACEWord2Vec's compiled
kernel does not apply and the discriminator trains by autograd, one optimizer
step per batch. That path's arithmetic does not depend on the device, so its
*quality* is measured here on the CPU, by forcing it. Corpus and word-pair sets
are those of ``bench_words.py`` (the Wikipedia excerpt in gensim's test data);
every fit uses 100 dimensions, window 5, 5 negatives, min_count 5, sample 1e-3,
one thread (``n_jobs=1``, gensim ``workers=1``, one torch thread).

A method is ``FAMILY:PATH``. Families: ``nce`` (``adversarial=False``), ``ace``
(the default, adversarial), ``sw_nce`` and ``sw_ace`` (``subwords=True``, n-grams
of 3 to 6 characters in ``--bucket`` rows), ``gensim`` (``Word2Vec(sg=1)``) and
``gensim_ft`` (``FastText(sg=1)``, the same bucket), which take no path. Paths:

- ``kernel``: the estimator's defaults on the CPU (the compiled kernel);
- ``auto``: the defaults with the kernel forced off on the CPU (what the
  defaults resolve to where the kernel does not run: Adam at ``0.4 * lr``);
- ``cuda``: the defaults with ``device="cuda"`` (a GPU's path);
- ``sgd_mean``: plain SGD at the default ``lr=0.025`` on the batch's mean loss
  (``optimizer=torch.optim.SGD, optimizer_kwargs={"momentum": 0.0}``: an option
  keeps SGD and selects autograd), the GPU's default before the rule;
- ``sgd_sum``: plain SGD at ``0.025 * batch_size`` on the mean, which is SGD at
  0.025 on the batch's summed loss (every example's step as large as the kernel's,
  taken together instead of one after another);
- ``adam@LR``: ``optimizer=torch.optim.Adam, lr=LR``.

``sgd_mean``, ``sgd_sum`` and ``adam@LR`` train on ``--device``.

Runs alternate between methods within a seed (each in a fresh subprocess), so
they share the machine's load side by side; the 1-minute load average is taken
before and after each. Quality: Spearman on WordSim353 and SimLex-999, on the
pairs of vocabulary words (gensim's ``evaluate_word_pairs`` default); the
subword families also on all pairs (``bench_subwords.spearman``).

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words_autograd.py \\
        --methods gensim nce:kernel nce:auto ace:kernel ace:auto \\
        --epochs 5 --seeds 0 --name words_autograd
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import Timer, format_table, report, run_one_json
from _words_data import simlex999_path, wordsim353_path
from bench_subwords import spearman
from bench_words import corpus

COMMON = dict(window=5, min_count=5, sample=1e-3)
NGRAMS = dict(min_n=3, max_n=6)
FAMILIES = {
    "nce": dict(adversarial=False),
    "ace": dict(),
    "sw_nce": dict(adversarial=False, subwords=True),
    "sw_ace": dict(subwords=True),
}
BATCH_SIZE = 10000  # ACEWord2Vec's default


def path_params(path: str, device: str) -> dict:
    """The estimator parameters of a path (see the module docstring)."""
    import torch

    plain_sgd = dict(optimizer=torch.optim.SGD, optimizer_kwargs={"momentum": 0.0})
    if path in ("kernel", "auto"):
        return {}
    if path == "cuda":
        return {"device": "cuda"}
    if path == "sgd_mean":
        return plain_sgd | {"device": device}
    if path == "sgd_sum":
        return plain_sgd | {"lr": 0.025 * BATCH_SIZE, "device": device}
    if path.startswith("adam@"):
        return dict(optimizer=torch.optim.Adam, lr=float(path.split("@", 1)[1]), device=device)
    raise ValueError(f"unknown path {path!r}")


def force_autograd() -> None:
    """Make every fit of this process resolve and take the autograd path, as on a GPU."""
    from sknce.words._net import ACEKernelStep

    ACEKernelStep.runs = lambda self, device, optimizer, options: False


def fit(method: str, epochs: int, seed: int, bucket: int, device: str):
    """Fit one model; return (similarity, vocabulary, losses, seconds, CPU seconds, optimizer)."""
    import torch

    torch.set_num_threads(1)
    docs = corpus()
    family, _, path = method.partition(":")
    if family.startswith("gensim"):
        from gensim.models import FastText, Word2Vec

        cpu = time.process_time()
        options = dict(vector_size=100, sg=1, negative=5, workers=1, epochs=epochs, seed=seed)
        with Timer() as t:
            if family == "gensim_ft":
                model = FastText(docs, bucket=bucket, **NGRAMS, **options, **COMMON)
            else:
                model = Word2Vec(docs, **options, **COMMON)
        cpu = time.process_time() - cpu
        wv = model.wv
        return _similarity(wv, family == "gensim_ft"), set(wv.index_to_key), [], t.seconds, cpu, ""
    from sknce import ACEWord2Vec

    params = {**FAMILIES[family], **COMMON, "random_state": seed, "max_epochs": epochs}
    if params.get("subwords"):
        params.update(bucket=bucket, **NGRAMS)
    params |= path_params(path, device)
    # compile (or load from cache) the numba kernels outside the timed fit
    warm = {k: v for k, v in params.items() if k in ("subwords", "device")}
    ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4, bucket=10, **warm).fit(
        [["a", "b", "c"]] * 2
    )
    if path == "auto":
        force_autograd()
    cpu = time.process_time()
    with Timer() as t:
        model = ACEWord2Vec(n_jobs=1, **params).fit(docs)
    cpu = time.process_time() - cpu
    losses = [round(row["train_loss"], 4) for row in model.history_]
    similarity = _similarity(model.wv_, params.get("subwords", False))
    optimizer = model.net_.optimizer_
    trained_by = f"{type(optimizer).__name__} lr={optimizer.defaults['lr']:g}"
    trained_by += f" {type(model.net_.step_).__name__}"
    return similarity, set(model.vocabulary_), losses, t.seconds, cpu, trained_by


def _similarity(wv, subwords: bool):
    """Cosine of two words; for a word model, None when one is outside the vocabulary."""
    if subwords:
        return wv.similarity
    return lambda a, b: wv.similarity(a, b) if a in wv and b in wv else None


def run_one(method: str, epochs: int, seed: int, bucket: int, device: str) -> dict:
    """Fit one model in this process; return its measurements."""
    load = os.getloadavg()[0]
    similarity, vocab, losses, seconds, cpu, trained_by = fit(method, epochs, seed, bucket, device)
    row = {"trained_by": trained_by, "fit_s": seconds, "cpu_s": cpu}
    row.update(loss_first=None, loss_last=None)
    if losses:
        row.update(loss_first=losses[0], loss_last=losses[-1], losses=losses)
    for name, path in (("ws353", wordsim353_path()), ("simlex", simlex999_path())):
        scores = spearman(similarity, vocab, path)
        row[name] = scores["vocab"]
        row[f"{name}_all"] = scores["all"]
    row["load"] = [load, os.getloadavg()[0]]
    return row


def in_subprocess(method: str, epochs: int, seed: int, bucket: int, device: str) -> dict:
    """Run :func:`run_one` in a fresh interpreter and parse its JSON."""
    return run_one_json(__file__, method, epochs, seed, bucket, device)


def summarise(rows: list[dict]) -> list[dict]:
    """Mean ± sd quality, median seconds and the loads per method."""
    summary = []
    for method in dict.fromkeys(r["method"] for r in rows):
        group = [r for r in rows if r["method"] == method]
        entry = {"method": method, "runs": len(group), "trained_by": group[0]["trained_by"]}
        for key in ("ws353", "simlex", "ws353_all"):
            values = np.array([r[key] for r in group], dtype=float)
            entry[key] = float(values.mean())
            entry[f"{key}_sd"] = float(values.std())
        for key in ("loss_first", "loss_last"):
            values = [r[key] for r in group if r[key] is not None]
            entry[key] = float(np.mean(values)) if values else None
        entry["fit_s"] = float(np.median([r["fit_s"] for r in group]))
        entry["cpu_s"] = float(np.median([r["cpu_s"] for r in group]))
        loads = [x for r in group for x in r["load"]]
        entry["load"] = f"{min(loads):.1f}-{max(loads):.1f}"
        summary.append(entry)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=[])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--bucket", type=int, default=100000)
    parser.add_argument("--device", default="cpu", help="of sgd_mean, sgd_sum, adam@LR")
    parser.add_argument("--name", default="words_autograd")
    parser.add_argument("--rows", type=Path, help="also write the rows here after each run")
    parser.add_argument("--one", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, epochs, seed, bucket, device = args.one
        print(json.dumps(run_one(method, int(epochs), int(seed), int(bucket), device)))
        return
    corpus()  # parse once before any timed run
    rows = []
    for seed in args.seeds:
        for method in args.methods:
            result = in_subprocess(method, args.epochs, seed, args.bucket, args.device)
            rows.append({"method": method, "seed": seed} | result)
            shown = {k: v for k, v in rows[-1].items() if k != "losses"}
            print(format_table([shown]), flush=True)
            if args.rows:
                args.rows.write_text(json.dumps(rows, indent=1))
    report(
        args.name,
        summarise(rows),
        title="ACEWord2Vec's autograd path (forced on the CPU) against its kernel and gensim",
        params={
            "epochs": args.epochs,
            "seeds": args.seeds,
            "bucket": args.bucket,
            "device": args.device,
            **COMMON,
            "threads": 1,
            "runs": rows,
            "load": "1-minute load average before and after each run (2 cores shared "
            "with other engineers' jobs)",
        },
    )


if __name__ == "__main__":
    main()
