"""Latent-class contrastive learning and the k-negatives analysis of Awasthi et al. (2022).

:class:`LatentClassNCEEmbedder` learns unit-norm representations from pairs of
points of one latent class contrasted with ``k`` points of the marginal. The
functions analyse the population problem: :func:`nce_optimal_gram` solves for the
NCE-optimal representation of a class prior, :func:`supervised_loss` measures
its downstream loss, and :func:`simplex_etf_report` measures how close learned
representations come to the simplex ETF the theory predicts.
"""

from sknce.contrastive._embedder import LatentClassNCEEmbedder
from sknce.contrastive._etf import simplex_etf_report
from sknce.contrastive._gram import nce_optimal_gram
from sknce.contrastive._supervised import supervised_loss

__all__ = [
    "LatentClassNCEEmbedder",
    "nce_optimal_gram",
    "simplex_etf_report",
    "supervised_loss",
]
