"""The CRF's sum-product quantities and n-best decoding on NumPy arrays, without torch: the
forward and backward log-space recursions, log Z, the posterior marginals and list Viterbi, each
equal to its :class:`crftag.crf.crf.CRF` counterpart so that the torch-free runtime
(:mod:`crftag.runtime`) gives every output the torch path gives.

Shapes as in :mod:`crftag.crf.arrays`: emissions (B, T, K) float32 or float64, lengths (B,)
int64 (each in 1..T), transitions (K, K) indexed [from, to], start and end (K,), with -inf
wherever a move, a first or a last tag is not allowed. Positions at or past a row's length are
padding and may hold anything; no result reads them.

Precision: the sum-product quantities (alphas, betas, log Z, marginals) are computed and returned
in float64 whatever the emissions' dtype. One return type for every input, exact sums for long
sentences, and against the torch CRF on float32 emissions they differ only by torch's own float32
rounding (about 1e-6). n-best decoding instead keeps the emissions' dtype and adds in the order
:meth:`CRF.decode_nbest` does, so its scores are bit-identical to the torch path's and rank the
paths the same way.
"""

from __future__ import annotations

import numpy as np

from crftag.crf.arrays import running_counts
from crftag.crf.choice import compiled_loops

__all__ = [
    "log_alphas_arrays",
    "log_betas_arrays",
    "log_partition_arrays",
    "logsumexp",
    "marginals_arrays",
    "nbest_arrays",
    "path_scores_arrays",
]


def logsumexp(scores: np.ndarray, axis: int) -> np.ndarray:
    """log(sum(exp(scores))) over ``axis``: -inf, with no warning, where every input is -inf.

    Shifting by the largest finite value keeps exp in range; where there is none the shift is 0
    so that no ``-inf - -inf`` (nan) is formed.
    """
    maximum = np.max(scores, axis=axis, keepdims=True)
    maximum = np.where(np.isfinite(maximum), maximum, 0.0)
    with np.errstate(divide="ignore"):  # log(0) = -inf is the answer for an impossible set
        total = np.log(np.exp(scores - maximum).sum(axis=axis))
    return total + np.squeeze(maximum, axis=axis)


def _checked(emissions, lengths, transitions, start, end, dtype=np.float64):
    """The inputs as C-contiguous arrays of ``dtype`` (lengths int64), after checking shapes."""
    emissions = np.asarray(emissions)
    if emissions.ndim != 3 or 0 in emissions.shape:
        raise ValueError(f"expected non-empty emissions of shape (B, T, K), got {emissions.shape}")
    batch_size, length, num_tags = emissions.shape
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if lengths.shape != (batch_size,):
        raise ValueError(f"expected lengths of shape ({batch_size},), got {lengths.shape}")
    if lengths.min() < 1 or lengths.max() > length:
        raise ValueError(f"expected every length in 1..{length}, got {lengths.tolist()}")
    arrays = [np.ascontiguousarray(emissions, dtype=dtype)]
    for name, value, shape in (
        ("transitions", transitions, (num_tags, num_tags)),
        ("start", start, (num_tags,)),
        ("end", end, (num_tags,)),
    ):
        value = np.ascontiguousarray(value, dtype=dtype)
        if value.shape != shape:
            raise ValueError(f"expected {name} of shape {shape}, got {value.shape}")
        arrays.append(value)
    emissions, transitions, start, end = arrays
    return emissions, lengths, transitions, start, end


def log_alphas_arrays(emissions, lengths, transitions, start, end) -> np.ndarray:
    """alphas[b, t, k]: log-sum of the scores of all prefixes y_1..y_t with y_t = k, the start
    transition included, the end one not. Returns (B, T, K) float64; past a row's end its last
    value is carried forward, as :meth:`CRF.log_alphas` does.
    """
    emissions, lengths, transitions, start, _ = _checked(
        emissions, lengths, transitions, start, end
    )
    batch_size, length, num_tags = emissions.shape
    alphas = np.empty((batch_size, length, num_tags))
    alphas[:, 0] = start + emissions[:, 0]
    for t in range(1, length):
        alphas[:, t] = alphas[:, t - 1]
        running = t < lengths  # only these rows read position t: padding may hold anything
        previous = alphas[running, t - 1]  # (n, K from)
        # (n, K from, 1) + (K from, K to) -> sum over from
        moved = logsumexp(previous[:, :, None] + transitions, axis=1)
        alphas[running, t] = moved + emissions[running, t]
    return alphas


def log_betas_arrays(emissions, lengths, transitions, start, end) -> np.ndarray:
    """betas[b, t, k]: log-sum of the scores of all suffixes after position t given y_t = k,
    the end transition included. Returns (B, T, K) float64; from each row's last token on it is
    ``end``, as in :meth:`CRF.log_betas`.
    """
    emissions, lengths, transitions, _, end = _checked(emissions, lengths, transitions, start, end)
    batch_size, length, num_tags = emissions.shape
    betas = np.empty((batch_size, length, num_tags))
    betas[:] = end  # where t + 1 is padding, t is the last token: only the end transition
    for t in range(length - 2, -1, -1):
        running = t + 1 < lengths
        following = emissions[running, t + 1] + betas[running, t + 1]  # (n, K to)
        # (K from, K to) + (n, 1, K to) -> sum over to
        betas[running, t] = logsumexp(transitions + following[:, None, :], axis=2)
    return betas


def log_partition_arrays(emissions, lengths, transitions, start, end) -> np.ndarray:
    """log Z (B,) float64, by the scaled forward algorithm: compiled where built."""
    return _forward_backward(emissions, lengths, transitions, start, end, with_marginals=False)[0]


def marginals_arrays(emissions, lengths, transitions, start, end) -> np.ndarray:
    """p(y_t = k | x) (B, T, K) float64, 0 past each row's end, by the scaled forward-backward:
    compiled where built."""
    return _forward_backward(emissions, lengths, transitions, start, end, with_marginals=True)[1]


def _forward_backward(emissions, lengths, transitions, start, end, with_marginals):
    """(log Z (B,), marginals (B, T, K) or None), in float64: by the scaled recursions, and, for
    the rows where they underflow (a step whose scores spread by more than exp's float64 range,
    about 745, so every path reaching it scores 0), in log space, which has no such limit."""
    arrays = _checked(emissions, lengths, transitions, start, end)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # rows redone below
        log_z, marginals = _scaled_forward_backward(*arrays, with_marginals)
    broken = ~np.isfinite(log_z)
    if with_marginals:
        broken |= ~np.isfinite(marginals).all(axis=(1, 2))
    if broken.any():
        emissions, lengths, transitions, start, end = arrays
        rows = np.flatnonzero(broken)
        alphas = log_alphas_arrays(emissions[rows], lengths[rows], transitions, start, end)
        log_z[rows] = logsumexp(alphas[:, -1] + end, axis=1)  # alphas carry past the end
        if with_marginals:
            betas = log_betas_arrays(emissions[rows], lengths[rows], transitions, start, end)
            with np.errstate(invalid="ignore"):  # -inf - -inf: a row with no allowed path
                fixed = np.exp(alphas + betas - log_z[rows, None, None])
            real = np.arange(emissions.shape[1]) < lengths[rows, None]  # (n, T)
            marginals[rows] = np.where(real[:, :, None], fixed, 0.0)
    return log_z, marginals


def _scaled_forward_backward(emissions, lengths, transitions, start, end, with_marginals):
    """:func:`_forward_backward` by the scaled recursions alone, on checked arrays."""
    arrays = (emissions, lengths, transitions, start, end)
    loops = compiled_loops()
    if loops is None:
        return _forward_backward_numpy(*arrays, with_marginals=with_marginals)
    emissions, lengths, transitions, start, end = arrays
    batch_size, length, num_tags = emissions.shape
    log_z = np.empty(batch_size)
    marginals = np.empty((batch_size, length, num_tags) if with_marginals else (0,))
    mode = 1 if with_marginals else 0  # mode 2 would add transition counts, not needed here
    loops.forward_backward(
        emissions,
        lengths,
        transitions,
        start,
        end,
        log_z,
        marginals,
        np.empty(0),
        batch_size,
        length,
        num_tags,
        mode,
    )
    return log_z, marginals if with_marginals else None


def _finite_max(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """The largest finite value (over ``axis``, kept as a length-1 axis), 0 where there is none."""
    finite = np.where(np.isfinite(values), values, -np.inf)
    top = np.max(finite, axis=axis, keepdims=axis is not None)
    return np.where(np.isfinite(top), top, 0.0)


def _forward_backward_numpy(emissions, lengths, transitions, start, end, with_marginals):
    """The compiled kernel's scaled forward-backward (Rabiner 1989) in NumPy, float64.

    alpha_t = (alpha_{t-1} W) * s_t / norm_t with W = exp(transitions - max) and s_t =
    exp(e_t - max_k e_t): one (n, K) x (K, K) product a step, and log Z is the sum of the logs
    of the norms and shifts. Rows run longest first, so at step t the running rows are a prefix
    ``[:running[t]]`` and padding is never read.
    """
    batch_size, length, num_tags = emissions.shape
    order = np.argsort(-lengths, kind="stable")
    emissions, lengths = emissions[order], lengths[order]
    running = running_counts(lengths.tolist(), length)
    active = np.arange(length) < lengths[:, None]  # (B, T)
    shift = _finite_max(transitions)
    weights = np.exp(transitions - shift)  # (K, K), forbidden moves are 0
    end_shift = _finite_max(end)
    end_weights = np.exp(end - end_shift)  # (K,)
    with np.errstate(invalid="ignore", over="ignore"):  # padding may hold anything
        tops = _finite_max(emissions, axis=2)  # (B, T, 1)
        scaled = np.exp(emissions - tops).transpose(1, 0, 2)  # (T, B, K) views, time-major
    first = start + emissions[:, 0]  # (B, K), log space
    first_top = _finite_max(first, axis=1)  # (B, 1)
    alphas = np.zeros((length, batch_size, num_tags))  # each real row sums to 1
    norms = np.ones((length, batch_size, 1))  # 1 on padding, so its log adds nothing
    alphas[0] = np.exp(first - first_top)
    norms[0] = alphas[0].sum(axis=1, keepdims=True)
    alphas[0] /= norms[0]
    for t in range(1, length):
        n = running[t]
        step = alphas[t, :n]
        np.matmul(alphas[t - 1, :n], weights, out=step)
        step *= scaled[t, :n]
        norms[t, :n] = step.sum(axis=1, keepdims=True)
        step /= norms[t, :n]
    rows = np.arange(batch_size)
    last = alphas[lengths - 1, rows]  # (B, K)
    shifts = np.where(active[:, 1:], tops[:, 1:, 0] + shift, 0.0).sum(axis=1)
    log_z = (
        first_top[:, 0]
        + np.log(norms[:, :, 0]).sum(axis=0)
        + shifts
        + np.log(last @ end_weights)
        + end_shift
    )
    inverse = np.empty_like(order)
    inverse[order] = rows
    if not with_marginals:
        return log_z[inverse], None
    betas = _scaled_betas(scaled, weights, end_weights, running)
    joint = (alphas * betas).transpose(1, 0, 2)  # (B, T, K), proportional to the marginals
    totals = np.where(active[:, :, None], joint.sum(axis=2, keepdims=True), 1.0)
    marginals = np.where(active[:, :, None], joint / totals, 0.0)
    return log_z[inverse], marginals[inverse]


def _scaled_betas(scaled, weights, end_weights, running) -> np.ndarray:
    """The backward vectors (T, B, K) of the scaled recursion, each step normalised to sum 1
    (any positive factor would do: the marginals divide by sum_k alpha_t(k) beta_t(k))."""
    length, batch_size, num_tags = scaled.shape
    betas = np.empty((length, batch_size, num_tags))
    betas[:] = end_weights / end_weights.sum()  # at each last token only the end follows
    weights_t = weights.T
    for t in range(length - 2, -1, -1):
        n = running[t + 1]  # rows that go on after t
        if n == 0:
            continue
        step = betas[t, :n]
        np.matmul(scaled[t + 1, :n] * betas[t + 1, :n], weights_t, out=step)
        step /= step.sum(axis=1, keepdims=True)
    return betas


def path_scores_arrays(emissions, lengths, transitions, start, end, paths) -> np.ndarray:
    """The scores (B, n) of given tag sequences, paths (B, n, T) int64, summed in float64: the
    exact counterpart of :func:`log_partition_arrays` for a sequence's probability,
    exp(score - log Z), however long the sentence. Positions past a row's end are ignored."""
    emissions, lengths, transitions, start, end = _checked(
        emissions, lengths, transitions, start, end
    )
    batch_size, length, _ = emissions.shape
    paths = np.asarray(paths, dtype=np.int64)
    count = paths.shape[1]
    inside = np.arange(length)[None, None, :] < lengths[:, None, None]  # (B, 1, T)
    rows = np.arange(batch_size)[:, None, None]
    emitted = emissions[rows, np.arange(length)[None, None, :], paths]  # (B, n, T)
    total = np.where(inside, emitted, 0.0).sum(2) + start[paths[:, :, 0]]
    if length > 1:
        moved = transitions[paths[:, :, :-1], paths[:, :, 1:]]  # (B, n, T - 1)
        total += np.where(inside[:, :, 1:], moved, 0.0).sum(2)
    last = np.take_along_axis(
        paths, np.broadcast_to((lengths - 1)[:, None, None], (batch_size, count, 1)), 2
    )
    return total + end[last[:, :, 0]]


def nbest_arrays(emissions, lengths, transitions, start, end, n) -> tuple[np.ndarray, np.ndarray]:
    """The n highest-scoring distinct tag sequences of each row (list Viterbi), as
    :meth:`CRF.decode_nbest` gives them.

    Returns paths (B, n, T) int64, 0 past each row's end, and their scores (B, n) in the
    emissions' dtype (float32 or float64; other dtypes run in float64), in decreasing order.
    The additions run in torch's order, so the scores are bit-identical to the torch path's.
    Where a row has fewer than n allowed paths the missing ones score -inf and their paths are
    all 0. Equal scores are ranked by the lower (tag, rank) index; torch's topk leaves the order
    of ties unspecified, so the two agree wherever scores differ.
    """
    if n < 1:
        raise ValueError(f"expected n >= 1, got {n}")
    dtype = np.asarray(emissions).dtype
    dtype = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
    emissions, lengths, transitions, start, end = _checked(
        emissions, lengths, transitions, start, end, dtype
    )
    batch_size, length, num_tags = emissions.shape
    # best[b, j, r]: the r-th best score of a prefix ending in tag j.
    best = np.full((batch_size, num_tags, n), -np.inf, dtype=dtype)
    best[:, :, 0] = start + emissions[:, 0]
    # A back-pointer is a flat index  from_tag * n + from_rank  into the previous step.
    identity = np.arange(num_tags * n).reshape(1, num_tags, n)
    backpointers = []
    for t in range(1, length):
        # (B, K from, n, 1) + (1, K from, 1, K to) -> (B, K from * n, K to)
        candidates = (best[:, :, :, None] + transitions[None, :, None, :]).reshape(
            batch_size, num_tags * n, num_tags
        )
        index = _top_indices(candidates, n)  # (B, n, K to)
        top = np.take_along_axis(candidates, index, axis=1)
        with np.errstate(invalid="ignore", over="ignore"):  # padding may hold anything
            step = top.transpose(0, 2, 1) + emissions[:, t, :, None]  # (B, K to, n)
        running = (t < lengths)[:, None, None]
        best = np.where(running, step, best)
        backpointers.append(np.where(running, index.transpose(0, 2, 1), identity))
    final = (best + end[None, :, None]).reshape(batch_size, num_tags * n)
    flat = _top_indices(final, n)  # (B, n)
    scores = np.take_along_axis(final, flat, axis=1)
    path = [flat // n]
    for pointers in reversed(backpointers):
        flat = np.take_along_axis(pointers.reshape(batch_size, num_tags * n), flat, axis=1)
        path.append(flat // n)
    path.reverse()
    paths = np.stack(path, axis=2)  # (B, n, T)
    padding = np.arange(length) >= lengths[:, None]  # (B, T)
    paths[padding[:, None, :] | np.isneginf(scores)[:, :, None]] = 0
    return paths, scores


def _top_indices(values: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n largest entries along axis 1, largest first, lower index first on ties."""
    return np.argsort(-values, axis=1, kind="stable")[:, :n]
