"""The Displays attacked: unfitted estimators, other objects, bad words, labels and axes.

Each bad input is an error naming the problem (``NotFittedError`` for an unfitted
estimator, as scikit-learn's Displays), never an ``AttributeError`` from inside.
"""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sknce import (  # noqa: E402
    ACEWord2Vec,
    ConditionalNCEClassifier,
    ConditionalNCERegressor,
    LatentClassNCEEmbedder,
)
from sknce.display import (  # noqa: E402
    SimplexETFDisplay,
    TrainingHistoryDisplay,
    WordProjectionDisplay,
)
from sknce.words import WordVectors  # noqa: E402

pytestmark = [
    pytest.mark.attack("Displays"),
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 5)).astype(np.float32)
GROUPS = np.repeat(np.arange(6), 10)
CORPUS = [["king", "queen", "man", "woman", "royal", "palace"]] * 40


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def classifier():
    return ConditionalNCEClassifier(hidden_layer_sizes=(4,), max_epochs=2, random_state=0).fit(
        X, GROUPS % 3
    )


@pytest.fixture(scope="module")
def embedder():
    return LatentClassNCEEmbedder(n_components=3, max_epochs=2, random_state=0).fit(X, GROUPS)


@pytest.fixture(scope="module")
def words():
    return ACEWord2Vec(
        n_components=4, min_count=1, sample=0, max_epochs=1, n_jobs=1, random_state=0
    ).fit(CORPUS)


# --- TrainingHistoryDisplay ------------------------------------------------------------


@pytest.mark.parametrize(
    "estimator", [ConditionalNCEClassifier(), ACEWord2Vec(), LatentClassNCEEmbedder()]
)
def test_history_of_an_unfitted_estimator_is_not_fitted(estimator):
    with pytest.raises(NotFittedError):
        TrainingHistoryDisplay.from_estimator(estimator)


@pytest.mark.parametrize("thing", ["estimator", None, WordVectors(["a"], np.ones((1, 2)))])
def test_history_of_a_non_estimator_is_a_type_error(thing):
    with pytest.raises(TypeError, match="not an estimator"):
        TrainingHistoryDisplay.from_estimator(thing)


@pytest.mark.parametrize(
    "history",
    [[], [{"train_loss": 1.0}], "history", [1, 2], {"epoch": 1}, [{"epoch": 1}, None]],
)
def test_a_bad_history_is_named(history):
    with pytest.raises(ValueError, match="history must be a non-empty list of rows"):
        TrainingHistoryDisplay(history)


@pytest.mark.parametrize("ax", ["axes", 3, [None], np.empty(2, dtype=object)])
def test_a_bad_ax_is_named(classifier, ax):
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None"):
        TrainingHistoryDisplay.from_estimator(classifier, ax=ax)


def test_history_with_infinite_losses_still_draws():
    display = TrainingHistoryDisplay([{"epoch": 1, "train_loss": np.inf}]).plot()
    assert "train_loss" in display.lines_


# --- SimplexETFDisplay -----------------------------------------------------------------


def test_simplex_of_an_unfitted_estimator_is_not_fitted():
    with pytest.raises(NotFittedError):
        SimplexETFDisplay.from_estimator(LatentClassNCEEmbedder(), X, GROUPS)


@pytest.mark.parametrize(
    ("X_", "y", "error", "match"),
    [
        (X, GROUPS[:-1], ValueError, "inconsistent|length|samples"),
        (X, np.zeros(60), ValueError, "at least two|2 classes|two classes"),
        (X[:, :3], GROUPS, ValueError, "features"),
        (X[:0], GROUPS[:0], ValueError, "0 sample|empty|minimum"),
        (np.where(np.arange(300).reshape(60, 5) == 7, np.nan, X), GROUPS, ValueError, "NaN"),
        (X, np.r_[GROUPS[:-1], None].astype(object), ValueError, "no label"),
    ],
)
def test_bad_points_and_labels_are_named(embedder, X_, y, error, match):
    with pytest.raises(error, match=match):
        SimplexETFDisplay.from_estimator(embedder, X_, y)


def test_an_estimator_without_transform_is_named():
    regressor = ConditionalNCERegressor(hidden_layer_sizes=(4,), max_epochs=1).fit(X, X[:, 0])
    with pytest.raises(TypeError, match="needs a fitted transformer"):
        SimplexETFDisplay.from_estimator(regressor, X, GROUPS)


def test_a_single_axes_where_two_are_drawn_is_named(embedder):
    _, one = plt.subplots()
    with pytest.raises(TypeError, match="ax must be an array of 2 matplotlib Axes"):
        SimplexETFDisplay.from_estimator(embedder, X, GROUPS, ax=one)


# --- WordProjectionDisplay -------------------------------------------------------------


def test_words_of_an_unfitted_estimator_are_not_fitted():
    with pytest.raises(NotFittedError):
        WordProjectionDisplay.from_estimator(ACEWord2Vec(), ["king", "queen"])


@pytest.mark.parametrize(
    ("chosen", "error", "match"),
    [
        (["king"], ValueError, "at least 2 words"),
        ([], ValueError, "at least 2 words"),
        (["king", "emperor"], KeyError, "emperor"),
        ("king", TypeError, "must be a list of words"),
        (["king", 3], TypeError, "must be a list of words"),
        ([b"king", b"queen"], TypeError, "must be a list of words"),
    ],
)
def test_bad_words_are_named(words, chosen, error, match):
    with pytest.raises(error, match=match):
        WordProjectionDisplay.from_estimator(words, chosen)


@pytest.mark.parametrize("source", ["classifier", "plain object", "array"])
def test_what_holds_no_word_vectors_is_named(classifier, source):
    thing = {"classifier": classifier, "plain object": object(), "array": np.ones((2, 2))}
    with pytest.raises(TypeError, match="word vectors|needs a fitted ACEWord2Vec"):
        WordProjectionDisplay.from_estimator(thing[source], ["king", "queen"])


def test_equal_vectors_have_no_direction_to_project_on():
    equal = WordVectors(["a", "b", "c"], np.ones((3, 4)))
    with pytest.raises(ValueError, match="are all equal"):
        WordProjectionDisplay.from_estimator(equal, ["a", "b", "c"])


def test_word_vectors_and_unicode_words_are_projected():
    wv = WordVectors(["日本", "café", "x"], RNG.normal(size=(3, 4)))
    display = WordProjectionDisplay.from_estimator(wv, ["日本", "café", "x"])
    assert display.coordinates.shape == (3, 2) and np.isfinite(display.coordinates).all()
