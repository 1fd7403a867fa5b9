"""The compiled time loops of the fused BiLSTM layer (crftag/runtime/_lstm.c): its float activations
against float64 truth, shapes that reach every branch of its blocked matrix product against
``nn.LSTM``, float32 against float64, thread counts, bad arguments, and which inputs take it;
each on every instruction-set path this CPU runs (tests/runtime/test_isa_paths.py compares the
paths with each other)."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from crftag.nn import fused_lstm
from crftag.nn.fused_lstm import bilstm_layer
from tests.nn.test_fused_lstm import gradients, layer_weights, packed_lstm

pytestmark = pytest.mark.usefixtures("isa_path")


def activated(pre_activations: torch.Tensor, hidden: int) -> torch.Tensor:
    """The kernel's activated gates for one row whose every step has these pre-activations
    (steps, 2, 4H) and no recurrent weights, so each gate is its activation alone."""
    steps = pre_activations.size(0)
    gates = pre_activations.reshape(steps, 8 * hidden).clone()
    cells = gates.new_empty(steps, 2 * hidden)
    states = torch.empty_like(cells)
    zeros = gates.new_zeros(2, hidden, 4 * hidden)
    lengths = torch.tensor([steps])
    fused_lstm._lstm.forward(
        gates.numpy(), cells.numpy(), states.numpy(), lengths.numpy(), zeros.numpy(), 1, hidden, 1
    )
    return gates.view(steps, 2, 4 * hidden)


def test_float_sigmoid_and_tanh_are_exact_to_float_rounding():
    hidden = 64
    values = torch.cat(
        [torch.linspace(-100, 100, 20_001), torch.tensor([0.0, -0.0, 1e-30, -1e-7, 0.625])]
    )
    values = torch.cat([values, values.new_zeros(-values.numel() % (8 * hidden))])
    pre = values.view(-1, 2, 4 * hidden)
    got = activated(pre, hidden).double()
    exact = pre.double()
    want = torch.cat(
        [
            torch.sigmoid(exact[..., : 2 * hidden]),
            torch.tanh(exact[..., 2 * hidden : 3 * hidden]),
            torch.sigmoid(exact[..., 3 * hidden :]),
        ],
        dim=2,
    )
    # About one float rounding (2^-24 = 6e-8) relative; below 1e-37 the float answers are
    # denormal or zero either way (sigmoid(-100) = 3.7e-44), so only their size is checked.
    torch.testing.assert_close(got, want, rtol=4e-7, atol=1e-37)


def test_nan_stays_nan():
    pre = torch.full((1, 2, 32), math.nan)
    assert torch.isnan(activated(pre, 8)).all()


@pytest.mark.parametrize("hidden", [13, 50])
def test_every_block_shape_against_nn_lstm(hidden):
    # Nine rows (two blocks of four and one left over) and hidden sizes whose 4H and H leave
    # a tail after the sixteen-column blocks.
    torch.manual_seed(3)
    lstm = nn.LSTM(7, hidden, batch_first=True, bidirectional=True).double()
    lengths = torch.tensor([5, 12, 1, 12, 3, 9, 2, 7, 12])
    inputs = torch.randn(9, 12, 7, dtype=torch.float64, requires_grad=True)
    leaves = [inputs, *lstm.parameters()]
    expected = packed_lstm(lstm, inputs, lengths)
    fused = bilstm_layer(inputs, lengths, *layer_weights(lstm))
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-14)
    for got, want in zip(gradients(fused, leaves), gradients(expected, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_float32_agrees_with_float64():
    torch.manual_seed(4)
    lstm = nn.LSTM(10, 20, batch_first=True, bidirectional=True)
    lengths = torch.tensor([8, 3, 8, 1, 6])
    inputs = torch.randn(5, 8, 10, requires_grad=True)
    single = bilstm_layer(inputs, lengths, *layer_weights(lstm))
    single_grads = gradients(single, [inputs, *lstm.parameters()])
    lstm64, inputs64 = lstm.double(), inputs.detach().double().requires_grad_(True)
    double = bilstm_layer(inputs64, lengths, *layer_weights(lstm64))
    double_grads = gradients(double, [inputs64, *lstm64.parameters()])
    torch.testing.assert_close(single.double(), double, rtol=0, atol=1e-6)
    for got, want in zip(single_grads, double_grads, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


def test_one_thread_and_two_give_the_same_bits():
    torch.manual_seed(5)
    lstm = nn.LSTM(6, 16, batch_first=True, bidirectional=True)
    lengths = torch.tensor([4, 9, 2, 9])
    inputs = torch.randn(4, 9, 6, requires_grad=True)
    threads = torch.get_num_threads()
    results = []
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            output = bilstm_layer(inputs, lengths, *layer_weights(lstm))
            results.append([output, *gradients(output, [inputs, *lstm.parameters()])])
    finally:
        torch.set_num_threads(threads)
    for one, two in zip(*results, strict=True):
        assert torch.equal(one, two)


def _random_call(seed: int, hidden: int = 24) -> tuple:
    """Arguments of one float32 forward call over rows of unequal lengths, and its state buffer."""
    rng = np.random.default_rng(seed)
    lengths = np.array([9, 8, 7, 7, 6, 5, 4, 3, 2, 1, 1], dtype=np.int64)
    count = int(lengths.sum())
    gates = rng.standard_normal((count, 8 * hidden), dtype=np.float32)
    cells = np.empty((count, 2 * hidden), dtype=np.float32)
    states = np.empty_like(cells)
    weights = rng.standard_normal((2, hidden, 4 * hidden), dtype=np.float32) / 4
    return (gates, cells, states, lengths, weights, len(lengths), hidden), states


def _states(seed: int, threads: int) -> np.ndarray:
    args, states = _random_call(seed)
    fused_lstm._lstm.forward(*args, threads)
    return states


@pytest.fixture
def pool_choice():
    """Restores the loops' pool after a test that chooses one."""
    chosen = fused_lstm._lstm.pool()
    yield fused_lstm._lstm.pool
    fused_lstm._lstm.pool(chosen)


def test_the_partner_and_openmp_give_the_bits_of_one_thread(pool_choice):
    assert pool_choice() == "partner"  # the default
    alone = _states(1, threads=1)
    for name in ("partner", "openmp"):
        pool_choice(name)
        assert np.array_equal(_states(1, threads=2), alone), name
    with pytest.raises(ValueError, match="no pool"):
        pool_choice("spinning")


def test_calls_from_two_threads_at_once_share_the_partner_safely():
    # One call has the partner; a call that finds it taken runs on OpenMP's pool instead.
    import concurrent.futures

    expected = {seed: _states(seed, threads=1) for seed in range(8)}
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        got = dict(
            zip(expected, executor.map(lambda s: _states(s, threads=2), expected), strict=True)
        )
    for seed, states in expected.items():
        assert np.array_equal(got[seed], states), seed


def test_a_process_forked_after_a_call_starts_its_own_partner():
    # The forked child has no partner thread; with a stale one it would wait for ever.
    import multiprocessing

    alone = _states(2, threads=1)
    _states(2, threads=2)  # the partner runs in this process now
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as workers:
        result = workers.apply_async(_states, (2, 2))
        assert np.array_equal(result.get(timeout=60), alone)


def test_without_keep_only_the_states_are_written():
    # Rows ending at different steps, so every count of rows left over after the six-row
    # panels (5 down to 1) occurs, with 4H = 96 columns for the wider panels.
    rng = np.random.default_rng(6)
    hidden, lengths = 24, np.array([9, 8, 7, 7, 6, 5, 4, 3, 2, 1, 1], dtype=np.int64)
    count = int(lengths.sum())
    gates = rng.standard_normal((count, 8 * hidden), dtype=np.float32)
    weights = rng.standard_normal((2, hidden, 4 * hidden), dtype=np.float32) / 4
    outputs = []
    for keep in (True, False):
        written = gates.copy()
        cells = np.full((count, 2 * hidden), 7.0, dtype=np.float32)
        states = np.empty_like(cells)
        args = (written, cells, states, lengths, weights, len(lengths), hidden, 2)
        fused_lstm._lstm.forward(*args, keep)
        outputs.append(states)
    assert np.array_equal(outputs[0], outputs[1])
    assert np.array_equal(written, gates) and (cells == 7.0).all()


def test_bad_arguments_raise_value_errors():
    hidden, lengths = 2, np.array([2, 0], dtype=np.int64)
    gates = np.zeros((2, 8 * hidden), dtype=np.float32)
    states = np.zeros((2, 2 * hidden), dtype=np.float32)
    weights = np.zeros((2, hidden, 4 * hidden), dtype=np.float32)
    with pytest.raises(ValueError, match="row 1 has length 0"):
        fused_lstm._lstm.forward(gates, states, states.copy(), lengths, weights, 2, hidden, 1)
    lengths = np.array([3], dtype=np.int64)  # three positions, but buffers for two
    with pytest.raises(ValueError, match="expected"):
        fused_lstm._lstm.forward(gates, states, states.copy(), lengths, weights, 1, hidden, 1)


@pytest.mark.parametrize(
    ("dtype", "compiled"),
    [(torch.float32, True), (torch.float64, True), (torch.bfloat16, False)],
)
def test_float32_and_float64_take_the_compiled_loops(dtype, compiled, monkeypatch):
    taken = []
    for name in ("_CompiledBiLSTMLayer", "_BiLSTMLayer"):
        function = getattr(fused_lstm, name)
        monkeypatch.setattr(
            function, "apply", lambda *a, name=name, f=function.apply: taken.append(name) or f(*a)
        )
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True).to(dtype)
    inputs = torch.randn(2, 3, 3, dtype=dtype, requires_grad=True)
    bilstm_layer(inputs, torch.tensor([3, 1]), *layer_weights(lstm)).sum().backward()
    assert taken == ["_CompiledBiLSTMLayer" if compiled else "_BiLSTMLayer"]
