"""ACEWord2Vec: cost of an ACE epoch against an NCE epoch at V = 30k words.

A synthetic corpus of Zipf-distributed tokens over 30,000 words (documents of
1,000 tokens; ``min_count=1``, so the vocabulary holds every word drawn) is
fitted for ``--epochs`` epochs by ``ACEWord2Vec(adversarial=False)`` and by
``ACEWord2Vec(adversarial=True)`` at several ``n_candidates`` (the size of the
per-batch candidate set that approximates the generator's softmax), all other
parameters at their defaults. Reported: seconds per epoch (mean of skorch-style
``history_`` durations) and the ratio to the NCE epoch.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words_speed.py
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import Timer, report

from sknce import ACEWord2Vec


def zipf_corpus(n_words: int, n_tokens: int, seed: int = 0) -> list[list[str]]:
    """Documents of 1,000 tokens drawn from a Zipf(1) law over ``n_words`` words."""
    rng = np.random.default_rng(seed)
    probs = 1.0 / np.arange(1, n_words + 1)
    ids = rng.choice(n_words, size=n_tokens, p=probs / probs.sum())
    words = np.array([f"w{i}" for i in range(n_words)])
    return [list(words[ids[i : i + 1000]]) for i in range(0, n_tokens, 1000)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=30000)
    parser.add_argument("--tokens", type=int, default=500000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--candidates", type=int, nargs="+", default=[128, 256, 512])
    args = parser.parse_args()

    docs = zipf_corpus(args.words, args.tokens)
    ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4).fit([["a", "b"]] * 2)
    configs = [("NCE", dict(adversarial=False))]
    configs += [(f"ACE, n_candidates={m}", dict(n_candidates=m)) for m in args.candidates]
    rows, nce_epoch = [], None
    for name, params in configs:
        with Timer() as t:
            model = ACEWord2Vec(min_count=1, max_epochs=args.epochs, random_state=0, **params)
            model.fit(docs)
        epoch_s = float(np.mean([row["dur"] for row in model.history_]))
        nce_epoch = nce_epoch or epoch_s
        rows.append(
            {
                "method": name,
                "vocab": len(model.vocabulary_),
                "s_per_epoch": epoch_s,
                "ratio_to_nce": epoch_s / nce_epoch,
                "fit_s": t.seconds,
            }
        )
    report(
        "bench_words_speed",
        rows,
        title=f"ACE vs NCE epoch time at V = {args.words} (synthetic Zipf corpus)",
        params={**vars(args), "note": "2 cores shared with other engineers' jobs"},
    )


if __name__ == "__main__":
    main()
