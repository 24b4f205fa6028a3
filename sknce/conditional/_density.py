"""The regressor's density of a residual z given x, from its energy on a grid.

The density is :math:`p(z \\mid x) = b(z \\mid x)\\, e^{r(x, z)} / Z(x)`, with ``b`` a
Student-t of location :math:`m(x)` and scale :math:`e^{l(x)}` (or 1 without a
base) and ``r`` the residual energy, which is constant beyond the grid's ends (the
energy sees ``z`` clipped to the grid). So

* on the grid, :math:`Z` is a trapezoid sum, and beyond its ends the density is the
  base's tail times :math:`e^{r}` at that end, whose mass is exact (the base's CDF):
  the density is normalised over the whole real line;
* without a base, the density is normalised on the grid and is zero beyond it.

:class:`GridDensity` gives the normaliser, log-densities, quantiles and the mean.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import t as student_t

__all__ = ["GridDensity"]


class GridDensity:
    """Densities of a block of inputs on an evenly spaced grid of residuals.

    Parameters
    ----------
    grid : ndarray of shape (n_grid,)
        Increasing, evenly spaced residuals.
    residual : ndarray of shape (n_samples, n_grid)
        The residual energy :math:`r(x, z)` at each input and grid point.
    df : float or None
        Degrees of freedom of the Student-t base; ``None``: no base.
    loc, log_scale : ndarray of shape (n_samples,) or None, default=None
        Location and log-scale of the base at each input (0 when None).
    """

    def __init__(
        self,
        grid: np.ndarray,
        residual: np.ndarray,
        df: float | None,
        loc: np.ndarray | None = None,
        log_scale: np.ndarray | None = None,
    ) -> None:
        n = residual.shape[0]
        self.grid = grid
        self.df = df
        self.loc = np.zeros(n) if loc is None else loc
        self.log_scale = np.zeros(n) if log_scale is None else log_scale
        weights = np.full(grid.size, grid[1] - grid[0])
        weights[[0, -1]] /= 2  # the trapezoid rule
        if df is None:
            log_p = residual
            self.log_tails = np.full((n, 2), -np.inf)
        else:
            log_p = residual + self._log_base(grid[None, :])
            ends = self._standard(grid[[0, -1]][None, :])
            #: The base's mass below the grid's lower end and above its upper end.
            self.base_tails = np.column_stack(
                [student_t.cdf(ends[:, 0], df), student_t.sf(ends[:, 1], df)]
            )
            with np.errstate(divide="ignore"):  # a tail of no mass: log 0
                self.log_tails = residual[:, [0, -1]] + np.log(self.base_tails)
        terms = np.hstack([log_p + np.log(weights), self.log_tails])
        self.log_z = logsumexp(terms, axis=1)
        self.log_tails = self.log_tails - self.log_z[:, None]
        self.log_p = log_p - self.log_z[:, None]

    def _standard(self, z: np.ndarray) -> np.ndarray:
        """``z`` (one row per input, or broadcast) in the base's standard units."""
        return (z - self.loc[:, None]) * np.exp(-self.log_scale[:, None])

    def _log_base(self, z: np.ndarray) -> np.ndarray:
        return student_t.logpdf(self._standard(z), self.df) - self.log_scale[:, None]

    def log_prob(self, z: np.ndarray, residual: np.ndarray) -> np.ndarray:
        """:math:`\\log p(z \\mid x)` for one residual per input.

        Parameters
        ----------
        z : ndarray of shape (n_samples,)
            Residuals, anywhere on the real line.
        residual : ndarray of shape (n_samples,)
            :math:`r(x, z)` at those residuals (at the grid's ends beyond them).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        if self.df is None:
            inside = (z >= self.grid[0]) & (z <= self.grid[-1])
            return np.where(inside, residual - self.log_z, -np.inf)
        return residual + self._log_base(z[:, None])[:, 0] - self.log_z

    def cdf(self) -> np.ndarray:
        """The distribution function at the grid points, shape (n_samples, n_grid)."""
        p = np.exp(self.log_p)
        step = self.grid[1] - self.grid[0]
        inside = np.cumsum((p[:, 1:] + p[:, :-1]) * (step / 2), axis=1)
        below = np.exp(self.log_tails[:, :1])
        return np.hstack([below, below + inside])

    def quantiles(self, levels: np.ndarray) -> np.ndarray:
        """Residuals at probability ``levels``, shape (n_samples, n_levels).

        Linear between grid points; in the tails, the base's quantile function.

        Parameters
        ----------
        levels : ndarray of shape (n_levels,)
            Probabilities in (0, 1).

        Returns
        -------
        ndarray of shape (n_samples, n_levels)
        """
        cdf = self.cdf()
        tails = np.exp(self.log_tails)
        out = np.empty((cdf.shape[0], levels.size))
        rows = np.arange(cdf.shape[0])
        for j, level in enumerate(levels):
            upper = np.clip((cdf < level).sum(axis=1), 1, self.grid.size - 1)
            c0, c1 = cdf[rows, upper - 1], cdf[rows, upper]
            frac = np.clip((level - c0) / np.maximum(c1 - c0, 1e-300), 0.0, 1.0)
            out[:, j] = self.grid[upper - 1] + frac * (self.grid[1] - self.grid[0])
            if self.df is None:
                continue
            # A tail is the base's times e^{r(end)} / Z: invert the base's CDF there.
            low, high = level < tails[:, 0], 1 - level < tails[:, 1]
            standard = np.concatenate(
                [
                    student_t.ppf(level / tails[low, 0] * self.base_tails[low, 0], self.df),
                    student_t.isf(
                        (1 - level) / tails[high, 1] * self.base_tails[high, 1], self.df
                    ),
                ]
            )
            which = np.concatenate([np.flatnonzero(low), np.flatnonzero(high)])
            out[which, j] = self.loc[which] + np.exp(self.log_scale[which]) * standard
        return out

    def mean(self) -> np.ndarray:
        """:math:`E[z \\mid x]`, shape (n_samples,)."""
        zp = np.exp(self.log_p) * self.grid
        step = self.grid[1] - self.grid[0]
        mean = np.sum((zp[:, 1:] + zp[:, :-1]) * (step / 2), axis=1)
        if self.df is None:
            return mean
        df, scale = self.df, np.exp(self.log_scale)
        ends = self._standard(self.grid[[0, -1]][None, :])
        # For the standard Student-t density f, the integral of u f(u) beyond the end a
        # is -+(df + a^2) / (df - 1) f(a): a tail's mean is loc + scale times that over
        # the tail's base mass.
        first = np.divide(
            (df + ends**2) / (df - 1) * student_t.pdf(ends, df),
            self.base_tails,
            out=np.zeros_like(ends),
            where=self.base_tails > 0,
        )
        tail_means = self.loc[:, None] + scale[:, None] * first * np.array([-1.0, 1.0])
        return mean + np.sum(np.exp(self.log_tails) * tail_means, axis=1)

    def mode(self) -> np.ndarray:
        """Index of the grid's most probable point per input, shape (n_samples,)."""
        return np.argmax(self.log_p, axis=1)
