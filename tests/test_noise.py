"""Noise distributions: exact alias tables, empirical frequencies, log-probabilities."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from sknce.noise import (
    CategoricalNoise,
    GaussianMixtureNoise,
    UniformNoise,
    UnigramNoise,
    alias_tables,
    remove_accidental_hits,
)


def _implied_probs(accept, alias):
    """The distribution the alias tables sample from, computed exactly."""
    n = accept.shape[0]
    implied = accept.copy()
    np.add.at(implied, alias, 1.0 - accept)
    return implied / n


@settings(max_examples=60, deadline=None)
@given(
    weights=arrays(
        np.float64,
        st.integers(1, 300),
        elements=st.one_of(st.just(0.0), st.floats(1e-6, 1e3)),
    ).filter(lambda w: w.sum() > 0)
)
def test_alias_tables_encode_the_distribution_exactly(weights):
    probs = weights / weights.sum()
    accept, alias = alias_tables(probs)
    np.testing.assert_allclose(_implied_probs(accept, alias), probs, atol=1e-12)
    assert np.all((accept >= 0) & (accept <= 1 + 1e-12))


def _chi_square_pvalue(samples, probs):
    counts = np.bincount(samples.ravel(), minlength=probs.shape[0])
    expected = probs * samples.size
    keep = expected > 0
    assert counts[~keep].sum() == 0, "sampled a zero-probability category"
    return stats.chisquare(counts[keep], expected[keep]).pvalue


@pytest.mark.parametrize(
    "noise,probs",
    [
        (CategoricalNoise([0.5, 0.2, 0.2, 0.1, 0.0]), np.array([0.5, 0.2, 0.2, 0.1, 0.0])),
        (
            UnigramNoise([100, 10, 1, 0, 50], ns_exponent=0.75),
            np.array([100, 10, 1, 0, 50]) ** 0.75 / (np.array([100, 10, 1, 0, 50]) ** 0.75).sum(),
        ),
        (UniformNoise(7), np.full(7, 1 / 7)),
    ],
    ids=["categorical", "unigram", "uniform"],
)
def test_empirical_frequencies_match(noise, probs):
    samples = noise.sample((200, 500), generator=torch.Generator().manual_seed(0))
    assert samples.shape == (200, 500) and samples.dtype == torch.long
    assert _chi_square_pvalue(samples.numpy(), probs) > 1e-3
    np.testing.assert_allclose(noise.probs, probs, rtol=1e-12)
    index = torch.arange(len(probs))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(noise.log_prob(index).numpy(), np.log(probs), rtol=1e-6)


def test_chi_square_detects_a_wrong_distribution():
    """The frequency test above can fail: a skewed sampler is rejected."""
    samples = CategoricalNoise([0.6, 0.4]).sample((50_000,), torch.Generator().manual_seed(0))
    assert _chi_square_pvalue(samples.numpy(), np.array([0.5, 0.5])) < 1e-6


def test_large_vocabulary_frequencies():
    rng = np.random.default_rng(0)
    counts = rng.zipf(1.5, size=100_000).astype(float)
    noise = UnigramNoise(counts)
    samples = noise.sample((2_000_000,), torch.Generator().manual_seed(1)).numpy()
    top = np.argsort(-noise.probs)[:50]
    observed = np.array([(samples == t).mean() for t in top])
    # 2e6 draws: the 50 most frequent words are within 5 standard errors.
    se = np.sqrt(noise.probs[top] * (1 - noise.probs[top]) / samples.size)
    assert np.all(np.abs(observed - noise.probs[top]) < 5 * se)


def test_sampling_is_reproducible_with_a_generator():
    noise = UnigramNoise(np.arange(1, 20))
    a = noise.sample((100,), torch.Generator().manual_seed(3))
    b = noise.sample((100,), torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_unigram_power_zero_is_uniform_over_seen():
    noise = UnigramNoise([5, 0, 1, 9], ns_exponent=0.0)
    np.testing.assert_allclose(noise.probs, [1 / 3, 0, 1 / 3, 1 / 3])


@pytest.mark.parametrize(
    "bad,match",
    [
        ([], "non-empty"),
        ([0.5, -0.1], "non-negative"),
        ([0.0, 0.0], "sum to zero"),
        ([np.nan, 1.0], "finite"),
    ],
)
def test_bad_probabilities_are_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        CategoricalNoise(bad)


def test_bad_counts_and_sizes_are_rejected():
    with pytest.raises(ValueError, match="counts"):
        UnigramNoise([[1, 2]])
    with pytest.raises(ValueError, match="at least 1"):
        UniformNoise(0)
    with pytest.raises(ValueError, match="scales"):
        GaussianMixtureNoise([1.0, -0.5])


def test_gaussian_mixture_log_prob_matches_scipy_and_integrates_to_one():
    noise = GaussianMixtureNoise([0.1, 1.0], weights=[0.3, 0.7])
    centers = torch.tensor([0.0, 2.0], dtype=torch.float64)
    grid = torch.linspace(-10, 12, 20001, dtype=torch.float64)
    samples = grid.repeat(2, 1)
    log_p = noise.log_prob(samples, centers)
    for row, c in enumerate([0.0, 2.0]):
        expected = np.log(
            0.3 * stats.norm.pdf(grid.numpy(), c, 0.1) + 0.7 * stats.norm.pdf(grid.numpy(), c, 1)
        )
        np.testing.assert_allclose(log_p[row].numpy(), expected, rtol=1e-8, atol=1e-8)
        mass = torch.trapezoid(log_p[row].exp(), grid)
        assert float(mass) == pytest.approx(1.0, abs=1e-6)


def test_gaussian_mixture_samples_have_the_mixture_moments():
    noise = GaussianMixtureNoise([0.5, 2.0])
    centers = torch.tensor([1.0, -3.0], dtype=torch.float64)
    draws = noise.sample(centers, 100_000, generator=torch.Generator().manual_seed(0))
    assert draws.shape == (2, 100_000)
    np.testing.assert_allclose(draws.mean(1).numpy(), [1.0, -3.0], atol=0.03)
    expected_var = 0.5 * 0.25 + 0.5 * 4.0
    np.testing.assert_allclose(draws.var(1).numpy(), expected_var, rtol=0.03)


def test_remove_accidental_hits():
    scores = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = remove_accidental_hits(
        scores, torch.tensor([1, 5]), torch.tensor([[1, 2, 1], [0, 5, 3]])
    )
    expected = torch.tensor([[-math.inf, 1, -math.inf], [3, -math.inf, 5]])
    assert torch.equal(out, expected)


def test_to_moves_tables():
    noise = CategoricalNoise([0.2, 0.8]).to("cpu")
    assert noise.device.type == "cpu"
    assert noise.sample((3,)).device.type == "cpu"


def test_alias_draws_through_the_tables_are_the_samples():
    noise = CategoricalNoise(np.array([0.7, 0.05, 0.2, 0.05]))
    columns, coins = noise.alias_draws((500,), torch.Generator().manual_seed(3))
    accept, alias, log_probs = noise.tables
    drawn = torch.where(coins < accept[columns], columns, alias[columns].long())
    assert torch.equal(drawn, noise.sample((500,), torch.Generator().manual_seed(3)))
    assert torch.equal(log_probs[drawn], noise.log_prob(drawn))
    assert UniformNoise(4).tables is None  # drawn directly, no tables to look up
