"""The built HTML documentation, read as a user reads it.

Every estimator page documents every public method of the class (inherited ones
included) and describes every constructor parameter; every public name of every public
module has a page; summaries are whole sentences; math is rendered by a MathJax copied
into the build, with no CDN, so that the pages work offline.

These tests read the HTML that ``python -m sphinx -b html docs docs/_build/html`` writes.
``bash .ci/test`` builds the docs first and sets ``SKNCE_DOCS_HTML``; then a missing
build fails. In a plain local ``pytest`` without a build they are skipped.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest

import sknce

ROOT = Path(__file__).resolve().parent.parent
ESTIMATORS = [name for name in sknce.__all__ if name != "__version__"]


@cache
def _html_dir() -> Path:
    required = os.environ.get("SKNCE_DOCS_HTML")
    html = Path(required) if required else ROOT / "docs" / "_build" / "html"
    if not (html / "generated" / "sknce.html").is_file():
        if required:
            pytest.fail(f"SKNCE_DOCS_HTML={required} holds no built API reference")
        pytest.skip(
            f"no built docs in {html}: run `python -m sphinx -b html docs docs/_build/html` "
            "(bash .ci/test does, before the tests)"
        )
    return html


@cache
def _soup(path: Path):
    try:
        from bs4 import BeautifulSoup
    except ImportError:  # beautifulsoup4 comes with the docs extra
        if os.environ.get("SKNCE_DOCS_HTML"):
            raise
        pytest.skip("beautifulsoup4 (in the docs extra) is needed to read the built pages")
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _page(name: str):
    path = _html_dir() / "generated" / f"{name}.html"
    assert path.is_file(), f"no API page {path.relative_to(_html_dir())}"
    return _soup(path)


def _text(tag) -> str:
    return " ".join(tag.get_text(" ").split()) if tag is not None else ""


def _public_methods(cls) -> list[str]:
    return sorted(
        name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))
    )


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_page_documents_every_public_method(name):
    soup = _page(f"sknce.{name}")
    table_links = {a.get("href") for a in soup.select("table.autosummary a")}
    missing, empty, unlisted = [], [], []
    for method in _public_methods(getattr(sknce, name)):
        anchor = f"sknce.{name}.{method}"
        entry = soup.find("dt", id=anchor)
        if entry is None:
            missing.append(method)
            continue
        if not _text(entry.find_next_sibling("dd")):
            empty.append(method)
        if f"#{anchor}" not in table_links:
            unlisted.append(method)
    assert missing == [], f"{name}: methods with no entry on its page: {missing}"
    assert empty == [], f"{name}: methods documented without any text: {empty}"
    assert unlisted == [], f"{name}: methods missing from the page's method table: {unlisted}"


def _parameter_descriptions(field_lists) -> dict[str, str]:
    """``{name: description}`` of the first "Parameters" field of ``field_lists``."""
    for field_list in field_lists:
        for field in field_list.find_all("dt", recursive=False):
            if _text(field).rstrip(":").strip() != "Parameters":
                continue
            items = field.find_next_sibling("dd").find("dl")
            described = {}
            for term in items.find_all("dt", recursive=False):
                key = _text(term.find("strong")).lstrip("*")
                described[key] = _text(term.find_next_sibling("dd"))
            return described
    return {}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_page_describes_every_parameter(name):
    soup = _page(f"sknce.{name}")
    body = soup.find("dt", id=f"sknce.{name}").find_next_sibling("dd")
    described = _parameter_descriptions(body.find_all("dl", class_="field-list"))
    parameters = [
        p.name
        for p in inspect.signature(getattr(sknce, name)).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    undocumented = [p for p in parameters if p not in described]
    without_text = [p for p in parameters if p in described and not described[p]]
    stale = [p for p in described if p not in parameters]
    assert undocumented == [], f"{name}: parameters not in its Parameters section: {undocumented}"
    assert without_text == [], f"{name}: parameters with no description: {without_text}"
    assert stale == [], f"{name}: documented parameters that __init__ does not take: {stale}"


def _public_modules() -> list:
    """sknce and every submodule whose dotted name has no part starting with ``_``."""
    modules = [sknce]
    for info in pkgutil.walk_packages(sknce.__path__, "sknce."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules.append(importlib.import_module(info.name))
    return modules


def test_every_public_name_has_a_page():
    pages = {path.stem for path in (_html_dir() / "generated").glob("*.html")}
    documented = {id(_resolve(page)) for page in pages}
    missing = []
    for module in _public_modules():
        assert hasattr(module, "__all__"), f"public module {module.__name__} has no __all__"
        assert module.__name__ in pages, f"no page for module {module.__name__}"
        names = set(module.__all__) | {n for n in dir(module) if not n.startswith("_")}
        for name in sorted(names - {"__version__"}):
            obj = getattr(module, name)
            defined_here = getattr(obj, "__module__", "").startswith("sknce")
            public = inspect.isclass(obj) or inspect.isfunction(obj)
            if public and defined_here and id(obj) not in documented:
                missing.append(f"{module.__name__}.{name}")
    assert missing == [], (
        "public sknce classes and functions with no API page (add them to their module's "
        f"__all__, or make them private): {missing}"
    )


def _resolve(dotted: str):
    """The object a generated page documents, from the page's dotted name."""
    module, _, attr = dotted, "", ""
    while module:
        try:
            obj = importlib.import_module(module)
            break
        except ImportError:
            module, _, head = module.rpartition(".")
            attr = f"{head}.{attr}".strip(".")
    else:
        return None
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part, None)
    return obj


def test_summaries_are_whole_sentences():
    """autosummary cuts a summary at the first ". "; "(Eq. 1)" must not end it."""
    cut = []
    for path in sorted((_html_dir() / "generated").glob("*.html")):
        for row in _soup(path).select("table.autosummary tr"):
            cells = row.find_all("td")
            summary = _text(cells[-1]) if len(cells) > 1 else ""
            if summary.count("(") != summary.count(")"):
                cut.append(f"{path.name}: {summary}")
    assert cut == [], f"summaries cut inside parentheses: {cut}"


def test_math_is_rendered_by_a_local_mathjax():
    html = _html_dir()
    pages = [p for p in html.rglob("*.html") if "_static" not in p.parts]
    with_math = [p for p in pages if 'class="math' in p.read_text(encoding="utf-8")]
    assert len(with_math) >= 5, "expected math on the estimator and user guide pages"
    for path in pages:
        soup = _soup(path)
        urls = [s["src"] for s in soup.find_all("script", src=True)]
        urls += [link["href"] for link in soup.find_all("link", rel="stylesheet", href=True)]
        remote = [url for url in urls if re.match(r"^(https?:)?//", url)]
        assert remote == [], f"{path.relative_to(html)} loads from the web: {remote}"
    for path in with_math:
        scripts = [
            s["src"] for s in _soup(path).find_all("script", src=True) if "mathjax" in s["src"]
        ]
        assert scripts, f"{path.relative_to(html)} has math but no MathJax script"
        for src in scripts:
            target = (path.parent / src.split("?")[0]).resolve()
            assert target.is_file(), f"{path.relative_to(html)} loads a missing {src}"
