"""LatentClassNCEEmbedder on sklearn's bundled data, against raw features and PCA.

The latent class of a point is its class label (Awasthi et al., Section 5: two points
of one class form a positive pair, no augmentation). Every representation goes through
the same plain pipeline, defaults everywhere (only ``random_state`` set), fitted on the
training fold with its labels, then probed on the test fold by

* ``probe acc``: ``LogisticRegression(max_iter=1000)`` on the representation;
* ``5-NN acc``: ``KNeighborsClassifier()`` (5 nearest neighbours, Euclidean; on unit
  vectors the same order as cosine).

Representations: ``raw`` (the features as loaded), ``scaled`` (``StandardScaler``),
``PCA`` (``StandardScaler`` then ``PCA(n_components=0.95)``, the components that keep
95% of the variance), and ``LatentClassNCE (defaults)`` (the embedder on the raw
features). Reported: mean and 95% t-interval over 5 stratified folds x ``--repeats``
seeds; the embedder's fit seconds and epochs.

Tasks: ``digits`` (1,797 8x8 images, 10 classes), ``wine`` (178, 3), ``breast-cancer``
(569, 2), ``iris`` (150, 3).

Run (2 CPU cores shared)::

    nice -n 10 .venv/bin/python benchmarks/bench_real_latent.py
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
from _common import Timer, report
from _real_conditional_data import latent_task, summarise
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from sknce import LatentClassNCEEmbedder

TASKS = ["digits", "wine", "breast-cancer", "iris"]


def representations() -> dict:
    """Method name -> ``factory(seed)`` returning an unfitted transformer."""
    return {
        "raw": lambda seed: FunctionTransformer(),
        "scaled": lambda seed: StandardScaler(),
        "PCA": lambda seed: make_pipeline(StandardScaler(), PCA(n_components=0.95)),
        "LatentClassNCE (defaults)": lambda seed: LatentClassNCEEmbedder(random_state=seed),
    }


def evaluate(task_name: str, method: str, factory, split, seed: int) -> dict:
    """Fit one representation on one fold and probe it: a dict row of the fold table."""
    rep = factory(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as fit:
            Z_train = rep.fit_transform(split.X_train, split.y_train)
        Z_test = rep.transform(split.X_test)
        probe = LogisticRegression(max_iter=1000).fit(Z_train, split.y_train)
    knn = KNeighborsClassifier().fit(Z_train, split.y_train)
    row = {
        "task": task_name,
        "method": method,
        "probe acc": float(np.mean(probe.predict(Z_test) == split.y_test)),
        "5-NN acc": float(np.mean(knn.predict(Z_test) == split.y_test)),
        "dims": int(Z_train.shape[1]),
        "fit s": fit.seconds,
    }
    epochs = getattr(rep, "n_iter_", None)
    if isinstance(epochs, int | np.integer):
        row["epochs"] = int(epochs)
    return row


def run(tasks, methods: dict, *, repeats: int = 1, seed: int = 0, log=print) -> list[dict]:
    """Fold rows of every (task, method) over ``repeats`` seeds of the 5-fold split."""
    rows = []
    for name in tasks:
        task = latent_task(name)
        for r in range(repeats):
            for k, split in enumerate(task.folds(5, seed + r)):
                for method, factory in methods.items():
                    row = evaluate(name, method, factory, split, seed + 5 * r + k)
                    row["fold"] = 5 * r + k
                    log(row)
                    rows.append(row)
    return rows


KEYS = ("probe acc", "5-NN acc", "dims", "fit s", "epochs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    parser.add_argument("--methods", nargs="+", default=None, help="subset of the methods")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="", help="suffix of the results file name")
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods = representations()
    if args.methods:
        methods = {m: methods[m] for m in args.methods}
    rows = run(args.tasks, methods, repeats=args.repeats, seed=args.seed, log=lambda r: None)
    name = "real_latent" + (f"_{args.tag}" if args.tag else "")
    report(f"{name}_folds", rows, title="Per fold", params=vars(args))
    report(
        name,
        summarise(rows, KEYS),
        title="Latent classes = labels: linear-probe and 5-NN test accuracy of each "
        "representation, mean and 95% interval over folds",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
