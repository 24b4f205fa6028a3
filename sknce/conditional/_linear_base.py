"""The base density of ConditionalNCERegressor: ridge regression with a Student-t predictive.

:class:`LinearBase` is the density the regressor's energy starts from and refines,
:math:`b(y \\mid x) = t_\\nu\\big((y - \\mu(x)) / \\tau(x)\\big) / \\tau(x)` with

* :math:`\\mu(x)` a ridge regression on the (standardised) features, its penalty
  chosen by exact leave-one-out error over a grid, as ``RidgeCV`` chooses it;
* :math:`\\tau(x) = \\sigma \\sqrt{1 + h(x)}`, :math:`\\sigma^2` the mean squared
  leave-one-out residual and :math:`h(x)` the leverage of :math:`x` (a point far from
  the training inputs gets a wider density, as in the classical prediction interval);
* :math:`\\nu = n - p_{\\mathrm{eff}}`, the residual degrees of freedom (the effective
  number of parameters of a ridge fit, intercept included), at least 3: heavy tails
  on a few dozen examples, a Gaussian for large samples.

Everything is computed from ``k x k`` cross-products of the features, ``k`` the
number of features, or ``_MAX_DIM`` leading principal directions when there are
more (a randomised SVD), in chunks of rows: the cost is linear in the number of
examples, and sparse input is never densified whole.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import randomized_svd

__all__ = ["LinearBase"]

#: Most input directions the ridge base regresses on (the leading principal ones).
_MAX_DIM = 256

#: Ridge penalties tried, as multiples of the number of examples (the features are
#: standardised, so each column's sum of squares is about n): from almost none to a
#: penalty that leaves little more than the intercept.
_RELATIVE_ALPHAS = np.logspace(-6, 2, 17)

#: Fewest degrees of freedom of the Student-t: its variance stays finite.
_MIN_DF = 3.0

#: Smallest residual scale, in units of the standardised target (constant targets).
_MIN_SIGMA = 1e-3

#: Rows per block of the passes over the data.
_CHUNK = 8192


class LinearBase:
    """Ridge regression and its Student-t predictive density, fitted in closed form.

    Parameters
    ----------
    random_state : int
        Seed of the randomised SVD (used only with more than 256 features).

    Attributes
    ----------
    projection_ : ndarray of shape (n_features, k) or None
        Principal directions the ridge regresses on, or None (all features).
    mean_ : ndarray of shape (k,)
        Mean of the (projected) training inputs.
    coef_ : ndarray of shape (k,)
    intercept_ : float
    alpha_ : float
        The ridge penalty chosen by leave-one-out error.
    precision_ : ndarray of shape (k, k)
        ``(Z'Z + alpha I)^-1`` of the centred inputs, for the leverage.
    sigma_ : float
        Root mean squared leave-one-out residual.
    df_ : float
        Degrees of freedom of the Student-t.
    n_samples_ : int
        Number of training examples (of positive weight, with ``sample_weight``).
    """

    def __init__(self, random_state: int) -> None:
        self.random_state = random_state

    def _blocks(self, X) -> Iterator[tuple[slice, np.ndarray]]:
        """``(rows, Z)``: dense float64 (projected) inputs, a block of rows at a time."""
        for start in range(0, X.shape[0], _CHUNK):
            rows = slice(start, min(start + _CHUNK, X.shape[0]))
            block = X[rows]
            if self.projection_ is not None:
                block = block @ self.projection_
            elif sp.issparse(block):
                block = block.toarray()
            yield rows, np.asarray(block, dtype=np.float64)

    def fit(self, X, y: np.ndarray, sample_weight: np.ndarray | None = None) -> LinearBase:
        """Fit on standardised inputs and targets.

        Parameters
        ----------
        X : ndarray or csr_matrix of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,)
        sample_weight : ndarray of shape (n_samples,) or None, default=None
            Non-negative weights of the examples: weighted least squares, whose
            leave-one-out residuals leave out an example with its whole weight (as
            :class:`~sklearn.linear_model.RidgeCV` does). Only their ratios matter;
            an example of weight 0 is as if absent.

        Returns
        -------
        self : LinearBase
        """
        w = _normalised(sample_weight)
        p = X.shape[1]
        n = X.shape[0] if w is None else int(np.count_nonzero(w))
        self.n_samples_ = n
        self.projection_ = None
        k = min(_MAX_DIM, n, p)
        if p > _MAX_DIM:
            weighted = X if w is None else _scale_rows(X, np.sqrt(w))
            _, _, vt = randomized_svd(weighted, k, random_state=self.random_state)
            self.projection_ = vt.T
        else:
            k = p
        gram, total, cross = np.zeros((k, k)), np.zeros(k), np.zeros(k)
        for rows, Z in self._blocks(X):
            Zw = Z if w is None else Z * w[rows, None]
            gram += Zw.T @ Z
            total += Zw.sum(axis=0)
            cross += Zw.T @ y[rows]
        self.mean_ = total / n
        y_sum = float(y.sum() if w is None else w @ y)
        y_mean = y_sum / n
        eigval, eigvec = np.linalg.eigh(gram - n * np.outer(self.mean_, self.mean_))
        eigval = np.clip(eigval, 0.0, None)
        rotated = eigvec.T @ (cross - self.mean_ * y_sum)
        alphas = n * _RELATIVE_ALPHAS
        inverse = 1.0 / (eigval[:, None] + alphas[None, :])  # (k, n_alphas)
        loo_sse = np.zeros(alphas.size)
        for rows, Z in self._blocks(X):
            W = (Z - self.mean_) @ eigvec
            residual = (y[rows] - y_mean)[:, None] - W @ (rotated[:, None] * inverse)
            wr = None if w is None else w[rows, None]
            squared = (residual / self._keep(W**2 @ inverse, n, wr)) ** 2
            loo_sse += np.sum(squared if wr is None else wr * squared, axis=0)
        best = int(np.argmin(loo_sse))
        self.alpha_ = float(alphas[best])
        self.precision_ = (eigvec * inverse[:, best]) @ eigvec.T
        self.coef_ = eigvec @ (rotated * inverse[:, best])
        self.intercept_ = y_mean - float(self.mean_ @ self.coef_)
        self.sigma_ = max(float(np.sqrt(loo_sse[best] / n)), _MIN_SIGMA)
        p_eff = 1.0 + float(np.sum(eigval * inverse[:, best]))
        self.df_ = max(n - p_eff, _MIN_DF)
        return self

    @staticmethod
    def _keep(leverage: np.ndarray, n: int, weight: np.ndarray | None = None) -> np.ndarray:
        """``1 - h_ii`` with the intercept's ``1 / n``, kept away from zero.

        An example of (normalised) weight :math:`w_i` has leverage
        :math:`w_i (1 / n + h_i)`.
        """
        if weight is None:
            return np.clip(1.0 - 1.0 / n - leverage, 1e-6, None)
        return np.clip(1.0 - weight * (1.0 / n + leverage), 1e-6, None)

    def loc_scale(
        self, X, *, fitted: bool = False, sample_weight: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Location :math:`\\mu(x)` and scale :math:`\\tau(x)` of the density at each row.

        Parameters
        ----------
        X : ndarray or csr_matrix of shape (n_samples, n_features)
            Standardised inputs.
        fitted : bool, default=False
            The rows are examples the base was fitted on: the scale
            :math:`\\sigma \\sqrt{1 - h(x)}` turns their residual into the z-score of
            their leave-one-out residual under the base's density for a new example
            at :math:`x`, :math:`(y - \\mu_{-i}(x)) / (\\sigma / \\sqrt{1 - h})`:
            what the residual of an example the ridge did not see looks like (a
            training residual is shrunk by :math:`1 - h`). The energy learns from
            these.
        sample_weight : ndarray of shape (n_samples,) or None, default=None
            With ``fitted``: the weights of the examples in the fit (their leverage
            grows with their weight).

        Returns
        -------
        loc, scale : ndarray of shape (n_samples,)
        """
        loc, scale = np.empty(X.shape[0]), np.empty(X.shape[0])
        w = _normalised(sample_weight) if fitted else None
        for rows, Z in self._blocks(X):
            loc[rows] = Z @ self.coef_ + self.intercept_
            Zc = Z - self.mean_
            centred = np.einsum("ij,jk,ik->i", Zc, self.precision_, Zc)
            if fitted:
                keep = self._keep(centred, self.n_samples_, None if w is None else w[rows])
                scale[rows] = self.sigma_ * np.sqrt(keep)
            else:
                scale[rows] = self.sigma_ * np.sqrt(1.0 + 1.0 / self.n_samples_ + centred)
        return loc, scale


def _normalised(sample_weight: np.ndarray | None) -> np.ndarray | None:
    """Weights as float64 scaled to sum to the number of examples of positive weight."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    return w * (np.count_nonzero(w) / w.sum())


def _scale_rows(X, factors: np.ndarray):
    """Each row of ``X`` (dense or CSR) times its factor; sparse stays sparse."""
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(factors) @ X)
    return X * factors[:, None]
