"""numba's ``njit`` for sknce's kernels, usable where no cache can be written.

The kernels are compiled with ``cache=True``: a process loads them from the cache
numba wrote beside the sources (or in the user's cache directory) instead of
compiling them again. Where neither is writable (a read-only install with a
read-only home, as in some containers and CI runners), numba's ``cache=True``
raises at decoration, so importing sknce would fail. :func:`njit` then compiles
without a cache, once per process, and says once how to get the cache back.
"""

from __future__ import annotations

import warnings

import numba

__all__ = ["njit"]

_NO_LOCATOR = "no locator available"
_warned = False


def njit(**options):
    """``numba.njit(**options)``; ``cache=True`` falls back to no cache where numba
    finds no directory to write it in (with one ``UserWarning`` per process).

    Parameters
    ----------
    **options
        Options of :func:`numba.njit` (``cache``, ``nogil``, ``fastmath``...).

    Returns
    -------
    callable
        The decorator.
    """

    def decorate(func):
        try:
            return numba.njit(**options)(func)
        except RuntimeError as error:
            if not options.get("cache") or _NO_LOCATOR not in str(error):
                raise
        _warn_uncached()
        return numba.njit(**{**options, "cache": False})(func)

    return decorate


def _warn_uncached() -> None:
    global _warned
    if _warned:
        return
    _warned = True
    warnings.warn(
        "numba cannot write the cache of sknce's compiled kernels (the install and the "
        "user's cache directory are read-only), so this process compiles them at their "
        "first use, which takes seconds. Set the environment variable NUMBA_CACHE_DIR "
        "to a writable directory to keep them between processes.",
        UserWarning,
        stacklevel=3,
    )
