"""Word vectors by adversarial contrastive estimation (Bose, Ling and Cao, 2018).

:class:`ACEWord2Vec` trains word2vec's vectors (skip-gram or CBOW) on a streamed
corpus, by word2vec's negative sampling, NCE, or ACE's adversarial negatives;
:class:`WordVectors` holds trained vectors, their queries and word2vec-format I/O;
:class:`SubwordVectors` adds fastText's character n-grams (a vector for any string),
read and written in fastText's ``.bin`` format by :func:`load_facebook_vectors`,
:func:`load_facebook_model` and :func:`save_facebook_model`.
``RULE_DEFAULT``, ``RULE_DISCARD`` and ``RULE_KEEP`` are the values a ``trim_rule``
returns (gensim's).

The trainer and the corpus are imported on first use, so that loading, querying
and saving vectors imports neither torch, skorch nor the compiled kernels.
"""

from __future__ import annotations

from sknce._lazy import lazy_names
from sknce.words._fasttext_format import load_facebook_model
from sknce.words._subword_vectors import (
    SubwordVectors,
    load_facebook_vectors,
    save_facebook_model,
)
from sknce.words._vectors import WordVectors

# What the trainer side defines, by the module that defines it.
_LAZY = {
    "ACEWord2Vec": "sknce.words._ace",
    "RULE_DEFAULT": "sknce.words._corpus",
    "RULE_DISCARD": "sknce.words._corpus",
    "RULE_KEEP": "sknce.words._corpus",
}

__all__ = [
    "RULE_DEFAULT",
    "RULE_DISCARD",
    "RULE_KEEP",
    "ACEWord2Vec",
    "SubwordVectors",
    "WordVectors",
    "load_facebook_model",
    "load_facebook_vectors",
    "save_facebook_model",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
