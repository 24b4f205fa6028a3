"""Synthetic data generators that reproduce the papers' settings, chunked data on disk,
and the real text of the examples."""

from __future__ import annotations

import importlib

_GENERATORS = {
    "make_topic_corpus": "sknce.datasets._topics",
    "make_loglinear_conditional": "sknce.datasets._loglinear",
    "make_latent_classes": "sknce.datasets._latent",
    "NpzChunks": "sknce.datasets._chunks",
    "save_npz_chunks": "sknce.datasets._chunks",
    "load_wiki_chunks": "sknce.datasets._wiki",
}

__all__ = list(_GENERATORS)


def __getattr__(name: str):
    # Lazy, so that each generator's module (and its imports) loads on first use.
    if name in _GENERATORS:
        return getattr(importlib.import_module(_GENERATORS[name]), name)
    raise AttributeError(f"module 'sknce.datasets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
