"""The private parts of skorch that sknce's engine relies on, pinned to the installed skorch.

The engine extends skorch through its public points (``train_step``, ``get_loss``,
``infer``, ``get_iterator``, ``initialize_optimizer``, ``get_all_learnable_params``,
``fit_loop``, ``partial_fit``, callbacks). Where skorch offers none, it overrides or calls
a private method:

* ``_zero_grad_optimizer`` and ``_step_optimizer`` (skorch's ``train_step`` zeroes and
  steps every registered optimizer, passing its closure to each): the engine leaves out
  the miner's optimizer, which the miner steps itself; stepping it through the closure
  would run the scorer's forward and backward once more;
* ``run_single_epoch`` (skorch reads each batch's loss back to the host and takes the
  batch size from the first tensor): the engine weighs a batch by its number of
  examples, reads the losses of a pass together on an accelerator, and pipelines a
  kernel step's batches;
* ``_validate_params`` and ``_initialize_accelerator`` of skorch's ``AccelerateMixin``:
  the data-parallel net runs on the accelerator's device and wraps its modules once
  per fit call;
* ``Checkpoint._format_target``: the name a checkpoint pickles the net under;
* the net's registries ``_optimizers``, ``_modules`` and ``_criteria`` (the snapshot a
  failed warm start restores), ``_set_training``, and the mixin's
  ``_unwrap_accelerator`` and ``_wrapped_with_accelerator``.

Each is checked here against the installed skorch: present, with the signature the
engine was written for, and still called by skorch where the engine's override takes
effect. A skorch release that changes one fails here, loudly, not in a fit. This file
runs in ``.ci/min-deps``'s subset too, at the floor of skorch.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import torch

import sknce
from sknce._engine import NCENet

#: skorch's private methods the engine overrides: name -> (skorch's owner, its signature,
#: the skorch method that calls it, and the call as that method's source writes it).
OVERRIDDEN = {
    "_zero_grad_optimizer": (
        "skorch.net:NeuralNet",
        "(self, set_to_none=None)",
        "skorch.net:NeuralNet.train_step",
        "self._zero_grad_optimizer()",
    ),
    "_step_optimizer": (
        "skorch.net:NeuralNet",
        "(self, step_fn)",
        "skorch.net:NeuralNet.train_step",
        "self._step_optimizer(step_fn)",
    ),
    "run_single_epoch": (
        "skorch.net:NeuralNet",
        "(self, iterator, training, prefix, step_fn, **fit_params)",
        "skorch.net:NeuralNet.fit_loop",
        "self.run_single_epoch(",
    ),
    "_validate_params": (
        "skorch.hf:AccelerateMixin",
        "(self)",
        "skorch.hf:AccelerateMixin.initialize",
        "self._validate_params()",
    ),
    "_initialize_accelerator": (
        "skorch.hf:AccelerateMixin",
        "(self)",
        "skorch.hf:AccelerateMixin.initialize",
        "self._initialize_accelerator()",
    ),
}

#: skorch's private methods the engine calls: name -> (owner, signature).
CALLED = {
    "_set_training": ("skorch.net:NeuralNet", "(self, training=True)"),
    "_unwrap_accelerator": ("skorch.hf:AccelerateMixin", "(self)"),
    "_format_target": ("skorch.callbacks.training:Checkpoint", "(self, net, f, idx)"),
}


def _resolve(path: str):
    """The object at ``module:qualified.name`` (``skorch.net:NeuralNet.train_step``)."""
    module, _, name = path.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _skorch_classes_subclassed_by_sknce() -> dict[type, list[type]]:
    """Each class of sknce deriving from skorch, with its skorch bases."""
    found = {}
    for info in pkgutil.walk_packages(sknce.__path__, "sknce."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # a module of an optional dependency
            continue
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == module.__name__:
                bases = [b for b in cls.__mro__ if b.__module__.startswith("skorch")]
                if bases:
                    found[cls] = bases
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_every_private_override_of_skorch_is_pinned():
    """A new override of a private skorch method must be pinned here (or avoided)."""
    overridden = set()
    for cls, bases in _skorch_classes_subclassed_by_sknce().items():
        for name in vars(cls):
            if (_private(name) or name == "run_single_epoch") and any(
                name in vars(base) for base in bases
            ):
                overridden.add(name)
    assert overridden == set(OVERRIDDEN)


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_an_overridden_private_method_has_the_pinned_signature_and_caller(name):
    owner_path, signature, caller_path, call = OVERRIDDEN[name]
    owner = _resolve(owner_path)
    assert name in vars(owner), f"{owner_path} no longer defines {name}"
    assert str(inspect.signature(vars(owner)[name])) == signature
    assert call in inspect.getsource(_resolve(caller_path)), (
        f"{caller_path} no longer calls {call}: sknce's override of {name} has no effect"
    )


@pytest.mark.parametrize("name", sorted(CALLED))
def test_a_called_private_method_has_the_pinned_signature(name):
    owner_path, signature = CALLED[name]
    owner = _resolve(owner_path)
    assert name in vars(owner), f"{owner_path} no longer defines {name}"
    assert str(inspect.signature(vars(owner)[name])) == signature


def test_the_registries_the_snapshot_reads_are_skorchs():
    """A net lists its modules, criteria and optimizers in these private registries."""
    net = NCENet(module=_Module, criterion=_Module, seeds=None, optimizer=torch.optim.SGD)
    net.initialize()
    assert net._modules == ["module"]
    assert net._criteria == ["criterion"]
    assert net._optimizers == ["optimizer"]


def test_checkpoint_pickles_into_the_file_object_it_is_given():
    """sknce hands ``Checkpoint`` a file object for ``f_pickle`` (``_pickles_through``):
    skorch must format the target and pickle into it, not open a path of its own."""
    source = inspect.getsource(_resolve("skorch.callbacks.training:Checkpoint.save_model"))
    assert "f_pickle = self._format_target(net, f_pickle, -1)" in source
    assert "with open_file_like(f_pickle, 'wb') as f:" in source
    assert "pickle.dump(net, f)" in source


def test_the_optimizer_is_built_as_skorchs_initialize_optimizer_builds_it():
    """NCENet's initialize_optimizer replaces skorch's body to build another class for
    torch's SGD: skorch's must still be these two steps, with the net's arguments."""
    source = "".join(
        inspect.getsource(_resolve("skorch.net:NeuralNet.initialize_optimizer")).split()
    )
    assert "named_parameters=self.get_all_learnable_params()" in source
    assert "args,kwargs=self.get_params_for_optimizer('optimizer',named_parameters)" in source
    assert "self.optimizer_=self.optimizer(*args,**kwargs)" in source
    net = NCENet(
        module=_Module,
        criterion=_Module,
        seeds=None,
        optimizer=torch.optim.SGD,
        optimizer__momentum=0.5,
        lr=0.3,
    ).initialize()
    assert isinstance(net.optimizer_, torch.optim.SGD)
    (group,) = net.optimizer_.param_groups
    assert group["momentum"] == 0.5 and group["lr"] == 0.3
    assert [id(p) for p in group["params"]] == [id(p) for _, p in net.get_all_learnable_params()]


def test_the_accelerate_mixin_keeps_its_wrapped_flag():
    source = inspect.getsource(_resolve("skorch.hf:AccelerateMixin"))
    assert "self._wrapped_with_accelerator = True" in source
    assert "self._wrapped_with_accelerator = False" in source


class _Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)

    def forward(self, x):
        return self.linear(x)
