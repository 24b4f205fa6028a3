"""Compiled CPU kernels of ACEWord2Vec: word2vec's inner loops and the noise draws.

A plain torch loop over (centre, context) batches is slow on a CPU: each step
gathers, multiplies and scatters tiny rows through several dispatcher calls
(figures in ``benchmarks/README.md``). These kernels do what word2vec's C code
does instead: for each example, one pass over the true target and the ``K``
negatives, updating the rows of the input and output embeddings in place with
plain SGD. They run on the numpy views of the torch parameters
(``param.detach().numpy()`` shares memory on the CPU), so the torch module stays
the model that is pickled and queried.

* :func:`sgd_pairs`: skip-gram, one example per pair of an input word and an output
  word (the sampler passes the context word as input and the centre word as output,
  word2vec.c's orientation);
* :func:`sgd_cbow`: CBOW, one example per centre word, the mean of its context
  words' input vectors predicting it (gensim's ``sg=0, cbow_mean=1``);
* :func:`sample_alias`, :func:`sample_uniform`: the noise draws of a batch, from
  Walker alias tables and a counter-based generator seeded by the caller;
* :func:`window_contexts`: the context words of each centre word of a chunk.

The update of an example is exactly ``-lr`` times the gradient of the core loss
(:func:`sknce.losses.negative_sampling`, or :func:`sknce.losses.binary_nce` with
the ``log(K p_N)`` correction) with accidental hits removed
(:func:`sknce.noise.remove_accidental_hits`), each negative's term multiplied by
its weight; for CBOW every context word receives the whole gradient of the mean
(word2vec's convention, which :class:`~sknce.nn.CBOW` reproduces under autograd).
``tests/words/test_words_kernel.py`` checks both against autograd.

Speed: the sigmoid and log-sigmoid of a score come from tables with linear
interpolation on ``[-8, 8]`` (2,048 steps; error below 1e-6), both read at one
table position, and exact formulas beyond, instead of two calls to libm per
target; each output row is read once for both the input gradient and its own
update. Unlike gensim's table, which skips the update of any score beyond ±6, no
update is dropped.

Several threads may run a kernel on different slices of one batch at once: the
kernels hold no GIL (``nogil=True``) and the threads race on shared rows without
locks, as word2vec's and gensim's workers do (Hogwild; Recht et al., 2011), so a
multi-threaded fit is not bit-reproducible.
"""

from __future__ import annotations

import math

import numpy as np

from sknce._jit import njit

__all__ = [
    "bag_means",
    "isin_keys",
    "pair_scores",
    "reinforce_logit_grads",
    "sample_alias",
    "sample_softmax",
    "sample_uniform",
    "scatter_bags",
    "sgd_cbow",
    "sgd_pairs",
    "slot_scores",
    "unique_inverse",
    "window_contexts",
]

#: Beyond this score sigmoid is 0 or 1 in float32 and softplus is linear.
_MAX_SCORE = 30.0

# Sigmoid and log-sigmoid tabulated on [-_RANGE, _RANGE] in _STEPS steps of 1/128.
# Linear interpolation errs by at most h^2/8 max|f''|: 7e-7 for sigmoid, 2e-6 for
# log-sigmoid; both are exact beyond the range, where scores are rare.
_RANGE = 8.0
_STEPS = 2048
_SCALE = _STEPS / (2.0 * _RANGE)
_GRID = np.linspace(-_RANGE, _RANGE, _STEPS + 1)
_SIGMOID = 1.0 / (1.0 + np.exp(-_GRID))
_LOG_SIGMOID = -np.logaddexp(0.0, -_GRID)

# splitmix64 constants (Steele, Lea and Flood, 2014).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_S32, _S11 = np.uint64(32), np.uint64(11)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(nogil=True, cache=True)
def _mix(z):
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@njit(nogil=True, cache=True, fastmath=True)
def _sigmoid(a: float) -> float:
    if a <= -_RANGE or a >= _RANGE:
        a = min(max(a, -_MAX_SCORE), _MAX_SCORE)
        return 1.0 / (1.0 + math.exp(-a))
    x = (a + _RANGE) * _SCALE
    i = int(x)
    return _SIGMOID[i] + (x - i) * (_SIGMOID[i + 1] - _SIGMOID[i])


@njit(nogil=True, cache=True, fastmath=True)
def _log_sigmoid(a: float) -> float:
    if a >= _RANGE:
        return -math.log1p(math.exp(-a))
    if a <= -_RANGE:
        return a - math.log1p(math.exp(a))
    x = (a + _RANGE) * _SCALE
    i = int(x)
    return _LOG_SIGMOID[i] + (x - i) * (_LOG_SIGMOID[i + 1] - _LOG_SIGMOID[i])


@njit(nogil=True, cache=True, fastmath=True, inline="always")
def _sigmoid_and_log(a: float) -> tuple[float, float]:
    """``sigmoid(a)`` and ``log sigmoid(a)`` from one position in the tables.

    Inlined into the kernels' loop: as a call returning a pair it is slower than
    the two table lookups.
    """
    if -_RANGE < a < _RANGE:
        x = (a + _RANGE) * _SCALE
        i = int(x)
        f = x - i
        return (
            _SIGMOID[i] + f * (_SIGMOID[i + 1] - _SIGMOID[i]),
            _LOG_SIGMOID[i] + f * (_LOG_SIGMOID[i + 1] - _LOG_SIGMOID[i]),
        )
    return _sigmoid(a), _log_sigmoid(a)


@njit(nogil=True, cache=True, fastmath=True)
def _train_example(h, grad, w_out, positive, negatives, neg_weights, i, log_kpn, lr, scratch, gs):
    """One example's SGD step on the output rows; ``grad`` receives the input gradient.

    ``h`` is the example's input vector (a row of ``w_in``, or the mean of several);
    ``scratch`` (int64) and ``gs`` (float32) hold ``K + 1`` entries. All scores are
    computed before any output row moves, and a row that occurs several times (a
    repeated negative) is moved once by the sum of its coefficients, so the step is
    exactly ``-lr`` times the gradient of the example's loss. (word2vec updates each
    row before scoring the next: the same unless a row repeats.) Scoring the
    ``K + 1`` targets first also lets their dot products run side by side; each row
    is then read once for both the input gradient and its own update. Returns the
    example's loss before the update.
    """
    dim = h.shape[0]
    weighted = neg_weights.shape[0] > 0
    loss = 0.0
    n_rows = 0
    for j in range(negatives.shape[1] + 1):
        if j == 0:
            target = positive
            weight = 1.0
        else:
            target = negatives[i, j - 1]
            weight = neg_weights[i, j - 1] if weighted else 1.0
            if target == positive or weight == 0.0:
                continue
        v = w_out[target]
        score = np.float32(0.0)
        for k in range(dim):
            score += h[k] * v[k]
        a = score - log_kpn[target]
        sig, log_sig = _sigmoid_and_log(a)
        if j == 0:
            # -log sigma(a) for the true target
            loss -= log_sig
            g = (1.0 - sig) * lr
        else:
            # -log(1 - sigma(a)) = -log sigma(-a) = a - log sigma(a) for a negative
            loss += weight * (a - log_sig)
            g = -sig * lr * weight
        row = n_rows
        for t in range(n_rows):
            if scratch[t] == target:
                row = t
        if row == n_rows:
            scratch[row] = target
            gs[row] = 0.0
            n_rows += 1
        gs[row] += g
    for k in range(dim):
        grad[k] = 0.0
    # one pass per distinct row: its input-gradient term read before it moves
    for t in range(n_rows):
        v = w_out[scratch[t]]
        g = gs[t]
        for k in range(dim):
            grad[k] += g * v[k]
            v[k] += g * h[k]
    return loss


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_pairs(
    w_in: np.ndarray,
    w_out: np.ndarray,
    centres: np.ndarray,
    contexts: np.ndarray,
    negatives: np.ndarray,
    neg_weights: np.ndarray,
    log_kpn: np.ndarray,
    lr_start: float,
    lr_end: float,
) -> float:
    """Apply one skip-gram SGD step per (centre, context) pair in place; return the summed loss.

    For pair ``i`` with centre ``t`` and targets ``y_0`` (the context, label 1) and
    ``y_1..y_K`` (negatives, label 0), the scores are
    ``a_j = u_t . v_{y_j} - log_kpn[y_j]`` and the loss is
    ``softplus(-a_0) + sum_j m_j softplus(a_j)``, where ``m_j`` is the negative's
    weight, and 0 for a negative equal to the context (an accidental hit).

    Parameters
    ----------
    w_in, w_out : float32 arrays of shape (n_words, dim)
        Input (centre) and output (context) embeddings, updated in place.
    centres, contexts : int64 arrays of shape (n_pairs,)
    negatives : int64 array of shape (n_pairs, K)
    neg_weights : float32 array of shape (n_pairs, K) or (0, K)
        Weight of each negative's term; an empty array weights every negative 1
        (plain negative sampling).
    log_kpn : float32 array of shape (n_words,)
        ``log(K p_N(w))`` for the NCE objective; zeros for negative sampling.
    lr_start, lr_end : float
        Learning rate of the first pair and (linearly interpolated) the last.

    Returns
    -------
    float
        The summed loss of the pairs, each evaluated before its own update.
    """
    n_pairs = centres.shape[0]
    dim = w_in.shape[1]
    grad = np.empty(dim, dtype=np.float32)
    scratch = np.empty(negatives.shape[1] + 1, dtype=np.int64)
    gs = np.empty(negatives.shape[1] + 1, dtype=np.float32)
    total = 0.0
    for i in range(n_pairs):
        lr = lr_start + (lr_end - lr_start) * (i / max(n_pairs - 1, 1))
        u = w_in[centres[i]]
        total += _train_example(
            u, grad, w_out, contexts[i], negatives, neg_weights, i, log_kpn, lr, scratch, gs
        )
        for k in range(dim):
            u[k] += grad[k]
    return total


@njit(nogil=True, cache=True, fastmath=True, error_model="numpy")
def sgd_cbow(
    w_in: np.ndarray,
    w_out: np.ndarray,
    bag_ptr: np.ndarray,
    bag_words: np.ndarray,
    centres: np.ndarray,
    negatives: np.ndarray,
    neg_weights: np.ndarray,
    log_kpn: np.ndarray,
    lr_start: float,
    lr_end: float,
) -> float:
    """Apply one CBOW SGD step per centre word in place; return the summed loss.

    Example ``i`` predicts the centre word ``centres[i]`` from the mean ``h`` of the
    input vectors of its context words ``bag_words[bag_ptr[i]:bag_ptr[i + 1]]``; the
    targets, scores and loss are those of :func:`sgd_pairs` with ``h`` in place of
    ``u_t``. Each context word's input vector then moves by the whole gradient of
    ``h`` (word2vec's and gensim's ``cbow_mean=1`` update).

    Parameters
    ----------
    w_in, w_out : float32 arrays of shape (n_words, dim)
        Updated in place.
    bag_ptr : int64 array of shape (n_examples + 1,)
        Example ``i``'s context words are ``bag_words[bag_ptr[i]:bag_ptr[i + 1]]``
        (at least one).
    bag_words : int64 array of shape (n_context_words,)
    centres : int64 array of shape (n_examples,)
    negatives : int64 array of shape (n_examples, K)
    neg_weights : float32 array of shape (n_examples, K) or (0, K)
    log_kpn : float32 array of shape (n_words,)
    lr_start, lr_end : float

    Returns
    -------
    float
    """
    n = centres.shape[0]
    dim = w_in.shape[1]
    h = np.empty(dim, dtype=np.float32)
    grad = np.empty(dim, dtype=np.float32)
    scratch = np.empty(negatives.shape[1] + 1, dtype=np.int64)
    gs = np.empty(negatives.shape[1] + 1, dtype=np.float32)
    total = 0.0
    for i in range(n):
        lo, hi = bag_ptr[i], bag_ptr[i + 1]
        if hi <= lo:
            continue
        lr = lr_start + (lr_end - lr_start) * (i / max(n - 1, 1))
        h[:] = 0.0
        for r in range(lo, hi):
            row = w_in[bag_words[r]]
            for k in range(dim):
                h[k] += row[k]
        inv = np.float32(1.0 / (hi - lo))
        for k in range(dim):
            h[k] *= inv
        total += _train_example(
            h, grad, w_out, centres[i], negatives, neg_weights, i, log_kpn, lr, scratch, gs
        )
        for r in range(lo, hi):
            row = w_in[bag_words[r]]
            for k in range(dim):
                row[k] += grad[k]
    return total


@njit(nogil=True, cache=True)
def window_contexts(
    ids: np.ndarray, docs: np.ndarray, reach: np.ndarray, window: int, start: int, stop: int
) -> tuple[np.ndarray, np.ndarray]:
    """The context words of the centre words ``start..stop - 1`` of a chunk.

    Centre ``i``'s contexts are the words at positions ``i - reach[i]`` to
    ``i + reach[i]`` (``reach[i] <= window``) of the same document, ``i``
    excluded, left to right (gensim's order).

    Parameters
    ----------
    ids : int64 array of shape (n,)
        The chunk's kept word ids.
    docs : int array of shape (n,)
        The document of each position.
    reach : int64 array of shape (n,)
        Each centre word's window.
    window : int
        The largest ``reach``.
    start, stop : int
        The centre positions.

    Returns
    -------
    contexts : int64 array
        The contexts of every centre, centre by centre.
    counts : int64 array of shape (stop - start,)
        Each centre word's number of contexts.
    """
    n = ids.shape[0]
    counts = np.zeros(stop - start, dtype=np.int64)
    contexts = np.empty((stop - start) * 2 * window, dtype=np.int64)
    m = 0
    for i in range(start, stop):
        b = reach[i]
        doc = docs[i]
        before = m
        for j in range(max(i - b, 0), min(i + b + 1, n)):
            if j != i and docs[j] == doc:
                contexts[m] = ids[j]
                m += 1
        counts[i - start] = m - before
    return contexts[:m].copy(), counts


@njit(nogil=True, cache=True, fastmath=True)
def pair_scores(
    w_in: np.ndarray, w_out: np.ndarray, centres: np.ndarray, targets: np.ndarray
) -> np.ndarray:
    """Skip-gram scores ``u_t . v_y`` of (centre, target) pairs.

    Parameters
    ----------
    w_in, w_out : float32 arrays of shape (n_words, dim)
    centres, targets : int64 arrays of shape (n_pairs,)

    Returns
    -------
    float32 array of shape (n_pairs,)
    """
    out = np.empty(centres.shape[0], dtype=np.float32)
    for i in range(centres.shape[0]):
        u = w_in[centres[i]]
        v = w_out[targets[i]]
        score = np.float32(0.0)
        for k in range(u.shape[0]):
            score += u[k] * v[k]
        out[i] = score
    return out


@njit(nogil=True, cache=True)
def sample_alias(accept: np.ndarray, alias: np.ndarray, n: int, k: int, seed: int) -> np.ndarray:
    """Draw an ``(n, k)`` array of categories from Walker alias tables.

    Each draw takes one 64-bit number of a splitmix64 stream started at ``seed``:
    its high half picks a column uniformly (Lemire's multiply-shift), its low half
    is the coin compared with ``accept[column]``. The same seed gives the same
    draws on every machine.

    Parameters
    ----------
    accept : float64 array of shape (n_categories,)
    alias : int64 array of shape (n_categories,)
        The tables of :func:`sknce.noise.alias_tables`.
    n, k : int
    seed : int
        A non-negative 63-bit integer.

    Returns
    -------
    int64 array of shape (n, k)
    """
    out = np.empty(n * k, dtype=np.int64)
    n_categories = np.uint64(accept.shape[0])
    state = np.uint64(seed)
    for i in range(n * k):
        state += _GOLDEN
        z = _mix(state)
        column = np.int64(((z >> _S32) * n_categories) >> _S32)
        # via int64: x86 converts signed integers to float in one instruction
        coin = np.float64(np.int64(z & _LOW32)) * (1.0 / 4294967296.0)
        out[i] = column if coin < accept[column] else alias[column]
    return out.reshape(n, k)


@njit(nogil=True, cache=True)
def sample_uniform(n: int, seed: int) -> np.ndarray:
    """``n`` uniform float64 numbers in [0, 1) (53 random bits each) from ``seed``."""
    out = np.empty(n, dtype=np.float64)
    state = np.uint64(seed)
    for i in range(n):
        state += _GOLDEN
        out[i] = np.float64(_mix(state) >> _S11) * (1.0 / 9007199254740992.0)
    return out


# --- the generator's step (ACE) ---------------------------------------------------------
# The generator's matrix products run in torch (MKL, faster than these loops); the
# kernels below do the rest of its step, which in torch takes ~50 small operations a batch.


@njit(nogil=True, cache=True)
def unique_inverse(words: np.ndarray, scratch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct words in order of first appearance, and each word's position among them.

    O(n), with ``scratch`` an int64 array of -1 over the vocabulary, left as found.
    """
    n = words.shape[0]
    inverse = np.empty(n, dtype=np.int64)
    unique = np.empty(n, dtype=np.int64)
    n_unique = 0
    for i in range(n):
        word = words[i]
        row = scratch[word]
        if row < 0:
            row = n_unique
            scratch[word] = row
            unique[row] = word
            n_unique += 1
        inverse[i] = row
    for j in range(n_unique):
        scratch[unique[j]] = -1
    return unique[:n_unique].copy(), inverse


@njit(nogil=True, cache=True, fastmath=True)
def bag_means(
    w: np.ndarray, starts: np.ndarray, ends: np.ndarray, words: np.ndarray
) -> np.ndarray:
    """Mean of the rows ``w[words[starts[i]:ends[i]]]`` for each bag ``i``."""
    n = starts.shape[0]
    dim = w.shape[1]
    out = np.zeros((n, dim), dtype=np.float32)
    for i in range(n):
        lo, hi = starts[i], ends[i]
        for r in range(lo, hi):
            row = w[words[r]]
            for k in range(dim):
                out[i, k] += row[k]
        if hi > lo + 1:
            inv = np.float32(1.0 / (hi - lo))
            for k in range(dim):
                out[i, k] *= inv
    return out


@njit(nogil=True, cache=True, fastmath=True)
def scatter_bags(
    w: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    words: np.ndarray,
    grads: np.ndarray,
    alpha: float,
) -> None:
    """``w[words[r]] += alpha * grads[i]`` for every word ``r`` of every bag ``i``, in place."""
    dim = w.shape[1]
    for i in range(starts.shape[0]):
        for r in range(starts[i], ends[i]):
            row = w[words[r]]
            for k in range(dim):
                row[k] += alpha * grads[i, k]


@njit(nogil=True, cache=True, fastmath=True)
def sample_softmax(
    logits: np.ndarray, log_pn: np.ndarray, slot_rows: np.ndarray, uniforms: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sampling-importance-resampling from the generator's candidate logits.

    Row ``u``'s distribution is ``q_u = softmax(logits[u] - log_pn)``; slot ``s``
    draws from row ``slot_rows[s]`` by inverse-CDF with ``uniforms[s]`` (the first
    candidate whose normalised cumulative probability reaches it), in float64.

    Returns
    -------
    picks : int64 array of shape (n_slots,)
        Candidate position of each slot's draw.
    q, log_q : float32 arrays of shape (n_rows, n_candidates)
    log_q_picks : float32 array of shape (n_slots,)
    entropy : float32 array of shape (n_rows,)
    """
    n_rows, n_candidates = logits.shape
    q = np.empty((n_rows, n_candidates), dtype=np.float32)
    log_q = np.empty((n_rows, n_candidates), dtype=np.float32)
    cdf = np.empty((n_rows, n_candidates), dtype=np.float64)
    entropy = np.empty(n_rows, dtype=np.float32)
    shifted = np.empty(n_candidates, dtype=np.float64)
    for u in range(n_rows):
        top = -np.inf
        for j in range(n_candidates):
            shifted[j] = np.float64(logits[u, j]) - log_pn[j]
            top = max(top, shifted[j])
        total = 0.0
        for j in range(n_candidates):
            shifted[j] -= top
            p = math.exp(shifted[j])
            q[u, j] = p  # unnormalised here
            total += p
            cdf[u, j] = total
        log_total = math.log(total)
        h = 0.0
        for j in range(n_candidates):
            lq = shifted[j] - log_total
            p = q[u, j] / total
            q[u, j] = p
            log_q[u, j] = lq
            h -= p * lq
            cdf[u, j] /= total
        entropy[u] = h
    n_slots = slot_rows.shape[0]
    picks = np.empty(n_slots, dtype=np.int64)
    log_q_picks = np.empty(n_slots, dtype=np.float32)
    for s in range(n_slots):
        u = slot_rows[s]
        value = max(uniforms[s], 1e-9)
        lo, hi = 0, n_candidates - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cdf[u, mid] >= value:
                hi = mid
            else:
                lo = mid + 1
        picks[s] = lo
        log_q_picks[s] = log_q[u, lo]
    return picks, q, log_q, log_q_picks, entropy


@njit(nogil=True, cache=True)
def isin_keys(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``values[i] in keys`` for each ``i`` (non-negative int64), by an open-addressing set.

    O(len(keys) + len(values)), cheaper a batch than sorting the keys first.
    """
    size = 1
    while size < 2 * keys.shape[0] + 1:
        size *= 2
    mask = size - 1
    table = np.full(size, -1, dtype=np.int64)
    for key in keys:
        slot = (key * 0x9E3779B1) & mask
        while table[slot] != -1 and table[slot] != key:
            slot = (slot + 1) & mask
        table[slot] = key
    out = np.empty(values.shape[0], dtype=np.bool_)
    for i in range(values.shape[0]):
        value = values[i]
        slot = (value * 0x9E3779B1) & mask
        found = False
        while table[slot] != -1:
            if table[slot] == value:
                found = True
                break
            slot = (slot + 1) & mask
        out[i] = found
    return out


@njit(nogil=True, cache=True, fastmath=True)
def slot_scores(
    w_in: np.ndarray,
    w_out: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    words: np.ndarray,
    slot_examples: np.ndarray,
    slot_targets: np.ndarray,
    log_kpn: np.ndarray,
) -> np.ndarray:
    """The discriminator's logits ``h_i . v_w - log_kpn[w]`` of each slot's (example, word).

    ``h_i`` is the mean input vector of example ``i``'s bag
    ``words[starts[i]:ends[i]]`` (one word for skip-gram), computed once for
    consecutive slots of one example.
    """
    dim = w_in.shape[1]
    h = np.zeros(dim, dtype=np.float32)
    out = np.empty(slot_examples.shape[0], dtype=np.float32)
    last = -1
    for s in range(slot_examples.shape[0]):
        i = slot_examples[s]
        if i != last:
            lo, hi = starts[i], ends[i]
            h[:] = 0.0
            for r in range(lo, hi):
                row = w_in[words[r]]
                for k in range(dim):
                    h[k] += row[k]
            inv = np.float32(1.0 / max(hi - lo, 1))
            for k in range(dim):
                h[k] *= inv
            last = i
        v = w_out[slot_targets[s]]
        score = np.float32(0.0)
        for k in range(dim):
            score += h[k] * v[k]
        out[s] = score - log_kpn[slot_targets[s]]
    return out


@njit(nogil=True, cache=True, fastmath=True)
def reinforce_logit_grads(
    q: np.ndarray,
    log_q: np.ndarray,
    entropy: np.ndarray,
    slot_rows: np.ndarray,
    picks: np.ndarray,
    rewards: np.ndarray,
    entropy_weight: float,
) -> np.ndarray:
    r"""Gradient, with respect to the candidate logits, of the REINFORCE surrogate loss.

    The loss is :math:`-\sum_s r_s \log q_{u_s}(j_s) - \beta \sum_s H(q_{u_s})` over
    the kept slots ``s`` (row ``u_s``, pick ``j_s``, reward ``r_s``); its gradient
    with respect to row ``u``'s logits is
    :math:`\sum_{s \in u} r_s (q_u - e_{j_s}) + \beta n_u q_u (\log q_u + H_u)`.

    Parameters
    ----------
    q, log_q : float32 arrays of shape (n_rows, n_candidates)
    entropy : float32 array of shape (n_rows,)
    slot_rows, picks : int64 arrays of shape (n_slots,)
        The kept slots only.
    rewards : float32 array of shape (n_slots,)
    entropy_weight : float

    Returns
    -------
    float32 array of shape (n_rows, n_candidates)
    """
    n_rows, n_candidates = q.shape
    grads = np.zeros((n_rows, n_candidates), dtype=np.float32)
    reward_sum = np.zeros(n_rows, dtype=np.float32)
    count = np.zeros(n_rows, dtype=np.float32)
    for s in range(slot_rows.shape[0]):
        u = slot_rows[s]
        reward_sum[u] += rewards[s]
        count[u] += 1.0
        grads[u, picks[s]] -= rewards[s]
    for u in range(n_rows):
        if count[u] == 0.0:
            continue
        r = reward_sum[u]
        for j in range(n_candidates):
            grads[u, j] += r * q[u, j]
        if entropy_weight != 0.0:
            bonus = np.float32(entropy_weight) * count[u]
            for j in range(n_candidates):
                grads[u, j] += bonus * q[u, j] * (log_q[u, j] + entropy[u])
    return grads
