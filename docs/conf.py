"""Sphinx configuration: numpydoc API reference, sphinx-gallery examples, furo theme.

Sphinx over MkDocs because the API reference comes straight from numpydoc docstrings
(scikit-learn's own toolchain: autosummary + numpydoc) and sphinx-gallery runs the
examples that reproduce the papers' figures at build time, so they cannot rot.

The API reference is generated, not listed by hand: ``api.rst`` asks autosummary for the
package ``sknce`` recursively, and the templates in ``_templates/autosummary`` document
every public submodule (no leading underscore) with the names of its ``__all__``. A name
added to, renamed in or removed from an ``__all__`` changes the reference with no edit
here or in ``api.rst``.
"""

import importlib
import inspect
import logging
import os
import sys
import warnings
from pathlib import Path

import a11y_pygments  # noqa: F401  (see the logging reset below)
from docutils import nodes
from sphinx.ext import autosummary
from sphinx.util.nodes import make_refnode

# furo's dependency accessible-pygments calls logging.basicConfig(level=INFO) when it is
# imported (above), which would print every INFO record of the libraries the examples use
# (gensim logs each skipped word pair) into the build log: restore the default level.
logging.getLogger().setLevel(logging.WARNING)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# docs/_ext: this build's own extension (the NCE machine of the core page, the
# guarantees page's refused parameters).
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sknce  # noqa: E402  (after the path set-up above)

project = "sknce"
author = "the sknce developers"
copyright = "2026, the sknce developers"
release = version = sknce.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Copies MathJax 3 into _static/mathjax and points mathjax_path at it, so that the
    # built HTML renders math with no internet (the default loads MathJax from a CDN).
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # matplotlib's ``plot`` directive: figures of the guide drawn by code at build time.
    "matplotlib.sphinxext.plot_directive",
    # docs/_ext/machine.py: the ``sknce-machine-table`` of the estimators' parts and the
    # ``sknce-refusals-table`` of the parameters each refuses in a continued fit.
    "machine",
]

# The plot directive's figures, without links to their code and other formats.
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]

templates_path = ["_templates"]
exclude_patterns = ["_build", "examples", "generated/*.examples", "sg_execution_times.rst"]

# --- API reference ------------------------------------------------------------------------
autosummary_generate = True
# Read each module's members from its __all__ (the public contract), not from dir().
autosummary_ignore_module_all = False
# __all__ names defined in a private submodule count as members: autosummary would otherwise
# drop them from packages whose lazy ``__dir__`` hides ``__all__`` (``sknce``,
# ``sknce.datasets``). Every public module defines ``__all__``, so nothing else comes in.
autosummary_imported_members = True
# The estimators are importable from ``sknce`` and documented there; the page of the
# submodule that defines one links to that page instead of making a second one.
autosummary_context = {"toplevel_names": [n for n in sknce.__all__ if n != "__version__"]}
# Every public method on a class page, inherited ones included: fit, transform, score come
# from private sknce bases, get_params, set_output, fit_transform from scikit-learn's.
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_member_order = "groupwise"
# Signatures without annotations: the numpydoc Parameters section gives every type.
autodoc_typehints = "none"
# The class template writes the linked table of methods itself (see class.rst).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# autosummary's one-line summary is the docstring's first sentence, found by splitting at
# ". "; "(Eq. 1)" would end it at "(Eq.". Treat the abbreviations our docstrings use for
# the papers' equations, figures and sections like the "e.g." autosummary already knows.
autosummary.WELL_KNOWN_ABBREVIATIONS = (
    *autosummary.WELL_KNOWN_ABBREVIATIONS,
    "Eq.",
    "Eqs.",
    "Fig.",
    "Sec.",
    "cf.",
)

# Every cross-reference must resolve (nitpicky) except those to other projects, whose
# documentation this offline build does not link (no intersphinx: CI has no internet).
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|numpy|scipy|sklearn|skorch|pandas|gensim|joblib|accelerate|dask|collections|os|typing)\b.*",
    ),
    # torch's docstring of Module.forward, inherited by forward methods that have none.
    (r"py:class", r"Module"),
]

_FOREIGN_PACKAGES = {"torch", "skorch", "builtins"}


def _module_of(obj) -> str:
    """The module that defines ``obj`` (a function, method or property), or ""."""
    target = getattr(obj, "fget", None) or obj
    target = inspect.unwrap(target) if callable(target) else target
    return getattr(target, "__module__", None) or ""


def _torch_base_names() -> frozenset:
    """Names that torch's ``Module`` and ``Optimizer`` define, their annotations included."""
    import torch

    names = set()
    for base in (torch.nn.Module, torch.optim.Optimizer):
        for cls in base.__mro__:
            names |= set(vars(cls)) | set(getattr(cls, "__annotations__", {}))
    return frozenset(names)


_TORCH_BASE_NAMES = _torch_base_names()


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Leave out the members a torch module or optimiser inherits from torch.

    torch documents ``cpu``, ``apply``, ``training``, ``zero_grad``, ... A member counts as
    torch's when torch or skorch defines it, or when it has a name that torch's ``Module``
    or ``Optimizer`` defines and sknce does not override it (``training``, whose value is a
    plain bool). Members an estimator inherits from sknce's private bases or from
    scikit-learn are kept. autosummary's method tables and autodoc's method entries both
    ask this hook, so the two list the same methods.
    """
    if what not in {"class", "method", "property", "attribute"}:
        return None
    module = _module_of(obj)
    if module.split(".")[0] in _FOREIGN_PACKAGES:
        return True
    if name in _TORCH_BASE_NAMES and not module.startswith("sknce"):
        return True
    return None


def _link_scikit_learn_labels(app, env, node, contnode):
    """Link a scikit-learn docstring's ``:ref:`` to scikit-learn's documentation.

    The docstrings that estimators inherit from scikit-learn refer to pages of its own
    documentation (``metadata_routing``, ...), which this build does not have. A broken
    reference in sknce's own text still fails the build.
    """
    if node.get("refdomain") != "std" or "docstring of sklearn." not in (node.source or ""):
        return None
    text = contnode.astext() if node.get("refexplicit") else "scikit-learn's documentation"
    return nodes.reference(text, text, refuri="https://scikit-learn.org/stable/", internal=False)


def _import_path(path: str):
    """The object at dotted ``path`` (``sknce.words.ACEWord2Vec``), or None.

    A path that only works with a deprecation warning (a moved name) counts as none: the
    docs must use the current one.
    """
    module, _, attr = path.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        while module:
            try:
                obj = importlib.import_module(module)
            except ImportError:
                module, _, head = module.rpartition(".")
                attr = f"{head}.{attr}"
                continue
            try:
                for part in attr.split("."):
                    obj = getattr(obj, part)
            except (AttributeError, Warning):
                return None
            return obj
    return None


def _resolve_within_sknce(app, env, node, contnode):
    """Resolve a Python reference to a documented sknce object written another way.

    * By an import path that is not the documented one: the estimators are documented once,
      as ``sknce.ACEWord2Vec``, and ``:class:`sknce.words.ACEWord2Vec``` names the same
      class. Such a reference resolves when the path imports the very object documented.
    * By a shorter name: ``:class:`LatentClassNCEEmbedder``` in the docstring of
      ``sknce.contrastive``, ``:meth:`WordVectors.most_similar``` on the page of
      ``sknce.ACEWord2Vec``. Such a reference resolves when exactly one documented sknce
      object ends with the name as written.

    A path that imports nothing (a renamed or moved name) still fails the build.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    domain = env.get_domain("py")
    # Without the canonical aliases (sknce.words._ace.ACEWord2Vec) that autodoc records.
    names = [
        n for n, entry in domain.objects.items() if n.startswith("sknce.") and not entry.aliased
    ]
    if target.startswith("sknce."):
        obj = _import_path(target)
        last = target.rsplit(".", 1)[-1]
        matches = [
            n
            for n in names
            if obj is not None and n.endswith("." + last) and _import_path(n) is obj
        ]
    else:
        matches = [n for n in names if n.endswith("." + target)]
    if len(matches) != 1:
        return None
    entry = domain.objects[matches[0]]
    return make_refnode(
        app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, matches[0]
    )


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("missing-reference", _link_scikit_learn_labels)
    app.connect("missing-reference", _resolve_within_sknce)


# --- Examples -----------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    # The execution-times page loads jQuery and DataTables from a CDN: the docs must
    # work offline (each example still states its running time).
    "write_computation_times": False,
    # The families in the order of the user guide.
    "subsection_order": [
        "examples/documents",
        "examples/words",
        "examples/conditional",
        "examples/contrastive",
        "*",
    ],
}

# --- HTML ---------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"sknce {release}"
html_static_path = ["_static"]
html_css_files = ["sknce.css"]
