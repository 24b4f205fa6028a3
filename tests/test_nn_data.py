"""Sparse batching and the generic torch modules."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sknce._data import Batch, SampledDataset, as_csr_or_dense, rows_to_tensor
from sknce.nn import MLP, InputLinear


@pytest.fixture
def counts():
    rng = np.random.default_rng(0)
    return (rng.random((20, 30)) < 0.2) * rng.integers(1, 5, size=(20, 30))


def test_sparse_rows_match_dense_rows(counts):
    X_sparse = as_csr_or_dense(sp.csr_matrix(counts))
    X_dense = as_csr_or_dense(counts)
    rows = np.array([3, 0, 17, 3])
    sparse_t = rows_to_tensor(X_sparse, rows)
    assert sparse_t.is_sparse
    np.testing.assert_array_equal(sparse_t.to_dense().numpy(), counts[rows])
    np.testing.assert_array_equal(rows_to_tensor(X_dense, rows).numpy(), counts[rows])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("data_dtype", [np.float32, np.float64])
def test_the_compiled_row_gather_is_scipys_indexing(counts, index_dtype, data_dtype):
    """Rows of a CSR matrix (repeated, empty, none, out of order) as the tensor built
    from ``X[rows]``: same indices, values, order and shape, bit for bit."""
    from sknce._data import csr_to_tensor

    counts = counts.copy()
    counts[5] = 0  # an empty row
    X = sp.csr_matrix(counts.astype(data_dtype))
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    for rows in (np.array([3, 0, 17, 3, 5]), np.array([], dtype=np.int64), np.arange(20)):
        for typed in (rows, rows.astype(np.int32), rows.astype(np.uint64)):
            got = rows_to_tensor(X, typed)
            want = csr_to_tensor(X[rows])
            assert got.is_coalesced() and got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_array_equal(got.indices().numpy(), want.indices().numpy())
            np.testing.assert_array_equal(got.values().numpy(), want.values().numpy())
    # what scipy's indexing accepts or refuses, unchanged
    np.testing.assert_array_equal(
        rows_to_tensor(X, np.array([-1, 2])).to_dense().numpy(), counts[[-1, 2]]
    )
    with pytest.raises(IndexError):
        rows_to_tensor(X, np.array([0, 20]))


def test_as_csr_canonicalises_without_touching_the_input():
    X = sp.csr_matrix((np.array([1.0, 2.0]), np.array([1, 1]), np.array([0, 2])), shape=(1, 3))
    assert not X.has_canonical_format
    out = as_csr_or_dense(X)
    assert out.has_canonical_format and out[0, 1] == 3.0
    assert X.nnz == 2  # the caller's matrix keeps its duplicates
    assert isinstance(as_csr_or_dense(sp.coo_array(np.eye(2))), sp.csr_matrix)


def test_read_only_input_becomes_writeable():
    X = np.ones((3, 2))
    X.setflags(write=False)
    assert as_csr_or_dense(X).flags.writeable


@pytest.mark.parametrize("hidden", [(), (7,), (7, 5)])
def test_mlp_sparse_and_dense_inputs_agree(counts, hidden):
    torch.manual_seed(0)
    mlp = MLP(30, hidden, 4).eval()
    X = as_csr_or_dense(sp.csr_matrix(counts))
    with torch.no_grad():
        a = mlp(rows_to_tensor(X, slice(None)))
        b = mlp(torch.as_tensor(counts, dtype=torch.float32))
    torch.testing.assert_close(a, b)
    n_linear = sum(isinstance(m, (torch.nn.Linear, InputLinear)) for m in mlp.modules())
    assert n_linear == len(hidden) + 1


def test_input_linear_sparse_grad_matches_the_dense_gradient(counts):
    counts = counts.copy()
    counts[4] = 0  # an empty document: an empty bag
    torch.manual_seed(0)
    dense = InputLinear(30, 6)
    sparse = InputLinear(30, 6, sparse_grad=True)
    sparse.load_state_dict(dense.state_dict())
    X = rows_to_tensor(as_csr_or_dense(sp.csr_matrix(counts)), slice(None))
    upstream = torch.randn(20, 6)
    out_dense, out_sparse = dense(X), sparse(X)
    torch.testing.assert_close(out_sparse, out_dense)
    (out_dense * upstream).sum().backward()
    (out_sparse * upstream).sum().backward()
    assert sparse.weight.grad.is_sparse and not dense.weight.grad.is_sparse
    grad = sparse.weight.grad.coalesce()
    present = np.flatnonzero(counts.sum(0))
    np.testing.assert_array_equal(np.unique(grad.indices()[0].numpy()), present)
    torch.testing.assert_close(grad.to_dense(), dense.weight.grad)
    torch.testing.assert_close(sparse.bias.grad, dense.bias.grad)


def test_mlp_output_is_independent_of_the_batch(counts):
    mlp = MLP(30, (8,), 3).eval()
    X = torch.as_tensor(counts, dtype=torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(mlp(X)[:5], mlp(X[:5]))


def test_sampled_dataset_splits_and_batches_rows_from_the_given_stream():
    calls = []

    def sampler(rows, rng):
        calls.append(list(rows))
        return Batch({"rows": torch.as_tensor(rows)}, None, size=len(rows))

    dataset = SampledDataset(_Sized(sampler, 10))
    batches = [b[0]["rows"].tolist() for b in dataset.batches(4, np.random.default_rng(0), False)]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] == calls
    shuffled = [
        r for b in dataset.batches(4, np.random.default_rng(0), True) for r in b[0]["rows"]
    ]
    assert sorted(shuffled) == list(range(10)) and shuffled != list(range(10))
    train, valid = dataset.split(0.25, np.random.default_rng(1))
    assert len(valid) == 3 and len(train) == 7
    assert sorted([*train.rows, *valid.rows]) == list(range(10))
    again = [b.size for b in train.batches(4, np.random.default_rng(0), True)]
    assert again == [4, 3]


class _Sized:
    """A sampler of ``n`` examples."""

    def __init__(self, sampler, n):
        self.sampler, self.n = sampler, n

    def __len__(self):
        return self.n

    def __call__(self, rows, rng):
        return self.sampler(rows, rng)


def test_lazy_adam_moved_to_sknce_optim_and_the_old_path_warns():
    import sknce.nn
    from sknce.optim import LazyAdam

    with pytest.warns(FutureWarning, match="sknce.optim.LazyAdam"):
        assert sknce.nn.LazyAdam is LazyAdam


def test_importing_lazy_adam_from_the_old_path_warns_once_at_the_import_line():
    from sknce.optim import LazyAdam

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from sknce.nn import LazyAdam as moved

    assert moved is LazyAdam
    # Once (importlib's own hasattr probe does not warn), and at the user's line.
    assert [(w.category, w.filename) for w in caught] == [(FutureWarning, __file__)]


def test_lazy_adam_weight_decay_equals_adam_on_dense_gradients():
    from sknce.optim import LazyAdam

    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(4, 3))
    b = torch.nn.Parameter(a.detach().clone())
    grad = torch.randn(4, 3)
    adam = torch.optim.Adam([a], lr=0.1, weight_decay=0.3)
    lazy = LazyAdam([b], lr=0.1, weight_decay=0.3)
    for _ in range(3):
        for param, opt in ((a, adam), (b, lazy)):
            param.grad = grad.clone()
            opt.step()
    torch.testing.assert_close(a, b)


class _Labels:
    """A sampler of the examples of classes ``y`` (a 1-D tensor, as ``LabelSampler``)."""

    def __init__(self, y):
        self.y = torch.as_tensor(y)

    def __len__(self):
        return len(self.y)


def _brute_force_keep(order, labels, n_valid):
    """The rows of ``order`` held out one by one, each only while its class keeps a
    training row; then, short of ``n_valid``, the others in order."""
    left = dict(zip(*np.unique(labels, return_counts=True)))
    held, passed = [], []
    for row in order:
        if left[labels[row]] > 1:
            left[labels[row]] -= 1
            held.append(row)
        else:
            passed.append(row)
    return sorted((held + passed)[:n_valid])


@pytest.mark.parametrize("seed", range(6))
def test_a_split_keeping_classes_is_the_one_by_one_rule_and_the_plain_one_without_singletons(
    seed,
):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 40, size=90)  # classes of 0-7 rows, many of 1 or 2
    dataset = SampledDataset(_Labels(labels))
    for fraction in (0.1, 0.3, 0.6, 0.99):
        train, valid = dataset.split(fraction, np.random.default_rng(seed), keep_classes=True)
        order = np.random.default_rng(seed).permutation(90)
        n_valid = int(np.ceil(fraction * 90))
        assert list(valid.rows) == _brute_force_keep(order, labels, n_valid)
        assert len(valid) == n_valid and sorted([*train.rows, *valid.rows]) == list(range(90))
        if n_valid <= 90 - len(set(labels)):  # rows enough to hold out: every class keeps one
            assert set(labels[train.rows]) == set(labels)
    # with every class of two rows or more, a split that empties none is the plain one
    labels = np.repeat(np.arange(10), 10)
    dataset = SampledDataset(_Labels(labels))
    plain = dataset.split(0.1, np.random.default_rng(seed))
    kept = dataset.split(0.1, np.random.default_rng(seed), keep_classes=True)
    assert set(labels[plain[0].rows]) == set(range(10))
    for a, b in zip(plain, kept):
        np.testing.assert_array_equal(a.rows, b.rows)


def test_a_split_keeping_classes_of_one_row_each_holds_out_as_many_rows():
    dataset = SampledDataset(_Labels(np.arange(20)))
    train, valid = dataset.split(0.2, np.random.default_rng(0), keep_classes=True)
    plain = dataset.split(0.2, np.random.default_rng(0))
    assert len(valid) == 4 and list(valid.rows) == list(plain[1].rows)


def test_a_split_keeping_classes_needs_one_class_per_example():
    dataset = SampledDataset(_Sized(lambda rows, rng: None, 10))
    with pytest.raises(TypeError, match="keep_classes needs a sampler with one class"):
        dataset.split(0.2, np.random.default_rng(0), keep_classes=True)
    sets = SampledDataset(_Labels(torch.zeros(10, 3)))  # a label indicator
    with pytest.raises(TypeError, match="1-D tensor"):
        sets.split(0.2, np.random.default_rng(0), keep_classes=True)
