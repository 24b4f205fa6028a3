"""Planted log-linear conditional models, the simulation of Ma & Collins (2018), Section 5.1."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state

from sknce._compat import Interval, validate_params

__all__ = ["make_loglinear_conditional"]


def _gaussian_mixture(rng, n: int, dim: int, n_components: int, spread: float, scale: float):
    """``n`` points of a Gaussian mixture with ``n_components`` random centres."""
    centers = rng.normal(scale=spread, size=(n_components, dim))
    component = rng.randint(n_components, size=n)
    return centers[component] + rng.normal(scale=scale, size=(n, dim))


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "m_x": [Interval(Integral, 1, None, closed="left")],
        "m_y": [Interval(Integral, 2, None, closed="left")],
        "d": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_loglinear_conditional(
    n_samples: int,
    m_x: int = 200,
    m_y: int = 100,
    d: int = 4,
    random_state=None,
):
    r"""Sample a planted log-linear conditional model, Ma & Collins (2018), Section 5.1.

    A finite input set :math:`\mathcal{X} = \{x_1, .., x_{m_x}\} \subset \mathbb{R}^d`
    and parameters :math:`\theta_1, .., \theta_{m_y} \in \mathbb{R}^d` are drawn from
    two separate Gaussian mixtures (3 components each, within-component standard
    deviation 0.5, centres drawn from :math:`\mathcal{N}(0, I)` for the inputs and
    :math:`\mathcal{N}(0, 4I)` for the parameters; the paper does not state its
    mixtures, and with these :math:`\log Z(x)` is far from linear in :math:`x`). Each
    example draws :math:`x` uniformly from :math:`\mathcal{X}` and then

    .. math::

        p(y \mid x; \theta) = \frac{\exp(x^\top \theta_y)}{\sum_{y'} \exp(x^\top \theta_{y'})}.

    The model is not self-normalised (:math:`Z(x)` varies with :math:`x`), so
    binary NCE without an input bias is inconsistent on it while ranking NCE is not.

    Parameters
    ----------
    n_samples : int
        Number of examples n.
    m_x : int, default=200
        Number of distinct inputs :math:`|\mathcal{X}|`.
    m_y : int, default=100
        Number of labels :math:`|\mathcal{Y}|`.
    d : int, default=4
        Input dimension.
    random_state : int, RandomState instance or None, default=None
        Seeds the model and the sample.

    Returns
    -------
    X : ndarray of shape (n_samples, d)
        Inputs (rows of ``truth.support``).
    y : ndarray of shape (n_samples,)
        Labels in ``0..m_y-1``.
    truth : :class:`~sklearn.utils.Bunch`
        ``support`` (m_x, d): the inputs :math:`\mathcal{X}`; ``theta`` (m_y, d);
        ``table`` (m_x, m_y): the true :math:`p(y \mid x)` for each support point;
        ``x_index`` (n_samples,): the support row of each example. The divergence
        of an estimate ``p_hat`` (m_x, m_y) is
        ``np.mean(np.sum(table * (np.log(table) - np.log(p_hat)), axis=1))``,
        :math:`\mathbb{E}_x\, \mathrm{KL}(p(\cdot \mid x) \,\|\, \hat p(\cdot \mid x))`
        under the uniform input distribution.

    References
    ----------
    .. [1] Z. Ma and M. Collins, "Noise Contrastive Estimation and Negative Sampling
       for Conditional Models: Consistency and Statistical Efficiency", EMNLP 2018,
       Section 5.1 and Figure 2.

    Examples
    --------
    >>> from sknce.datasets import make_loglinear_conditional
    >>> X, y, truth = make_loglinear_conditional(1000, m_x=50, m_y=20, random_state=0)
    >>> X.shape, y.shape, truth.table.shape
    ((1000, 4), (1000,), (50, 20))
    >>> bool(abs(truth.table.sum(axis=1) - 1).max() < 1e-12)
    True
    """
    rng = check_random_state(random_state)
    support = _gaussian_mixture(rng, m_x, d, n_components=3, spread=1.0, scale=0.5)
    theta = _gaussian_mixture(rng, m_y, d, n_components=3, spread=2.0, scale=0.5)
    logits = support @ theta.T
    logits -= logits.max(axis=1, keepdims=True)
    table = np.exp(logits)
    table /= table.sum(axis=1, keepdims=True)
    x_index = rng.randint(m_x, size=n_samples)
    # Inverse-CDF sampling of y given each example's support row.
    cdf = np.cumsum(table, axis=1)
    u = rng.uniform(size=n_samples)
    y = (u[:, None] > cdf[x_index]).sum(axis=1)
    y = np.minimum(y, m_y - 1)
    truth = Bunch(support=support, theta=theta, table=table, x_index=x_index)
    return support[x_index].copy(), y.astype(np.int64), truth
