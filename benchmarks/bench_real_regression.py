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
  0.9)``, ``predict`` with its default ``predict_method``; ``R2 (mean)`` re-reads the
  same fit with ``set_params(predict_method="mean")``.

Run (2 CPU cores shared; a few minutes)::

    nice -n 10 .venv/bin/python benchmarks/bench_real_regression.py
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
from _common import Timer, report
from _real_conditional_data import regression_tasks, summarise
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
        "ConditionalNCERegressor (defaults)": lambda seed: ConditionalNCERegressor(
            random_state=seed
        ),
    }


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
        model.set_params(predict_method="mean")
        row["R2 (mean)"] = float(r2_score(y, model.predict(split.X_test)))
        model.set_params(predict_method=default)
    epochs = getattr(model, "n_iter_", None)
    if isinstance(epochs, int | np.integer):
        row["epochs"] = int(epochs)
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


KEYS = ("NLL", "cover90", "width90/sd", "R2", "R2 (mean)", "fit s", "epochs")
TASKS = [t.name for t in regression_tasks()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=TASKS, choices=TASKS)
    parser.add_argument("--methods", nargs="+", default=None, help="subset of the methods")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="", help="suffix of the results file name")
    args = parser.parse_args()
    torch.set_num_threads(1)
    methods = baselines()
    if args.methods:
        methods = {m: methods[m] for m in args.methods}
    rows = run(args.tasks, methods, seed=args.seed, log=lambda r: None)
    name = "real_regression" + (f"_{args.tag}" if args.tag else "")
    report(f"{name}_folds", rows, title="Per fold", params=vars(args))
    report(
        name,
        summarise(rows, KEYS),
        title="Real regression: test NLL (nats/example, lower is better), 90% interval "
        "coverage and width, R²; mean and 95% interval over folds",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
