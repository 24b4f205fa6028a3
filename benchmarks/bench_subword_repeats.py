"""Tokens whose character n-grams repeat, in a subword fit: where training breaks down.

fastText (and ``ACEWord2Vec(subwords=True)``) adds the gradient of a word's input
vector to each of its n-gram rows once per occurrence, so a token such as ``"x" * k``
moves its vector ``sum(m**2) / len(rows)`` times as far per step (its *amplification*,
``sknce.words._subword_model.amplification``). Each fit here inserts one such token
into every document of gensim's Lee corpus and trains 5 epochs of skip-gram and CBOW
at the defaults, with the amplification check of ``subword_discriminator`` switched
off, and reports the amplification, the epochs' losses and the largest n-gram row.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_subword_repeats.py
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
from _common import report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 80, 200, 400, 800, 3000])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--name", default="subword_repeats")
    args = parser.parse_args()

    from gensim.test.utils import datapath

    from sknce import ACEWord2Vec
    from sknce.words import _subword_model
    from sknce.words._subwords import subword_table

    _subword_model.MAX_AMPLIFICATION = math.inf  # measure what the check prevents
    with open(datapath("lee_background.cor")) as lines:
        documents = [line.lower().split() for line in lines]
    rows = []
    for length in args.lengths:
        token = "x" * length
        ptr, table = subword_table([token], 3, 6, 2_000_000)
        factor = _subword_model.amplification(table[ptr[0] : ptr[1]])
        corpus = [doc[:20] + [token] + doc[20:] for doc in documents]
        for architecture in ("skipgram", "cbow"):
            model = ACEWord2Vec(
                subwords=True, architecture=architecture, min_count=1, max_epochs=args.epochs,
                n_jobs=1, random_state=0,
            )  # fmt: skip
            row = {"token": f"x*{length}", "amplification": round(factor, 1), "arch": architecture}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(corpus)
                losses = [round(float(r["train_loss"]), 3) for r in model.history_]
                row.update(losses=losses, max_row=float(np.abs(model.wv_.vectors_ngrams).max()))
            except ValueError as error:
                row.update(losses=str(error)[:80], max_row=None)
            rows.append(row)
    report(args.name, rows, title="A repeated token in every Lee document", params=vars(args))


if __name__ == "__main__":
    main()
