"""A package's names imported from their modules on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence


def lazy_names(
    package: str, where: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names its submodules define.

    Parameters
    ----------
    package : str
        The package's ``__name__``, for the error message.
    where : mapping of str to str
        Each lazily imported name to the module that defines it.
    public : sequence of str
        The package's ``__all__``: what ``dir`` lists.

    Returns
    -------
    __getattr__, __dir__ : callables
        To assign at the package's top level.
    """

    def __getattr__(name: str):
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
