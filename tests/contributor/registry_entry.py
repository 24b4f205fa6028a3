"""The registry entry of the guide's density estimator (tests/contributor/density.py).

What follows the marker is what "Adding an estimator" tells a contributor to add to
tests/_registry.py after the entries of ``REGISTRY`` (tests/test_contributor.py puts it
there, in a copy of the repository); the import makes the names it uses, all of
tests/_registry.py's, resolvable here.
"""

from _registry import REGISTRY, WEIGHTS_NOT_REPEATS, DataKind, Entry, Mode, Quality, np

# --- in tests/_registry.py, after REGISTRY's entries ---


def _three_blobs(n_samples: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(3, 2))
    labels = rng.integers(0, 3, size=n_samples)
    return centers[labels] + 0.5 * rng.normal(size=(n_samples, 2)), labels


#: Points of a density (the labels are its components, not targets).
POINTS = DataKind("points", _three_blobs, refused=lambda X, y: (np.full_like(X, np.nan), y))


def tells_data_from_noise(entry: Entry, estimator, X, y) -> float:
    """ROC AUC of ``score_samples`` between ``X`` and draws of the fitted Gaussian."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    noise = estimator.mean_ + estimator.scale_ * rng.normal(size=X.shape)
    scores = estimator.score_samples(np.vstack([X, noise]))
    return float(roc_auc_score(np.r_[np.ones(len(X)), np.zeros(len(noise))], scores))


REGISTRY["NCEDensityEstimator"] = Entry(
    data=POINTS,
    takes_y=False,
    output="score_samples",
    task="density",
    params=dict(hidden_layer_sizes=(8,), max_epochs=2, random_state=0),
    tiny=dict(hidden_layer_sizes=(4,), n_negatives=2),
    distributed=dict(max_epochs=10),
    network_change={"hidden_layer_sizes": (5,)},
    quality=(Quality(tells_data_from_noise, 0.6),),  # chance 0.5
    expected_failed_checks=WEIGHTS_NOT_REPEATS,
    modes={"early-stopping": Mode(dict(early_stopping=True, max_epochs=6))},
)
