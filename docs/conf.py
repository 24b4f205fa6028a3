"""Sphinx configuration: numpydoc API reference, sphinx-gallery examples, furo theme.

Sphinx over MkDocs because the API reference comes straight from numpydoc docstrings
(scikit-learn's own toolchain: autosummary + numpydoc) and sphinx-gallery runs the
examples that reproduce the papers' figures at build time, so they cannot rot.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

project = "sknce"
author = "the sknce developers"
copyright = "2026, the sknce developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
templates_path = ["_templates"]
exclude_patterns = ["_build", "examples", "generated/*.examples", "sg_execution_times.rst"]

intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
}

html_theme = "furo"
html_title = "sknce"
