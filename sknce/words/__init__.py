"""Word vectors by adversarial contrastive estimation (Bose, Ling and Cao, 2018).

:class:`ACEWord2Vec` trains skip-gram word vectors on a streamed corpus, by
word2vec's negative sampling, NCE, or ACE's adversarial negatives;
:class:`WordVectors` holds trained vectors, their queries and word2vec-format I/O.
"""

from sknce.words._ace import ACEWord2Vec
from sknce.words._vectors import WordVectors

__all__ = ["ACEWord2Vec", "WordVectors"]
