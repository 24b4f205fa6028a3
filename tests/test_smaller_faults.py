"""Smaller faults of issue 30: the rate a divergence quotes, two-sample fits, missing labels."""

import warnings

import numpy as np
import pytest

from sknce import ConditionalNCEClassifier, ConditionalNCERegressor, LatentClassNCEEmbedder
from sknce.exceptions import TrainingDivergedError

pytestmark = pytest.mark.attack("Smaller faults")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 5)).astype(np.float32)
Y = RNG.integers(0, 3, 60)


# A tiny fit that keeps the prior start warns so; not this test's subject.
@pytest.mark.filterwarnings("ignore:No epoch of this fit beat the label frequencies")
def test_a_diverging_partial_fit_quotes_the_rate_it_ran_at():
    clf = ConditionalNCEClassifier(hidden_layer_sizes=(8,), max_epochs=1, random_state=0, lr=1e-3)
    clf.fit(X, Y)
    clf.set_params(lr=1e6)
    with pytest.raises(TrainingDivergedError, match=r"Lower lr \(this call ran at 1e\+06\)"):
        clf.partial_fit(X * 1e4, Y)
    assert clf.lr == 1e6


def test_a_diverging_regressor_quotes_its_rate():
    reg = ConditionalNCERegressor(hidden_layer_sizes=(8,), max_epochs=3, lr=50.0, random_state=0)
    with pytest.raises(TrainingDivergedError, match=r"this call ran at 50\)"):
        reg.fit(X, X[:, 0] * 1e3)


@pytest.mark.parametrize("groups", [[0, 0], [0, 0, 0], [0, 0, 1, 1]])
def test_the_latent_class_embedder_fits_the_smallest_data(groups):
    data = X[: len(groups)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # early stopping turned off, chance-level warnings
        model = LatentClassNCEEmbedder(n_components=2, max_epochs=2, random_state=0)
        model.fit(data, groups)
    assert np.isfinite(model.transform(data)).all()


def test_no_point_to_hold_out_turns_early_stopping_off_with_a_warning():
    with pytest.warns(UserWarning, match="no point of the 2 can be held out"):
        LatentClassNCEEmbedder(n_components=2, max_epochs=1).fit(X[:2], [0, 0])


@pytest.mark.parametrize(
    "labels",
    [
        ["a", None, "b", "a"],
        [1, None, 2, 1],
        np.array([1.0, None, 2.0, 1.0], dtype=object),
        np.array(["a", float("nan"), "b", "a"], dtype=object),
    ],
)
def test_a_missing_label_is_named(labels):
    with pytest.raises(ValueError, match=r"y has no label \(None or NaN\) for 1 sample\(s\), at "
                       r"1: every sample needs one\. Drop the unlabelled samples"):  # fmt: skip
        ConditionalNCEClassifier(max_epochs=1).fit(X[:4], labels)


def test_a_missing_group_is_named():
    groups = np.array([0, 0, None, 1, 1, None], dtype=object)
    with pytest.raises(ValueError, match=r"no label \(None or NaN\) for 2 sample\(s\), at 2, 5"):
        LatentClassNCEEmbedder(max_epochs=1).fit(X[:6], groups)
