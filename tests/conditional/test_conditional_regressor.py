"""ConditionalNCERegressor: multi-modal density recovery, intervals, normalisation, errors."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm
from scipy.stats import t as student_t
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sknce import ConditionalNCERegressor


@pytest.fixture(scope="module")
def bimodal():
    """y = ±(1 + x) + 0.1 ε with equal odds: two modes whose gap grows with x."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(1500, 1))
    sign = rng.choice([-1.0, 1.0], size=1500)
    y = sign * (1 + X[:, 0]) + 0.1 * rng.normal(size=1500)
    reg = ConditionalNCERegressor(
        hidden_layer_sizes=(32,),
        embedding_dim=32,
        n_negatives=32,
        max_epochs=25,
        lr=5e-3,
        batch_size=64,
        random_state=0,
    ).fit(X, y)
    return reg, X, y


def test_recovers_both_modes_of_a_bimodal_target(bimodal):
    reg, _, _ = bimodal
    x = np.array([[0.5]])
    grid = np.linspace(-2.5, 2.5, 201)
    log_p = reg.score_samples(np.repeat(x, grid.size, axis=0), grid)
    left, right = grid < 0, grid > 0
    mode_left, mode_right = grid[left][log_p[left].argmax()], grid[right][log_p[right].argmax()]
    assert abs(mode_left + 1.5) < 0.2 and abs(mode_right - 1.5) < 0.2
    # Both modes carry mass; the valley between them does not.
    p = np.exp(log_p)
    step = grid[1] - grid[0]
    mass_left, mass_right = p[left].sum() * step, p[right].sum() * step
    assert 0.3 < mass_left < 0.7 and 0.3 < mass_right < 0.7
    assert p[np.abs(grid) < 0.3].max() < 0.1 * p.max()


def test_density_is_normalised_and_intervals_cover(bimodal):
    reg, X, y = bimodal
    lo, hi = reg.target_range_
    grid = np.linspace(lo, hi, 2001)
    p = np.exp(reg.score_samples(np.full((grid.size, 1), 0.2), grid))
    assert abs(p.sum() * (grid[1] - grid[0]) - 1) < 0.02
    bounds = reg.predict_interval(X, coverage=0.9)
    assert bounds.shape == (X.shape[0], 2) and np.all(bounds[:, 0] < bounds[:, 1])
    covered = np.mean((bounds[:, 0] <= y) & (y <= bounds[:, 1]))
    assert 0.85 <= covered <= 0.97


def test_predictions_do_not_depend_on_the_batch(bimodal):
    reg, X, y = bimodal
    sub = slice(3, 9)
    np.testing.assert_allclose(reg.predict(X)[sub], reg.predict(X[sub]), atol=1e-5)
    np.testing.assert_allclose(
        reg.score_samples(X, y)[sub], reg.score_samples(X[sub], y[sub]), atol=1e-5
    )
    np.testing.assert_allclose(
        reg.predict_interval(X)[sub], reg.predict_interval(X[sub]), atol=1e-5
    )


def test_mode_and_mean_predictions():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = 3 * X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=400)
    reg = ConditionalNCERegressor(
        hidden_layer_sizes=(16,), n_negatives=16, max_epochs=30, lr=1e-2, random_state=0
    ).fit(X, y)
    assert reg.score(X, y) > 0.95
    assert reg.set_params(predict_method="mean").score(X, y) > 0.95


def test_binary_objective_fits():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(200, 1))
    y = X[:, 0] + 0.1 * rng.normal(size=200)
    reg = ConditionalNCERegressor(
        objective="binary",
        hidden_layer_sizes=(16,),
        n_negatives=16,
        max_epochs=30,
        lr=1e-2,
        random_state=0,
    ).fit(X, y)
    assert reg.score(X, y) > 0.8


def test_multi_output_targets_are_rejected_clearly():
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="1-D targets"):
        ConditionalNCERegressor().fit(X, np.zeros((10, 2)))
    with pytest.raises(ValueError, match="coverage"):
        ConditionalNCERegressor(max_epochs=1).fit(X, np.arange(10.0)).predict_interval(
            X, coverage=1.5
        )
    with pytest.raises(ValueError, match="1-D targets"):
        ConditionalNCERegressor(max_epochs=1).fit(X, np.arange(10.0)).score_samples(
            X, np.zeros((10, 3))
        )


# --- issue 13: defaults on data as users pass it ------------------------------------
def _planted(n, rng):
    """Raw-unit features (scales 1e3, 1e-3, 50, offsets); a skewed, heteroscedastic target."""
    X = rng.normal(size=(n, 3))
    noise = rng.exponential(size=n) - 1.0
    y = 2 * X[:, 0] + (0.3 + np.abs(X[:, 1])) * noise
    return X * [1e3, 1e-3, 50.0] + [5e3, 0.0, -7.0], 10 * y + 100


def _ridge_gaussian(X, y):
    """RidgeCV on scaled features, with the Gaussian of its 5-fold out-of-fold residuals."""
    ridge = make_pipeline(StandardScaler(), RidgeCV())
    sigma = np.sqrt(np.mean((y - cross_val_predict(ridge, X, y, cv=5)) ** 2))
    return ridge.fit(X, y), sigma


def test_default_regressor_beats_ridge_with_a_gaussian_residual():
    rng = np.random.default_rng(0)
    X, y = _planted(400, rng)
    X_test, y_test = _planted(2000, rng)
    reg = ConditionalNCERegressor(random_state=0).fit(X, y)
    ridge, sigma = _ridge_gaussian(X, y)
    ridge_nll = -norm.logpdf(y_test, ridge.predict(X_test), sigma).mean()
    assert -reg.score_samples(X_test, y_test).mean() < ridge_nll - 0.1
    bounds = reg.predict_interval(X_test, coverage=0.9)
    assert 0.85 <= np.mean((bounds[:, 0] <= y_test) & (y_test <= bounds[:, 1])) <= 0.95
    assert reg.score(X_test, y_test) > ridge.score(X_test, y_test) - 0.02


def test_small_data_keeps_the_ridge_base_density():
    """On 40 examples the energy cannot show a significant held-out gain: the fit is the base."""
    rng = np.random.default_rng(1)
    X, y = _planted(40, rng)
    reg = ConditionalNCERegressor(random_state=0).fit(X, y)
    energy = reg.net_.module_
    assert all(not p.any() for p in energy.head.hidden[-1].parameters())
    assert all(not p.any() for p in energy.location_scale.parameters())
    loc, scale = reg.base_.loc_scale(reg.input_scaler_.transform(X))
    z = ((y - reg.y_mean_) / reg.y_scale_ - loc) / scale
    expected = student_t.logpdf(z, reg.base_.df_) - np.log(scale * reg.y_scale_)
    np.testing.assert_allclose(reg.score_samples(X, y), expected, atol=1e-4)


def test_inputs_are_standardised_inside():
    rng = np.random.default_rng(2)
    X, y = _planted(200, rng)
    params = dict(max_epochs=3, early_stopping=False, random_state=0)
    raw = ConditionalNCERegressor(**params).fit(X, y)
    unit = ConditionalNCERegressor(**params).fit((X - X.mean(0)) / X.std(0), y)
    np.testing.assert_allclose(raw.predict(X), unit.predict((X - X.mean(0)) / X.std(0)), rtol=1e-4)


def test_sparse_and_dense_inputs_are_interchangeable_after_a_fit(linear_fit):
    """A fit on dense inputs centres them: sparse ones are densified, not refused."""
    X, y, params, reg = linear_fit
    np.testing.assert_allclose(reg.predict(sp.csr_matrix(X)), reg.predict(X))
    sparse_fit = ConditionalNCERegressor(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse_fit.predict(X), sparse_fit.predict(sp.csr_matrix(X)))


# --- issue 15: targets far out, huge or missing -------------------------------------
@pytest.fixture(scope="module")
def linear_fit():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(300, 2))
    y = X[:, 0] - X[:, 1] + 0.2 * rng.normal(size=300)
    params = dict(max_epochs=3, early_stopping=False, random_state=0)
    return X, y, params, ConditionalNCERegressor(**params).fit(X, y)


def test_targets_of_any_finite_scale_are_standardised_without_overflow(linear_fit):
    X, y, params, reg = linear_fit
    huge = ConditionalNCERegressor(**params).fit(X, y * 1e200)
    np.testing.assert_allclose(huge.predict(X), reg.predict(X) * 1e200, rtol=1e-4)
    np.testing.assert_allclose(
        huge.predict_interval(X), reg.predict_interval(X) * 1e200, rtol=1e-4
    )
    np.testing.assert_allclose(
        huge.score_samples(X, y * 1e200), reg.score_samples(X, y) - np.log(1e200), rtol=1e-4
    )
    assert huge.score(X, y * 1e200) == pytest.approx(reg.score(X, y), abs=1e-4)


def test_a_target_spread_beyond_float64_is_a_clear_error():
    X = np.zeros((4, 1))
    with pytest.raises(ValueError, match="Divide y by a constant"):
        ConditionalNCERegressor().fit(X, [-1e308, 1e308, 0.0, 1.0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_targets_are_rejected_naming_the_fix(linear_fit, bad):
    X, y, _, reg = linear_fit
    y_bad = y.copy()
    y_bad[5] = bad
    with pytest.raises(ValueError, match="NaN or infinity.*Drop those examples"):
        ConditionalNCERegressor(max_epochs=1).fit(X, y_bad)
    for method in (reg.score_samples, reg.score):
        with pytest.raises(ValueError, match="NaN or infinity.*Drop those examples"):
            method(X, y_bad)


def test_far_targets_get_a_correspondingly_low_log_density(linear_fit):
    X, y, params, reg = linear_fit
    x = np.repeat(X[:1], 5, axis=0)
    sd = y.std()
    log_p = reg.score_samples(x, reg.predict(X[:1])[0] + sd * np.array([0, 1, 10, 100, 1e6]))
    assert np.all(np.isfinite(log_p)) and np.all(np.diff(log_p) < 0)
    # The base's Student-t tail: about -(df + 1) / 2 * log(z^2 / df) a million sds away.
    assert log_p[-1] < -(reg.base_.df_ + 1) / 2 * np.log(1e12 / reg.base_.df_) + 50
    # Without a base, the density is zero beyond the grid.
    paper = ConditionalNCERegressor(base=None, **params).fit(X, y)
    far = paper.score_samples(X[:2], [paper.target_range_[1] + sd, paper.target_range_[0] - sd])
    assert np.all(far == -np.inf)


def test_density_is_normalised_over_the_real_line_and_predict_is_its_mean(linear_fit):
    X, _, _, reg = linear_fit
    grid = np.linspace(-40, 40, 16_001)
    p = np.exp(reg.score_samples(np.repeat(X[:1], grid.size, axis=0), grid))
    step = grid[1] - grid[0]
    assert p.sum() * step == pytest.approx(1.0, abs=1e-3)
    assert reg.predict(X[:1])[0] == pytest.approx((p * grid).sum() * step, abs=1e-3)
