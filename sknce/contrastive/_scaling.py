"""The input scaling of :class:`~sknce.LatentClassNCEEmbedder`, fitted on its training points.

A network sees features on the scale they come in: one column in the thousands
(wine's proline) drowns the others, and raw word counts weigh frequent words
most. The embedder therefore scales its input itself:

* ``"standard"``: each column centred and divided by its standard deviation, as
  :class:`~sklearn.preprocessing.StandardScaler` does (sparse input is scaled
  but not centred, which would densify it);
* ``"log1p-idf"``: ``log(1 + x)`` times the smooth inverse document frequency,
  each row scaled to unit norm (sublinear tf-idf, for non-negative counts);
* ``"none"``: the input as it is (the paper's setting).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.sparsefuncs import mean_variance_axis

from sknce._bags import normalize_bags, smooth_idf

__all__ = ["SCALINGS", "fit_scaling", "resolve_scaling", "scale_input"]

#: The values of ``scaling``.
SCALINGS = ("auto", "standard", "log1p-idf", "none")


def resolve_scaling(scaling: str, X) -> str:
    """The scaling ``"auto"`` stands for on ``X``; a ValueError if ``X`` cannot take it.

    ``"auto"`` is ``"log1p-idf"`` for sparse non-negative input (word or event
    counts) and ``"standard"`` otherwise.
    """
    values = X.data if sp.issparse(X) else X
    negative = values.size > 0 and float(values.min()) < 0
    if scaling == "auto":
        return "log1p-idf" if sp.issparse(X) and not negative else "standard"
    if scaling == "log1p-idf" and negative:
        raise ValueError(
            "scaling='log1p-idf' takes non-negative counts (log(1 + x) of each entry), and "
            "X has negative values. Use scaling='standard' for signed features."
        )
    return scaling


def fit_scaling(X, scaling: str) -> dict:
    """The statistics of ``scaling`` on the training points ``X`` (float32 array or CSR).

    Returns
    -------
    dict
        ``{"mean": ..., "scale": ...}`` for ``"standard"`` (``mean`` is None for
        sparse ``X``; a constant column gets scale 1), ``{"idf": ...}`` for
        ``"log1p-idf"``, ``{}`` for ``"none"``.
    """
    if scaling == "log1p-idf":
        return {"idf": smooth_idf(X) if sp.issparse(X) else smooth_idf(sp.csr_matrix(X))}
    if scaling == "none":
        return {}
    if sp.issparse(X):
        mean = None
        _, var = mean_variance_axis(X.astype(np.float64), axis=0)
    else:
        mean = X.mean(axis=0, dtype=np.float64)
        var = X.var(axis=0, dtype=np.float64)
    scale = np.sqrt(var)
    # A constant column (zero variance up to rounding) is left unscaled, as StandardScaler does.
    tiny = 0.0 if mean is None else 1e-7 * (np.abs(mean) + 1.0)
    scale[scale <= tiny] = 1.0
    return {"mean": mean, "scale": scale}


def scale_input(X, scaling: str, statistics: dict):
    """``X`` (float32 array or CSR) scaled with the fitted ``statistics``, as float32.

    Statistics fitted on dense points centre: a sparse ``X`` is then densified (the
    points of a model fitted on sparse ones are scaled only, and stay sparse).
    """
    if scaling == "none":
        return X
    if scaling == "log1p-idf":
        return normalize_bags(sp.csr_matrix(X), "log1p-idf", statistics["idf"])
    inverse = (1.0 / statistics["scale"]).astype(np.float32)
    mean = statistics["mean"]
    if mean is None:  # fitted on sparse points: scaled, not centred
        if sp.issparse(X):
            return sp.csr_matrix(X.multiply(inverse[None, :]), dtype=np.float32)
        return (X * inverse).astype(np.float32, copy=False)
    if sp.issparse(X):
        X = X.toarray()  # fitted on dense points, which it centres (StandardScaler would)
    return ((X - mean.astype(np.float32)) * inverse).astype(np.float32, copy=False)
