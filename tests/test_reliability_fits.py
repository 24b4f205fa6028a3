"""Fits attacked as a red team would (issue 22): reproducibility at several torch
threads, continued fits after ``set_params``, ``partial_fit`` misuse, divergence in a
continued fit, and settings that cannot train, named before training starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)

# --- reproducibility with two torch threads -------------------------------------------------
_TWO_THREADS = textwrap.dedent(
    """
    import hashlib, torch
    torch.set_num_threads(2)
    from sklearn.datasets import load_digits
    from sknce import DirectNCEEmbedder, LatentClassNCEEmbedder
    from sknce.datasets import make_topic_corpus

    X, y = load_digits(return_X_y=True)
    latent = LatentClassNCEEmbedder(max_epochs=1, early_stopping=False, random_state=0)
    corpus = make_topic_corpus(800, n_topics=3, n_words=200, mean_length=60, random_state=0)
    direct = DirectNCEEmbedder(
        n_components=64, batch_size=256, max_epochs=2, early_stopping=False, random_state=0
    )
    for Z in (latent.fit(X, y).transform(X), direct.fit(corpus.X).transform(corpus.X)):
        print(hashlib.sha256(Z.tobytes()).hexdigest())
    """
)


def test_fits_at_two_torch_threads_are_identical_in_separate_processes():
    """The backward of the negatives' gather added in a thread-dependent order (issue 22):
    three digits fits in three processes gave three outputs, and the neighbour-rate early
    stopping turned the last-bit differences into different numbers of epochs."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "2"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", _TWO_THREADS],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert len(runs[0]) == 2
    assert runs[0] == runs[1]
