"""Document embedders learned by contrastive estimation (Tosh et al., 2021).

* :class:`LandmarkNCEEmbedder`: the landmark embedding (Eq. 3);
* :class:`DirectNCEEmbedder`: the direct embedding (Eq. 6);
* :func:`split_documents`: the splitting strategies of the contrastive task;
* :func:`recover_topic_posterior`: topic posteriors from single-word landmarks (Section 6.1).
"""

from sknce.documents._embedders import DirectNCEEmbedder, LandmarkNCEEmbedder
from sknce.documents._posterior import project_simplex, recover_topic_posterior
from sknce.documents._split import split_documents

__all__ = [
    "DirectNCEEmbedder",
    "LandmarkNCEEmbedder",
    "project_simplex",
    "recover_topic_posterior",
    "split_documents",
]
