"""
Document features for few labels, on real text
==============================================

The headline result of ``bash .ci/demo``, small enough for the gallery: chunks of 40
words from stemmed Wikipedia articles (gensim's test data), labelled by article.
:class:`~sknce.DirectNCEEmbedder` learns document features from the chunks *without*
labels (Tosh et al., 2021); a ``LogisticRegression()`` then learns the article from 3 or
10 labelled chunks per article, beside the same classifier on tf-idf and on tf-idf
reduced by SVD. The demo runs all 106 articles and adds LDA and the landmark embedding;
``benchmarks/README.md`` has its table.
"""

# %%
# The first 25 articles: about a thousand chunks.
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from sknce import DirectNCEEmbedder
from sknce.demo import load_wiki_chunks
from sknce.display import TrainingHistoryDisplay

torch.set_num_threads(1)
texts, labels = load_wiki_chunks(n_articles=25)
X = CountVectorizer().fit_transform(texts)
print(
    f"{X.shape[0]} chunks, {X.shape[1]} words, {len(np.unique(labels))} articles"
)

# %%
# Three representations, each fitted on every chunk without its label.
embedder = DirectNCEEmbedder(random_state=0)
representations = {
    "tf-idf": TfidfTransformer(),
    "tf-idf + SVD-100": make_pipeline(
        TfidfTransformer(), TruncatedSVD(100, random_state=0)
    ),
    "DirectNCE": embedder,
}
features = {
    name: rep.fit_transform(X) for name, rep in representations.items()
}

# %%
# The contrastive fit: its validation loss falls well below chance (the loss of a
# constant guess, here :math:`\ln 2`), and early stopping restores the marked epoch.
TrainingHistoryDisplay.from_estimator(embedder)
plt.show()

# %%
# Accuracy of ``LogisticRegression()`` on the unlabelled rest, for 3 and 10 labelled
# chunks per article, over 5 draws of the labelled chunks.
rng = np.random.default_rng(0)
classes = np.unique(labels)
results = {name: {} for name in features}
for m in (3, 10):
    for _ in range(5):
        labelled = np.concatenate(
            [rng.permutation(np.flatnonzero(labels == c))[:m] for c in classes]
        )
        rest = np.setdiff1d(np.arange(len(labels)), labelled)
        for name, Z in features.items():
            clf = LogisticRegression(max_iter=1000).fit(
                Z[labelled], labels[labelled]
            )
            results[name].setdefault(m, []).append(
                clf.score(Z[rest], labels[rest])
            )

fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
width = 0.27
for i, (name, by_m) in enumerate(results.items()):
    means = [np.mean(by_m[m]) for m in (3, 10)]
    errors = [np.std(by_m[m]) for m in (3, 10)]
    ax.bar(
        np.arange(2) + (i - 1) * width, means, width, yerr=errors, label=name
    )
    print(
        name, " ".join(f"{m}/article: {np.mean(by_m[m]):.3f}" for m in (3, 10))
    )
ax.set_xticks(range(2), ["3 labelled chunks per article", "10 per article"])
ax.set_ylabel("accuracy on the other chunks")
ax.set_ylim(0, 1)
ax.legend(loc="upper left", fontsize="small")
plt.show()

# %%
# With a handful of labels per article, the features learned without labels give the
# linear classifier a higher accuracy than tf-idf or its SVD: the contrastive task
# (do two halves come from one chunk?) has already grouped the words that occur
# together, which the few labels alone cannot teach.
