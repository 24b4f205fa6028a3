"""sknce's SGD and Adam twins (``optimizer=torch.optim.SGD`` or ``torch.optim.Adam`` as sknce
builds them) step as torch's own."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from sknce._untraced import UntracedAdam, UntracedSGD, built_class
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


def test_only_torchs_sgd_and_adam_are_built_as_their_twins():
    assert built_class(torch.optim.SGD) is UntracedSGD
    assert built_class(torch.optim.Adam) is UntracedAdam
    assert issubclass(UntracedSGD, torch.optim.SGD)
    assert issubclass(UntracedAdam, torch.optim.Adam)

    class MySGD(torch.optim.SGD):
        pass

    class MyAdam(torch.optim.Adam):
        pass

    for other in (torch.optim.AdamW, MySGD, MyAdam, LazyAdam):
        assert built_class(other) is other


ADAM_OPTIONS = [
    {},
    {"weight_decay": 1e-2},
    {"amsgrad": True, "betas": (0.8, 0.9)},
    {"maximize": True, "eps": 1e-6},
    {"foreach": False},
]


@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=lambda o: ",".join(o) or "plain")
@pytest.mark.parametrize("closure", [False, True])
def test_the_untraced_adam_takes_torchs_steps_exactly(options, closure):
    *ours, opt = _trained(UntracedAdam, options, closure)
    *torchs, reference = _trained(torch.optim.Adam, options, closure)
    for a, b in zip(ours, torchs):
        assert torch.equal(a, b)
    for mine, theirs in zip(opt.state.values(), reference.state.values()):
        assert mine.keys() == theirs.keys()
        assert all(torch.equal(mine[key], theirs[key]) for key in mine)
    # the state saves and loads either way round
    reference.load_state_dict(opt.state_dict())
    opt.load_state_dict(reference.state_dict())


def test_the_untraced_adam_takes_the_foreach_form_unless_told_otherwise():
    params = [torch.nn.Parameter(torch.ones(2))]
    assert UntracedAdam(params).defaults["foreach"] is True
    assert UntracedAdam(params, foreach=False).defaults["foreach"] is False
    fused = UntracedAdam(params, fused=True).defaults
    assert fused["fused"] is True and not fused["foreach"]
    # options torch's foreach form refuses keep torch's default
    assert UntracedAdam(params, differentiable=True).defaults["foreach"] is None
    assert UntracedAdam(params, lr=torch.tensor(0.01)).defaults["foreach"] is None


@pytest.mark.parametrize("closure", [False, True])
def test_a_differentiable_adam_fails_as_torchs_on_leaf_parameters(closure):
    errors = []
    for optimizer in (UntracedAdam, torch.optim.Adam):
        with pytest.raises(RuntimeError, match="leaf Variable") as error:
            _trained(optimizer, {"differentiable": True}, closure)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


def test_building_and_stepping_the_twins_imports_no_torch_dynamo():
    code = (
        "import sys, torch\n"
        "from sknce._untraced import UntracedAdam, UntracedSGD\n"
        "for cls in (UntracedAdam, UntracedSGD):\n"
        "    w = torch.nn.Parameter(torch.ones(3))\n"
        "    opt = cls([w], lr=0.1)\n"
        "    (w ** 2).sum().backward()\n"
        "    opt.step(); opt.zero_grad(); opt.load_state_dict(opt.state_dict())\n"
        "print(sorted({'torch._dynamo', 'sympy'} & set(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
