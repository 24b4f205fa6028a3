"""ACE's generator: sampling, REINFORCE against exact enumeration, and each option's effect."""

import numpy as np
import pytest
import torch

from sknce.nn import SharedCentreGenerator, SkipGram
from sknce.noise import UniformNoise, UnigramNoise
from sknce.words._generator import (
    CompiledGenerator,
    complete_proposal,
    normalize_rewards,
    reinforce_loss,
)
from sknce.words._sampler import draw_adversarial

V = 5


def _generator(seed=0, scale=1.0):
    torch.manual_seed(seed)
    gen = SkipGram(V, 3, sparse=True)
    with torch.no_grad():
        gen.input_embeddings.weight.normal_(0, scale)
        gen.output_embeddings.weight.normal_(0, scale)
    return gen


def _propose(
    gen,
    noise,
    centres,
    contexts,
    *,
    k=5,
    noise_mixture=0.0,
    n_candidates=4000,
    rng=None,
    **options,
):
    """The sampler's draws for a batch, completed from the generator."""
    rng = np.random.default_rng(0) if rng is None else rng
    negatives = torch.from_numpy(rng.integers(noise.n_categories, size=(centres.shape[0], k)))
    draws = draw_adversarial(noise, centres.shape[0], k, noise_mixture, n_candidates, rng)
    settings = dict(mask_false_negatives=False, importance_weighting=False)
    settings.update(options)
    return complete_proposal(gen, noise, centres, contexts, negatives, draws, **settings)


def test_normalize_rewards_is_a_tempered_sigmoid_of_the_standardised_rewards():
    raw = torch.tensor([0.1, 0.5, 0.9, 0.2])
    z = (raw - raw.mean()) / raw.std(correction=0)
    np.testing.assert_allclose(normalize_rewards(raw, 0.5), torch.sigmoid(z / 0.5), rtol=1e-5)
    assert normalize_rewards(raw, 0.5).argmax() == 2


def test_generator_samples_follow_its_softmax():
    gen = _generator()
    centres = torch.zeros(4000, dtype=torch.long)
    noise = UnigramNoise(np.arange(1, V + 1))
    proposal = _propose(gen, noise, centres, centres + 1, n_candidates=20000)
    freq = np.bincount(proposal.negatives.reshape(-1).numpy(), minlength=V) / 20000
    with torch.no_grad():
        softmax = torch.softmax(gen.logits(torch.tensor([0]), torch.arange(V))[0], 0).numpy()
    np.testing.assert_allclose(freq, softmax, atol=0.02)


def test_reinforce_gradient_matches_exact_enumeration():
    """Monte-Carlo REINFORCE gradient vs the gradient of sum_w G(w|t) r(w) by enumeration."""
    rewards_by_word = torch.tensor([0.9, 0.1, 0.4, 0.7, 0.2])
    gen = _generator(seed=1)
    logits = gen.logits(torch.tensor([2]), torch.arange(V))[0]
    expected_reward = (torch.softmax(logits, 0) * rewards_by_word).sum()
    exact = torch.autograd.grad(-expected_reward, gen.input_embeddings.weight)[0].to_dense()

    centres = torch.full((4000,), 2, dtype=torch.long)
    proposal = _propose(gen, UniformNoise(V), centres, centres, n_candidates=2000)
    words = proposal.negatives[proposal.from_generator]
    loss = reinforce_loss(proposal.log_q, rewards_by_word[words], proposal.entropy, 0.0)
    (loss / words.numel()).backward()
    estimate = gen.input_embeddings.weight.grad.to_dense()
    assert torch.count_nonzero(exact[2]) == 3
    np.testing.assert_allclose(estimate[2], exact[2], atol=0.03)
    np.testing.assert_allclose(np.delete(estimate.numpy(), 2, 0), 0.0)


def _train_against_fixed_discriminator(entropy_weight, steps=150, baseline=False, d_scores=None):
    """Generator steps with rewards D(w|t) from a planted discriminator that loves word 4."""
    gen = _generator(seed=2, scale=0.1)
    opt = torch.optim.SGD(gen.parameters(), lr=0.002)
    noise = UniformNoise(V)
    if d_scores is None:
        d_scores = torch.tensor([-3.0, -3.0, -3.0, -3.0, 3.0])
    rng = np.random.default_rng(3)
    centres = torch.zeros(200, dtype=torch.long)
    for _ in range(steps):
        proposal = _propose(gen, noise, centres, centres + 1, n_candidates=64, rng=rng)
        words = proposal.negatives[proposal.from_generator]
        rewards = normalize_rewards(torch.sigmoid(d_scores[words]), 0.5, baseline=baseline)
        loss = reinforce_loss(proposal.log_q, rewards, proposal.entropy, entropy_weight)
        opt.zero_grad()
        loss.backward()  # summed over the samples, as in ACEWord2Vec
        opt.step()
    with torch.no_grad():
        return torch.softmax(gen.logits(torch.tensor([0]), torch.arange(V))[0], 0)


def test_generator_shifts_towards_the_negatives_the_discriminator_finds_hard():
    before = torch.softmax(
        _generator(seed=2, scale=0.1).logits(torch.tensor([0]), torch.arange(V))[0], 0
    )
    after = _train_against_fixed_discriminator(entropy_weight=0.0)
    assert before[4] < 0.3
    assert after[4] > 0.6


def test_reward_baseline_centres_the_rewards_and_still_finds_the_hard_negatives():
    raw = torch.tensor([0.1, 0.5, 0.9, 0.2])
    centred = normalize_rewards(raw, 0.5, baseline=True)
    np.testing.assert_allclose(
        centred, normalize_rewards(raw, 0.5) - normalize_rewards(raw, 0.5).mean(), atol=1e-7
    )
    assert abs(float(centred.sum())) < 1e-6
    assert _train_against_fixed_discriminator(0.0, baseline=True)[4] > 0.6


def test_entropy_weight_keeps_the_generator_spread_out():
    def entropy(p):
        return float(-(p * p.log()).sum())

    assert (
        entropy(_train_against_fixed_discriminator(1.0))
        > entropy(_train_against_fixed_discriminator(0.0)) + 0.2
    )


def test_noise_mixture_sets_the_share_of_generator_slots():
    gen = _generator()
    centres = torch.zeros(2000, dtype=torch.long)
    proposal = _propose(gen, UniformNoise(V), centres, centres, noise_mixture=0.7)
    assert proposal.from_generator.float().mean() == pytest.approx(0.3, abs=0.02)


def _peaked_generator(word):
    gen = _generator()
    with torch.no_grad():
        gen.input_embeddings.weight.zero_()
        gen.input_embeddings.weight[:, 0] = 1.0
        gen.output_embeddings.weight.zero_()
        gen.output_embeddings.weight[word, 0] = 5.0
    return gen


def test_false_negatives_are_masked():
    gen = _peaked_generator(word=3)  # the generator mostly proposes word 3 ...
    centres = torch.zeros(1000, dtype=torch.long)
    contexts = torch.full((1000,), 3)  # ... which is the true context of centre 0
    masked = _propose(gen, UniformNoise(V), centres, contexts, mask_false_negatives=True)
    kept = _propose(gen, UniformNoise(V), centres, contexts, mask_false_negatives=False)
    hits = masked.negatives == 3
    assert hits.float().mean() > 0.5
    assert torch.all(masked.weights[hits] == 0) and not masked.from_generator[hits].any()
    assert torch.all(kept.weights == 1)
    assert masked.log_q.shape[0] == int(masked.from_generator.sum())


def test_importance_weights_restore_the_noise_expectation():
    """Weighted by p_N / G, the generator's samples have the noise's frequencies."""
    gen = _peaked_generator(word=1)
    noise = UnigramNoise(np.array([5.0, 1.0, 2.0, 3.0, 4.0]), ns_exponent=1.0)
    centres = torch.zeros(6000, dtype=torch.long)
    proposal = _propose(gen, noise, centres, centres, importance_weighting=True)
    words = proposal.negatives.reshape(-1).numpy()
    weights = proposal.weights.reshape(-1).numpy()
    weighted = np.bincount(words, weights=weights, minlength=V) / weights.sum()
    plain = np.bincount(words, minlength=V) / words.size
    assert plain[1] > 0.5  # the generator is peaked on word 1 ...
    np.testing.assert_allclose(weighted, noise.probs, atol=0.03)  # ... the weights undo it
    assert weights.mean() == pytest.approx(1.0, rel=1e-4)


def test_max_importance_weight_truncates_the_weights():
    """Truncated importance sampling: no negative outweighs the cap, the others keep theirs."""
    gen = _peaked_generator(word=1)
    noise = UnigramNoise(np.array([5.0, 1.0, 2.0, 3.0, 4.0]), ns_exponent=1.0)
    centres = torch.zeros(6000, dtype=torch.long)
    full = _propose(gen, noise, centres, centres, importance_weighting=True)
    capped = _propose(
        gen, noise, centres, centres, importance_weighting=True, max_importance_weight=5.0
    )
    assert full.weights.max() > 5.0  # the cap binds on this peaked generator ...
    assert capped.weights.max() == pytest.approx(5.0)  # ... and bounds every weight
    below = full.weights < 5.0
    torch.testing.assert_close(capped.weights[below], full.weights[below])


def test_shared_centre_generator_reads_the_discriminator_and_cannot_change_it():
    disc = SkipGram(V, 3)
    gen = SharedCentreGenerator(disc.input_embeddings, V, 3)
    assert [name for name, _ in gen.named_parameters()] == ["output_embeddings.weight"]
    with torch.no_grad():
        gen.output_embeddings.weight.normal_()
    before = disc.input_embeddings.weight.detach().clone()
    centres = torch.zeros(200, dtype=torch.long)
    proposal = _propose(gen, UniformNoise(V), centres, centres + 1, n_candidates=50)
    (-proposal.log_q.sum()).backward()
    assert disc.input_embeddings.weight.grad is None
    assert gen.output_embeddings.weight.grad is not None
    np.testing.assert_array_equal(disc.input_embeddings.weight.detach(), before)
    expected = before[:2] @ gen.output_embeddings.weight.detach().T
    np.testing.assert_allclose(gen.logits(torch.arange(2), torch.arange(V)).detach(), expected)


def _cbow_batch(rng, n_examples, n_words):
    """Bags of 1-4 context words, their CSR pointer and the bags' centre words."""
    sizes = rng.integers(1, 5, size=n_examples)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return ptr, rng.integers(n_words, size=ptr[-1]), rng.integers(n_words, size=n_examples)


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
@pytest.mark.parametrize("centre", ["own", "discriminator"])
@pytest.mark.parametrize(
    "options",
    [
        dict(mask_false_negatives=False, importance_weighting=False, entropy_weight=0.0),
        dict(mask_false_negatives=True, importance_weighting=True, entropy_weight=0.3),
    ],
    ids=["plain", "masked_weighted_entropy"],
)
def test_compiled_generator_equals_the_torch_step(architecture, centre, options):
    """Same draws, weights, rewards and SGD update as complete_proposal + REINFORCE + SGD."""
    n_words, dim, batch, k, lr = 30, 6, 300, 5, 0.1
    options = dict(options)
    entropy_weight = options.pop("entropy_weight")
    rng = np.random.default_rng(0)
    noise = UnigramNoise(rng.integers(1, 50, size=n_words))
    torch.manual_seed(0)
    discriminator = SkipGram(n_words, dim)
    with torch.no_grad():
        discriminator.input_embeddings.weight.normal_(0, 0.5)
        discriminator.output_embeddings.weight.normal_(0, 0.5)

    def generator():
        torch.manual_seed(1)
        if centre == "own":
            gen = SkipGram(n_words, dim, sparse=True)
            with torch.no_grad():
                gen.input_embeddings.weight.normal_(0, 0.5)
        else:
            gen = SharedCentreGenerator(discriminator.input_embeddings, n_words, dim)
        with torch.no_grad():
            gen.output_embeddings.weight.normal_(0, 0.5)
        return gen

    if architecture == "cbow":
        ptr, words, positives = _cbow_batch(rng, batch, n_words)
        offsets = torch.from_numpy(ptr[:-1])
    else:
        ptr, offsets = None, None
        words, positives = rng.integers(n_words, size=batch), rng.integers(n_words, size=batch)
    negatives = rng.integers(n_words, size=(batch, k))
    draws = draw_adversarial(noise, batch, k, 0.5, 20, np.random.default_rng(1))
    options["max_importance_weight"] = 3.0

    reference = generator()
    words_t, positives_t = torch.from_numpy(words), torch.from_numpy(positives)
    proposal = complete_proposal(
        reference,
        noise,
        words_t,
        positives_t,
        torch.from_numpy(negatives),
        draws,
        offsets=offsets,
        **options,
    )
    rows, slots = proposal.from_generator.nonzero(as_tuple=True)
    sampled = proposal.negatives[rows, slots]
    with torch.no_grad():
        h = discriminator.encode(words_t, offsets)[rows]
        scores = (h * discriminator.output_embeddings(sampled)).sum(-1)
    rewards = normalize_rewards(torch.sigmoid(scores), 0.5)
    optimizer = torch.optim.SGD(reference.parameters(), lr=lr)
    reinforce_loss(proposal.log_q, rewards, proposal.entropy, entropy_weight).backward()
    optimizer.step()

    compiled_module = generator()
    compiled = CompiledGenerator(compiled_module, noise, n_words)
    state = compiled.propose(words, positives, negatives, draws, ptr=ptr, **options)
    np.testing.assert_array_equal(state["negatives"], proposal.negatives.numpy())
    weights = 1.0 if state["weights"] is None else state["weights"]  # None: all 1
    np.testing.assert_allclose(weights, proposal.weights.numpy(), rtol=1e-5)
    w_in = discriminator.input_embeddings.weight.detach().numpy()
    w_out = discriminator.output_embeddings.weight.detach().numpy()
    log_kpn = np.zeros(n_words, dtype=np.float32)
    compiled_rewards = compiled.rewards(state, w_in, w_out, words, ptr, log_kpn, 0.5, False)
    np.testing.assert_allclose(compiled_rewards, rewards.numpy(), atol=1e-6)
    compiled.update(state, compiled_rewards, lr, entropy_weight)
    before = generator().output_embeddings.weight.detach()
    assert (reference.output_embeddings.weight.detach() - before).abs().max() > 1e-2
    for ours, theirs in zip(compiled_module.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=2e-6)
