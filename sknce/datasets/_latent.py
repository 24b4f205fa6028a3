"""Latent-class data: the data model of Awasthi et al. (2022), Section 2, with Gaussian classes."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state

from sknce._compat import Interval, validate_params

__all__ = ["make_latent_classes"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_classes": [Interval(Integral, 2, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "class_probs": ["array-like", None],
        "separation": [Interval(Real, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_latent_classes(
    n_samples: int,
    n_classes: int = 3,
    n_features: int = 10,
    *,
    class_probs=None,
    separation: float = 3.0,
    noise: float = 1.0,
    random_state=None,
) -> Bunch:
    r"""Sample points of planted latent classes with Gaussian class-conditionals.

    Each point draws its class :math:`c \sim \rho` (``class_probs``) and then
    :math:`x \sim \mathcal{N}(\mu_c, \sigma^2 I)`. The class centres
    :math:`\mu_c` have norm ``separation`` and point along orthonormal directions
    when ``n_classes <= n_features`` (random unit directions otherwise), so two
    centres are :math:`\sqrt{2}` ``separation`` apart. The classes are the latent
    classes of Awasthi et al. (2022, Section 2): pairs of points of one class are
    positives for :class:`~sknce.LatentClassNCEEmbedder`.

    Parameters
    ----------
    n_samples : int
        Number of points.
    n_classes : int, default=3
        Number ``C`` of latent classes (at least 2).
    n_features : int, default=10
        Dimension of the points.
    class_probs : array-like of shape (n_classes,) or None, default=None
        The class prior :math:`\rho`; ``None`` is uniform.
    separation : float, default=3.0
        Norm of each class centre.
    noise : float, default=1.0
        Standard deviation :math:`\sigma` of each coordinate around its centre.
    random_state : int, RandomState instance or None, default=None
        Seeds the sample; an int makes it reproducible.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``X`` (ndarray of shape (n_samples, n_features)), ``y`` (ndarray of
        shape (n_samples,), the class of each point), ``centers`` (ndarray of
        shape (n_classes, n_features)) and ``class_probs`` (ndarray of shape
        (n_classes,)).

    References
    ----------
    .. [1] P. Awasthi, N. Dikkala and P. Kamath, "Do more negative samples necessarily
       hurt in contrastive learning?", ICML 2022. Section 2.

    Examples
    --------
    >>> from sknce.datasets import make_latent_classes
    >>> data = make_latent_classes(100, n_classes=4, n_features=5, random_state=0)
    >>> data.X.shape, data.centers.shape, sorted(set(data.y.tolist()))
    ((100, 5), (4, 5), [0, 1, 2, 3])
    """
    rng = check_random_state(random_state)
    if class_probs is None:
        probs = np.full(n_classes, 1.0 / n_classes)
    else:
        probs = np.asarray(class_probs, dtype=np.float64)
        if probs.shape != (n_classes,) or np.any(probs < 0) or abs(probs.sum() - 1) > 1e-6:
            raise ValueError(
                f"class_probs must be {n_classes} non-negative probabilities summing to 1 "
                f"(one per class); got {probs}."
            )
        probs = probs / probs.sum()
    if n_classes <= n_features:
        directions = np.linalg.qr(rng.normal(size=(n_features, n_classes)))[0].T
    else:
        directions = rng.normal(size=(n_classes, n_features))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    centers = separation * directions
    y = rng.choice(n_classes, size=n_samples, p=probs)
    X = centers[y] + noise * rng.normal(size=(n_samples, n_features))
    return Bunch(X=X, y=y, centers=centers, class_probs=probs)
