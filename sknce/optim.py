"""Optimisers for sknce's networks.

:class:`LazyAdam` is Adam for networks whose embedding tables get sparse
gradients (``sparse_embeddings=True``): a step costs O(rows touched), not
O(rows of the table). :class:`RowAdagrad` is AdaGrad with one accumulator per
row of a table, the optimizer of the classifier's linear bag model.
"""

from __future__ import annotations

import torch

from sknce._untraced import Untraced as _Untraced

__all__ = ["LazyAdam", "RowAdagrad"]


class _ParameterwiseOptimizer(_Untraced, torch.optim.Optimizer):
    """An optimizer whose step updates each parameter with a gradient on its own
    (:meth:`_update`)."""

    @torch.no_grad()
    def step(self, closure=None):
        """Perform one update of every parameter that has a gradient.

        Parameters
        ----------
        closure : callable or None, default=None
            Re-evaluates the model and returns the loss, as in torch's optimisers.

        Returns
        -------
        Tensor or None
            The loss ``closure`` returned, or ``None`` without a closure.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, p.grad, group)
        return loss

    def _update(self, p: torch.Tensor, grad: torch.Tensor, group: dict) -> None:
        """Update ``p`` from ``grad`` with ``group``'s options."""
        raise NotImplementedError


class LazyAdam(_ParameterwiseOptimizer):
    """Adam that updates only the rows present in a sparse gradient.

    Dense gradients get the ordinary Adam update (:class:`torch.optim.Adam`'s
    formula, with L2 weight decay added to the gradient, without amsgrad). For a
    sparse gradient (a label embedding scored on sampled labels only) the
    moments and parameters of the rows present are updated and the others left
    untouched ("lazy" Adam, as :class:`torch.optim.SparseAdam` and TensorFlow's
    ``LazyAdamOptimizer``), so a step costs O(rows touched) instead of
    O(number of labels); weight decay then applies to those rows only.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float, default=1e-3
        Learning rate (step size).
    betas : tuple of float, default=(0.9, 0.999)
        Decay rates of the running means of the gradient and of its square.
    eps : float, default=1e-8
        Added to the denominator's square root, for numerical stability.
    weight_decay : float, default=0.0
        L2 penalty added to the gradient, ``grad + weight_decay * param``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0 or eps <= 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(
                f"LazyAdam needs lr > 0, eps > 0, weight_decay >= 0 and betas in [0, 1); "
                f"got lr={lr}, eps={eps}, weight_decay={weight_decay}, betas={betas}."
            )
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _update(self, p: torch.Tensor, grad: torch.Tensor, group: dict) -> None:
        beta1, beta2 = group["betas"]
        lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        state["step"] += 1
        m, v = state["exp_avg"], state["exp_avg_sq"]
        step_size = lr / (1 - beta1 ** state["step"])
        correction2 = 1 - beta2 ** state["step"]
        if grad.is_sparse:
            grad = grad.coalesce()
            rows, values = grad.indices()[0], grad.values()
            if decay:
                values = values + decay * p.index_select(0, rows)
            m_rows = m.index_select(0, rows).mul_(beta1).add_(values, alpha=1 - beta1)
            v_rows = v.index_select(0, rows).mul_(beta2)
            v_rows.addcmul_(values, values, value=1 - beta2)
            m.index_copy_(0, rows, m_rows)
            v.index_copy_(0, rows, v_rows)
            denom = (v_rows / correction2).sqrt_().add_(eps)
            p.index_add_(0, rows, m_rows.div_(denom).mul_(-step_size))
        else:
            if decay:
                grad = grad.add(p, alpha=decay)
            m.mul_(beta1).add_(grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (v / correction2).sqrt_().add_(eps)
            p.addcdiv_(m, denom, value=-step_size)


class RowAdagrad(_ParameterwiseOptimizer):
    r"""AdaGrad with one accumulator per row of each parameter (row-wise AdaGrad).

    Row :math:`r` of a parameter keeps the sum :math:`G_r` of the squared norms of
    its gradients and moves by :math:`-\eta\, g_r / (\sqrt{G_r} + \epsilon)`
    (Duchi et al., 2011, with the per-coordinate sums pooled over the row, as in
    the row-wise AdaGrad of large embedding tables). A row's first update thus
    has norm :math:`\eta`, rare features keep large steps while frequent ones
    slow down, and the state is one number per row. A 1-D parameter is one row.
    Sparse gradients update the rows present only. The accumulators are created
    with the optimizer (state ``"sum"``), so a compiled step can update them in
    place.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float, default=0.1
        Learning rate :math:`\eta`.
    eps : float, default=1e-10
        Added to the denominator, for numerical stability.

    References
    ----------
    .. [1] J. Duchi, E. Hazan and Y. Singer, "Adaptive Subgradient Methods for Online
       Learning and Stochastic Optimization", JMLR 12, 2011.
    """

    def __init__(self, params, lr: float = 0.1, eps: float = 1e-10) -> None:
        if lr <= 0 or eps <= 0:
            raise ValueError(f"RowAdagrad needs lr > 0 and eps > 0; got lr={lr}, eps={eps}.")
        super().__init__(params, {"lr": lr, "eps": eps})
        for group in self.param_groups:
            for p in group["params"]:
                rows = p.shape[0] if p.dim() > 1 else 1
                self.state[p]["sum"] = torch.zeros(rows, dtype=p.dtype, device=p.device)

    def _update(self, p: torch.Tensor, grad: torch.Tensor, group: dict) -> None:
        lr, eps = group["lr"], group["eps"]
        total = self.state[p]["sum"]
        if grad.is_sparse:
            grad = grad.coalesce()
            rows, values = grad.indices()[0], grad.values()
            flat = values.reshape(values.shape[0], -1)
            total.index_add_(0, rows, flat.square().sum(dim=1))
            scale = total.index_select(0, rows).sqrt_().add_(eps).reciprocal_()
            shape = (-1,) + (1,) * (values.dim() - 1)
            p.index_add_(0, rows, values * scale.reshape(shape), alpha=-lr)
            return
        rows = grad.reshape(total.shape[0], -1)
        total.add_(rows.square().sum(dim=1))
        scale = total.sqrt().add_(eps).reciprocal_()
        p.sub_((rows * scale.unsqueeze(1)).reshape(p.shape), alpha=lr)
