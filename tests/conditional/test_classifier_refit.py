"""The linear regime's refit below 6 training rows per class (``plan_.refit_epochs``,
``plan_.refit_mix``): the rule at its switch points, the plans it leaves as they were,
and a fit that refits twice and mixes the two tables."""

import warnings
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning

import sknce.conditional._plan as plan_module
from sknce import ConditionalNCEClassifier
from sknce.conditional._plan import DataFacts, linear_refit, resolve_plan

#: The article task's counts (``benchmarks/_label_count_tasks.py``, ``article_k``).
ARTICLE = dict(n_features=30_439, entries=32.35, n_samples=9_014)


def _plan(n_classes, **params):
    return resolve_plan(ConditionalNCEClassifier(**params), DataFacts(n_classes, **ARTICLE))


def test_the_refit_share_switches_at_its_rows_and_classes():
    (off, on), (full, none) = plan_module.LINEAR_REFIT_ROWS
    start, end = plan_module.LINEAR_REFIT_CLASSES
    for k in (end, 1_750, 5_000):
        assert linear_refit(k, none) == 0.0 and linear_refit(k, none + 1.0) == 0.0
        assert linear_refit(k, off) == 0.0 and linear_refit(k, 1.0) == 0.0
        assert linear_refit(k, None) == 0.0  # unknown: many rows
        for rows in (on, (on + full) / 2, full):
            assert linear_refit(k, rows) == 1.0
        assert linear_refit(k, (full + none) / 2) == pytest.approx(0.5, rel=1e-12)
        assert linear_refit(k, (off + on) / 2) == pytest.approx(0.5, rel=1e-12)
        assert 0.0 < linear_refit(k, none - 1e-9) < 1e-6
    assert linear_refit(start, 5.0) == 0.0 and linear_refit(100, 5.0) == 0.0
    assert linear_refit((start + end) / 2, 5.0) == pytest.approx(0.5, rel=1e-12)
    # continuous: linear in the rows between, its largest step the steeper ramp's slope
    rows = np.linspace(off - 0.5, none + 0.5, 4_001)
    shares = np.array([linear_refit(1_750, r) for r in rows])
    slope = max(1.0 / (on - off), 1.0 / (none - full))
    assert np.max(np.abs(np.diff(shares))) <= slope * (rows[1] - rows[0]) * 1.0001


def test_the_plan_is_the_one_before_from_six_rows_per_class(monkeypatch):
    # article chunks from 2 to 3,000 classes against the plans with the rule switched
    # off: the same plan, bit for bit, wherever it has 6 rows per class or more (K1500,
    # 6.013 rows, K1000 and the 105-class task among them) or 3.65 or fewer (K2500,
    # 3.613, and on), and the two fields alone differ elsewhere
    (off, _), (_, none) = plan_module.LINEAR_REFIT_ROWS
    counts = list(range(2, 3_001, 3)) + [105, 1_499, 1_500, 1_502, 1_503, 2_469, 2_470, 2_495]
    plans = {k: _plan(k) for k in counts}
    monkeypatch.setattr(plan_module, "LINEAR_REFIT_LONGER", 0.0)
    monkeypatch.setattr(plan_module, "LINEAR_REFIT_MIX", 0.0)
    for k in counts:
        before = _plan(k)
        assert before.refit_epochs == 1.0 and before.refit_mix == 0.0
        rows = ARTICLE["n_samples"] / k
        if rows >= none or rows <= off:
            assert plans[k] == before, k
        else:
            assert replace(plans[k], refit_epochs=1.0, refit_mix=0.0) == before, k


@pytest.mark.parametrize(
    "n_classes, epochs, mix",
    [
        (105, 1.0, 0.0),
        (1_000, 1.0, 0.0),
        (1_499, 1.0, 0.0),  # K1500: 6.013 rows per class
        (1_502, 1.0, 0.0),  # 6.001
        (1_503, 1.0 + 0.5 * 0.00355, 0.5 * 0.00355),  # 5.997: the ramp begins
        (1_749, 1.5, 0.5),  # K1750: 5.154
        (1_999, 1.5, 0.5),  # K2000: 4.509
        (2_200, 1.0 + 0.5 * 0.52620, 0.5 * 0.52620),  # 4.097
        (2_460, 1.0 + 0.5 * 0.01674, 0.5 * 0.01674),  # 3.664
        (2_495, 1.0, 0.0),  # K2500: 3.613
        (2_995, 1.0, 0.0),  # K3000: 3.010
        (5_639, 1.0, 0.0),  # K6000: 1.6
    ],
)
def test_the_refit_of_article_chunks(n_classes, epochs, mix):
    plan = _plan(n_classes)
    assert plan.regime == "linear" and plan.refit
    assert plan.refit_epochs == pytest.approx(epochs, abs=1e-4)
    assert plan.refit_mix == pytest.approx(mix, abs=1e-4)
    # the user's rate: the refit as before
    plan = _plan(n_classes, lr=0.5)
    assert plan.refit_epochs == 1.0 and plan.refit_mix == 0.0


def _few_rows(n_classes=40, rows=5, n_features=300, seed=0):
    """``rows`` rows of each of ``n_classes`` classes, each with a feature of its class."""
    y = np.repeat(np.arange(n_classes), rows)
    X = sp.random(len(y), n_features, density=0.03, random_state=seed, format="csr")
    X = X + sp.csr_matrix((np.full(len(y), 3.0), (np.arange(len(y)), y)), shape=X.shape)
    return X.tocsr(), y


def _fit_spied(monkeypatch, rows):
    """A fit of ``_few_rows(rows=rows)`` (the rule's classes lowered to reach 40), and
    the epochs the held-out fit chose and each refit's epochs, seed and label tables."""
    monkeypatch.setattr(plan_module, "LINEAR_REFIT_CLASSES", (1, 2))
    chosen, calls = [], []
    refits, refit = ConditionalNCEClassifier._refits, ConditionalNCEClassifier._refit

    def spy_refits(self, dataset, data, plan, epochs, starts=None):
        chosen.append(epochs)
        refits(self, dataset, data, plan, epochs, starts)

    def spy_refit(self, dataset, data, plan, epochs, starts=None):
        refit(self, dataset, data, plan, epochs, starts)
        tables = [t.detach().clone() for t in self.net_.module_.label_tables()]
        calls.append((epochs, plan.seeds.seed, tables))

    monkeypatch.setattr(ConditionalNCEClassifier, "_refits", spy_refits)
    monkeypatch.setattr(ConditionalNCEClassifier, "_refit", spy_refit)
    X, y = _few_rows(rows=rows)
    clf = ConditionalNCEClassifier(random_state=0, n_jobs=1, max_epochs=6, patience=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    assert clf.plan_.regime == "linear" and len(chosen) == 1
    return clf, X, y, chosen[0], calls


def test_a_fit_of_a_few_rows_refits_longer_twice_and_mixes_the_tables(monkeypatch):
    clf, X, y, chosen, calls = _fit_spied(monkeypatch, rows=5)
    assert clf.plan_.refit_epochs == 1.5 and clf.plan_.refit_mix == 0.5
    assert len(calls) == 2
    (first, seed_a, tables_a), (second, seed_b, tables_b) = calls
    assert first == second == max(1, round(1.5 * chosen)) and clf.n_iter_ == first
    assert seed_a != seed_b
    # the fitted tables: the mean of the two refits', divided by the temperature
    for table, a, b in zip(clf.net_.module_.label_tables(), tables_a, tables_b):
        mixed = (0.5 * b + 0.5 * a) / clf.temperature_
        torch.testing.assert_close(table.detach(), mixed, rtol=1e-6, atol=1e-6)
    assert clf.score(X, y) > 0.5


def test_with_six_rows_per_class_a_fit_refits_once_for_the_chosen_epochs(monkeypatch):
    clf, X, y, chosen, calls = _fit_spied(monkeypatch, rows=6)
    assert clf.plan_.refit_epochs == 1.0 and clf.plan_.refit_mix == 0.0
    assert len(calls) == 1 and calls[0][0] == chosen == clf.n_iter_
    assert clf.score(X, y) > 0.5
