r"""The starting point of the latent-class encoder: the input's principal components.

The encoder :math:`f(x) = x P + b + g(x)` is normalised to the unit sphere.
It starts at :math:`P` = the top ``r`` principal axes of the (scaled) training
points, :math:`g = 0`, and an offset :math:`b = c\, e_{r+1}` on a coordinate of
its own, so that the start maps a point to

.. math::

    f(x) = \frac{(z, c)}{\lVert (z, c) \rVert}, \qquad z = x P_{1:r},

the gnomonic projection of its principal coordinates :math:`z` onto a
hemisphere. That map is one-to-one: the start keeps every distinction the
components make (a plain normalisation :math:`z / \lVert z \rVert` would lose
the norm), and nearby points stay nearby. :math:`c` is the root-mean-square
norm of :math:`z` over the training points, so the typical point sits at 45
degrees from the pole and distances are distorted least where the points are.

The normalisation makes the output independent of the scale of :math:`P` and
:math:`b`; they are divided by :math:`\sqrt{2}\, c` so that the typical point's
:math:`x P + b` has norm 1, the scale of a freshly initialised MLP's output. An
optimiser's steps (of a fixed size in parameter space, for Adam) then move the
representation as fast as from a random start, and the residual branch's output
weighs as much as the linear map once it has grown to that scale.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import randomized_svd

__all__ = ["principal_start"]

#: Largest side of a dense matrix whose principal axes come from an exact SVD.
_EXACT_SVD = 2000


def principal_start(X, n_components: int, rng: np.random.Generator):
    """Weight ``P`` and offset ``b`` of the principal-component start.

    Parameters
    ----------
    X : ndarray or csr_matrix of shape (n_samples, n_features)
        Scaled training points (centred when dense and standardised; sparse
        points are not centred, as in :class:`~sklearn.decomposition.TruncatedSVD`).
    n_components : int
        Width ``d`` of the encoder's output.
    rng : numpy.random.Generator
        Seeds the randomized SVD of large or sparse ``X``.

    Returns
    -------
    weight : ndarray of shape (n_features, d), float32
        The top ``r = min(d - 1, n_features, n_samples - 1)`` principal axes,
        divided by ``sqrt(2) c``, in its first ``r`` columns, zeros elsewhere.
    offset : ndarray of shape (d,), float32
        ``1 / sqrt(2)`` on coordinate ``r``, zeros elsewhere (all zeros when ``d = 1``).
    """
    n_samples, n_features = X.shape
    d = n_components
    r = max(0, min(d - 1, n_features, n_samples - 1))
    weight = np.zeros((n_features, d), dtype=np.float32)
    offset = np.zeros(d, dtype=np.float32)
    if d == 1:
        return weight, offset
    if r > 0:
        if sp.issparse(X) or min(n_samples, n_features) > _EXACT_SVD:
            _, s, vt = randomized_svd(X, r, n_iter=4, random_state=int(rng.integers(2**31 - 1)))
        else:
            _, s, vt = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
            s, vt = s[:r], vt[:r]
        c = float(np.sqrt(np.sum(s**2) / n_samples))
        if c > 0:
            weight[:, :r] = vt.T / (np.sqrt(2.0) * c)
    offset[r] = 1.0 / np.sqrt(2.0)
    return weight, offset
