"""sknce's optimizers without torch's guards against ``torch.compile``.

torch wraps some methods of its optimizers so that ``torch.compile`` does not trace
them, and the wrapper imports ``torch._dynamo`` (and sympy) at its first call: as much
memory as a word2vec fit's own data. sknce's training loop never runs under
``torch.compile``. :class:`Untraced` gives an optimizer torch's methods unwrapped;
:func:`built_class` is the class a network builds for the optimizer a user chose.
"""

from __future__ import annotations

import inspect

import torch

__all__ = ["Untraced", "UntracedSGD", "built_class"]


class Untraced:
    """torch's ``Optimizer`` methods without their guards against ``torch.compile``.

    A mixin before a torch optimizer class: ``add_param_group`` (which building an
    optimizer calls), ``zero_grad``, ``state_dict`` and ``load_state_dict`` as torch
    writes them, without the wrapper that imports ``torch._dynamo``.
    """

    add_param_group = inspect.unwrap(torch.optim.Optimizer.add_param_group)
    zero_grad = inspect.unwrap(torch.optim.Optimizer.zero_grad)
    state_dict = inspect.unwrap(torch.optim.Optimizer.state_dict)
    load_state_dict = inspect.unwrap(torch.optim.Optimizer.load_state_dict)


class UntracedSGD(Untraced, torch.optim.SGD):
    """``torch.optim.SGD`` whose methods do not import ``torch._dynamo`` (see
    :class:`Untraced`): what sknce's networks build for ``optimizer=torch.optim.SGD``."""

    @torch.no_grad()  # what torch's wrapper of the step does when not differentiable
    def step(self, closure=None):
        """Perform one SGD step, as ``torch.optim.SGD.step``."""
        if self.defaults["differentiable"]:
            return super().step(closure)
        return _SGD_STEP(self, closure)


_SGD_STEP = inspect.unwrap(torch.optim.SGD.step)


def built_class(optimizer: type) -> type:
    """The class sknce builds for the optimizer class a user chose: the same, or for
    ``torch.optim.SGD`` its untraced twin (:class:`UntracedSGD`)."""
    return UntracedSGD if optimizer is torch.optim.SGD else optimizer
