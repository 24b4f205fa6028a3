"""sknce's SGD twin (``optimizer=torch.optim.SGD`` as sknce builds it) steps as torch's SGD."""

from __future__ import annotations

import pytest
import torch

from sknce._untraced import UntracedSGD, built_class
from sknce.optim import LazyAdam

OPTIONS = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.5, "weight_decay": 1e-2},
    {"momentum": 0.8, "nesterov": True},
    {"maximize": True, "weight_decay": 1e-3},
]


def _trained(optimizer: type, options: dict, closure: bool) -> tuple:
    weight = torch.nn.Parameter(torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(2, 3))
    bias = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    opt = optimizer([weight, bias], lr=0.05, **options)
    x = torch.arange(6, dtype=torch.float64).reshape(3, 2) / 5
    for _ in range(4):

        def loss() -> torch.Tensor:
            opt.zero_grad()
            value = ((x @ weight + bias) ** 2).sum()
            value.backward()
            return value

        if closure:
            opt.step(loss)
        else:
            loss()
            opt.step()
    return weight.detach(), bias.detach(), opt


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "plain")
@pytest.mark.parametrize("closure", [False, True])
def test_the_untraced_sgd_takes_torchs_steps_exactly(options, closure):
    *ours, opt = _trained(UntracedSGD, options, closure)
    *torchs, reference = _trained(torch.optim.SGD, options, closure)
    for a, b in zip(ours, torchs):
        assert torch.equal(a, b)
    # the state saves and loads either way round
    assert str(opt.state_dict()) == str(reference.state_dict())
    reference.load_state_dict(opt.state_dict())
    opt.load_state_dict(reference.state_dict())


@pytest.mark.parametrize("closure", [False, True])
def test_a_differentiable_sgd_fails_as_torchs_on_leaf_parameters(closure):
    # torch's step keeps the graph (differentiable=True) and refuses in-place updates of
    # leaf parameters; the twin hands such a step to torch's own
    errors = []
    for optimizer in (UntracedSGD, torch.optim.SGD):
        with pytest.raises(RuntimeError, match="leaf Variable") as error:
            _trained(optimizer, {"differentiable": True, "momentum": 0.5}, closure)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


def test_only_torchs_sgd_is_built_as_its_twin():
    assert built_class(torch.optim.SGD) is UntracedSGD
    assert issubclass(UntracedSGD, torch.optim.SGD)

    class MySGD(torch.optim.SGD):
        pass

    for other in (torch.optim.Adam, MySGD, LazyAdam):
        assert built_class(other) is other
