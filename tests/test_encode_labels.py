"""The label encoding of sknce._validation against numpy's sort-based np.unique."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sknce._validation import all_strings, check_sortable_labels, encode_labels


def _as_object(values):
    y = np.empty(len(values), dtype=object)
    y[:] = values
    return y


def _expected(y):
    classes, codes, counts = np.unique(y, return_inverse=True, return_counts=True)
    return classes, codes.reshape(-1), counts


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=3), min_size=1, max_size=60))
def test_strings_are_encoded_as_np_unique_does(values):
    y = _as_object(values)
    assert all_strings(y)
    classes, codes, counts = encode_labels(y)
    expected = _expected(y)
    assert classes.dtype == object and list(classes) == list(expected[0])
    np.testing.assert_array_equal(codes, expected[1])
    np.testing.assert_array_equal(counts, expected[2])
    np.testing.assert_array_equal(classes[codes], y)


@pytest.mark.parametrize(
    "y",
    [
        np.array([3, 1, 3, 2]),
        np.array([0.5, -1.0, 0.5]),
        np.array(["b", "a", "b"]),  # a numpy string array (dtype <U1)
        _as_object([2, 1, 2]),  # objects that are not strings
        _as_object(["a", np.str_("b"), "a"]),
    ],
)
def test_other_labels_are_encoded_as_np_unique_does(y):
    classes, codes, counts = encode_labels(y)
    expected = _expected(y)
    np.testing.assert_array_equal(classes, expected[0])
    np.testing.assert_array_equal(codes, expected[1])
    np.testing.assert_array_equal(counts, expected[2])
    assert codes.dtype == np.int64


def test_a_mix_of_strings_and_numbers_still_names_the_fix():
    with pytest.raises(TypeError, match="astype"):
        check_sortable_labels(_as_object(["a", 1, "b"]))
    assert not all_strings(_as_object(["a", 1]))
    assert not all_strings(np.array([["a"], ["b"]], dtype=object))
    assert not all_strings(["a", "b"])  # a list is validated (and converted) elsewhere
