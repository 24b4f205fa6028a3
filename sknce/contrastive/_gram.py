r"""The NCE-optimal latent-indistinguishable representation, Awasthi et al. (2022), Section 4.

Under Assumption 3.1 an NCE-optimal representation can be taken
latent-indistinguishable (Theorem 3.5): :math:`f(x) = u_{c(x)}`. Its NCE loss
depends on the class embeddings only through their Gram matrix
:math:`Z_{cc'} = u_c^\top u_{c'}`, a correlation matrix, and is convex in it
(Eq. 3). We minimise it by projected stochastic gradient descent with Higham's
nearest-correlation projection, as Section 4 describes.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from sknce._compat import Interval, StrOptions, validate_params
from sknce.contrastive._validation import check_class_probs

__all__ = ["nce_optimal_gram", "nearest_correlation"]


def nearest_correlation(A: np.ndarray, *, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """The correlation matrix nearest to a symmetric ``A`` in Frobenius norm (Higham, 2002).

    Alternating projections onto the positive semi-definite cone and onto the
    unit-diagonal matrices, with Dykstra's correction on the cone step
    (Higham's Algorithm 3.3, unweighted).

    Parameters
    ----------
    A : ndarray of shape (C, C)
        A symmetric matrix.
    tol : float, default=1e-10
        Relative change of the iterates at which to stop.
    max_iter : int, default=200

    Returns
    -------
    ndarray of shape (C, C)
        Unit diagonal and positive semi-definite up to ``tol``.
    """
    Y = (A + A.T) / 2.0
    correction = np.zeros_like(Y)
    X = Y
    for _ in range(max_iter):
        R = Y - correction
        w, V = np.linalg.eigh(R)
        X_new = (V * np.maximum(w, 0.0)) @ V.T
        correction = X_new - R
        Y_new = X_new.copy()
        np.fill_diagonal(Y_new, 1.0)
        scale = max(np.linalg.norm(Y_new), 1.0)
        done = (
            np.linalg.norm(Y_new - Y) <= tol * scale
            and np.linalg.norm(X_new - X) <= tol * scale
            and np.linalg.norm(Y_new - X_new) <= tol * scale
        )
        X, Y = X_new, Y_new
        if done:
            break
    return Y


def _gradient(
    Z: np.ndarray, probs: np.ndarray, counts: np.ndarray, loss: str, beta: float
) -> np.ndarray:
    r"""Stochastic gradient of Eq. (3) with respect to the entries of ``Z``.

    ``counts[b, c']`` is how many of tuple ``b``'s ``k`` negatives fall in class
    :math:`c'`. The expectation over the anchor class :math:`c` is taken exactly
    (a weighted sum over the C classes), which removes its share of the
    gradient's variance. With :math:`v_i = 1 - Z_{c c_i}`, the logistic loss is
    :math:`\log(1 + \sum_{c'} n_{c'} e^{-\beta (1 - Z_{cc'})})` and the hinge loss
    :math:`\max(0, \max_{c': n_{c'} > 0} 1 - \beta(1 - Z_{cc'}))`; both decrease in
    every :math:`v_i`, so they increase with :math:`Z_{cc'}`.
    """
    n_tuples = counts.shape[0]
    if loss == "logistic":
        E = np.exp(-beta * (1.0 - Z))  # E[c, c'] = e^{-beta v} for a negative of class c'
        inv_S = 1.0 / (1.0 + counts @ E.T)  # (batch, C): 1 / S for each anchor class c
        grad = beta * E * (inv_S.T @ counts) / n_tuples
    else:
        present = np.where(counts[:, None, :] > 0, Z[None, :, :], -np.inf)  # (batch, C, C)
        worst = present.argmax(axis=2)  # the closest negative class, per tuple and anchor
        closest = np.take_along_axis(present, worst[:, :, None], axis=2)[:, :, 0]
        active = (1.0 - beta * (1.0 - closest)) > 0
        grad = np.zeros_like(Z)
        anchor = np.broadcast_to(np.arange(len(Z)), worst.shape)
        np.add.at(grad, (anchor[active], worst[active]), beta / n_tuples)
    grad *= probs[:, None]
    grad = (grad + grad.T) / 2.0
    np.fill_diagonal(grad, 0.0)
    return grad


def _embeddings(Z: np.ndarray) -> np.ndarray:
    """Rows ``u_c`` with ``u_c . u_c' = Z[c, c']``: the eigen factor, rows renormalised."""
    w, V = np.linalg.eigh(Z)
    order = np.argsort(w)[::-1]
    w, V = np.maximum(w[order], 0.0), V[:, order]
    U = V * np.sqrt(w)
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U


def _projected_sgd(
    probs: np.ndarray,
    k: int,
    loss: str,
    beta: float,
    n_steps: int,
    batch_size: int,
    step_size: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """One run of projected SGD from the identity; the step-weighted average iterate."""
    n_classes = len(probs)
    Z = np.eye(n_classes)
    average = np.zeros_like(Z)
    total_weight = 0.0
    for t in range(n_steps):
        # Eq. (3) depends on c_1..c_k only through their class counts: one multinomial
        # draw replaces k categorical ones, and a step costs O(batch * C) whatever k.
        counts = rng.multinomial(k, probs, size=batch_size)
        grad = _gradient(Z, probs, counts, loss, beta)
        Z = nearest_correlation(Z - step_size / np.sqrt(t + 1.0) * grad)
        # Weights growing with t (Lacoste-Julien et al., 2012) favour the late,
        # small-step iterates; an average of correlation matrices is one too.
        average += (t + 1.0) * Z
        total_weight += t + 1.0
    return average / total_weight


@validate_params(
    {
        "class_probs": ["array-like"],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions({"logistic", "hinge"})],
        "beta": [Interval(Real, 0, None, closed="neither")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "n_runs": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def nce_optimal_gram(
    class_probs,
    n_negatives: int,
    loss: str = "logistic",
    beta: float = 1.0,
    *,
    n_steps: int = 1000,
    batch_size: int = 10000,
    step_size: float = 50.0,
    n_runs: int = 1,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Gram matrix of the NCE-optimal latent-indistinguishable representation.

    With :math:`f(x) = u_{c(x)}` and :math:`Z_{cc'} = u_c^\top u_{c'}`, the NCE
    loss with :math:`k` negatives is

    .. math::

        \mathcal{L}^{(k)}_{\mathrm{NCE}}(Z) = \mathbb{E}_{c, c_1, \dots, c_k \sim \rho}
        \bigl[\ell\bigl(\langle 1 - Z_{c c_i} \rangle_{i=1}^k\bigr)\bigr]
        \qquad \text{(Eq. 3)},

    convex over the correlation matrices (positive semi-definite, unit diagonal).
    It is minimised by projected stochastic gradient descent (Awasthi et al., 2022,
    Section 4): each step averages the gradient over ``batch_size`` tuples
    :math:`(c, c_{1:k}) \sim \rho^{k+1}`, moves by
    ``step_size / sqrt(t + 1)`` and projects back with Higham's (2002)
    nearest-correlation algorithm; the result is the average of the iterates
    weighted by the step number (Lacoste-Julien et al., 2012), averaged again over
    ``n_runs`` independent runs. The class embeddings are the eigen factor of the
    result. The loss depends on the negatives only through their class counts, so
    a step costs O(``batch_size`` x C) whatever ``n_negatives``.

    For uniform ``class_probs`` the optimum is the simplex ETF, with off-diagonal
    entries :math:`-1/(C-1)` (Theorem 3.8).

    Read more in the :ref:`User Guide <contrastive>`.

    Parameters
    ----------
    class_probs : array-like of shape (C,)
        The class prior :math:`\rho` (non-negative, summing to 1), C >= 2.
    n_negatives : int
        Number :math:`k` of negatives per tuple.
    loss : {"logistic", "hinge"}, default="logistic"
        :math:`\ell^\beta_{\log}` or :math:`\ell^\beta_{\text{hinge}}` of Definition 2.1.
    beta : float, default=1.0
        Inverse temperature :math:`\beta`.
    n_steps : int, default=1000
        Projected gradient steps per run (the paper's 1000).
    batch_size : int, default=10000
        Tuples per stochastic gradient (the paper's 10000).
    step_size : float, default=50.0
        Initial step size (the paper's 50).
    n_runs : int, default=1
        Independent runs whose results are averaged (the paper averages 400).
    random_state : int, RandomState instance or None, default=None
        Seeds the sampled tuples.

    Returns
    -------
    gram : ndarray of shape (C, C)
        The correlation matrix :math:`Z`, exactly ``embeddings @ embeddings.T``.
    embeddings : ndarray of shape (C, C)
        Row :math:`c` is the unit vector :math:`u_c` (columns ordered by decreasing
        eigenvalue; trailing columns are zero when :math:`Z` is rank deficient).

    See Also
    --------
    supervised_loss : The downstream loss :math:`\mathcal{L}_{\sup}` of the embeddings.
    simplex_etf_report : The same structure measured on learned representations.

    References
    ----------
    .. [1] P. Awasthi, N. Dikkala and P. Kamath, "Do more negative samples necessarily
       hurt in contrastive learning?", ICML 2022. Eq. (3), Theorem 3.8, Section 4.
    .. [2] N. J. Higham, "Computing the nearest correlation matrix - a problem from
       finance", IMA Journal of Numerical Analysis 22(3), 2002.
    .. [3] S. Lacoste-Julien, M. Schmidt and F. Bach, "A simpler approach to obtaining
       an O(1/t) convergence rate for the projected stochastic subgradient method",
       arXiv:1212.2002, 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from sknce.contrastive import nce_optimal_gram
    >>> gram, U = nce_optimal_gram(np.full(3, 1 / 3), n_negatives=4, n_steps=200,
    ...                            batch_size=2000, random_state=0)
    >>> np.round(gram, 2)
    array([[ 1. , -0.5, -0.5],
           [-0.5,  1. , -0.5],
           [-0.5, -0.5,  1. ]])
    """
    probs = check_class_probs(class_probs)
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    rng = np.random.default_rng(seed)
    runs = [
        _projected_sgd(
            probs, n_negatives, loss, float(beta), n_steps, batch_size, float(step_size), rng
        )
        for _ in range(n_runs)
    ]
    embeddings = _embeddings(np.mean(runs, axis=0))
    gram = embeddings @ embeddings.T
    np.fill_diagonal(gram, 1.0)
    return gram, embeddings
