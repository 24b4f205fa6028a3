"""sknce.display: what each Display draws, with matplotlib's Agg backend."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sknce import ACEWord2Vec, DirectNCEEmbedder, LatentClassNCEEmbedder  # noqa: E402
from sknce.datasets import make_latent_classes, make_topic_corpus  # noqa: E402
from sknce.display import (  # noqa: E402
    SimplexETFDisplay,
    TrainingHistoryDisplay,
    WordProjectionDisplay,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.filterwarnings(r"ignore:\d+ document\(s\) with fewer than 2 tokens:UserWarning")
def test_history_display_draws_losses_chance_and_restored_epoch():
    X = make_topic_corpus(n_documents=300, n_words=60, n_topics=3, random_state=0).X
    est = DirectNCEEmbedder(n_components=4, max_epochs=8, patience=2, random_state=0).fit(X)
    display = TrainingHistoryDisplay.from_estimator(est)
    epochs = [row["epoch"] for row in est.history_]
    np.testing.assert_array_equal(display.lines_["train_loss"].get_xdata(), epochs)
    np.testing.assert_allclose(
        display.lines_["valid_loss"].get_ydata(), [r["valid_loss"] for r in est.history_]
    )
    assert display.lines_["chance_loss"].get_ydata()[0] == pytest.approx(np.log(2))
    stopping = dict(est.net_.callbacks_)["early_stopping"]
    assert display.best_epoch == stopping.best_epoch_
    assert display.lines_["best_epoch"].get_xdata()[0] == stopping.best_epoch_
    assert display.ax_.get_xlabel() == "epoch" and display.figure_ is display.ax_.figure


def test_history_display_from_rows_draws_the_monitor_on_a_second_axis():
    history = [
        {"epoch": e, "train_loss": 1 / e, "valid_loss": 1.1 / e, "valid_nn": 0.1 * e}
        for e in range(1, 6)
    ]
    display = TrainingHistoryDisplay(history, monitor="valid_nn", best_epoch=4).plot()
    np.testing.assert_allclose(display.lines_["valid_nn"].get_ydata(), [0.1, 0.2, 0.3, 0.4, 0.5])
    assert display.lines_["valid_nn"].axes is not display.ax_
    assert display.lines_["best_epoch"].get_xdata()[0] == 4
    assert "chance_loss" not in display.lines_


def test_simplex_etf_display_shows_class_mean_cosines_and_the_etf():
    data = make_latent_classes(n_samples=200, n_classes=4, n_features=6, random_state=0)
    est = LatentClassNCEEmbedder(n_components=4, max_epochs=3, random_state=0)
    est.fit(data.X, data.y)
    display = SimplexETFDisplay.from_estimator(est, data.X, data.y)
    Z = est.transform(data.X)
    means = np.array([Z[data.y == c].mean(axis=0) for c in np.unique(data.y)])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    np.testing.assert_allclose(display.images_[0].get_array(), means @ means.T, atol=1e-6)
    etf = display.images_[1].get_array()
    np.testing.assert_allclose(np.diag(etf), 1.0)
    np.testing.assert_allclose(etf[~np.eye(4, dtype=bool)], -1 / 3)
    assert len(display.ax_) == 2


def test_word_projection_display_places_words_by_principal_components():
    docs = [["king", "queen", "man", "woman"], ["apple", "pear", "fruit"]] * 30
    est = ACEWord2Vec(
        n_components=8, min_count=1, sample=0, max_epochs=1, n_jobs=1, random_state=0
    ).fit(docs)
    words = ["king", "queen", "apple", "pear"]
    display = WordProjectionDisplay.from_estimator(est, words)
    V = est.vectors_[[est.vocabulary_[w] for w in words]].astype(np.float64)
    V = V - V.mean(axis=0)
    # PCA coordinates keep the words' pairwise distances within the top-2 subspace
    top = np.linalg.svd(V, full_matrices=False)[2][:2]
    np.testing.assert_allclose(
        np.abs(display.coordinates), np.abs(V @ top.T), rtol=1e-4, atol=1e-5
    )
    assert [t.get_text() for t in display.ax_.texts] == words
    with pytest.raises(KeyError, match="unicorn"):
        WordProjectionDisplay.from_estimator(est, ["king", "unicorn"])


def test_history_display_of_the_latent_class_embedder_draws_its_neighbour_rate():
    data = make_latent_classes(n_samples=200, n_classes=4, n_features=6, random_state=0)
    est = LatentClassNCEEmbedder(n_components=4, max_epochs=6, random_state=0)
    display = TrainingHistoryDisplay.from_estimator(est.fit(data.X, data.y))
    stopping = dict(est.net_.callbacks_)["early_stopping"]
    assert display.monitor == stopping.monitor == "valid_nn_smoothed"
    assert display.best_epoch == stopping.best_epoch_
    np.testing.assert_allclose(
        display.lines_["valid_nn_smoothed"].get_ydata(),
        [row["valid_nn_smoothed"] for row in est.history_],
    )
