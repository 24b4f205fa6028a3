"""Real text for the examples: stemmed Wikipedia articles cut into labelled chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["load_wiki_chunks"]


def load_wiki_chunks(
    chunk: int = 40, min_chunks: int = 30, max_chunks: int = 40, n_articles: int | None = None
) -> tuple[list[str], np.ndarray]:
    """Stemmed Wikipedia articles of gensim's test data, cut into chunks labelled by article.

    ``head500.noblanks.cor`` holds 250 English Wikipedia articles, stemmed, stop words
    removed, one article per line. Each article of at least ``min_chunks`` chunks of
    ``chunk`` consecutive words gives its first ``max_chunks`` chunks.

    Parameters
    ----------
    chunk : int, default=40
        Words per chunk.
    min_chunks : int, default=30
        Articles with fewer chunks are left out.
    max_chunks : int, default=40
        Chunks kept per article.
    n_articles : int or None, default=None
        Keep the first ``n_articles`` articles (of 106 with the defaults).

    Returns
    -------
    texts : list of str
        The chunks (4,074 with the defaults).
    labels : ndarray of int
        The article of each chunk, ``0 .. n_articles - 1``.

    Raises
    ------
    ImportError
        If gensim, which ships the file, is not installed.
    """
    try:
        from gensim.test.utils import datapath
    except ImportError as error:
        raise ImportError(
            "the demo corpus ships with gensim's test data; install gensim "
            "(pip install gensim, or bash .ci/setup-env)."
        ) from error
    lines = Path(datapath("head500.noblanks.cor")).read_text(encoding="utf8").splitlines()
    texts, labels = [], []
    for line in lines:
        words = line.split()
        n = min(len(words) // chunk, max_chunks)
        if len(words) // chunk < min_chunks:
            continue
        if n_articles is not None and labels and labels[-1] + 1 >= n_articles:
            break
        label = labels[-1] + 1 if labels else 0
        texts += [" ".join(words[i * chunk : (i + 1) * chunk]) for i in range(n)]
        labels += [label] * n
    return texts, np.asarray(labels)
