"""sknce's kernels compile where numba can write no cache (``sknce._jit.njit``)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numba
import pytest

from sknce import _jit

REFUSAL = "cannot cache function 'add': no locator available for file '/ro/sknce/_x.py'"


def _add(a, b):
    return a + b


@pytest.fixture
def no_cache_dir(monkeypatch):
    """numba as on a read-only install with a read-only home: ``cache=True`` raises."""
    real = numba.njit
    calls = []

    def njit(**options):
        calls.append(options)
        if options.get("cache"):
            raise RuntimeError(REFUSAL)
        return real(**options)

    monkeypatch.setattr(_jit, "numba", SimpleNamespace(njit=njit))
    monkeypatch.setattr(_jit, "_warned", False)
    return calls


def test_a_kernel_without_a_cache_dir_compiles_uncached_and_warns_once(no_cache_dir):
    with pytest.warns(UserWarning, match="NUMBA_CACHE_DIR") as record:
        add = _jit.njit(cache=True, nogil=True)(_add)
        other = _jit.njit(cache=True)(_add)
    assert len(record) == 1
    assert add(2, 3) == 5 and other(1.5, 1) == 2.5
    # the same options but the cache
    assert no_cache_dir[1] == {"cache": False, "nogil": True}


def test_a_kernel_with_a_cache_dir_keeps_its_cache():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        add = _jit.njit(cache=True)(_add)
    assert add(2, 3) == 5
    assert add._cache.__class__.__name__ == "FunctionCache"  # numba's on-disk cache


def test_other_compile_errors_are_not_hidden(monkeypatch):
    def njit(**options):
        raise RuntimeError("something else")

    monkeypatch.setattr(_jit, "numba", SimpleNamespace(njit=njit))
    with pytest.raises(RuntimeError, match="something else"):
        _jit.njit(cache=True)(_add)


def test_an_uncached_kernel_never_warns(no_cache_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _jit.njit(nogil=True)(_add)(1, 1) == 2
