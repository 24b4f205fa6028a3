"""Synthetic data generators that reproduce the papers' settings, chunked data on disk,
and the real text of the examples."""

from __future__ import annotations

from sknce._lazy import lazy_names

_GENERATORS = {
    "make_topic_corpus": "sknce.datasets._topics",
    "make_loglinear_conditional": "sknce.datasets._loglinear",
    "make_latent_classes": "sknce.datasets._latent",
    "NpzChunks": "sknce.datasets._chunks",
    "save_npz_chunks": "sknce.datasets._chunks",
    "load_wiki_chunks": "sknce.datasets._wiki",
}

__all__ = list(_GENERATORS)


__getattr__, __dir__ = lazy_names(__name__, _GENERATORS, __all__)
