"""sample_weight and class_weight: validated, scaled to mean 1, carried by each batch."""

import numpy as np
import pytest
import torch

from sknce._weights import WeightedSampler, row_weights, unit_mean
from sknce.conditional._sampler import LabelSampler
from sknce.noise import CategoricalNoise


def test_row_weights_multiply_class_weights_and_unit_mean_scales():
    X = np.zeros((4, 2))
    y = np.array([0, 0, 0, 1])
    assert row_weights(None, X) is None
    assert unit_mean(row_weights(np.full(4, 0.25), X)) is None  # equal: unweighted, exactly
    np.testing.assert_allclose(unit_mean(row_weights([1, 1, 2, 4], X)), [0.5, 0.5, 1, 2])
    # "balanced": n / (n_classes * count): 2/3 for class 0, 2 for class 1
    np.testing.assert_allclose(row_weights(None, X, y, "balanced"), [2 / 3, 2 / 3, 2 / 3, 2])
    np.testing.assert_allclose(row_weights([1, 2, 1, 1], X, y, {0: 1, 1: 3}), [1, 2, 1, 3])
    with pytest.raises(ValueError, match="positive weight"):
        unit_mean(row_weights([1, 1, 1, 0], X, y, {0: 0, 1: 0}))
    with pytest.raises(ValueError):
        row_weights([1, -1, 1, 1], X)
    with pytest.raises(ValueError):
        row_weights([1, 1, 1], X)


def test_weighted_sampler_puts_each_rows_weight_in_the_targets():
    X = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    noise = CategoricalNoise(torch.full((3,), 1 / 3))
    sampler = LabelSampler(X, y, noise, 2, 0, False, "cpu")
    weights = np.array([1, 2, 3, 4, 5, 6], dtype=np.float32)
    weighted = WeightedSampler(sampler, weights)
    rows = np.array([4, 1, 5])
    plain = sampler(rows, np.random.default_rng(0))
    batch = weighted(rows, np.random.default_rng(0))
    np.testing.assert_array_equal(batch.targets.sample_weight.numpy(), [5, 2, 6])
    # the same draws as the unweighted sampler: the weights change nothing else
    assert torch.equal(batch.inputs["negatives"], plain.inputs["negatives"])
    assert batch.size == 3 and len(weighted) == 6 and weighted.n_negatives == 2
