"""One process of the 2-process test (tests/test_distributed.py), run by torchrun.

Every process fits the same estimators (all six, and a streamed fit) on the same data with one
``accelerate.Accelerator`` (gloo on the CPU), then writes what it ended with
(weights, history) to ``OUT/<name>-<rank>.pkl``; process 0 also pickles the
fitted estimators (``OUT/<name>.estimator.pkl``). The data and settings live
here so that the test fits the single-process reference on the same. Then every
process runs the user guide's ``train.py`` (docs/user_guide/scaling.rst) and
writes what it printed to ``OUT/guide-<rank>.txt``.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import sys
from pathlib import Path

import numpy as np


def classification_data():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=2.5, size=(6, 5))
    y = rng.integers(0, 6, size=600)
    return centers[y] + rng.normal(size=(600, 5)), y


def counts_data():
    from sknce.datasets import make_topic_corpus

    corpus = make_topic_corpus(600, n_topics=3, n_words=60, mean_length=40, random_state=0)
    return corpus.X, corpus.target


def regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=600)


def chunks(X, n_chunks: int = 4) -> list:
    """``X`` cut into ``n_chunks`` blocks of rows: a stream of chunks."""
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(int)
    return [X[lo:hi] for lo, hi in zip(bounds, bounds[1:])]


def corpus_data():
    """Two groups of words that never share a document: a planted similarity structure."""
    rng = np.random.default_rng(0)
    groups = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    return [list(rng.choice(groups[k % 2], size=15)) for k in range(300)]


def cases():
    """(name, estimator factory, data) of each fit: the six estimators and a streamed fit."""
    from _registry import REGISTRY

    from sknce import (
        ACEWord2Vec,
        ConditionalNCEClassifier,
        ConditionalNCERegressor,
        DirectNCEEmbedder,
        LandmarkNCEEmbedder,
        LatentClassNCEEmbedder,
    )

    X, y = classification_data()
    counts, _ = counts_data()
    X_reg, y_reg = regression_data()
    small = dict(hidden_layer_sizes=(16,), batch_size=32, random_state=0)

    def factory(cls, **common):
        settings = {**common, **REGISTRY[cls.__name__].distributed}
        return lambda **kw: cls(**settings, **kw)

    return [
        ("classifier", factory(ConditionalNCEClassifier, **small), (X, y)),
        ("regressor", factory(ConditionalNCERegressor, **small), (X_reg, y_reg)),
        ("direct", factory(DirectNCEEmbedder, **small), (counts,)),
        # early stopping holds out the stream's last chunk
        ("direct-stream", factory(DirectNCEEmbedder, **small), (chunks(counts),)),
        ("landmark", factory(LandmarkNCEEmbedder, **small), (counts,)),
        ("latent", factory(LatentClassNCEEmbedder, **small), (X, y)),
        ("ace", factory(ACEWord2Vec), (corpus_data(),)),
    ]


#: The user guide page whose multi-process script this launch also runs.
GUIDE = Path(__file__).resolve().parent.parent / "docs" / "user_guide" / "scaling.rst"


def guide_script() -> str:
    """The guide's ``train.py``: its code block that starts with ``# train.py``."""
    from test_docs_guides import _python_blocks

    return next(b for b in _python_blocks(GUIDE.read_text()) if b.startswith("# train.py"))


def main(out: Path) -> None:
    import torch
    from accelerate import Accelerator

    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    for name, make, data in cases():
        estimator = make(accelerator=accelerator).fit(*data)
        state = {
            "n_processes": accelerator.num_processes,
            "weights": [p.detach().numpy().copy() for p in estimator.net_.module_.parameters()],
            "history": estimator.history_,
            "batches": [row["batches"] for row in estimator.net_.history],
        }
        (out / f"{name}-{rank}.pkl").write_bytes(pickle.dumps(state))
        if accelerator.is_main_process:
            (out / f"{name}.estimator.pkl").write_bytes(pickle.dumps(estimator))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(guide_script(), str(GUIDE), "exec"), {"__name__": "__main__"})
    (out / f"guide-{rank}.txt").write_text(printed.getvalue())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
