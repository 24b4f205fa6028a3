"""make_latent_classes: shapes, the class prior and the planted geometry."""

from __future__ import annotations

import numpy as np
import pytest

from sknce.datasets import make_latent_classes


def test_shapes_prior_and_centres():
    data = make_latent_classes(
        4000,
        n_classes=3,
        n_features=6,
        class_probs=[0.6, 0.3, 0.1],
        separation=2.0,
        noise=0.5,
        random_state=0,
    )
    assert data.X.shape == (4000, 6) and data.y.shape == (4000,)
    np.testing.assert_allclose(np.bincount(data.y) / 4000, [0.6, 0.3, 0.1], atol=0.03)
    # Orthogonal centres of norm `separation`.
    np.testing.assert_allclose(data.centers @ data.centers.T, 4.0 * np.eye(3), atol=1e-10)
    for c in range(3):
        points = data.X[data.y == c]
        np.testing.assert_allclose(points.mean(axis=0), data.centers[c], atol=0.1)
        assert points.std(axis=0).mean() == pytest.approx(0.5, abs=0.05)


def test_more_classes_than_features_and_reproducibility():
    a = make_latent_classes(50, n_classes=5, n_features=2, random_state=1)
    b = make_latent_classes(50, n_classes=5, n_features=2, random_state=1)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_allclose(np.linalg.norm(a.centers, axis=1), 3.0)
    np.testing.assert_allclose(a.class_probs, 0.2)


def test_bad_class_probs():
    with pytest.raises(ValueError, match="one per class"):
        make_latent_classes(10, n_classes=3, class_probs=[0.5, 0.5])
    with pytest.raises(ValueError, match="n_classes"):
        make_latent_classes(10, n_classes=1)
