"""What word vectors and the word2vec fit import.

Word vectors load, answer and save without the trainer: no torch, skorch or numba.
The compiled-kernel fit imports torch but not ``torch._dynamo`` (and sympy), which
torch's optimizers import at their first call. Each check runs in a fresh
interpreter, since this test session has imported torch long ago.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Everything a user of trained vectors does, through the public import path.
ROUND_TRIP = r"""
import sys
from pathlib import Path

import numpy as np

from sknce.words import (
    SubwordVectors,
    WordVectors,
    load_facebook_model,
    load_facebook_vectors,
    save_facebook_model,
)

tmp = Path(sys.argv[1])
rng = np.random.default_rng(0)
words = ["king", "queen", "man", "woman", "café", "日本"]
wv = WordVectors(words, rng.normal(size=(6, 8)), counts=[60, 50, 40, 30, 20, 10])
pairs = [("king", "queen", 8.0), ("man", "woman", 7.5), ("king", "café", 1.0)]
for binary in (False, True):
    wv.save_word2vec_format(tmp / f"w2v{binary}", binary=binary, fvocab=tmp / "vocab")
    back = WordVectors.load_word2vec_format(tmp / f"w2v{binary}", binary=binary)
    assert back.index_to_key == words
wv.save(tmp / "native")
back = WordVectors.load(tmp / "native", mmap="r")
assert back.most_similar("king", topn=2)
assert back.evaluate_word_pairs(pairs)[1][0] == back.evaluate_word_pairs(pairs)[1][0]
(tmp / "analogies.txt").write_text(": royal\nking queen man woman\n", encoding="utf8")
assert 0 <= back.evaluate_word_analogies(tmp / "analogies.txt")[0] <= 1

sw = SubwordVectors(words, rng.normal(size=(6, 8)), rng.normal(size=(40, 8)), counts=[6] * 6)
assert sw["kingdom"].shape == (8,)
assert sw.most_similar("queens", topn=2)
assert sw.evaluate_word_pairs(pairs + [("kings", "queens", 9.0)])[2] > 0
save_facebook_model(tmp / "model.bin", sw)
back = load_facebook_vectors(tmp / "model.bin")
assert np.array_equal(back["kingdom"], sw["kingdom"])
assert load_facebook_model(tmp / "model.bin").words == words
back.save_facebook_vec(tmp / "model.vec")

heavy = sorted({"torch", "skorch", "numba"} & set(sys.modules))
print("loaded:", heavy)
assert not heavy, f"loading and querying vectors imported {heavy}"
"""

# The trainer's names stay where they were, loaded on first use.
TRAINER_NAMES = r"""
import sknce.words
from sknce.words import RULE_DEFAULT, RULE_DISCARD, RULE_KEEP
from sknce.words import ACEWord2Vec
from sknce.words._ace import ACEWord2Vec as defined
from sknce import ACEWord2Vec as top

assert ACEWord2Vec is defined is top is sknce.words.ACEWord2Vec
assert (RULE_DEFAULT, RULE_DISCARD, RULE_KEEP) == (0, 1, 2)
assert set(sknce.words.__all__) <= set(dir(sknce.words))
try:
    sknce.words.Word2Vec
except AttributeError as error:
    assert "sknce.words" in str(error) and "Word2Vec" in str(error)
else:
    raise AssertionError("a missing name resolved")
"""


# The compiled kernels' fits at the defaults (SGD, the CPU), NCE and ACE, then queries.
KERNEL_FIT = r"""
import sys

from sknce import ACEWord2Vec
from sknce._steps import KernelStep

docs = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran", "to", "the", "cat"]] * 20
for adversarial in (False, True):
    model = ACEWord2Vec(
        n_components=8, min_count=1, sample=0, max_epochs=2, adversarial=adversarial,
        random_state=0,
    ).fit(docs)
    assert isinstance(model.net_.step_, KernelStep), model.net_.step_
    model.partial_fit(docs)
    model.wv_.most_similar("cat", topn=2)
heavy = sorted({"torch._dynamo", "sympy"} & set(sys.modules))
print("loaded:", heavy)
assert not heavy, f"the compiled-kernel fit imported {heavy}"
"""


def _run(code: str, *args) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    command = [sys.executable, "-c", textwrap.dedent(code), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


def test_vectors_load_query_and_save_without_torch_skorch_or_numba(tmp_path):
    result = _run(ROUND_TRIP, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "loaded: []" in result.stdout


def test_the_check_fails_when_torch_is_loaded(tmp_path):
    # the same script with torch imported first must fail: the assertion can fail
    result = _run("import torch\n" + ROUND_TRIP, tmp_path)
    assert result.returncode != 0
    assert "imported ['torch']" in result.stderr
    result = _run("import numba\n" + ROUND_TRIP, tmp_path)
    assert "imported ['numba']" in result.stderr


@pytest.mark.parametrize("code", [TRAINER_NAMES], ids=["trainer-names"])
def test_the_trainer_names_still_import_from_sknce_words(code):
    result = _run(code)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_the_compiled_kernel_fit_imports_no_torch_dynamo():
    result = _run(KERNEL_FIT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "loaded: []" in result.stdout


def test_the_fit_check_fails_when_torch_dynamo_is_loaded():
    result = _run("import torch._dynamo\n" + KERNEL_FIT)
    assert result.returncode != 0
    assert "imported ['sympy', 'torch._dynamo']" in result.stderr
