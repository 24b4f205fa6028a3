"""The downstream supervised loss of a representation, Awasthi et al. (2022), Definition 2.2."""

from __future__ import annotations

from numbers import Real

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from sklearn.utils.validation import check_array

from sknce._compat import Interval, StrOptions, validate_params
from sknce.contrastive._validation import check_class_probs

__all__ = ["supervised_loss"]


def _logistic(U: np.ndarray, probs: np.ndarray, beta: float):
    """Objective and gradient of the logistic L_sup over the flattened weights."""
    n_classes, dim = U.shape
    eye = np.eye(n_classes)

    def fun(w: np.ndarray):
        W = w.reshape(n_classes, dim)
        # log(1 + sum_{c' != c} exp(-beta u_c.(w_c - w_c'))) is the cross-entropy of
        # the softmax over logits beta u_c.w_c'.
        logits = beta * U @ W.T
        value = -(probs * np.diag(log_softmax(logits, axis=1))).sum()
        d_logits = beta * probs[:, None] * (softmax(logits, axis=1) - eye)
        return value, (d_logits.T @ U).ravel()

    return fun


def _solve_logistic(U: np.ndarray, probs: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
    n_classes, dim = U.shape
    constraints = [
        {
            "type": "ineq",
            "fun": lambda w, c=c: 1.0 - np.sum(w.reshape(n_classes, dim)[c] ** 2),
            "jac": lambda w, c=c: _ball_jacobian(w, c, n_classes, dim),
        }
        for c in range(n_classes)
    ]
    result = minimize(
        _logistic(U, probs, beta),
        x0=U.ravel().copy(),
        jac=True,
        method="SLSQP",
        constraints=constraints,
        options={"maxiter": 1000, "ftol": 1e-12},
    )
    return float(result.fun), result.x.reshape(n_classes, dim)


def _ball_jacobian(w: np.ndarray, c: int, n_classes: int, dim: int) -> np.ndarray:
    """Gradient of ``1 - ||w_c||^2`` over the flattened weights (and any extra variables)."""
    grad = np.zeros_like(w)
    grad[c * dim : (c + 1) * dim] = -2.0 * w[c * dim : (c + 1) * dim]
    return grad


def _solve_hinge(U: np.ndarray, probs: np.ndarray, beta: float) -> tuple[float, np.ndarray]:
    r"""The hinge L_sup as a smooth program: minimise sum_c rho_c t_c over (W, t).

    Subject to :math:`t_c \ge 0`, :math:`t_c \ge 1 - \beta u_c^\top (w_c - w_{c'})`
    for :math:`c' \ne c` and :math:`\lVert w_c \rVert \le 1`: linear and quadratic
    constraints, so SLSQP solves it exactly despite the kinks of the hinge.
    """
    n_classes, dim = U.shape
    n_w = n_classes * dim
    pairs = [(c, o) for c in range(n_classes) for o in range(n_classes) if o != c]
    # Row (c, o) of A: t_c - 1 + beta u_c.(w_c - w_o) >= 0 is A x - 1 >= 0.
    A = np.zeros((len(pairs), n_w + n_classes))
    for row, (c, o) in enumerate(pairs):
        A[row, c * dim : (c + 1) * dim] += beta * U[c]
        A[row, o * dim : (o + 1) * dim] -= beta * U[c]
        A[row, n_w + c] = 1.0
    cost = np.concatenate([np.zeros(n_w), probs])
    slack_jac = np.eye(n_classes, n_w + n_classes, n_w)  # t_c >= 0
    constraints = [
        {"type": "ineq", "fun": lambda x: A @ x - 1.0, "jac": lambda x: A},
        {"type": "ineq", "fun": lambda x: x[n_w:], "jac": lambda x: slack_jac},
    ]
    constraints += [
        {
            "type": "ineq",
            "fun": lambda x, c=c: 1.0 - np.sum(x[c * dim : (c + 1) * dim] ** 2),
            "jac": lambda x, c=c: _ball_jacobian(x, c, n_classes, dim),
        }
        for c in range(n_classes)
    ]
    start = np.concatenate([U.ravel(), np.full(n_classes, 1.0 + 2.0 * beta)])
    result = minimize(
        lambda x: (cost @ x, cost),
        x0=start,
        jac=True,
        method="SLSQP",
        constraints=constraints,
        options={"maxiter": 1000, "ftol": 1e-12},
    )
    return max(float(result.fun), 0.0), result.x[:n_w].reshape(n_classes, dim)


@validate_params(
    {
        "embeddings": ["array-like"],
        "class_probs": ["array-like"],
        "loss": [StrOptions({"logistic", "hinge"})],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "return_weights": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def supervised_loss(
    embeddings,
    class_probs,
    loss: str = "logistic",
    beta: float = 1.0,
    *,
    return_weights: bool = False,
):
    r"""Supervised loss of a latent-indistinguishable representation, Definition 2.2.

    For class embeddings :math:`u_c` (the representation :math:`f(x) = u_{c(x)}`)
    and class prior :math:`\rho`,

    .. math::

        \mathcal{L}_{\sup} = \min_{\lVert w_c \rVert_2 \le 1} \; \sum_{c} \rho_c\,
        \ell^\beta\bigl(\langle u_c^\top (w_c - w_{c'}) \rangle_{c' \ne c}\bigr),

    with the logistic or hinge loss of Definition 2.1. The problem is convex; it is
    solved with SLSQP (the logistic loss directly, with analytic gradients; the
    hinge loss in epigraph form, where every constraint is smooth).

    Read more in the :ref:`User Guide <contrastive>`.

    Parameters
    ----------
    embeddings : array-like of shape (C, d)
        Row :math:`c` is the representation :math:`u_c` of class :math:`c` (unit
        vectors in the paper's setting, e.g. the second output of
        :func:`nce_optimal_gram`).
    class_probs : array-like of shape (C,)
        The class prior :math:`\rho` (non-negative, summing to 1).
    loss : {"logistic", "hinge"}, default="logistic"
        The loss :math:`\ell^\beta` of Definition 2.1 applied to the margins
        :math:`m_{c'} = u_c^\top (w_c - w_{c'})`: the logistic loss
        :math:`\log(1 + \sum_{c'} e^{-\beta m_{c'}})` or the hinge loss
        :math:`\max(0, 1 - \beta \min_{c'} m_{c'})`.
    beta : float, default=1.0
        Inverse temperature :math:`\beta`.
    return_weights : bool, default=False
        Also return the optimal linear weights.

    Returns
    -------
    loss : float
        :math:`\mathcal{L}_{\sup}`.
    weights : ndarray of shape (C, d)
        The minimising :math:`w_c` (only with ``return_weights=True``).

    See Also
    --------
    nce_optimal_gram : The NCE-optimal class embeddings of a class prior.

    References
    ----------
    .. [1] P. Awasthi, N. Dikkala and P. Kamath, "Do more negative samples necessarily
       hurt in contrastive learning?", ICML 2022. Definitions 2.1 and 2.2, Section 4.

    Examples
    --------
    For the simplex ETF of 3 uniform classes the optimal weights are the embeddings
    themselves, each margin is :math:`1 + 1/2`, and the loss is
    :math:`\log(1 + 2 e^{-3/2})`:

    >>> import numpy as np
    >>> from sknce.contrastive import supervised_loss
    >>> angles = 2 * np.pi * np.arange(3) / 3
    >>> U = np.c_[np.cos(angles), np.sin(angles)]
    >>> round(supervised_loss(U, np.full(3, 1 / 3)), 6)
    0.368981
    >>> round(float(np.log(1 + 2 * np.exp(-1.5))), 6)
    0.368981
    """
    U = check_array(embeddings, dtype=np.float64, input_name="embeddings")
    probs = check_class_probs(class_probs)
    if U.shape[0] != probs.shape[0]:
        raise ValueError(
            f"embeddings has {U.shape[0]} rows but class_probs has {probs.shape[0]} entries; "
            "pass one embedding per class, in the order of class_probs."
        )
    solve = _solve_logistic if loss == "logistic" else _solve_hinge
    value, weights = solve(U, probs, float(beta))
    return (value, weights) if return_weights else value
