"""Labelled text tasks built from corpora that ship inside installed packages (no download).

Every loader returns a :class:`Task`: raw strings (a user's pipeline starts from text),
integer labels and a short description. The corpora are gensim's test data
(``gensim/test/test_data/``); scikit-learn bundles no text.

Document tasks (label = what a linear probe must predict):

- ``wiki``: the English Wikipedia excerpt (``enwiki-...-shortened.bz2``, parsed as
  ``WikiCorpus`` does, see ``_words_data.load_wiki_corpus``) cut into consecutive
  100-token chunks; label = article; articles with at least 20 chunks
  (4,129 chunks, 64 articles).
- ``wiki_stemmed``: ``head500.noblanks.cor``, 250 Wikipedia articles stemmed with
  stop words removed (one per line), cut into 40-token chunks; label = article;
  articles with at least 30 chunks, the first 40 of each (4,074 chunks, 106 articles).
- ``newsgroups``: gensim's 200-message 20-Newsgroups subset (alt.atheism vs
  sci.space); the message headers (which name the group) are removed.
- ``polarity``: ``pang_lee_polarity.cor``, 200 one-sentence movie reviews; label =
  the ``__label__pos`` / ``__label__neg`` prefix, which is removed from the text.

Grouped-sentence tasks (for latent-class embedders, y = group):

- ``lee_sentences``: ``lee_background.cor``, 300 news articles, split into sentences;
  group = article (articles with at least 4 sentences of at least 5 words).
"""

from __future__ import annotations

import io
import pickle
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _words_data import _gensim_test_data, load_wiki_corpus
from sklearn.utils import Bunch

__all__ = ["DOCUMENT_TASKS", "GROUP_TASKS", "Task", "load_task"]


@dataclass
class Task:
    """A labelled text task: ``texts[i]`` has label (or group) ``y[i]``."""

    name: str
    texts: list[str]
    y: np.ndarray
    description: str
    classes: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        """Documents, classes and smallest/largest class size."""
        sizes = np.bincount(self.y)
        return {
            "task": self.name,
            "documents": len(self.texts),
            "classes": int(len(sizes)),
            "class sizes": f"{sizes.min()}-{sizes.max()}",
            "mean tokens": round(float(np.mean([len(t.split()) for t in self.texts])), 1),
        }


def _chunks(articles: list[list[str]], size: int, min_chunks: int, max_chunks: int | None):
    """Consecutive ``size``-token chunks of each article, label = article index."""
    texts, labels = [], []
    label = 0
    for tokens in articles:
        n = len(tokens) // size
        if n < min_chunks:
            continue
        n = n if max_chunks is None else min(n, max_chunks)
        texts += [" ".join(tokens[i * size : (i + 1) * size]) for i in range(n)]
        labels += [label] * n
        label += 1
    return texts, np.asarray(labels)


def wiki(chunk: int = 100, min_chunks: int = 20) -> Task:
    """Wikipedia excerpt in ``chunk``-token pieces; label = article."""
    texts, y = _chunks(load_wiki_corpus(max_sentence_length=None), chunk, min_chunks, None)
    return Task(
        "wiki",
        texts,
        y,
        f"enwiki excerpt (gensim test data), {chunk}-token chunks -> article "
        f"(articles with >= {min_chunks} chunks)",
    )


def wiki_stemmed(chunk: int = 40, min_chunks: int = 30, max_chunks: int = 40) -> Task:
    """Stemmed Wikipedia articles (head500.noblanks.cor) in ``chunk``-token pieces."""
    lines = _gensim_test_data("head500.noblanks.cor").read_text(encoding="utf8").splitlines()
    articles = [line.split() for line in lines if line.strip()]
    texts, y = _chunks(articles, chunk, min_chunks, max_chunks)
    return Task(
        "wiki_stemmed",
        texts,
        y,
        f"head500.noblanks.cor (stemmed Wikipedia, gensim test data), {chunk}-token chunks "
        f"-> article (articles with >= {min_chunks} chunks, first {max_chunks} kept)",
    )


class _BunchUnpickler(pickle.Unpickler):
    """gensim's ``mini_newsgroup`` is a Python 2 pickle of ``sklearn.datasets.base.Bunch``."""

    def find_class(self, module, name):
        return Bunch if name == "Bunch" else super().find_class(module, name)


def newsgroups() -> Task:
    """gensim's 200-message, 2-group newsgroups subset, headers removed."""
    raw = zlib.decompress(Path(_gensim_test_data("mini_newsgroup")).read_bytes())
    data = _BunchUnpickler(io.BytesIO(raw), encoding="latin1").load()
    # the header block ("Newsgroups: alt.atheism", "Path: ...") names the label: drop it,
    # as sklearn's fetch_20newsgroups(remove=("headers",)) does
    texts = [message.partition("\n\n")[2] for message in data["data"]]
    return Task(
        "newsgroups",
        texts,
        np.asarray(data["target"]),
        "mini_newsgroup (gensim test data), message body (headers removed) -> group",
        list(data["target_names"]),
    )


def polarity() -> Task:
    """pang_lee_polarity.cor: one-sentence reviews; label = polarity."""
    lines = _gensim_test_data("pang_lee_polarity.cor").read_text(encoding="latin1").splitlines()
    labels, texts = [], []
    for line in lines:
        tag, _, text = line.partition(" ")
        if tag in ("__label__neg", "__label__pos"):
            labels.append(int(tag == "__label__pos"))
            texts.append(text)
    return Task(
        "polarity",
        texts,
        np.asarray(labels),
        "pang_lee_polarity.cor (gensim test data), sentence -> polarity (label prefix removed)",
        ["neg", "pos"],
    )


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def lee_sentences(min_words: int = 5, min_sentences: int = 4) -> Task:
    """lee_background.cor articles split into sentences; group = article."""
    lines = _gensim_test_data("lee_background.cor").read_text(encoding="latin1").splitlines()
    texts, groups = [], []
    group = 0
    for line in lines:
        sentences = [s for s in _SENTENCE_END.split(line.strip()) if len(s.split()) >= min_words]
        if len(sentences) < min_sentences:
            continue
        texts += sentences
        groups += [group] * len(sentences)
        group += 1
    return Task(
        "lee_sentences",
        texts,
        np.asarray(groups),
        f"lee_background.cor (gensim test data), sentences (>= {min_words} words) -> article "
        f"(articles with >= {min_sentences} sentences)",
    )


DOCUMENT_TASKS = {
    "wiki": wiki,
    "wiki_stemmed": wiki_stemmed,
    "newsgroups": newsgroups,
    "polarity": polarity,
}
GROUP_TASKS = {"lee_sentences": lee_sentences}


def load_task(name: str) -> Task:
    """Load a task by name (a key of ``DOCUMENT_TASKS`` or ``GROUP_TASKS``)."""
    loaders = {**DOCUMENT_TASKS, **GROUP_TASKS}
    if name not in loaders:
        raise ValueError(f"unknown task {name!r}; choose from {sorted(loaders)}")
    return loaders[name]()
