"""Conditional NCE at scale: epoch time, test log-likelihood, recall@10 and memory vs |Y|.

A planted log-linear model with |Y| ∈ {10^3, ..., 10^6} labels, d = 32: x ~ N(0, I),
s(x, y) = xᵀθ_y + b_y with θ_y ~ N(0, 4 I/d) and Zipf label biases b_y = -log(rank), so
the label marginal is heavy-tailed as in language modelling and extreme classification;
y drawn from softmax(s) (Gumbel-max, in chunks); ``--n-train`` training and ``--n-test``
test examples (cached as ``.npz`` under ``--cache``, so a rerun does not redraw them).
The same ``ConditionalNCEClassifier`` log-linear model (``hidden_layer_sizes=()``) over
all |Y| labels (``classes=range(|Y|)``) is fitted, with the same batch size, learning
rate and number of epochs and no early stopping, by

* ``MLE``: the full softmax (``objective="mle"``), Adam;
* ``NCE dense``: ranking NCE, K = 64 negatives per example from the (add-one smoothed)
  label marginal, dense label tables, Adam;
* ``NCE sparse``: the same with ``sparse_embeddings=True`` and ``sknce.optim.LazyAdam``
  (what ``sparse_embeddings="auto"`` picks from 3 × 256 × 65 = 49,920 classes on: three
  times the label rows a step scores), whose step touches only the rows of the true and
  sampled labels;
* ``NCE auto``: ranking NCE at the default ``sparse_embeddings="auto"`` (the resolved
  choice is the ``sparse`` column);
* ``NCE shared``: ``shared_negatives=True``, one set of K = 64 negatives per batch scored
  by one matrix product, at the default ``sparse_embeddings="auto"``.

Each (|Y|, method) runs in a fresh subprocess, so its peak RSS is its own. Reported:
seconds per epoch (wall time of ``fit`` over its epochs, after an untimed warm-up fit)
and CPU seconds per epoch (the process's, the figure to read on a shared machine), the
speed-up over the MLE row of the same |Y| (wall and CPU), the mean test log-likelihood
(exact, normalised over all |Y| labels by a running logsumexp over chunks of 4096
labels: never an n × |Y| array) and its ratio to MLE's (``NLL / MLE``), recall@10 (share
of test examples whose label is among the 10 most probable, from ``predict_topk`` where
the checkout has it), peak RSS and whether it fits in 24 GiB; the planted model's own
test log-likelihood is the ceiling.

With ``--baseline PATH[=LABEL]`` (repeatable) the rows run again from another checkout
(``PYTHONPATH=PATH``), e.g. an export of the code before the training engine, and the
summary puts their seconds per epoch side by side (``/ baseline``: ratio of the two);
rows whose parameters the checkout lacks are skipped there. Runs alternate between the
checkouts, so both share the machine's load.

Run (the quiet-machine comparison with the pre-engine code; over two hours, of which
the full softmax at 10^6 labels, about 750 CPU seconds an epoch, takes 3,000 s)::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_conditional_scale.py \\
        --classes 100000 1000000 --baseline /tmp/pre-engine=pre-engine
    .venv/bin/python benchmarks/bench_conditional_scale.py --classes 1000 10000 --epochs 1

The full softmax costs about 4 CPU seconds a step at 10^6 labels (about 750 s an epoch
of the default 50,000 examples); a shorter run of that row::

    .venv/bin/python benchmarks/bench_conditional_scale.py --classes 1000000 \\
        --n-train 20000 --n-test 2000 --epochs 1 --name conditional_scale_1e6
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
import torch
from _common import format_table, peak_rss_mib, report

D = 32
K = 64
#: Method name -> (its parameters, the parameters a checkout must know to run it).
METHODS = {
    "MLE": (dict(objective="mle"), ()),
    "NCE dense": (dict(objective="ranking", n_negatives=K, sparse_embeddings=False), ()),
    "NCE sparse": (
        dict(objective="ranking", n_negatives=K, sparse_embeddings=True, optimizer="LazyAdam"),
        (),
    ),
    "NCE auto": (dict(objective="ranking", n_negatives=K), ("init",)),
    "NCE shared": (
        dict(objective="ranking", n_negatives=K, shared_negatives=True),
        ("shared_negatives",),
    ),
    # the two choices of "auto" with a shared set, to measure where sparse starts to pay
    "NCE shared dense": (
        dict(objective="ranking", n_negatives=K, shared_negatives=True, sparse_embeddings=False),
        ("shared_negatives",),
    ),
    "NCE shared sparse": (
        dict(
            objective="ranking",
            n_negatives=K,
            shared_negatives=True,
            sparse_embeddings=True,
            optimizer="LazyAdam",
        ),
        ("shared_negatives",),
    ),
}
#: Labels scored at once in the test log-likelihood.
CHUNK = 4096
BUDGET_MIB = 24 * 1024


def planted(n: int, n_classes: int, d: int, seed: int):
    """Inputs, labels and the true log-likelihood of each label."""
    gen = torch.Generator().manual_seed(seed)
    theta = torch.randn(n_classes, d, generator=gen) * (2.0 / d**0.5)
    bias = -torch.log(torch.arange(1, n_classes + 1, dtype=torch.float32))
    X = torch.randn(n, d, generator=gen)
    y = torch.empty(n, dtype=torch.int64)
    true_ll = torch.empty(n)
    rows_per_block = max(1, (1 << 24) // n_classes)  # 64 MiB of float32 logits at a time
    for start in range(0, n, rows_per_block):
        rows = slice(start, min(start + rows_per_block, n))
        logits = X[rows] @ theta.T + bias
        u = torch.rand(logits.shape, generator=gen).clamp_min_(1e-20)
        y[rows] = torch.argmax(logits - torch.log(-torch.log(u)), dim=1)
        log_p = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        true_ll[rows] = log_p.gather(1, y[rows].unsqueeze(1)).squeeze(1)
    return X.numpy(), y.numpy(), true_ll.numpy()


def data_file(cache: Path, n_classes: int, n_train: int, n_test: int) -> Path:
    """The cached planted data of one |Y| (drawn and saved on first use)."""
    path = cache / f"planted_{n_classes}_{n_train}_{n_test}_d{D}.npz"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        X, y, true_ll = planted(n_train + n_test, n_classes, D, seed=0)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, X=X, y=y, true_ll=true_ll)
        tmp.replace(path)
        print(f"drew {path.name} in {time.perf_counter() - start:.0f} s", flush=True)
    return path


def test_scores(est, X, y, k: int = 10) -> tuple[float, float]:
    """Mean log p̂(y|x) and recall@k, in row batches × chunks of labels (never n × |Y|).

    ``y`` are column indices of ``classes_``. Recall comes from ``predict_topk`` when the
    estimator has it, else from a running top-k here.
    """
    # (the code before the training engine wrapped the scorer in its loss module)
    scorer = getattr(est.net_.module_, "scorer", est.net_.module_)
    total, hits = 0.0, 0
    for start in range(0, len(y), 1024):
        rows = slice(start, min(start + 1024, len(y)))
        with torch.no_grad():
            h, b = scorer.encode(torch.as_tensor(X[rows]))
            labels = torch.as_tensor(y[rows])
            true = scorer.score(h, b, labels).double()
            lse = None
            for lo in range(0, scorer.n_classes, CHUNK):
                scores = scorer.score_range(h, b, lo, min(lo + CHUNK, scorer.n_classes))
                part = torch.logsumexp(scores.double(), dim=1)
                lse = part if lse is None else torch.logaddexp(lse, part)
        total += float((true - lse).sum())
        if hasattr(est, "predict_topk"):
            top_labels, _ = est.predict_topk(X[rows], k)
            hits += int((top_labels == y[rows, None]).any(axis=1).sum())
        else:
            hits += _hits_by_hand(scorer, h, b, labels, k)
    return total / len(y), hits / len(y)


def _hits_by_hand(scorer, h, b, labels, k: int) -> int:
    """Rows whose label is among their k best scores (running top-k over label chunks)."""
    best = best_id = None
    with torch.no_grad():
        for lo in range(0, scorer.n_classes, CHUNK):
            scores = scorer.score_range(h, b, lo, min(lo + CHUNK, scorer.n_classes))
            value, index = scores.topk(min(k, scores.shape[1]), dim=1)
            if best is not None:
                value, index = torch.cat([best, value], 1), torch.cat([best_id, index + lo], 1)
                value, order = value.topk(min(k, value.shape[1]), dim=1)
                index = index.gather(1, order)
            else:
                index = index + lo
            best, best_id = value, index
    return int((best_id == labels.unsqueeze(1)).any(dim=1).sum())


def run_one(method: str, path: str, n_train: int, settings: dict):
    """Fit and score one method on one cached data set; a dict (printed as JSON).

    ``settings``: ``epochs``, ``batch_size``, ``lr`` and ``hidden`` (the encoder's
    hidden layers; ``[]`` is the log-linear model).
    """
    from sknce import ConditionalNCEClassifier

    params, needs = METHODS[method]
    known = ConditionalNCEClassifier().get_params()
    if any(name not in known for name in needs):
        return {"skipped": f"this checkout has no {', '.join(needs)}"}
    params = dict(params)
    if params.get("optimizer") == "LazyAdam":
        from sknce.optim import LazyAdam

        params["optimizer"] = LazyAdam
    data = np.load(path)
    X, y = data["X"], data["y"]
    X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    n_classes = int(Path(path).name.split("_")[1])
    common = dict(
        hidden_layer_sizes=tuple(settings["hidden"]),
        classes=np.arange(n_classes),
        batch_size=settings["batch_size"],
        lr=settings["lr"],
        random_state=0,
        early_stopping=False,
    )
    # untimed: torch sets up its kernels (and imports its compiler) at the first fit
    ConditionalNCEClassifier(**{**common, "classes": None, "max_epochs": 1}, **params).fit(
        X_tr[:512], y_tr[:512] % 8
    )
    est = ConditionalNCEClassifier(**common, max_epochs=settings["epochs"], **params)
    start, cpu_start = time.perf_counter(), time.process_time()
    est.fit(X_tr, y_tr)
    fit_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    ll, recall = test_scores(est, X_te, y_te)
    return {
        "s/epoch": fit_s / est.n_iter_,
        # CPU seconds of the process: what the fit costs, whatever else the machine runs
        "CPU s/epoch": cpu_s / est.n_iter_,
        "sparse": bool(getattr(est, "sparse_embeddings_", est.sparse_embeddings)),
        "test LL": ll,
        "recall@10": recall,
        "peak RSS MiB": peak_rss_mib(),
    }


def in_subprocess(args: list[str], pythonpath: str | None) -> dict:
    """Run ``--one`` in a fresh interpreter (with ``PYTHONPATH`` first) and parse its JSON."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath, env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, __file__, "--one", *args], capture_output=True, text=True, env=env
    )
    if out.returncode != 0:
        return {"error": out.stderr.strip()[-300:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _origins(values: list[str]) -> list[tuple[str | None, str]]:
    """``(path, label)`` of this checkout and of each ``--baseline PATH[=LABEL]``."""
    found = [(None, "")]
    for value in values:
        path, _, label = value.partition("=")
        found.append((str(Path(path).resolve()), label or Path(path).name))
    return found


def side_by_side(rows: list[dict], labels: list[str]) -> list[dict]:
    """One row per (|Y|, method): this checkout's s/epoch next to each baseline's."""
    table = []
    by_key = {(r["classes"], r["method"], r["origin"]): r for r in rows}
    for classes, method, origin in by_key:
        mine = by_key[classes, method, origin]
        if origin or "s/epoch" not in mine:
            continue
        entry = {"classes": classes, "method": method}
        for key in ("s/epoch", "CPU s/epoch"):
            entry[key] = mine[key]
            for label in labels:
                other = by_key.get((classes, method, label), {})
                if key in other:
                    entry[f"{label} {key}"] = other[key]
                    entry[f"/ {label} ({key})"] = mine[key] / other[key]
        table.append(entry)
    return table


def versus_mle(rows: list[dict]) -> None:
    """Add each row's speed-up over the MLE row of its |Y| and checkout, and its NLL ratio.

    ``speed-up``: MLE seconds per epoch / the row's (wall and CPU); ``NLL / MLE``: the
    row's mean test negative log-likelihood over MLE's (1 is MLE's, above is worse).
    """
    mle = {(r["classes"], r["origin"]): r for r in rows if r["method"] == "MLE"}
    for row in rows:
        ref = mle.get((row["classes"], row["origin"]), {})
        if row["method"] == "MLE" or "s/epoch" not in row or "s/epoch" not in ref:
            continue
        row["speed-up"] = ref["s/epoch"] / row["s/epoch"]
        row["CPU speed-up"] = ref["CPU s/epoch"] / row["CPU s/epoch"]
        row["NLL / MLE"] = row["test LL"] / ref["test LL"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--n-train", type=int, default=50_000)
    parser.add_argument("--n-test", type=int, default=5_000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--hidden",
        type=int,
        nargs="*",
        default=[],
        help="hidden layers of the encoder (none: the log-linear model, embedding width 32)",
    )
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="PATH[=LABEL]",
        help="run the rows again from this checkout (PYTHONPATH=PATH), side by side",
    )
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "sknce_scale"))
    parser.add_argument("--name", default="conditional_scale", help="results file stem")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        method, path, n_train, settings = args.one
        print(json.dumps(run_one(method, path, int(n_train), json.loads(settings))))
        return

    origins = _origins(args.baseline)
    settings = {
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "hidden": args.hidden,
    }
    rows = []
    for n_classes in args.classes:
        path = data_file(Path(args.cache), n_classes, args.n_train, args.n_test)
        true_ll = float(np.load(path)["true_ll"][args.n_train :].mean())
        for method in args.methods:
            for pythonpath, label in origins:
                result = in_subprocess(
                    [method, str(path), str(args.n_train), json.dumps(settings)]
                    + ["--threads", str(args.threads)],
                    pythonpath,
                )
                row = {"classes": n_classes, "method": method, "origin": label, **result}
                if "peak RSS MiB" in row:
                    row["fits 24 GiB"] = row["peak RSS MiB"] < BUDGET_MIB
                    row["true-model LL"] = true_ll
                rows.append(row)
                print(format_table([row]), flush=True)
    labels = [label for _, label in origins[1:]]
    versus_mle(rows)
    report(
        args.name,
        rows,
        title=(
            f"Ranking NCE (K={K}) vs full softmax, "
            + (f"MLP {args.hidden} -> 64" if args.hidden else f"log-linear d={D}")
            + f", {args.n_train} train / "
            f"{args.n_test} test, {args.epochs} epochs, batch {args.batch_size}, lr {args.lr}, "
            f"{args.threads} torch thread(s)"
        ),
        params={**vars(args), "load_average": os.getloadavg()},
    )
    if labels:
        print("\nSeconds per epoch side by side")
        print(format_table(side_by_side(rows, labels)))


if __name__ == "__main__":
    main()
