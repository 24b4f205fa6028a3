"""Corpus handling speed: vocabulary scan and skip-gram pair stream on the Wikipedia excerpt.

The pair stream (``sknce.words._corpus.pair_batches``) feeds ACEWord2Vec's
training loop, so it has to outrun the training itself: gensim trains at
about 540k corpus words/s on 2 cores here. Measured on the Wikipedia excerpt of
gensim's test data (452,944 tokens, lowercased), with the benchmark settings
of the words issue (min_count=5, window=5, sample=1e-3): the vocabulary scan
beside gensim's ``Word2Vec.build_vocab`` (one process each), and one full
pass of ``pair_batches`` per batch size (encoding, subsampling, dynamic
window, batching), as corpus words/s and pairs/s. Each timing is the median
of ``--repeats`` passes; other jobs may share the CPU, so medians are quoted.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_corpus_pairs.py
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
from _common import Timer, peak_rss_mib, report
from _words_data import load_wiki_corpus

from sknce.words._corpus import Vocabulary, pair_batches


def time_vocabulary(corpus, repeats: int) -> list[dict]:
    """Seconds of one vocabulary scan, sknce beside gensim."""
    from gensim.models import Word2Vec

    rows = []
    for name, build in (
        ("sknce Vocabulary.build", lambda: Vocabulary.build(corpus, min_count=5)),
        ("gensim Word2Vec.build_vocab", lambda: Word2Vec(min_count=5).build_vocab(corpus)),
    ):
        seconds = []
        for _ in range(repeats):
            with Timer() as t:
                build()
            seconds.append(t.seconds)
        rows.append({"step": name, "seconds": statistics.median(seconds)})
    return rows


def time_pairs(corpus, vocab: Vocabulary, batch_size: int, repeats: int) -> dict:
    """One pass of pair_batches: median seconds, words/s, pairs/s."""
    seconds, n_pairs = [], []
    rng = np.random.default_rng(0)
    for _ in range(repeats):
        with Timer() as t:
            n = 0
            for centres, _ in pair_batches(
                corpus, None, vocab, window=5, sample=1e-3, batch_size=batch_size, rng=rng
            ):
                n += len(centres)
        seconds.append(t.seconds)
        n_pairs.append(n)
    median = statistics.median(seconds)
    return {
        "step": f"pair_batches, batch {batch_size}",
        "seconds": median,
        "words_per_s": vocab.n_raw_tokens / median,
        "pairs_per_epoch": float(np.mean(n_pairs)),
        "pairs_per_s": float(np.mean(n_pairs)) / median,
        "peak_rss_mib": peak_rss_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    corpus = load_wiki_corpus()
    vocab = Vocabulary.build(corpus, min_count=5)
    rows = time_vocabulary(corpus, args.repeats)
    for row in rows:
        row["words_per_s"] = vocab.n_raw_tokens / row["seconds"]
    rows += [time_pairs(corpus, vocab, bs, args.repeats) for bs in (1024, 4096, 16384)]
    kept = float(np.sum(vocab.counts * vocab.keep_probs(1e-3)))
    report(
        "corpus_pairs",
        rows,
        title=(
            f"Corpus handling on the Wikipedia excerpt ({vocab.n_raw_tokens} tokens, "
            f"{len(vocab)} words at min_count=5; {kept:.0f} expected tokens after "
            f"subsampling, window 5: at most {kept * 6:.0f} pairs)"
        ),
        params={
            "min_count": 5,
            "window": 5,
            "sample": 1e-3,
            "repeats": args.repeats,
            "n_tokens": vocab.n_raw_tokens,
            "n_words": len(vocab),
        },
    )


if __name__ == "__main__":
    main()
