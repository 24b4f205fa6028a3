"""sample_weight attacked: extreme scales, weights that fit nothing, bad values and shapes.

Weights are scaled by their largest value in float64 before they are normalised, so
weights near float64's largest value (whose sum overflows) or subnormal ones (whose
inverse sum overflows) train as their ratios say; weights that leave nothing to train
on are a ValueError naming the fault, never a fit at loss 0.
"""

import math

import numpy as np
import pytest

from sknce import (
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    DirectNCEEmbedder,
    LatentClassNCEEmbedder,
)
from sknce._weights import score_weights, unit_mean

pytestmark = [
    pytest.mark.attack("sample_weight"),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    pytest.mark.filterwarnings(r"ignore:\d+ document\(s\) with fewer:UserWarning"),
]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 5)).astype(np.float32)
COUNTS = RNG.poisson(2.0, size=(60, 12)).astype(np.float64)
TARGETS = {
    "classifier": np.arange(60) % 3,
    "regressor": X[:, 0] * 2.0,
    "latent": np.repeat(np.arange(6), 10),
    "direct": None,
}
FAST = dict(max_epochs=2, random_state=0)
ESTIMATORS = {
    "classifier": lambda **kw: ConditionalNCEClassifier(hidden_layer_sizes=(8,), **FAST, **kw),
    "regressor": lambda **kw: ConditionalNCERegressor(hidden_layer_sizes=(8,), **FAST, **kw),
    "latent": lambda **kw: LatentClassNCEEmbedder(n_components=3, **FAST, **kw),
    "direct": lambda **kw: DirectNCEEmbedder(
        n_components=3, hidden_layer_sizes=(8,), **FAST, **kw
    ),
}
SHAPE = RNG.uniform(0.5, 1.0, size=60)


def _fit(name, sample_weight, **params):
    data = COUNTS if name == "direct" else X
    return ESTIMATORS[name](**params).fit(data, TARGETS[name], sample_weight=sample_weight)


def _losses(estimator):
    return np.array([row["train_loss"] for row in estimator.history_])


# --- the scale of the weights does not matter ------------------------------------------


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("scale", [1e300, 1e-300, 5e-324 / SHAPE.min()])
def test_extreme_scales_train_as_their_ratios(name, scale):
    # 1e300 * 60 overflows the sum; 1e-300 and subnormal weights overflow its inverse
    reference = _losses(_fit(name, SHAPE))
    if scale < 1e-320:  # subnormal: only ratios of a few representable steps survive
        weights = np.where(SHAPE > 0.75, 2.0, 1.0) * 5e-324
        reference = _losses(_fit(name, np.where(SHAPE > 0.75, 2.0, 1.0)))
    else:
        weights = SHAPE * scale
    losses = _losses(_fit(name, weights))
    assert np.isfinite(losses).all() and (losses > 0).all()
    np.testing.assert_allclose(losses, reference, rtol=1e-5)


def test_unit_mean_in_float64_scaled_by_the_largest():
    for weights in (
        np.array([1.0, 2.0, 1.0]) * 8e307,  # the sum overflows
        np.array([1.0, 2.0, 1.0]) * 1e-310,  # subnormal: 3 / sum overflows
        np.array([5e-324, 1e-323, 5e-324]),  # the smallest subnormals
        np.array([1.0, 2.0, 1.0]),
    ):
        np.testing.assert_allclose(unit_mean(weights), [0.75, 1.5, 0.75], rtol=1e-6)
    assert unit_mean(np.full(4, 1e308)) is None  # equal: the unweighted objective
    assert unit_mean(np.array([1e308, 0.0]))[0] == 2.0


@pytest.mark.parametrize(
    ("name", "weights"),
    [("classifier", np.full(60, 1e308)), ("regressor", np.full(60, 1e308))],
)
def test_score_takes_weights_whose_sum_overflows(name, weights):
    estimator = _fit(name, None)
    data = X
    assert estimator.score(data, TARGETS[name], sample_weight=weights) == pytest.approx(
        estimator.score(data, TARGETS[name])
    )
    assert math.isfinite(estimator.score(data, TARGETS[name], sample_weight=weights * 1e-300))


def test_score_weights_checks_as_a_fit_does():
    np.testing.assert_array_equal(score_weights([5e307, 1e308], 2), [0.5, 1.0])
    assert score_weights(None, 3) is None
    with pytest.raises(ValueError, match="(?i)negative"):
        score_weights([1.0, -1.0], 2)
    with pytest.raises(ValueError, match="inconsistent|shape"):
        score_weights([1.0], 2)


# --- weights that leave nothing to fit --------------------------------------------------


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_all_zero_weights_are_an_error(name):
    with pytest.raises(ValueError, match="at least one non-zero|zero for every example"):
        _fit(name, np.zeros(60))


def test_class_weight_zeroing_every_weighted_class_is_an_error():
    weights = np.where(TARGETS["classifier"] == 0, 1.0, 0.0)
    with pytest.raises(ValueError, match="zero for every example"):
        _fit("classifier", weights, class_weight={0: 0.0, 1: 1.0, 2: 1.0})


@pytest.mark.parametrize("class_weight", [{"bogus_option": 1}, {0: 1.0, 7: 2.0}, {0: "heavy"}])
def test_class_weight_that_does_not_fit_the_labels_names_the_parameter(class_weight):
    # scikit-learn's own message (e.g. "The classes, [0, 1, 2], are not in class_weight")
    # was passed through raw; it must name the parameter and its valid forms
    with pytest.raises((ValueError, TypeError), match=r"class_weight=.*Give 'balanced'"):
        _fit("classifier", None, class_weight=class_weight)


def test_weight_only_on_unlabelled_rows_of_an_indicator_is_an_error():
    Y = np.zeros((60, 3), dtype=int)
    Y[:30, 0] = 1
    clf = ConditionalNCEClassifier(hidden_layer_sizes=(8,), **FAST)
    with pytest.raises(ValueError, match="positive only on rows that give no training ex"):
        clf.fit(X, Y, sample_weight=np.r_[np.zeros(30), np.ones(30)])


def test_a_label_indicator_without_any_label_is_an_error():
    with pytest.raises(ValueError, match="label indicator without any label"):
        ConditionalNCEClassifier(hidden_layer_sizes=(8,), **FAST).fit(X, np.zeros((60, 3), int))


@pytest.mark.filterwarnings("ignore:10 class.*single member:UserWarning")
def test_weight_only_on_points_alone_in_their_group_is_an_error():
    groups = np.r_[np.repeat(np.arange(5), 10), np.arange(100, 110)]  # the last 10 alone
    weights = np.r_[np.zeros(50), np.ones(10)]
    with pytest.raises(ValueError, match="positive only on rows that give no training ex"):
        LatentClassNCEEmbedder(n_components=3, **FAST).fit(X, groups, sample_weight=weights)


def test_weight_only_on_rows_held_out_for_early_stopping_is_an_error():
    weights = np.zeros(60)
    weights[0] = 1.0  # one row of weight: with ceil(0.5 * 60) held out it may go either way
    for seed in range(20):
        clf = ConditionalNCEClassifier(
            hidden_layer_sizes=(8,), max_epochs=2, random_state=seed,
            early_stopping=True, validation_fraction=0.5,
        )  # fmt: skip
        try:
            clf.fit(X, TARGETS["classifier"], sample_weight=weights)
        except ValueError as error:
            assert "held out for early stopping" in str(error)
            return
    pytest.fail("no split held the one weighted row out")


# --- bad values and shapes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        (np.r_[np.ones(59), np.nan], "NaN"),
        (np.r_[np.ones(59), np.inf], "infinity"),
        (np.r_[np.ones(59), -1.0], "(?i)negative"),
        (np.ones(59), "59"),
        (np.ones((60, 1)), "1D|shape"),
        (np.array(["a"] * 60), "could not convert|float"),
        (np.r_[np.ones(59), 2e308], "infinity"),
    ],
)
@pytest.mark.parametrize("name", ["classifier", "regressor", "latent"])
def test_bad_weights_are_named(name, weights, match):
    with pytest.raises(ValueError, match=match):
        _fit(name, weights)


@pytest.mark.parametrize("name", ["classifier", "regressor"])
def test_weights_as_a_list_of_ints_or_a_scalar_train(name):
    assert np.isfinite(_losses(_fit(name, [1, 2] * 30))).all()
    assert np.isfinite(_losses(_fit(name, 3.0))).all()  # a scalar: every row alike
