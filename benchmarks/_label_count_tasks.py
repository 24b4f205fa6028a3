"""Text classification tasks at any label count, built from gensim's shipped test data only.

- :func:`article_k`: the 40-token chunks of the Wikipedia excerpt (as ``article``
  in ``bench_vs_fasttext.py``, the same 80/20 split of the chunks), with the 106
  articles merged into ``K`` groups (``K < 106``, a seeded random grouping) or
  refined into ``K`` parts (``K > 106``: each article cut into consecutive runs of
  chunks, the runs allotted to the articles in proportion to their chunks), so
  that the task gets harder as ``K`` grows;
- :func:`centre_k`: the centre word of a 10-word window (``centre`` in
  ``bench_vs_fasttext.py``) restricted to the ``K`` most frequent centre words,
  at most ``max_train`` training and ``max_test`` test windows (a seeded subset);
- :func:`few_class_folds`: a small task of 2-20 classes and a few hundred
  documents, in stratified folds: gensim's 200-message ``newsgroups`` subset
  (2 classes), or ``wiki_stemmed-<k>``: the first ``k`` articles of the stemmed
  Wikipedia corpus (``head500.noblanks.cor``) in 40-token chunks (a corpus no
  default was tuned on).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from _real_conditional_data import wiki_articles
from _real_data import load_task, wiki_stemmed
from sklearn.model_selection import StratifiedKFold

__all__ = ["article_k", "centre_k", "few_class_folds"]

CHUNK = 40


def _chunks():
    """Every 40-token chunk: its text, article, position in the article, and chunk count."""
    texts, articles, positions, counts = [], [], [], []
    for a, art in enumerate(wiki_articles()):
        n = len(art) // CHUNK
        for p in range(n):
            texts.append(" ".join(art[p * CHUNK : (p + 1) * CHUNK]))
            articles.append(a)
            positions.append(p)
            counts.append(n)
    return texts, np.array(articles), np.array(positions), np.array(counts)


def _parts(sizes: np.ndarray, k: int) -> np.ndarray:
    """Parts per article, summing to ``k``: at least 1 and at most its chunks, in
    proportion to its chunks (largest remainders)."""
    share = sizes * k / sizes.sum()
    parts = np.clip(np.floor(share).astype(int), 1, sizes)
    order = np.argsort(-(share - np.floor(share)))
    i = 0
    while parts.sum() < k:
        a = order[i % len(order)]
        if parts[a] < sizes[a]:
            parts[a] += 1
        i += 1
    while parts.sum() > k:
        a = int(np.argmax(parts))
        parts[a] -= 1
    return parts


def article_k(k: int, seed: int = 0):
    """The article task with its labels merged or refined into ``k`` classes.

    Returns ``(X_train, y_train, X_test, y_test)``: lists of texts and arrays of labels;
    test chunks whose label no training chunk has are dropped.
    """
    texts, articles, positions, counts = _chunks()
    n_articles = articles.max() + 1
    if k <= n_articles:
        group = np.random.default_rng(seed).permutation(n_articles) % k
        labels = group[articles]
    else:
        sizes = np.bincount(articles)
        parts = _parts(sizes, k)
        offset = np.concatenate([[0], np.cumsum(parts)[:-1]])
        labels = offset[articles] + positions * parts[articles] // counts
    labels = np.array([f"c{v}" for v in labels], dtype=object)
    order = np.random.default_rng(seed).permutation(len(texts))
    n_train = int(round(0.8 * len(texts)))
    train, test = order[:n_train], order[n_train:]
    test = test[np.isin(labels[test], labels[train])]
    texts = np.asarray(texts, dtype=object)
    return list(texts[train]), labels[train], list(texts[test]), labels[test]


def centre_k(k: int, data, max_train: int = 60_000, max_test: int = 15_000, seed: int = 0):
    """The centre-word task of ``data`` (``bench_vs_fasttext.centre_task()``) on its
    ``k`` most frequent centre words."""
    X_train, y_train, X_test, y_test = data
    top = {w for w, _ in Counter(y_train).most_common(k)}
    rng = np.random.default_rng(seed)
    train = np.flatnonzero([w in top for w in y_train])
    test = np.flatnonzero([w in top for w in y_test])
    train = np.sort(rng.permutation(train)[:max_train])
    test = np.sort(rng.permutation(test)[:max_test])
    return (
        [X_train[i] for i in train],
        y_train[train],
        [X_test[i] for i in test],
        y_test[test],
    )


def few_class_folds(name: str, n_splits: int = 5, seed: int = 0):
    """Stratified folds ``(X_train, y_train, X_test, y_test)`` of a small task.

    ``name``: ``"newsgroups"`` or ``"wiki_stemmed-<k>"`` (the first ``k`` articles
    of the stemmed corpus, at most 40 chunks each).
    """
    if name.startswith("wiki_stemmed-"):
        task = wiki_stemmed()
        keep = task.y < int(name.split("-")[1])
        texts, y = np.asarray(task.texts, dtype=object)[keep], task.y[keep]
    else:
        task = load_task(name)
        texts, y = np.asarray(task.texts, dtype=object), task.y
    labels = np.array([f"c{v}" for v in y], dtype=object)
    folds = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
    for train, test in folds.split(texts, y):
        yield list(texts[train]), labels[train], list(texts[test]), labels[test]
