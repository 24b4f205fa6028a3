"""Block-model topic recovery (Tosh et al., Section 6): LandmarkNCE vs LDA vs exact posterior.

Block model: K topics (``--topics``, 20) over V words (``--words``, 5000), each topic
uniform over its own block of about V / K words, w ~ Dirichlet(beta), Poisson(100)
lengths. For each beta and number N of training documents:

* exact posterior: E[w | x] in closed form (the ceiling);
* LDA: sklearn ``LatentDirichletAllocation`` (batch variational Bayes, K topics, its
  default 10 iterations) fitted on the N documents; its topics are matched to the true
  ones by the Hungarian algorithm; two seeds (LDA often merges two topics);
* LandmarkNCE in the paper's setting: ``LandmarkNCEEmbedder(landmarks="words",
  split="word", n_landmarks=1000, scorer="pair", bag="tf", lr=1e-3, batch_size=256)``
  (the network of the pair, ``--hidden`` wide) fitted on the N documents for
  ``--epochs`` epochs without early stopping, so that every fit trains on all N
  documents for as long (fresh splits and pairings every epoch), with ``--negatives``
  negative pairs per positive pair; then ``recover_topic_posterior``, with its default
  rescaling of eta-hat to sum one and, for comparison, without it (same fit).

Metrics on ``--test`` held-out documents: top-topic accuracy against the exact
posterior mean's top topic and against the true w's, and the mean l2 distance to the
exact posterior mean.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_documents_topics.py
    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_documents_topics.py \
        --topics 10 --words 2000 --name documents_topics_k10_v2000
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, report
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import LatentDirichletAllocation

from sknce import LandmarkNCEEmbedder
from sknce.datasets import make_topic_corpus
from sknce.documents import recover_topic_posterior


def metrics(estimate: np.ndarray, corpus, test: slice) -> dict:
    post = corpus.posterior_mean[test]
    truth = corpus.doc_topics[test]
    return {
        "top acc (vs posterior)": float((estimate.argmax(1) == post.argmax(1)).mean()),
        "top acc (vs w)": float((estimate.argmax(1) == truth.argmax(1)).mean()),
        "l2 to posterior": float(np.linalg.norm(estimate - post, axis=1).mean()),
    }


def lda_estimate(corpus, train: slice, test: slice, seed: int, max_iter: int):
    lda = LatentDirichletAllocation(
        corpus.topics.shape[0], learning_method="batch", max_iter=max_iter, random_state=seed
    ).fit(corpus.X[train])
    learned = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    _, perm = linear_sum_assignment(-(corpus.topics @ learned.T))  # true k <- learned perm[k]
    theta = lda.transform(corpus.X[test])
    return theta[:, perm]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--betas", type=float, nargs="+", default=[0.025, 0.05, 0.1])
    parser.add_argument("--train", type=int, nargs="+", default=[8000, 16000])
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument(
        "--pool",
        type=int,
        default=None,
        help="draw the corpus as for this many training documents (to repeat cells of a "
        "run with a larger --train on the same documents)",
    )
    parser.add_argument("--lda-seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--lda-iter", type=int, default=10)
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 256])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--early-stopping", action="store_true")
    parser.add_argument("--topics", type=int, default=20, help="K")
    parser.add_argument("--words", type=int, default=5000, help="V")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default="documents_topics", help="results file stem")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for beta in args.betas:
        n_max = max(args.pool or 0, *args.train)
        corpus = make_topic_corpus(
            n_max + args.test,
            n_topics=args.topics,
            n_words=args.words,
            topics="block",
            beta=beta,
            random_state=0,
        )
        test = slice(n_max, n_max + args.test)
        base = {"beta": beta}
        rows.append(
            {
                **base,
                "N": "-",
                "method": "exact posterior",
                **metrics(corpus.posterior_mean[test], corpus, test),
                "fit s": 0.0,
            }
        )
        for n in args.train:
            train = slice(0, n)
            for seed in args.lda_seeds:
                with Timer() as t:
                    theta = lda_estimate(corpus, train, test, seed, args.lda_iter)
                rows.append(
                    {
                        **base,
                        "N": n,
                        "method": f"LDA (seed {seed})",
                        **metrics(theta, corpus, test),
                        "fit s": t.seconds,
                    }
                )
                print(rows[-1], flush=True)
            with Timer() as t:
                emb = LandmarkNCEEmbedder(
                    n_landmarks=1000,
                    landmarks="words",
                    split="word",
                    scorer="pair",
                    bag="tf",
                    hidden_layer_sizes=tuple(args.hidden),
                    lr=1e-3,
                    max_epochs=args.epochs,
                    batch_size=256,
                    n_negatives=args.negatives,
                    early_stopping=args.early_stopping,
                    random_state=0,
                ).fit(corpus.X[train])
            name = f"LandmarkNCE ({emb.n_iter_} ep, {args.negatives} neg)"
            for normalize, suffix in ((True, ""), (False, ", no rescaling")):
                eta = recover_topic_posterior(
                    emb, corpus.X[test], corpus.topics, corpus.word_probs, normalize=normalize
                )
                rows.append(
                    {
                        **base,
                        "N": n,
                        "method": name + suffix,
                        **metrics(eta, corpus, test),
                        "fit s": t.seconds,
                    }
                )
                print(rows[-1], flush=True)
    report(
        args.name,
        rows,
        title=f"Block-model topic recovery (K={args.topics}, V={args.words}): held-out "
        "top-topic accuracy, l2 to the exact posterior mean",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
