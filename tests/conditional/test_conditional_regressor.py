"""ConditionalNCERegressor: multi-modal density recovery, intervals, normalisation, errors."""

import numpy as np
import pytest

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
