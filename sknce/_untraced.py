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

__all__ = ["Untraced", "UntracedAdam", "UntracedSGD", "built_class"]


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


class _UntracedStep(Untraced):
    """:class:`Untraced`, and the ``step`` of the torch optimizer after it in the bases
    without torch's wrapper (``_torch_step``: that step, unwrapped)."""

    _torch_step: staticmethod

    @torch.no_grad()  # what torch's wrapper of the step does when not differentiable
    def step(self, closure=None):
        """Perform one step, as the torch optimizer's own ``step``."""
        if self.defaults["differentiable"]:
            return super().step(closure)
        return self._torch_step(self, closure)


class UntracedSGD(_UntracedStep, torch.optim.SGD):
    """``torch.optim.SGD`` whose methods do not import ``torch._dynamo`` (see
    :class:`Untraced`): what sknce's networks build for ``optimizer=torch.optim.SGD``."""

    _torch_step = staticmethod(inspect.unwrap(torch.optim.SGD.step))


class UntracedAdam(_UntracedStep, torch.optim.Adam):
    """``torch.optim.Adam`` whose methods do not import ``torch._dynamo`` (see
    :class:`Untraced`), on the CPU in torch's ``foreach`` form unless told otherwise:
    what sknce's networks build for ``optimizer=torch.optim.Adam``.

    torch's CPU default is a Python loop over the parameters, a dozen small operations
    each; ``foreach`` runs each operation over all of them in one call, with the same
    arithmetic per element (the same parameters, bit for bit), which matters on the
    small networks of sknce's defaults, where a step is its operations' overhead.
    """

    _torch_step = staticmethod(inspect.unwrap(torch.optim.Adam.step))

    def __init__(self, params, lr=1e-3, *args, foreach=None, fused=None, **kwargs) -> None:
        if foreach is None and not fused and _foreach_applies(lr, kwargs):
            foreach = True
        super().__init__(params, lr, *args, foreach=foreach, fused=fused, **kwargs)


def _foreach_applies(lr, kwargs: dict) -> bool:
    """Whether torch's ``foreach`` Adam takes these options: not with autograd through
    the step, nor with a tensor learning rate or betas unless ``capturable``."""
    if kwargs.get("differentiable") or kwargs.get("capturable"):
        return False
    betas = kwargs.get("betas", ())
    return not any(isinstance(v, torch.Tensor) for v in (lr, *betas))


_BUILT = {torch.optim.SGD: UntracedSGD, torch.optim.Adam: UntracedAdam}


def built_class(optimizer: type) -> type:
    """The class sknce builds for the optimizer class a user chose: the same, or for
    ``torch.optim.SGD`` and ``torch.optim.Adam`` their untraced twins
    (:class:`UntracedSGD`, :class:`UntracedAdam`)."""
    return _BUILT.get(optimizer, optimizer)
