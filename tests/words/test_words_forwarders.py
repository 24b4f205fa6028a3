"""The estimator's four word-vector queries forward to ``wv_`` with a FutureWarning."""

import pytest
from test_words_ace import FAST, _planted

from sknce import ACEWord2Vec


@pytest.fixture(scope="module")
def model():
    docs, _ = _planted()
    return ACEWord2Vec(max_epochs=1, adversarial=False, **FAST).fit(docs)


def test_each_forwarder_warns_and_answers_as_wv(model, tmp_path):
    calls = {
        "most_similar": (("a0",), {"topn": 3}),
        "similarity": (("a0", "a1"), {}),
        "evaluate_word_pairs": (([("a0", "a1", 1.0), ("a0", "b0", 0.0), ("a1", "b1", 0.5)],), {}),
    }
    for name, (args, kwargs) in calls.items():
        with pytest.warns(FutureWarning, match=rf"model\.wv_\.{name}"):
            got = getattr(model, name)(*args, **kwargs)
        assert got == getattr(model.wv_, name)(*args, **kwargs)
    with pytest.warns(FutureWarning, match=r"model\.wv_\.save_word2vec_format"):
        model.save_word2vec_format(tmp_path / "a.txt")
    model.wv_.save_word2vec_format(tmp_path / "b.txt")
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_a_forwarder_of_an_unfitted_model_raises_before_warning():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        ACEWord2Vec().most_similar("a0")
