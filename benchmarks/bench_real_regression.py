"""ConditionalNCERegressor on real regression data, against Gaussian-residual and quantile models.

Every method goes through the same plain pipeline, defaults everywhere (only
``random_state`` set): ``fit(X_train, y_train)`` on the raw features, then the test
fold's log-density, 90% interval and point prediction. Tasks
(``_real_conditional_data.py``): ``lee-similarity`` (1,225 document pairs),
``diabetes`` (442 patients, raw units), ``wine-alcohol`` (178 wines) and three
``linnerud`` targets (20 men).

Measured per fold: the test negative log-likelihood (NLL, nats per example in the
units of y, lower is better), the share of test targets inside the central 90%
interval (target 0.85-0.95), the interval's mean width in units of the training
target's standard deviation, R² of the point prediction, fit seconds. Reported: mean
and 95% t-interval over the folds (5-fold CV repeated 3 times; 5 times for linnerud).

Methods:

* ``RidgeCV + Gaussian``: ``make_pipeline(StandardScaler(), RidgeCV())`` as the mean,
  a homoscedastic Gaussian whose standard deviation is that of the 5-fold
  out-of-fold residuals on the training fold (training residuals would be too
  narrow); interval mean ± 1.645 σ;
* ``HGB + Gaussian``: ``HistGradientBoostingRegressor()`` the same way;
* ``HGB quantile``: ten ``HistGradientBoostingRegressor(loss="quantile")`` at levels
  0.05, 0.15, ..., 0.95; interval [q0.05, q0.95]; density piecewise constant between
  the sorted quantiles with exponential tails (as ``bench_conditional_regressor.py``);
  point prediction the density's median, (q0.45 + q0.55) / 2;
* ``ConditionalNCERegressor (defaults)``: ``score_samples``, ``predict_interval(X,
  0.9)``, ``predict`` with its default ``predict_method``; ``R2 (mean)`` and
  ``R2 (mode)`` re-read the same fit with each ``predict_method``; ``energy kept``:
  the share of folds whose early stopping kept trained weights rather than the start
  (the base density);
* ``ConditionalNCERegressor (paper settings)``: the reference, the estimator's former
  default settings (Gustafsson et al.'s: no base density, no early stopping, 100
  epochs, hidden (64, 64), batch 128, the mode as prediction).

A second table checks issue 13's targets per task: the default regressor's NLL
against the best baseline's (``NLL margin`` = baseline minus NCE, positive when NCE
is lower, with the 95% t-interval of the per-fold paired differences and the share
of folds where NCE is lower) and its 90% coverage against [0.85, 0.95].
``--from-folds results/real_regression_folds.json`` rebuilds both tables from saved
folds without refitting.

Run (2 CPU cores shared; about 10 minutes)::

    flock /tmp/sknce-bench.lock nice -n 5 .venv/bin/python benchmarks/bench_real_regression.py
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import torch
from _common import Timer, report
from _real_conditional_data import mean_ci, regression_tasks, summarise
from scipy.stats import norm
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknce import ConditionalNCERegressor

LEVELS = np.round(np.arange(0.05, 1.0, 0.1), 2)  # 0.05, 0.15, ..., 0.95
Z90 = norm.ppf(0.95)


class GaussianResidual(RegressorMixin, BaseEstimator):
    """A point regressor plus a homoscedastic Gaussian fitted to its out-of-fold residuals."""

    def __init__(self, regressor=None, cv: int = 5):
        self.regressor = regressor
        self.cv = cv

    def fit(self, X, y):
        cv = min(self.cv, len(y))
        oof = cross_val_predict(clone(self.regressor), X, y, cv=cv)
        self.sigma_ = float(np.sqrt(np.mean((y - oof) ** 2)))
        self.regressor_ = clone(self.regressor).fit(X, y)
        return self

    def predict(self, X):
        return self.regressor_.predict(X)

    def score_samples(self, X, y):
        return norm.logpdf(y, self.predict(X), self.sigma_)

    def predict_interval(self, X, coverage=0.9):
        z = norm.ppf(0.5 + coverage / 2)
        mean = self.predict(X)
        return np.column_stack([mean - z * self.sigma_, mean + z * self.sigma_])


class QuantileBoosting(RegressorMixin, BaseEstimator):
    """Ten quantile boosters; a piecewise density between the sorted quantiles."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        self.models_ = [
            HistGradientBoostingRegressor(
                loss="quantile", quantile=a, random_state=self.random_state
            ).fit(X, y)
            for a in LEVELS
        ]
        return self

    def _quantiles(self, X):
        q = np.sort(np.column_stack([m.predict(X) for m in self.models_]), axis=1)
        return q + 1e-6 * np.arange(q.shape[1])  # strictly increasing

    def predict(self, X):
        q = self._quantiles(X)
        return (q[:, 4] + q[:, 5]) / 2  # median of the piecewise density

    def predict_interval(self, X, coverage=0.9):
        if not np.isclose(coverage, 0.9):
            raise ValueError("the quantile levels give the 90% interval only")
        q = self._quantiles(X)
        return q[:, [0, -1]]

    def score_samples(self, X, y):
        q = self._quantiles(X)
        out = np.empty(len(y))
        for i, (qi, yi) in enumerate(zip(q, y)):
            if yi < qi[0]:
                scale = qi[1] - qi[0]
                out[i] = np.log(0.05 / scale) - (qi[0] - yi) / scale
            elif yi > qi[-1]:
                scale = qi[-1] - qi[-2]
                out[i] = np.log(0.05 / scale) - (yi - qi[-1]) / scale
            else:
                j = min(np.searchsorted(qi, yi, side="right") - 1, len(qi) - 2)
                out[i] = np.log(0.1 / (qi[j + 1] - qi[j]))
        return out


def baselines() -> dict:
    """Method name -> ``factory(seed)`` returning an unfitted estimator."""
    return {
        "RidgeCV + Gaussian": lambda seed: GaussianResidual(
            make_pipeline(StandardScaler(), RidgeCV())
        ),
        "HGB + Gaussian": lambda seed: GaussianResidual(
            HistGradientBoostingRegressor(random_state=seed)
        ),
        "HGB quantile": lambda seed: QuantileBoosting(random_state=seed),
        DEFAULTS: lambda seed: ConditionalNCERegressor(random_state=seed),
        "ConditionalNCERegressor (paper settings)": lambda seed: ConditionalNCERegressor(
            random_state=seed, **PAPER
        ),
    }


DEFAULTS = "ConditionalNCERegressor (defaults)"
BASELINES = ("RidgeCV + Gaussian", "HGB + Gaussian", "HGB quantile")

#: The settings of Gustafsson et al. (2020), the regressor's defaults before issue 13.
PAPER = dict(
    base=None,
    early_stopping=False,
    hidden_layer_sizes=(64, 64),
    embedding_dim=32,
    max_epochs=100,
    batch_size=128,
    predict_method="mode",
)


def evaluate(task_name: str, method: str, factory, split, seed: int) -> dict:
    """Fit one method on one fold and score it: a dict row of the fold table."""
    model = factory(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as fit:
            model.fit(split.X_train, split.y_train)
    y = split.y_test
    bounds = model.predict_interval(split.X_test, coverage=0.9)
    row = {
        "task": task_name,
        "method": method,
        "NLL": float(-np.mean(model.score_samples(split.X_test, y))),
        "cover90": float(np.mean((bounds[:, 0] <= y) & (y <= bounds[:, 1]))),
        "width90/sd": float(np.mean(bounds[:, 1] - bounds[:, 0]) / np.std(split.y_train)),
        "R2": float(r2_score(y, model.predict(split.X_test))),
        "fit s": fit.seconds,
    }
    if "predict_method" in model.get_params():
        default = model.get_params()["predict_method"]
        for how in ("mean", "mode"):
            model.set_params(predict_method=how)
            row[f"R2 ({how})"] = float(r2_score(y, model.predict(split.X_test)))
        model.set_params(predict_method=default)
    epochs = getattr(model, "n_iter_", None)
    if isinstance(epochs, int | np.integer):
        row["epochs"] = int(epochs)
    stopping = dict(getattr(getattr(model, "net_", None), "callbacks_", [])).get("early_stopping")
    if stopping is not None:  # whether the weights kept are trained ones, not the start
        row["energy kept"] = float(stopping.best_epoch_ > 0)
    return row


def run(tasks, methods: dict, *, seed: int = 0, log=print) -> list[dict]:
    """Fold rows of every (task, method); ``tasks`` are names, ``methods`` factories."""
    rows = []
    for task in regression_tasks():
        if task.name not in tasks:
            continue
        for k, split in enumerate(task.folds(seed=seed)):
            for method, factory in methods.items():
                row = evaluate(task.name, method, factory, split, seed + k)
                row["fold"] = k
                log(row)
                rows.append(row)
    return rows


KEYS = (
    "NLL",
    "cover90",
    "width90/sd",
    "R2",
    "R2 (mean)",
    "R2 (mode)",
    "fit s",
    "epochs",
    "energy kept",
)
TASKS = [t.name for t in regression_tasks()]


def targets(summary: list[dict], folds: list[dict]) -> list[dict]:
    """Per task: the default regressor's NLL against the best baseline's, and its coverage."""
    rows = []
    for task in dict.fromkeys(r["task"] for r in summary):
        by = {r["method"]: r for r in summary if r["task"] == task}
        if DEFAULTS not in by or not any(b in by for b in BASELINES):
            continue
        best = min((b for b in BASELINES if b in by), key=lambda b: by[b]["NLL"])
        nce = by[DEFAULTS]
        margin = by[best]["NLL"] - nce["NLL"]
        fold_nll = {(r["method"], r["fold"]): r["NLL"] for r in folds if r["task"] == task}
        paired = [
            fold_nll[best, fold] - nll
            for (method, fold), nll in fold_nll.items()
            if method == DEFAULTS
        ]
        rows.append(
            {
                "task": task,
                "NCE NLL": nce["NLL"],
                "best baseline": best,
                "its NLL": by[best]["NLL"],
                "NLL margin": margin,
                "NLL margin ±": mean_ci(paired)[1],
                "folds NCE lower": float(np.mean(np.array(paired) > 0)),
                "NLL lowest": "yes" if margin > 0 else "no",
                "cover90": nce["cover90"],
                "cover in [0.85, 0.95]": "yes" if 0.85 <= nce["cover90"] <= 0.95 else "no",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    parser.add_argument("--methods", nargs="+", default=None, help="subset of the methods")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="", help="suffix of the results file name")
    parser.add_argument("--from-folds", default=None, help="saved folds JSON: no refitting")
    args = parser.parse_args()
    torch.set_num_threads(1)
    name = "real_regression" + (f"_{args.tag}" if args.tag else "")
    if args.from_folds:
        saved = json.loads(Path(args.from_folds).read_text())
        rows, args = saved["rows"], argparse.Namespace(**{**saved["params"], **vars(args)})
    else:
        methods = baselines()
        if args.methods:
            methods = {m: methods[m] for m in args.methods}
        rows = run(args.tasks, methods, seed=args.seed, log=lambda r: None)
        report(f"{name}_folds", rows, title="Per fold", params=vars(args))
    summary = summarise(rows, KEYS)
    report(
        name,
        summary,
        title="Real regression: test NLL (nats/example, lower is better), 90% interval "
        "coverage and width, R²; mean and 95% interval over folds",
        params=vars(args),
    )
    report(
        f"{name}_targets",
        targets(summary, rows),
        title="Issue 13 targets: default regressor's NLL below every baseline's, coverage "
        "in [0.85, 0.95]",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
