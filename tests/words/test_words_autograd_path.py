"""ACEWord2Vec's discriminator optimizer where the compiled kernel runs and where it does not.

The autograd path (a GPU's) is forced on the CPU by making the kernel step say it does
not run, as ``benchmarks/bench_words_autograd.py`` does.
"""

import re

import numpy as np
import pytest
import torch

from sknce import ACEWord2Vec
from sknce._untraced import built_class
from sknce.words._net import SGD_PER_ADAM_RATE, ACEKernelStep, DiscriminatorOptimizer
from sknce.words._subword_model import SubwordKernelStep

GROUPS = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]


def _planted_corpus(seed=0):
    """Documents of one group's words each: words of a group share their contexts."""
    rng = np.random.default_rng(seed)
    return [list(rng.choice(GROUPS[d % 2], size=30)) for d in range(40)]


def _group_gap(model) -> float:
    """Mean cosine of two words of one group minus that of two words of different groups."""
    within, across = [], []
    words = GROUPS[0] + GROUPS[1]
    for i, a in enumerate(words):
        for b in words[i + 1 :]:
            (within if a[0] == b[0] else across).append(model.wv_.similarity(a, b))
    return float(np.mean(within) - np.mean(across))


def _no_kernel(monkeypatch):
    monkeypatch.setattr(ACEKernelStep, "runs", lambda self, device, optimizer, options: False)


@pytest.mark.parametrize(
    ("optimizer", "options", "device", "expected"),
    [
        (torch.optim.SGD, {}, "cpu", (torch.optim.SGD, 0.05)),
        (torch.optim.SGD, {}, "cuda", (torch.optim.Adam, 0.05 / SGD_PER_ADAM_RATE)),
        (torch.optim.SGD, {}, torch.device("cuda", 1), (torch.optim.Adam, 0.02)),
        (torch.optim.SGD, {"momentum": 0.9}, "cuda", (torch.optim.SGD, 0.05)),
        (torch.optim.SGD, {"momentum": 0.9}, "cpu", (torch.optim.SGD, 0.05)),
        (torch.optim.Adam, {}, "cuda", (torch.optim.Adam, 0.05)),
        (torch.optim.Adagrad, {}, "cpu", (torch.optim.Adagrad, 0.05)),
    ],
)
def test_plain_sgd_becomes_adam_only_where_the_kernel_does_not_run(
    optimizer, options, device, expected
):
    for step in (ACEKernelStep(), SubwordKernelStep()):
        resolved = DiscriminatorOptimizer.resolve(step, optimizer, options, 0.05, device)
        assert (resolved.optimizer, resolved.lr) == pytest.approx(expected)
    with pytest.raises(AttributeError):  # one fit's decision: frozen
        resolved.lr = 1.0


def test_the_cpu_default_keeps_the_kernel_at_plain_sgd_and_lr():
    model = ACEWord2Vec(n_components=8, min_count=1, sample=0, max_epochs=2, random_state=0)
    model.fit(_planted_corpus())
    net = model.net_
    assert type(net.step_) is ACEKernelStep
    assert net.optimizer is torch.optim.SGD and net.lr == 0.025
    assert type(net.optimizer_) is built_class(torch.optim.SGD)  # torch's SGD, untraced


@pytest.mark.parametrize(
    ("family", "floor"),
    [
        ({}, 0.3),
        ({"adversarial": False}, 0.3),
        ({"subwords": True, "bucket": 64, "adversarial": False}, 0.15),
    ],
    ids=["ace", "nce", "subwords"],
)
def test_the_autograd_path_learns_at_the_defaults(monkeypatch, family, floor):
    _no_kernel(monkeypatch)
    docs = _planted_corpus()
    params = dict(n_components=16, min_count=1, sample=0, **family)
    model = ACEWord2Vec(random_state=0, **params).fit(docs)
    net = model.net_
    assert type(net.step_) is not ACEKernelStep
    assert type(net.optimizer_) is built_class(torch.optim.Adam)  # torch's Adam, untraced
    assert net.optimizer_.defaults["lr"] == pytest.approx(0.025 / SGD_PER_ADAM_RATE)
    # Chance is 0. The kernel reaches 0.86-0.92 here; Adam's 40 steps 0.46 (ACE, NCE),
    # 0.22 with subwords (a word's vector is the mean of its row and its n-grams').
    learned = _group_gap(model)
    assert learned > floor, learned
    # The step the rule replaces, SGD on the batch's mean loss, leaves the words at chance.
    mean_sgd = ACEWord2Vec(random_state=0, optimizer_kwargs={"momentum": 0.0}, **params)
    mean_sgd.fit(docs)
    assert type(mean_sgd.net_.optimizer_) is built_class(torch.optim.SGD)
    assert abs(_group_gap(mean_sgd)) < 0.1


def test_a_continued_fit_resolves_the_optimizer_it_is_given(monkeypatch):
    _no_kernel(monkeypatch)
    params = dict(n_components=8, min_count=1, sample=0, max_epochs=1, random_state=0)
    model = ACEWord2Vec(optimizer=torch.optim.Adagrad, **params).fit(_planted_corpus())
    assert type(model.net_.optimizer_) is torch.optim.Adagrad
    model.set_params(optimizer=torch.optim.SGD).partial_fit(_planted_corpus(1))
    assert type(model.net_.optimizer_) is built_class(torch.optim.Adam)
    assert model.net_.lr == pytest.approx(0.025 / SGD_PER_ADAM_RATE)


def test_the_docstring_states_the_rate_of_the_rule():
    stated = set(re.findall(r"``lr / ([\d.]+)``", ACEWord2Vec.__doc__))
    assert stated == {str(SGD_PER_ADAM_RATE)}
    assert "1e-2 at the default ``lr``" in ACEWord2Vec.__doc__
    assert ACEWord2Vec().lr / SGD_PER_ADAM_RATE == pytest.approx(1e-2)
