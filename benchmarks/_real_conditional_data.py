"""Real tasks for the conditional and latent-class benchmarks, built from shipped data only.

Everything here reads data that ships with the installed packages (gensim's
``test_data`` and scikit-learn's bundled ``load_*`` datasets), so the benchmarks
run offline. ``fetch_*`` loaders (California housing, 20 newsgroups, ...) are not
used: they download.

Classification (``bench_real_conditional.py``):

- ``wiki-centre``: the centre word of a 5-token window from its 4 context words
  (Wikipedia excerpt of gensim's test data, 106 articles, 452,944 tokens);
- ``wiki-next``: the next word from the two previous words (same corpus);
- ``wiki-article``: the article (of 106) a 30-token window comes from, from the
  window's tf-idf bag of words;
- ``digits``: sklearn's 8x8 digits (10 classes, 64 pixel intensities in 0..16).

The two word tasks split the corpus by article (``GroupKFold``): the label and
feature vocabularies are the training folds' words seen ``min_count`` times or
more, so nothing of the test articles leaks into the features. Each context slot
is one-hot encoded (``<unk>`` for a rarer word, ``<s>`` past an article's edge),
exactly what ``DictVectorizer`` gives on ``{"w-2": ..., "w-1": ..., ...}``. Test
positions whose target word is not a training label cannot be scored by any
classifier over the training labels; they are dropped for every method alike.

Regression (``bench_real_regression.py``): ``diabetes`` (raw, unscaled features),
``wine-alcohol`` (a wine's alcohol content from its 12 other measurements),
``linnerud-weight`` / ``-waist`` / ``-pulse`` (20 men; each physiological
measurement from the 3 exercise counts) and ``lee-similarity`` (mean human
similarity rating of 1,225 pairs of the 50 Lee news documents, from features of
the pair's tf-idf and LSI vectors).

Latent classes (``bench_real_latent.py``): the sklearn datasets with their class
as the latent class (``digits``, ``wine``, ``breast-cancer``, ``iris``).
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GroupKFold, KFold, RepeatedKFold, StratifiedKFold

UNK, EDGE = "<unk>", "<s>"


@dataclass
class Split:
    """One cross-validation fold: training and test data and what was dropped."""

    X_train: object
    y_train: np.ndarray
    X_test: object
    y_test: np.ndarray
    info: dict = field(default_factory=dict)


@dataclass
class Task:
    """A named task: how to make its folds, and what it is."""

    name: str
    description: str
    folds: object  # callable(n_splits, seed) -> Iterator[Split]
    facts: dict = field(default_factory=dict)


# --- the Wikipedia word tasks -------------------------------------------------------------


@lru_cache(maxsize=1)
def wiki_articles() -> tuple[tuple[str, ...], ...]:
    """The 106 articles of the Wikipedia excerpt, tokenised as ``WikiCorpus`` does.

    The same parse as ``_words_data.load_wiki_corpus(None)`` (markup stripped,
    lowercased tokens of 2 to 15 characters, stubs and meta pages dropped), done here
    without importing sknce, so that these tasks load whatever state sknce is in.
    """
    import bz2

    from gensim.corpora.wikicorpus import (
        ARTICLE_MIN_WORDS,
        IGNORED_NAMESPACES,
        extract_pages,
        process_article,
        tokenize,
    )

    path = _gensim_data("enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    articles = []
    with bz2.open(path, "rb") as dump:
        for title, text, pageid in extract_pages(dump, filter_namespaces=("0",)):
            tokens = process_article((text, title, pageid), tokenize, 2, 15, True)[0]
            if len(tokens) < ARTICLE_MIN_WORDS or any(
                title.startswith(ns + ":") for ns in IGNORED_NAMESPACES
            ):
                continue
            articles.append(tuple(tokens))
    return tuple(articles)


def _vocabulary(articles, min_count: int) -> dict[str, int]:
    counts = Counter(w for a in articles for w in a)
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: -counts[w])
    return {w: i for i, w in enumerate(words)}


def _word_examples(articles, vocab: dict[str, int], offsets: tuple[int, ...]):
    """One-hot slot features and target ids of every position with an in-vocabulary target.

    Feature column of slot ``j`` and word id ``v``: ``j * (V + 2) + v``, with ids
    ``V`` for ``<unk>`` and ``V + 1`` for ``<s>``.
    """
    n_vocab = len(vocab)
    width = n_vocab + 2
    cols, ys = [], []
    for art in articles:
        ids = np.array([vocab.get(w, n_vocab) for w in art], dtype=np.int64)
        pad = max(abs(o) for o in offsets)
        padded = np.concatenate([np.full(pad, n_vocab + 1), ids, np.full(pad, n_vocab + 1)])
        keep = np.flatnonzero(ids < n_vocab)
        ys.append(ids[keep])
        cols.append(
            np.column_stack([j * width + padded[keep + pad + o] for j, o in enumerate(offsets)])
        )
    cols = np.concatenate(cols)
    y = np.concatenate(ys)
    n, k = cols.shape
    X = sp.csr_matrix(
        (np.ones(n * k, dtype=np.float64), cols.ravel(), np.arange(0, n * k + 1, k)),
        shape=(n, k * width),
    )
    return X, y


def _word_folds(offsets, min_count: int, max_train: int | None):
    def folds(n_splits: int = 3, seed: int = 0) -> Iterator[Split]:
        articles = wiki_articles()
        groups = np.arange(len(articles))
        splitter = GroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        for train_idx, test_idx in splitter.split(groups, groups=groups):
            train = [articles[i] for i in train_idx]
            test = [articles[i] for i in test_idx]
            vocab = _vocabulary(train, min_count)
            X_tr, y_tr = _word_examples(train, vocab, offsets)
            X_te, y_te = _word_examples(test, vocab, offsets)
            n_test_tokens = sum(len(a) for a in test)
            if max_train is not None and X_tr.shape[0] > max_train:
                rows = np.sort(
                    np.random.default_rng(seed).choice(X_tr.shape[0], max_train, replace=False)
                )
                X_tr, y_tr = X_tr[rows], y_tr[rows]
            words = np.array(list(vocab), dtype=object)
            yield Split(
                X_tr,
                words[y_tr],
                X_te,
                words[y_te],
                {
                    "n_classes": len(vocab),
                    "test_kept": X_te.shape[0] / n_test_tokens,
                },
            )

    return folds


def wiki_centre(min_count: int = 5, max_train: int | None = None) -> Task:
    """Centre word of a 5-token window from the 4 words around it (one-hot per slot)."""
    return Task(
        "wiki-centre",
        "Wikipedia excerpt: centre word from the words at -2, -1, +1, +2 (one-hot per slot); "
        f"labels and features: training-fold words seen >= {min_count} times; GroupKFold "
        "by article",
        _word_folds((-2, -1, 1, 2), min_count, max_train),
    )


def wiki_next(min_count: int = 5, max_train: int | None = None) -> Task:
    """Next word from the two previous words (one-hot per slot)."""
    return Task(
        "wiki-next",
        "Wikipedia excerpt: next word from the words at -2 and -1 (one-hot per slot); "
        f"labels and features: training-fold words seen >= {min_count} times; GroupKFold "
        "by article",
        _word_folds((-2, -1), min_count, max_train),
    )


def wiki_article(window: int = 30) -> Task:
    """The article a window of ``window`` tokens comes from, from its tf-idf bag of words."""

    def folds(n_splits: int = 5, seed: int = 0) -> Iterator[Split]:
        docs, labels = [], []
        for a, art in enumerate(wiki_articles()):
            for start in range(0, len(art) - window + 1, window):
                docs.append(art[start : start + window])
                labels.append(a)
        labels = np.asarray(labels)
        docs_arr = np.empty(len(docs), dtype=object)
        docs_arr[:] = docs
        for train_idx, test_idx in KFold(n_splits, shuffle=True, random_state=seed).split(docs):
            vec = TfidfVectorizer(analyzer=_identity, min_df=2)
            X_tr = vec.fit_transform(docs_arr[train_idx])
            X_te = vec.transform(docs_arr[test_idx])
            yield Split(
                X_tr,
                labels[train_idx],
                X_te,
                labels[test_idx],
                {"n_classes": len(np.unique(labels[train_idx]))},
            )

    return Task(
        "wiki-article",
        f"Wikipedia excerpt cut into {window}-token windows: the article (of 106) from the "
        "window's tf-idf (TfidfVectorizer(min_df=2) fitted on the training fold); KFold",
        folds,
    )


def _identity(tokens):
    return tokens


def digits_classification() -> Task:
    """sklearn's 8x8 digits: 10 classes, 64 raw pixel intensities (0..16)."""
    from sklearn.datasets import load_digits

    def folds(n_splits: int = 5, seed: int = 0) -> Iterator[Split]:
        X, y = load_digits(return_X_y=True)
        skf = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        for tr, te in skf.split(X, y):
            yield Split(X[tr], y[tr], X[te], y[te], {"n_classes": 10})

    return Task(
        "digits", "sklearn load_digits: 10 classes from 64 raw pixels; StratifiedKFold", folds
    )


# --- regression -----------------------------------------------------------------------------


def _regression_task(name, description, X, y, n_splits_default, repeats) -> Task:
    def folds(n_splits: int = n_splits_default, seed: int = 0) -> Iterator[Split]:
        cv = (
            RepeatedKFold(n_splits=n_splits, n_repeats=repeats, random_state=seed)
            if repeats > 1
            else KFold(n_splits, shuffle=True, random_state=seed)
        )
        for tr, te in cv.split(X):
            yield Split(X[tr], y[tr], X[te], y[te])

    return Task(name, description, folds, {"n": X.shape[0], "n_features": X.shape[1]})


def diabetes() -> Task:
    """Disease progression of 442 patients from 10 raw (unscaled) baseline measurements."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    return _regression_task(
        "diabetes",
        "sklearn load_diabetes(scaled=False): progression after one year from age, sex, BMI, "
        "blood pressure and 6 serum measurements in their raw units; 5-fold x 3",
        X,
        y,
        5,
        3,
    )


def wine_alcohol() -> Task:
    """Alcohol content of 178 wines from their 12 other chemical measurements."""
    from sklearn.datasets import load_wine

    data = load_wine()
    j = list(data.feature_names).index("alcohol")
    X = np.delete(data.data, j, axis=1)
    return _regression_task(
        "wine-alcohol",
        "sklearn load_wine: alcohol (% vol) from the 12 other measurements (cultivar not "
        "given); 5-fold x 3",
        X,
        data.data[:, j],
        5,
        3,
    )


def linnerud(target: str) -> Task:
    """One physiological measurement of 20 men from their 3 exercise counts."""
    from sklearn.datasets import load_linnerud

    data = load_linnerud()
    j = list(data.target_names).index(target.capitalize())
    return _regression_task(
        f"linnerud-{target.lower()}",
        f"sklearn load_linnerud: {target} of 20 men from chins, sit-ups, jumps; 5-fold x 5",
        data.data.astype(np.float64),
        data.target[:, j].astype(np.float64),
        5,
        5,
    )


def _gensim_data(name: str) -> Path:
    from gensim.test.utils import datapath

    return Path(datapath(name))


def lee_similarity(n_components: int = 20) -> Task:
    """Human similarity of pairs of the 50 Lee documents from tf-idf and LSI pair features.

    Features of the pair (i, j): the elementwise product of the two documents' unit
    LSI vectors (``n_components`` dims of a ``TruncatedSVD`` of the tf-idf of the
    300-document Lee background corpus, the protocol of gensim's ``test_lee``),
    their LSI cosine and their tf-idf cosine. Symmetric in (i, j).
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    background = _gensim_data("lee_background.cor").read_text(encoding="latin-1").splitlines()
    docs = _gensim_data("lee.cor").read_text(encoding="latin-1").splitlines()
    docs = [d for d in docs if d.strip()]
    sims = np.loadtxt(io.StringIO(_gensim_data("similarities0-1.txt").read_text()))
    vec = TfidfVectorizer(stop_words="english", min_df=2).fit(background)
    svd = TruncatedSVD(n_components, random_state=0).fit(vec.transform(background))
    tfidf = normalize(vec.transform(docs))
    lsi = normalize(svd.transform(tfidf))
    iu, ju = np.triu_indices(len(docs), k=1)
    X = np.column_stack(
        [
            lsi[iu] * lsi[ju],
            np.sum(lsi[iu] * lsi[ju], axis=1),
            np.asarray(tfidf[iu].multiply(tfidf[ju]).sum(axis=1)).ravel(),
        ]
    )
    y = sims[iu, ju]
    return _regression_task(
        "lee-similarity",
        "gensim lee.cor + similarities0-1.txt: mean human similarity (0.2..1) of 1,225 "
        f"document pairs from LSI-{n_components} products and cosines; 5-fold x 3",
        X,
        y,
        5,
        3,
    )


def regression_tasks() -> list[Task]:
    """Every regression task, smallest last."""
    return [
        lee_similarity(),
        diabetes(),
        wine_alcohol(),
        linnerud("weight"),
        linnerud("waist"),
        linnerud("pulse"),
    ]


# --- latent classes -------------------------------------------------------------------------


def latent_task(name: str) -> Task:
    """A bundled sklearn classification dataset with its class as the latent class."""
    from sklearn import datasets

    loader = {
        "digits": datasets.load_digits,
        "wine": datasets.load_wine,
        "breast-cancer": datasets.load_breast_cancer,
        "iris": datasets.load_iris,
    }[name]
    X, y = loader(return_X_y=True)

    def folds(n_splits: int = 5, seed: int = 0) -> Iterator[Split]:
        skf = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        for tr, te in skf.split(X, y):
            yield Split(X[tr], y[tr], X[te], y[te])

    return Task(
        name,
        f"sklearn load_{name.replace('-', '_')}: latent class = class label; StratifiedKFold",
        folds,
        {"n": X.shape[0], "n_features": X.shape[1], "n_classes": len(np.unique(y))},
    )


# --- summaries ------------------------------------------------------------------------------


def mean_ci(values) -> tuple[float, float]:
    """Mean and half-width of its 95% t-interval over folds (0 for a single value)."""
    from scipy.stats import t

    values = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if values.size == 0:
        return float("nan"), float("nan")
    if values.size == 1 or not np.all(np.isfinite(values)):
        return float(values.mean()), 0.0
    half = t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return float(values.mean()), float(half)


def summarise(rows: list[dict], keys: tuple[str, ...], by=("task", "method")) -> list[dict]:
    """One row per (task, method): ``key`` as mean and ``key ±`` as the 95% half-width."""
    out = {}
    for row in rows:
        out.setdefault(tuple(row[b] for b in by), []).append(row)
    summary = []
    for group, members in out.items():
        entry = dict(zip(by, group))
        entry["folds"] = len(members)
        for key in keys:
            vals = [m.get(key) for m in members]
            if all(v is None for v in vals):
                continue
            if any(isinstance(v, str) for v in vals):
                entry[key] = next(v for v in vals if v is not None)
                continue
            mean, half = mean_ci(vals)
            entry[key] = mean
            entry[f"{key} ±"] = half
        summary.append(entry)
    return summary
