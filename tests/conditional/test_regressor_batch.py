"""The regressor's batch in one pass: its model and its sampler score the observed target
and the noise targets together, with the values of one pass each."""

from __future__ import annotations

import numpy as np
import torch

from sknce.conditional._sampler import TargetSampler
from sknce.nn import MLP, TargetEnergy
from sknce.noise import GaussianMixtureNoise


def _energy(base_df):
    torch.manual_seed(0)
    energy = TargetEnergy(MLP(5, (16,), 8), 8, 8, base_df, None if base_df is None else (-2, 2))
    for parameter in energy.parameters():  # away from the zero start of the output layers
        torch.nn.init.normal_(parameter, std=0.3)
    return energy


def test_the_one_pass_scores_are_the_scores_of_each_target():
    for base_df in (None, 5.0):
        energy = _energy(base_df)
        x, y, noise_y = torch.randn(7, 5), torch.randn(7), 3 * torch.randn(7, 4)
        scores = energy(x, y, noise_y)
        g = energy.encode(x)
        assert torch.allclose(scores["pos"], energy.score(g, y), atol=1e-6)
        assert torch.allclose(scores["neg"], energy.score(g, noise_y), atol=1e-6)
        assert scores["pos"].shape == (7,) and scores["neg"].shape == (7, 4)


def test_the_one_pass_gradients_are_those_of_the_two_passes():
    x, y, noise_y = torch.randn(7, 5), torch.randn(7), torch.randn(7, 4)
    grads = []
    for one_pass in (True, False):
        energy = _energy(5.0)
        if one_pass:
            scores = energy(x, y, noise_y)
            pos, neg = scores["pos"], scores["neg"]
        else:
            g = energy.encode(x)
            pos, neg = energy.score(g, y), energy.score(g, noise_y)
        (pos.sum() - torch.logsumexp(neg, dim=1).sum()).backward()
        grads.append([p.grad for p in energy.parameters()])
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-5)


def test_the_samplers_noise_log_densities_are_those_of_each_target():
    noise = GaussianMixtureNoise([0.1, 0.8])
    y = torch.linspace(-1, 1, 6)
    sampler = TargetSampler(np.ones((6, 2), np.float32), y, noise, 5, "cpu")
    batch = sampler(np.arange(6), np.random.default_rng(0))
    inputs, targets = batch.inputs, batch.targets
    expected_pos = noise.log_prob(inputs["y"].unsqueeze(1), inputs["y"]).squeeze(1)
    assert torch.equal(targets.pos_log_noise, expected_pos)
    assert torch.equal(targets.neg_log_noise, noise.log_prob(inputs["noise_y"], inputs["y"]))
    assert targets.neg_log_noise.shape == (6, 5)
