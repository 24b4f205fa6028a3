"""The regressor's grid density (normaliser, tails, quantiles, mean) and its linear base."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import t as student_t
from sklearn.linear_model import Ridge

from sknce.conditional._density import GridDensity
from sknce.conditional._linear_base import LinearBase


def _brute_force(grid, residual, df, loc, log_scale, fine):
    """The density on a fine, wide grid: the energy held at the grid's ends beyond them."""
    r = np.stack([np.interp(fine, grid, row) for row in residual])
    standard = (fine[None, :] - loc[:, None]) * np.exp(-log_scale[:, None])
    p = np.exp(r + student_t.logpdf(standard, df) - log_scale[:, None])
    step = fine[1] - fine[0]
    return p / (p.sum(axis=1, keepdims=True) * step), step


@pytest.fixture
def density():
    rng = np.random.default_rng(0)
    grid = np.linspace(-2.0, 2.5, 801)
    # A smooth, skewed energy: two bumps.
    residual = np.stack(
        [a * np.exp(-((grid - c) ** 2)) for a, c in zip([2.0, -1.0, 0.5], [1.0, 0.0, -1.5])]
    )
    loc, log_scale = rng.normal(0, 0.3, size=3), rng.normal(0, 0.2, size=3)
    return grid, residual, 4.0, loc, log_scale


def test_grid_density_is_normalised_with_exact_tails(density):
    grid, residual, df, loc, log_scale = density
    d = GridDensity(grid, residual, df, loc, log_scale)
    fine = np.linspace(-400, 400, 800_001)
    p, step = _brute_force(grid, residual, df, loc, log_scale, fine)
    # One residual per input: beyond the lower end, inside, far beyond the upper end.
    z = np.array([-50.0, 0.3, 300.0])
    r = np.array(
        [np.interp(np.clip(v, grid[0], grid[-1]), grid, row) for v, row in zip(z, residual)]
    )
    expected = [np.log(np.interp(v, fine, row)) for v, row in zip(z, p)]
    np.testing.assert_allclose(d.log_prob(z, r), expected, rtol=1e-3)
    # The mean and the quantiles, tails included.
    np.testing.assert_allclose(d.mean(), (p * fine).sum(axis=1) * step, atol=2e-3)
    cdf = np.cumsum(p, axis=1) * step
    levels = np.array([0.001, 0.05, 0.5, 0.95, 0.999])
    expected = np.stack([np.interp(levels, row, fine) for row in cdf])
    np.testing.assert_allclose(d.quantiles(levels), expected, atol=5e-3)


def test_without_a_base_the_density_lives_on_the_grid():
    grid = np.linspace(-1.0, 1.0, 201)
    d = GridDensity(grid, np.zeros((1, grid.size)), None)
    assert np.exp(d.log_prob(np.array([0.0]), np.zeros(1)))[0] == pytest.approx(0.5)
    assert d.log_prob(np.array([1.5]), np.zeros(1))[0] == -np.inf
    np.testing.assert_allclose(d.quantiles(np.array([0.05, 0.95]))[0], [-0.9, 0.9], atol=1e-9)
    assert d.mean()[0] == pytest.approx(0.0, abs=1e-12)


def test_linear_base_is_ridge_with_leave_one_out_penalty_and_student_t():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -0.5, 0.0] + 0.3 * rng.normal(size=60)
    base = LinearBase(random_state=0).fit(X, y)
    ridge = Ridge(alpha=base.alpha_).fit(X, y)
    loc, scale = base.loc_scale(X)
    np.testing.assert_allclose(loc, ridge.predict(X), atol=1e-10)
    # Leave-one-out residuals by refitting without each example.
    loo = np.array(
        [
            y[i]
            - Ridge(alpha=base.alpha_)
            .fit(np.delete(X, i, 0), np.delete(y, i))
            .predict(X[i : i + 1])[0]
            for i in range(60)
        ]
    )
    assert base.sigma_ == pytest.approx(np.sqrt(np.mean(loo**2)))
    assert 55 < base.df_ < 57  # 60 examples less about 4 effective parameters
    assert np.all(scale > base.sigma_)  # widened by each point's leverage
    # The residual of a fitted example, over its fitted scale, is the z-score of its
    # leave-one-out residual under the density of a new example at its x.
    _, fitted = base.loc_scale(X, fitted=True)
    h = np.array([1 - (y[i] - loc[i]) / loo[i] for i in range(60)])
    np.testing.assert_allclose((y - loc) / fitted, loo / (base.sigma_ / np.sqrt(1 - h)))


def test_linear_base_on_many_sparse_features_uses_leading_directions():
    rng = np.random.default_rng(0)
    X = sp.random(300, 1000, density=0.02, format="csr", random_state=0)
    y = np.asarray(X[:, :5].sum(axis=1)).ravel() + 0.1 * rng.normal(size=300)
    base = LinearBase(random_state=0)
    base.fit(X, y)
    assert base.projection_.shape == (1000, 256)
    loc, scale = base.loc_scale(X)
    assert np.all(np.isfinite(loc)) and np.all(scale > 0)
    assert np.corrcoef(loc, y)[0, 1] > 0.5
