"""Docstrings hold text: no control character but the newline.

A backslash sequence in a docstring that is not raw becomes a control character
(``\\f`` of ``\\frac`` a form feed, ``\\n`` of ``\\notin`` a newline): the formulas then
render broken in the API pages and in ``help()``.
"""

import importlib
import inspect
import pkgutil
import re

import pytest

import sknce

pytestmark = pytest.mark.attack("CI and docstrings")

CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _modules():
    yield sknce
    for info in pkgutil.walk_packages(sknce.__path__, "sknce."):
        yield importlib.import_module(info.name)


def _documented(module):
    """(name, docstring) of the module and of what it defines: classes, functions, methods."""
    yield module.__name__, module.__doc__
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(value):
            yield f"{module.__name__}.{name}", value.__doc__
            for attribute, member in vars(value).items():
                function = getattr(member, "__func__", member)
                if inspect.isfunction(function) or isinstance(member, property):
                    yield f"{module.__name__}.{name}.{attribute}", member.__doc__
        elif inspect.isfunction(value):
            yield f"{module.__name__}.{name}", value.__doc__


def test_no_docstring_holds_a_control_character():
    found = []
    for module in _modules():
        for name, doc in _documented(module):
            match = CONTROL.search(doc or "")
            if match:
                context = doc[max(match.start() - 20, 0) :][:40]
                found.append(f"{name}: {match.group()!r} near {context!r}")
    assert found == []


def test_the_check_finds_a_form_feed():
    def broken():
        """Inverse: \frac{1}{x}."""  # noqa: D301 - the fault this test looks for

    assert CONTROL.search(broken.__doc__)


def test_one_vs_all_nce_renders_its_formulas():
    from sknce.losses import one_vs_all_nce

    doc = one_vs_all_nce.__doc__
    assert r"\frac{w}{K}" in doc and r"y \notin P" in doc and r"[y_k \notin P]" in doc
