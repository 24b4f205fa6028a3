"""Data for the word-vector benchmarks: the Wikipedia excerpt and the similarity sets.

All three ship with gensim's test data (``gensim/test/test_data/``), so the
benchmarks need no download:

- ``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``: a
  shortened English Wikipedia XML dump. :func:`load_wiki_corpus` parses it as
  gensim's ``WikiCorpus`` does (markup stripped, tokens of 2 to 15 characters,
  lowercased, articles under 50 tokens and non-article namespaces dropped): 106
  articles, 452,944 tokens.
- ``wordsim353.tsv`` and ``simlex999.txt``: word pairs with human similarity
  scores, tab-separated with ``#`` comments, as read by
  ``KeyedVectors.evaluate_word_pairs``.

Use::

    from _words_data import load_wiki_corpus, rare_word_pairs, wordsim353_path

    corpus = load_wiki_corpus()
    rare = rare_word_pairs(wordsim353_path(), counts_by_word)
"""

from __future__ import annotations

import bz2
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

# gensim's Word2Vec silently truncates any sentence longer than this many tokens
# (MAX_WORDS_IN_BATCH); splitting articles at this length lets gensim and sknce
# train on exactly the same tokens.
GENSIM_MAX_SENTENCE = 10000


def _gensim_test_data(name: str) -> Path:
    try:
        from gensim.test.utils import datapath
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the word benchmarks read gensim's test data; install the extra: "
            "pip install 'sknce[bench]'"
        ) from exc
    path = Path(datapath(name))
    if not path.exists():  # pragma: no cover - depends on the gensim build
        raise FileNotFoundError(f"{path} is missing from this gensim installation")
    return path


def wiki_dump_path() -> Path:
    """Path of the shortened English Wikipedia dump in gensim's test data."""
    return _gensim_test_data(WIKI_DUMP)


def wordsim353_path() -> Path:
    """Path of WordSim353 (353 pairs, tab-separated, ``#`` comments) in gensim's test data."""
    return _gensim_test_data("wordsim353.tsv")


def simlex999_path() -> Path:
    """Path of SimLex-999 (999 pairs, tab-separated, ``#`` comments) in gensim's test data."""
    return _gensim_test_data("simlex999.txt")


def load_wiki_corpus(max_sentence_length: int | None = GENSIM_MAX_SENTENCE) -> list[list[str]]:
    """The Wikipedia excerpt as token lists, tokenised and lowercased as ``WikiCorpus``.

    Parsed in this process (``WikiCorpus`` would start a multiprocessing pool,
    which competes with the timed runs): about 4 s on one core.

    Parameters
    ----------
    max_sentence_length : int or None, default=10000
        Articles longer than this are split into consecutive pieces of at most
        this many tokens (gensim truncates longer sentences; 10 articles and
        21,944 tokens would be lost). ``None`` keeps one list per article.

    Returns
    -------
    list of list of str
        106 articles, 452,944 tokens in all (116 pieces with the default split).
    """
    from gensim.corpora.wikicorpus import (
        ARTICLE_MIN_WORDS,
        IGNORED_NAMESPACES,
        extract_pages,
        process_article,
        tokenize,
    )

    params = (tokenize, 2, 15, True)  # WikiCorpus defaults: token_min_len, token_max_len, lower
    corpus = []
    with bz2.open(wiki_dump_path(), "rb") as dump:
        for title, text, pageid in extract_pages(dump, filter_namespaces=("0",)):
            tokens = process_article((text, title, pageid), *params)[0]
            # the same pruning as WikiCorpus.get_texts: redirects, stubs, meta pages
            if len(tokens) < ARTICLE_MIN_WORDS or any(
                title.startswith(ns + ":") for ns in IGNORED_NAMESPACES
            ):
                continue
            if max_sentence_length is None:
                corpus.append(tokens)
            else:
                for start in range(0, len(tokens), max_sentence_length):
                    corpus.append(tokens[start : start + max_sentence_length])
    return corpus


def read_pairs(pairs: str | os.PathLike | Iterable) -> list[tuple[str, str, float]]:
    """Word pairs as ``(word1, word2, score)`` triples, from a file or an iterable.

    A file is read as ``evaluate_word_pairs`` reads it: tab-separated, lines
    starting with ``#`` and lines that are not three fields ending in a number
    are skipped. Written here without sknce, so that a baseline checkout's run
    (``bench_words.py --baseline``) reads the same pairs.
    """
    if isinstance(pairs, (str, os.PathLike)):
        with open(pairs, encoding="utf8") as handle:
            lines = [line.rstrip("\n").split("\t") for line in handle]
        triples = []
        for fields in lines:
            if fields[0].startswith("#") or len(fields) != 3:
                continue
            try:
                triples.append((fields[0], fields[1], float(fields[2])))
            except ValueError:
                continue
        return triples
    return [(a, b, float(score)) for a, b, score in pairs]


def rare_word_pairs(
    pairs: str | os.PathLike | Iterable, counts_by_word: Mapping[str, int]
) -> list[tuple[str, str, float]]:
    """The pairs whose two words are both rarer than the median evaluated word.

    The evaluated words are the distinct words of ``pairs`` (lowercased) that
    occur in ``counts_by_word``; their median corpus count is the threshold, and
    a pair is kept when both of its words occur and both counts are strictly
    below it.

    Parameters
    ----------
    pairs : path or iterable of (str, str, float)
        A similarity file (WordSim353, SimLex-999) or the triples themselves.
    counts_by_word : mapping of str to int
        Corpus count of each (lowercased) word, e.g. ``dict(zip(vocab.words,
        vocab.counts))``.

    Returns
    -------
    list of (str, str, float)
        The rare-word pairs, in file order; pass them to ``evaluate_word_pairs``.
    """
    triples = read_pairs(pairs)
    counts = {
        word: int(counts_by_word[word])
        for a, b, _ in triples
        for word in (a.lower(), b.lower())
        if counts_by_word.get(word, 0) > 0
    }
    if not counts:
        raise ValueError("no word of the pairs occurs in counts_by_word")
    median = float(np.median(list(counts.values())))
    return [
        (a, b, s)
        for a, b, s in triples
        if counts.get(a.lower(), median) < median and counts.get(b.lower(), median) < median
    ]
