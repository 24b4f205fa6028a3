"""The built HTML documentation, read as a user reads it.

Every estimator page documents every public method of the class (inherited ones
included); every parameter of every public class, method and function is described;
every public name of every public module has a page; summaries are whole sentences and
none is empty; math is rendered by a MathJax copied into the build, with no CDN, so that
the pages work offline.

These tests read the HTML that ``python -m sphinx -b html docs docs/_build/html`` writes.
``bash .ci/test`` builds the docs first and sets ``SKNCE_DOCS_HTML``; then a missing
build fails. In a plain local ``pytest`` without a build they are skipped. Where a
Chromium is installed, the last tests open pages in it, headless and with no network:
the math must render and no gallery code may need a horizontal scroll.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
import shutil
import subprocess
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


def _parameter_descriptions(entry) -> dict[str, str] | None:
    """``{name: description}`` from the Parameters field of one documented object.

    ``entry`` is the ``<dt id=...>`` of a class, method or function; only the field lists
    of its own ``<dd>`` count (a class's ``<dd>`` also holds its methods' entries).
    ``None`` when it has no Parameters field. Names documented together ("a, b : str")
    share their description.
    """
    body = entry.find_next_sibling("dd")
    for field_list in body.find_all("dl", class_="field-list", recursive=False):
        for field in field_list.find_all("dt", recursive=False):
            if _text(field).rstrip(":").strip() != "Parameters":
                continue
            items = field.find_next_sibling("dd").find("dl")
            described = {}
            for term in items.find_all("dt", recursive=False):
                text = _text(term.find_next_sibling("dd"))
                for key in _text(term.find("strong")).split(","):
                    described[key.strip().lstrip("*")] = text
            return described
    return None


def _signature_parameters(obj, *, method: bool) -> list[str]:
    """The parameters a user passes to ``obj`` (``self`` and ``cls`` left out).

    ``*args`` and ``**kwargs`` count where sknce or scikit-learn wrote the signature
    (``set_params(**params)``), not where a class inherits torch's ``__init__``.
    """
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature (an exception's init)
        return []
    params = list(signature.parameters.values())
    if method and params and params[0].name in ("self", "cls"):
        params = params[1:]
    init = getattr(obj, "__init__", None) if inspect.isclass(obj) else obj
    ours = getattr(init, "__module__", "").split(".")[0] in ("sknce", "sklearn")
    return [p.name for p in params if ours or p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _undescribed(entry, obj, *, method: bool) -> list[str]:
    """What is wrong with the Parameters of one documented object, as readable lines."""
    parameters = _signature_parameters(obj, method=method)
    described = _parameter_descriptions(entry)
    if not parameters and not described:
        return []
    described = described or {}
    problems = [f"{p}: not in its Parameters section" for p in parameters if p not in described]
    problems += [f"{p}: no description" for p in parameters if p in described and not described[p]]
    problems += [f"{p}: documented but not a parameter" for p in described if p not in parameters]
    return problems


def _public_modules() -> list:
    """sknce and every submodule whose dotted name has no part starting with ``_``."""
    modules = [sknce]
    for info in pkgutil.walk_packages(sknce.__path__, "sknce."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            modules.append(importlib.import_module(info.name))
    return modules


def _documented_objects() -> dict[str, object]:
    """``{page name: object}`` for every public class and function of sknce.

    The estimators' pages are ``sknce.<Name>``; every other name's page is
    ``<module>.<name>``, once, under the first public module whose ``__all__`` holds it.
    """
    pages, seen = {}, set()
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            seen.add(id(obj))
            page = f"sknce.{name}" if name in ESTIMATORS else f"{module.__name__}.{name}"
            pages[page] = obj
    return pages


def _module_of(member) -> str:
    return getattr(inspect.unwrap(member), "__module__", None) or ""


PAGES = _documented_objects()


@pytest.mark.parametrize("page", PAGES)
def test_every_parameter_of_every_method_and_function_is_described(page):
    """A public class's constructor and methods, a public function: every parameter.

    Estimators included. The methods are the page's entries (those of its method table),
    inherited ones included; a method that sknce defines must have one. A parameter the
    signature does not take must not be documented either.
    """
    obj, soup = PAGES[page], _page(page)
    entry = soup.find("dt", id=page)
    assert entry is not None, f"{page}: the page has no entry for {page}"
    problems = [f"{page}: {p}" for p in _undescribed(entry, obj, method=False)]
    for name in _public_methods(obj) if inspect.isclass(obj) else []:
        member = getattr(obj, name)
        entry = soup.find("dt", id=f"{page}.{name}")
        if entry is None:
            if _module_of(member).startswith("sknce"):
                problems.append(f"{page}.{name}: no entry on the page")
            continue
        problems += [f"{page}.{name}: {p}" for p in _undescribed(entry, member, method=True)]
    assert problems == [], "parameters without a description:\n" + "\n".join(problems)


def test_every_table_row_has_a_summary():
    """A method or name listed in a table of the API reference says what it does."""
    empty = []
    for path in sorted((_html_dir() / "generated").glob("*.html")):
        for row in _soup(path).select("table.autosummary tr"):
            cells = row.find_all("td")
            if len(cells) > 1 and not _text(cells[-1]):
                empty.append(f"{path.stem}: {_text(cells[0])}")
    assert empty == [], "API table rows with an empty summary:\n" + "\n".join(empty)


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


@pytest.mark.attack("CI and docstrings")
def test_math_keeps_its_backslashes():
    # A docstring that is not raw turns \f of \frac into a form feed and \n of \notin into
    # a newline: MathJax then shows "rac" and "otin" (issue 30, sknce.losses.one_vs_all_nce).
    broken = []
    for path in (_html_dir() / "generated").glob("*.html"):
        for tag in _soup(path).select(".math"):
            text = tag.get_text()
            if re.search(r"[\x00-\x09\x0b-\x1f\x7f]|\n(otin|eq|abla|u)\b", text):
                broken.append(f"{path.name}: {text[:60]!r}")
    assert broken == [], f"formulas that lost a backslash: {broken}"
    formulas = " ".join(t.get_text() for t in _page("sknce.losses.one_vs_all_nce").select(".math"))
    assert r"y \notin P" in formulas and r"\frac{w}{K}" in formulas


# --- in a real browser, offline (optional: skipped where no Chromium is installed) ---------
_HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # No network at all: a page must render from the files of the build.
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # Let MathJax's scripts finish before the page is read.
    "--virtual-time-budget=15000",
]


def _browse(url: str, profile: Path, *flags: str) -> str:
    """The DOM of ``url`` after its scripts ran, in a headless Chromium."""
    browser = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium): browser checks skipped")
    result = subprocess.run(
        [browser, *_HEADLESS, f"--user-data-dir={profile}", *flags, "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"chromium failed on {url}:\n{result.stderr[-2000:]}"
    return result.stdout


MATH_PAGES = ["generated/sknce.losses.ranking_nce.html", "user_guide/core.html"]


@pytest.mark.parametrize("page", MATH_PAGES)
def test_math_renders_offline_in_a_browser(page, tmp_path):
    from bs4 import BeautifulSoup

    path = _html_dir() / page
    formulas = _soup(path).select(".math")
    assert formulas, f"{page} has no math to render"
    dom = BeautifulSoup(_browse(path.resolve().as_uri(), tmp_path / "profile"), "html.parser")
    assert len(dom.find_all("mjx-container")) == len(formulas), "formulas left unrendered"
    assert dom.find_all("mjx-merror") == [], "MathJax could not typeset some formulas"


# A page of its own that opens each gallery page in a 600-pixel frame (a phone's width) and
# lists the code and output blocks wider than their box, which a reader would have to scroll.
_OVERFLOW_PROBE = """<!DOCTYPE html><html><body><pre id="result">not measured</pre><script>
const pages = %s, found = {};
let pending = pages.length;
for (const url of pages) {
  const frame = document.createElement("iframe");
  frame.style.width = "600px";
  frame.style.height = "800px";
  frame.onload = () => setTimeout(() => {
    found[url] = [...frame.contentDocument.querySelectorAll("pre")]
      .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
      .map(pre => pre.textContent.slice(0, 80));
    if (--pending === 0) document.getElementById("result").textContent = JSON.stringify(found);
  }, 1000);
  frame.src = url;
  document.body.appendChild(frame);
}
</script></body></html>"""


def test_gallery_code_wraps_instead_of_overflowing_in_a_browser(tmp_path):
    from bs4 import BeautifulSoup

    pages = sorted((_html_dir() / "auto_examples").glob("*/plot_*.html"))
    assert pages, "no gallery pages in the build"
    probe = tmp_path / "probe.html"
    probe.write_text(_OVERFLOW_PROBE % json.dumps([p.resolve().as_uri() for p in pages]))
    dom = _browse(probe.as_uri(), tmp_path / "profile", "--allow-file-access-from-files")
    result = _text(BeautifulSoup(dom, "html.parser").find("pre", id="result"))
    assert result != "not measured", "the probe could not read the gallery pages"
    overflowing = {url: blocks for url, blocks in json.loads(result).items() if blocks}
    assert overflowing == {}, f"code wider than the page: {overflowing}"
