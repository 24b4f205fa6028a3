"""
Word vectors from a small news corpus
=====================================

:class:`~sknce.ACEWord2Vec` trains skip-gram word vectors on a stream of token lists, like
gensim's ``Word2Vec``. Here it reads the Lee background corpus that ships with gensim (300
Australian news stories, 58,000 tokens), once with word2vec's unigram negatives
(``adversarial=False``) and once with adversarial negatives (ACE, the default), and we
compare both with gensim's skip-gram on the same tokens and settings: nearest neighbours,
and the correlation with the human similarity scores of WordSim353.

A corpus this small leaves most WordSim353 words out of the vocabulary and gives noisy
scores: the example shows the workflow, ``benchmarks/`` holds the measured comparison.
"""

# %%
# The corpus and the word-pair file both come with gensim's test data.
from pathlib import Path

import gensim
from gensim.models import Word2Vec
from gensim.utils import simple_preprocess

from sknce import ACEWord2Vec

data = Path(gensim.__file__).parent / "test" / "test_data"
with open(data / "lee_background.cor", encoding="utf-8") as f:
    sentences = [simple_preprocess(line) for line in f]
wordsim = data / "wordsim353.tsv"
print(f"{len(sentences)} documents, {sum(map(len, sentences))} tokens")

# %%
# The same settings for the three models: 50 dimensions, a window of 5, words seen at
# least twice, 20 epochs, 5 negatives per pair, one thread (reproducible).
settings = dict(window=5, min_count=2, n_negatives=5, max_epochs=20)
models = {
    "sknce NCE": ACEWord2Vec(n_components=50, adversarial=False, **settings),
    "sknce ACE": ACEWord2Vec(n_components=50, adversarial=True, **settings),
}
for model in models.values():
    model.set_params(n_jobs=1, random_state=0).fit(sentences)

gensim_w2v = Word2Vec(
    sentences,
    vector_size=50,
    window=5,
    min_count=2,
    negative=5,
    epochs=20,
    sg=1,
    workers=1,
    seed=0,
)

# %%
# Nearest neighbours by cosine similarity: the two estimators answer with
# ``most_similar`` as gensim's ``KeyedVectors`` does.
for word in ["fire", "police", "government"]:
    print(f"\n{word}")
    for name, model in models.items():
        print(
            f"  {name:10s}",
            ", ".join(w for w, _ in model.wv_.most_similar(word, topn=5)),
        )
    neighbours = gensim_w2v.wv.most_similar(word, topn=5)
    print(f"  {'gensim':10s}", ", ".join(w for w, _ in neighbours))

# %%
# WordSim353: Spearman correlation between the cosine similarities and human scores, on
# the pairs whose two words are in the vocabulary (the same computation as gensim's).
scores = {
    name: model.wv_.evaluate_word_pairs(wordsim)
    for name, model in models.items()
}
scores["gensim"] = gensim_w2v.wv.evaluate_word_pairs(wordsim)
for name, (_, spearman, oov) in scores.items():
    print(
        f"{name:10s} Spearman {spearman[0]:.3f}   pairs out of vocabulary: {oov:.0f}%"
    )

# %%
# A fitted estimator is also a scikit-learn transformer: ``transform`` gives the mean
# vector of each document's known words, ready for a downstream model.
doc_vectors = models["sknce ACE"].transform(sentences[:3])
print(doc_vectors.shape)

# %%
# The headline in one picture: the three models' WordSim353 correlations side by side,
# and a few words of the ACE vectors on their first two principal components
# (:class:`~sknce.display.WordProjectionDisplay`).
import matplotlib.pyplot as plt

from sknce.display import WordProjectionDisplay

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
names = list(scores)
left.bar(
    names, [scores[name][1][0] for name in names], color=["C0", "C1", "C2"]
)
left.set_ylabel("Spearman with WordSim353")
left.set_title("similarity against human scores", fontsize="small")
chosen = [
    w
    for w in ["fire", "police", "officers", "government", "minister",
              "sydney", "australia", "israeli", "palestinian", "afghanistan", "taliban"]
    if w in models["sknce ACE"].vocabulary_
]  # fmt: skip
WordProjectionDisplay.from_estimator(models["sknce ACE"], chosen, ax=right)
right.set_title("ACE vectors, 2-d projection", fontsize="small")
plt.show()

# %%
# On this small corpus the three correlations are close and noisy. In the projection,
# words of one story sit together: "israeli" beside "palestinian", "taliban" beside
# "afghanistan", "sydney" near "australia".
