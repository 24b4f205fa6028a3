"""
The NCE optimum is a simplex ETF for uniform classes, and not for skewed ones
=============================================================================

Awasthi et al. (2022) show that with uniform latent classes the representation that
minimises the NCE loss puts the classes on a simplex equiangular tight frame: all
pairwise cosines :math:`-1/(C-1)` (Theorem 3.8), for any number :math:`k` of negatives.
We solve Eq. (3) for a uniform and a skewed prior, then train
:class:`~sknce.LatentClassNCEEmbedder` on planted classes and measure how close its
representations come to the ETF.
"""

# %%
# The NCE-optimal Gram matrix of 4 classes, uniform and skewed priors, k = 8.
import matplotlib.pyplot as plt
import numpy as np
import torch

from sknce import LatentClassNCEEmbedder
from sknce.contrastive import (
    nce_optimal_gram,
    simplex_etf_report,
    supervised_loss,
)
from sknce.datasets import make_latent_classes

torch.set_num_threads(1)
priors = {
    "uniform": np.full(4, 0.25),
    "skewed": np.array([0.55, 0.25, 0.15, 0.05]),
}
fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6))
for ax, (name, prior) in zip(axes, priors.items()):
    gram, U = nce_optimal_gram(
        prior, 8, n_steps=300, batch_size=1000, random_state=0
    )
    image = ax.imshow(gram, vmin=-1, vmax=1, cmap="RdBu_r")
    for (i, j), value in np.ndenumerate(gram):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    ax.set_title(
        f"{name} prior, L_sup = {supervised_loss(U, prior):.3f}", fontsize=10
    )
    ax.set_xticks(range(4))
    ax.set_yticks(range(4))
fig.colorbar(image, ax=axes, shrink=0.8)
plt.show()

# %%
# The uniform optimum has every off-diagonal entry at -1/3. With the skewed prior the
# frequent class is pushed far from all others, while the two rarest classes end up at a
# positive cosine: they rarely appear as negatives, so separating them pays little.
#
# A learned representation: planted Gaussian classes, logistic loss, k = 8.
data = make_latent_classes(
    800, n_classes=4, n_features=10, separation=3.0, random_state=0
)
emb = LatentClassNCEEmbedder(
    n_components=8,
    n_negatives=8,
    hidden_layer_sizes=(32,),
    max_epochs=15,
    random_state=0,
)
report = simplex_etf_report(emb.fit_transform(data.X, data.y), data.y)
print(
    f"mean cosine of class means {report.mean_cosine:.3f} (ETF: {report.etf_cosine:.3f})"
)
print(f"mean Intra-Var {report.mean_intra_var:.3f}")

# %%
# The same comparison as a picture (:class:`~sknce.display.SimplexETFDisplay`): the
# cosines of the learned class means beside the ETF's. With 4 uniform classes the
# learned means sit close to the frame's -1/3 everywhere, as Theorem 3.8 predicts.
from sknce.display import SimplexETFDisplay

SimplexETFDisplay.from_estimator(emb, data.X, data.y)
plt.show()
