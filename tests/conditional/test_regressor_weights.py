"""fit(X, y, sample_weight=...) and partial_fit on ConditionalNCERegressor, with routing."""

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_validate

from sknce import ConditionalNCERegressor
from sknce._weights import WeightedSampler
from sknce.conditional._linear_base import LinearBase
from sknce.conditional._stopping import LikelihoodStopping
from sknce.losses import BinaryNCELoss, RankingNCELoss

RNG = np.random.default_rng(0)
X = RNG.normal(size=(160, 3))
Y = X @ [1.0, -0.5, 0.0] + 0.3 * RNG.normal(size=160)
REG = dict(
    n_negatives=4, hidden_layer_sizes=(8,), embedding_dim=8, n_grid=32, max_epochs=4,
    batch_size=32, lr=0.02, random_state=0,
)  # fmt: skip
ZERO = np.arange(160) % 4 == 0  # the rows given weight 0 below


def _zero_weights():
    w = RNG.uniform(0.5, 2.0, size=160)
    w[ZERO] = 0.0
    return w


def _corrupt(X, y):
    """``X`` and ``y`` with the rows of weight 0 replaced by unrelated values."""
    rng = np.random.default_rng(1)
    X, y = X.copy(), y.copy()
    X[ZERO] = rng.normal(3.0, 2.0, size=(ZERO.sum(), X.shape[1]))
    y[ZERO] = rng.normal(-5.0, 3.0, size=ZERO.sum())
    return X, y


def _outputs(reg, X=X, y=Y):
    outputs = reg.predict(X), reg.score_samples(X, y), reg.predict_interval(X).ravel()
    return np.concatenate(outputs)


# --- the base density: weighted ridge, leave-one-out by brute force ---------------------
def test_weighted_base_is_weighted_ridge_with_leave_one_out_by_refitting():
    w = _zero_weights()
    base = LinearBase(random_state=0).fit(X, Y, sample_weight=w)
    m = np.count_nonzero(w)
    wn = w * m / w.sum()  # only the ratios matter; the base scales them to sum to m
    ridge = Ridge(alpha=base.alpha_).fit(X, Y, sample_weight=wn)
    loc, _ = base.loc_scale(X)
    np.testing.assert_allclose(loc, ridge.predict(X), atol=1e-10)
    # leave-one-out residuals: refit without each example (its whole weight)
    keep = np.flatnonzero(w > 0)
    loo = np.array(
        [
            Y[i]
            - Ridge(alpha=base.alpha_)
            .fit(np.delete(X, i, 0), np.delete(Y, i), sample_weight=np.delete(wn, i))
            .predict(X[i : i + 1])[0]
            for i in keep
        ]
    )
    assert base.sigma_ == pytest.approx(np.sqrt(np.sum(wn[keep] * loo**2) / m))
    assert base.n_samples_ == m
    # a fitted residual over its fitted scale is its leave-one-out residual's z-score
    _, fitted = base.loc_scale(X, fitted=True, sample_weight=w)
    r = (Y - loc)[keep]
    h = 1 - r / loo
    np.testing.assert_allclose(r / fitted[keep], loo / (base.sigma_ / np.sqrt(1 - h)))


def test_weighted_base_with_zero_weights_is_the_base_without_those_rows():
    w = _zero_weights()
    weighted = LinearBase(random_state=0).fit(X, Y, sample_weight=w)
    dropped = LinearBase(random_state=0).fit(X[~ZERO], Y[~ZERO], sample_weight=w[~ZERO])
    for name in ("alpha_", "sigma_", "df_", "intercept_", "coef_", "mean_", "precision_"):
        np.testing.assert_allclose(getattr(weighted, name), getattr(dropped, name), rtol=1e-9)
    # integer weights: the same ridge as repeating the rows, for a given penalty
    counts = RNG.integers(1, 4, size=160)
    repeated = np.repeat(np.arange(160), counts)
    by_weight = LinearBase(random_state=0).fit(X, Y, sample_weight=counts.astype(float))
    ridge = Ridge(alpha=by_weight.alpha_ * counts.sum() / 160).fit(X[repeated], Y[repeated])
    np.testing.assert_allclose(by_weight.loc_scale(X)[0], ridge.predict(X), atol=1e-10)


def test_weighted_base_on_many_sparse_features_ignores_rows_of_weight_zero():
    # more than 256 features: the leading directions are those of the weighted rows
    X = sp.random(160, 300, density=0.05, format="csr", random_state=0)
    y = np.asarray(X[:, :5].sum(axis=1)).ravel()
    corrupt = X.tolil()
    corrupt[np.flatnonzero(ZERO), :10] = 5.0
    y_corrupt = np.where(ZERO, -3.0, y)
    w = _zero_weights()
    bases = [
        LinearBase(random_state=0).fit(Xi, yi, sample_weight=w)
        for Xi, yi in ((X, y), (corrupt.tocsr(), y_corrupt))
    ]
    assert bases[0].projection_.shape == (300, 160 - ZERO.sum())
    np.testing.assert_allclose(bases[1].projection_, bases[0].projection_, atol=1e-10)
    np.testing.assert_allclose(bases[1].loc_scale(X)[0], bases[0].loc_scale(X)[0], atol=1e-8)


# --- the objective at a fixed batch ----------------------------------------------------
@pytest.mark.parametrize("objective", [RankingNCELoss, BinaryNCELoss])
def test_integer_weights_are_repeated_rows_in_the_loss_of_a_batch(objective):
    reg = ConditionalNCERegressor(**REG).fit(X, Y)
    # the fitted regressor's own sampler of (x, y, noise targets) batches
    data = reg._continue_fit(reg._validate_fit_data(X, Y, reset=False, partial=False))
    sampler = reg._make_dataset(data, "cpu").sampler
    rows, counts = np.array([3, 7, 11, 20]), np.array([2, 1, 3, 1])
    batch = WeightedSampler(sampler, np.bincount(rows, counts, 160))(
        rows, np.random.default_rng(0)
    )
    loss = objective()
    module = reg.net_.module_
    with torch.no_grad():
        weighted = loss(module(**batch.inputs), batch.targets) * len(rows)
        # the same examples, each repeated count times with its negatives
        index = torch.as_tensor(np.repeat(np.arange(len(rows)), counts))
        inputs = {k: v[index] for k, v in batch.inputs.items()}
        targets = batch.targets.replace(
            pos_log_noise=batch.targets.pos_log_noise[index],
            neg_log_noise=batch.targets.neg_log_noise[index],
            sample_weight=None,
        )
        repeated = loss(module(**inputs), targets) * counts.sum()
    assert float(weighted) == pytest.approx(float(repeated), rel=1e-5)


# --- the estimator ---------------------------------------------------------------------
def test_rows_of_weight_zero_do_not_count():
    w = _zero_weights()
    Xc, yc = _corrupt(X, Y)
    # early stopping on (the default): the held-out log-likelihood is weighted too
    clean = ConditionalNCERegressor(**REG).fit(X, Y, sample_weight=w)
    corrupt = ConditionalNCERegressor(**REG).fit(Xc, yc, sample_weight=w)
    np.testing.assert_allclose(_outputs(corrupt), _outputs(clean), rtol=1e-5, atol=1e-6)
    assert corrupt.grid_range_ == pytest.approx(clean.grid_range_)
    assert corrupt.y_mean_ == pytest.approx(clean.y_mean_)
    unweighted = ConditionalNCERegressor(**REG).fit(Xc, yc)
    assert not np.allclose(_outputs(unweighted), _outputs(clean), atol=1e-3)


def test_unit_and_constant_weights_are_the_unweighted_fit():
    expected = _outputs(ConditionalNCERegressor(**REG).fit(X, Y))
    for w in (np.ones(160), np.full(160, 0.01)):
        got = _outputs(ConditionalNCERegressor(**REG).fit(X, Y, sample_weight=w))
        np.testing.assert_array_equal(got, expected)


def test_integer_weights_scale_like_repeated_rows():
    counts = RNG.integers(1, 4, size=160)
    repeated = np.repeat(np.arange(160), counts)
    params = {**REG, "base": None, "max_epochs": 1, "early_stopping": False}
    by_weight = ConditionalNCERegressor(**params).fit(X, Y, sample_weight=counts)
    by_rows = ConditionalNCERegressor(**params).fit(X[repeated], Y[repeated])
    for name in ("mean_", "var_"):
        np.testing.assert_allclose(
            getattr(by_weight.input_scaler_, name),
            getattr(by_rows.input_scaler_, name),
            rtol=1e-6,  # the weights reach the fit as float32
        )
    assert by_weight.y_mean_ == pytest.approx(by_rows.y_mean_, rel=1e-6)
    assert by_weight.y_scale_ == pytest.approx(by_rows.y_scale_, rel=1e-6)
    assert by_weight.grid_range_ == pytest.approx(by_rows.grid_range_, rel=1e-6)


def test_weights_move_the_predicted_mean_to_the_weighted_mean():
    # uninformative inputs, targets 0 or 1: the density's mean estimates the weighted
    # mean of the targets (within what NCE learns of two point masses)
    rng = np.random.default_rng(0)
    Xn, yb = rng.normal(size=(300, 2)), (np.arange(300) % 2).astype(float)
    w = np.where(yb == 1, 3.0, 1.0)
    plain = ConditionalNCERegressor(random_state=0).fit(Xn, yb).predict(Xn)
    weighted = ConditionalNCERegressor(random_state=0).fit(Xn, yb, sample_weight=w).predict(Xn)
    assert np.mean(plain) == pytest.approx(0.5, abs=0.1)
    # NCE overshoots the weighted mean (0.75) of two point masses, by how much depends on
    # the seed: 0.82-0.95 over seeds 0-3 before the one-pass batch (0.817 at seed 0)
    assert 0.65 < np.mean(weighted) < 1.0
    assert np.mean(weighted) > np.mean(plain) + 0.15


# the corrupted rows of weight 0 lie beyond the target range of the first call
@pytest.mark.filterwarnings("ignore:.* targets of this chunk lie beyond the range:UserWarning")
def test_partial_fit_takes_sample_weight():
    w = _zero_weights()
    outs = []
    for Xi, yi in ((X, Y), _corrupt(X, Y)):
        reg = ConditionalNCERegressor(**REG)
        reg.partial_fit(Xi, yi, sample_weight=w)
        outs.append(_outputs(reg.partial_fit(Xi, yi, sample_weight=w)))
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
    assert hasattr(ConditionalNCERegressor(), "set_partial_fit_request")


def test_weighted_cross_validate_routes_the_weights():
    w = np.where(X[:, 0] > 0, 3.0, 1.0)
    with sklearn.config_context(enable_metadata_routing=True):
        reg = ConditionalNCERegressor(**REG).set_fit_request(sample_weight=True)
        reg.set_score_request(sample_weight=True)
        result = cross_validate(reg, X, Y, params={"sample_weight": w}, cv=KFold(2))
    assert result["test_score"].shape == (2,)
    assert np.all(result["test_score"] > 0.5)
    # the routed weights reached fit and score: a split fitted by hand scores the same
    train, test = np.arange(80, 160), np.arange(80)
    reg = ConditionalNCERegressor(**REG).fit(X[train], Y[train], sample_weight=w[train])
    assert result["test_score"][0] == pytest.approx(
        reg.score(X[test], Y[test], sample_weight=w[test])
    )


@pytest.mark.parametrize(
    "weights, match",
    [
        (np.r_[-1.0, np.ones(159)], "Negative values"),
        (np.ones(159), r"sample_weight.shape == \(159,\), expected \(160,\)"),
        (np.r_[np.nan, np.ones(159)], "NaN"),
        (np.zeros(160), "non-zero"),
    ],
)
def test_bad_weights_are_refused_with_the_problem_named(weights, match):
    with pytest.raises(ValueError, match=match):
        ConditionalNCERegressor(**REG).fit(X, Y, sample_weight=weights)
    with pytest.raises(ValueError, match=match):
        ConditionalNCERegressor(**REG).partial_fit(X, Y, sample_weight=weights)


def test_held_out_rows_all_of_weight_zero_are_refused():
    # one row of positive weight: the 16 rows held out for early stopping (this seed
    # does not hold it out) all weigh 0
    w = np.zeros(160)
    w[0] = 1.0
    with pytest.raises(ValueError, match="early_stopping=False"):
        ConditionalNCERegressor(**REG).fit(X, Y, sample_weight=w)
    ConditionalNCERegressor(**{**REG, "early_stopping": False}).fit(X, Y, sample_weight=w)


def test_early_stopping_weighs_the_held_out_examples():
    rng = np.random.default_rng(0)
    start, current = rng.normal(size=40), rng.normal(0.3, 1.0, size=40)
    w = rng.uniform(0.5, 2.0, size=40)
    w[:10] = 0.0

    def stopping(weights):
        s = LikelihoodStopping(lambda net, data: None, level=0.95)
        s.start_, s.weights_ = start, weights
        return s

    # examples of weight 0 are as if absent, in the mean and in the test
    assert stopping(w)._mean(current) == pytest.approx(np.average(current[10:], weights=w[10:]))
    for shift in np.linspace(-0.5, 1.0, 16):
        dropped = stopping(w[10:])
        dropped.start_ = start[10:]
        assert stopping(w)._beats_start(current + shift) == dropped._beats_start(
            current[10:] + shift
        )
    # equal weights are the unweighted test
    for shift in np.linspace(-0.5, 1.0, 16):
        assert stopping(np.full(40, 0.7))._beats_start(current + shift) == stopping(
            None
        )._beats_start(current + shift)
