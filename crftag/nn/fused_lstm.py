"""One bidirectional LSTM layer over padded, variable-length rows, with a hand-written backward
pass: the word encoder's training cost.

torch's CPU LSTM records every step's gate arithmetic as separate autograd nodes, so its backward
pass over a batch of ten sentences is a few thousand tiny operations and takes about three times
its forward pass. Here the two directions run in one loop over time (each row's words reversed
within its own length for the backward direction, so both directions have the same running rows
at every step and share every operation, a batched matrix product among them), the rows sorted
by length so that the running ones are a prefix, and the backward pass is back-propagation
through time written out: per step a dozen operations for both directions, with the weight
gradients and the input projection's gradient taken as a few large matrix products after the
loop. The arithmetic is ``nn.LSTM``'s (gate order i, f, g, o; both biases), so its parameters are
used as they are and results agree up to the order of float summation.

Where the optional C extension built (``crftag/runtime/_lstm.c``, see setup.py), the two time loops
run there instead, over positions packed row after row; everything around the loops is the same
few large products. The two directions run on two threads (the caller's and the extension's
own partner thread, see _lstm.c) where torch has two, or within :func:`loop_threads` (a
training step, crftag/training/step.py) as many as it says, whatever torch has. The torch
loops below remain for float16, other devices, and where no compiler was found.

Shapes: B rows, T steps, D input features, H hidden units per direction, 2 directions, N real
positions (the sum of the lengths).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

try:  # the compiled time loops (crftag/runtime/_lstm.c), built by setup.py where a compiler exists
    from crftag.runtime import _lstm
except ImportError:  # pragma: no cover - exercised only where the extension did not build
    _lstm = None

__all__ = ["bilstm_layer", "loop_threads"]

_loop_threads = 0  # within loop_threads: the compiled loops' thread count; else torch's


def bilstm_layer(
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    weights_ih: torch.Tensor,
    weights_hh: torch.Tensor,
    biases: torch.Tensor,
) -> torch.Tensor:
    """inputs (B, T, D), lengths (B,) int64 with every length >= 1, weights_ih (2, 4H, D),
    weights_hh (2, 4H, H), biases (2, 4H) (``bias_ih + bias_hh``) -> (B, T, 2H): the forward
    direction's states then the backward direction's, zeros past each row's end."""
    if _runs_compiled(inputs, weights_ih, weights_hh, biases):
        return _CompiledBiLSTMLayer.apply(inputs, lengths, weights_ih, weights_hh, biases)
    return _BiLSTMLayer.apply(inputs, lengths, weights_ih, weights_hh, biases)


@contextmanager
def loop_threads(count: int) -> Iterator[None]:
    """Within: the compiled loops run their two directions on ``count`` threads (1 or 2),
    whatever torch's own thread count is. The thread count changes no number
    (crftag/runtime/_lstm.c)."""
    global _loop_threads
    outer, _loop_threads = _loop_threads, max(1, min(count, 2))
    try:
        yield
    finally:
        _loop_threads = outer


def _threads() -> int:
    """How many threads the compiled loops take."""
    return _loop_threads or torch.get_num_threads()


def _runs_compiled(*tensors: torch.Tensor) -> bool:
    """Whether the compiled loops take these tensors: all on the CPU, float32 or float64 alike."""
    dtype = tensors[0].dtype
    return (
        _lstm is not None
        and dtype in (torch.float32, torch.float64)
        and all(t.device.type == "cpu" and t.dtype == dtype for t in tensors)
    )


class _CompiledBiLSTMLayer(torch.autograd.Function):
    """The layer with both time loops in C over packed positions (row after row: the order a
    boolean mask selects them in), and the input projection and weight gradients as one or two
    matrix products over all positions and both directions."""

    @staticmethod
    def forward(ctx, inputs, lengths, weights_ih, weights_hh, biases):
        batch_size, steps, width = inputs.shape
        hidden = weights_hh.size(2)
        lengths = lengths.to(torch.int64).contiguous()
        real = (torch.arange(steps) < lengths.unsqueeze(1)).view(-1)  # (B * T,)
        packed = inputs.detach().reshape(batch_size * steps, width)[real]  # (N, D)
        both_ih = weights_ih.detach().reshape(8 * hidden, width)  # (8H, D): direction 0, then 1
        gates = torch.addmm(biases.detach().reshape(8 * hidden), packed, both_ih.t())  # (N, 8H)
        cells = gates.new_empty(packed.size(0), 2 * hidden)
        states = torch.empty_like(cells)
        weights_hh_t = weights_hh.detach().transpose(1, 2).contiguous()  # (2, H, 4H)
        _lstm.forward(
            gates.numpy(),
            cells.numpy(),
            states.numpy(),
            lengths.numpy(),
            weights_hh_t.numpy(),
            batch_size,
            hidden,
            _threads(),
        )
        ctx.save_for_backward(packed, weights_ih, weights_hh, gates, cells, states)
        ctx.layout = (lengths, real, (batch_size, steps, width))
        output = states.new_zeros(batch_size * steps, 2 * hidden)
        output[real] = states
        return output.view(batch_size, steps, 2 * hidden)

    @staticmethod
    def backward(ctx, grad_output):
        packed, weights_ih, weights_hh, gates, cells, states = ctx.saved_tensors
        lengths, real, (batch_size, steps, width) = ctx.layout
        hidden = weights_hh.size(2)
        positions = packed.size(0)
        grad_states = grad_output.reshape(batch_size * steps, 2 * hidden)[real].contiguous()
        grad_gates = torch.empty_like(gates)  # (N, 8H)
        previous = torch.empty_like(states)  # (N, 2H): h_{t-1} in each direction's own time
        _lstm.backward(
            grad_states.numpy(),
            gates.numpy(),
            cells.numpy(),
            states.numpy(),
            weights_hh.detach().contiguous().numpy(),
            lengths.numpy(),
            grad_gates.numpy(),
            previous.numpy(),
            batch_size,
            hidden,
            _threads(),
        )
        # The weight gradients: sums over every position, as a few large products.
        by_direction = grad_gates.view(positions, 2, 4 * hidden).transpose(0, 1)  # (2, N, 4H)
        grad_hh = by_direction.transpose(1, 2).bmm(
            previous.view(positions, 2, hidden).transpose(0, 1)
        )  # (2, 4H, H)
        grad_biases = by_direction.sum(1)  # (2, 4H)
        grad_ih = grad_gates.t().mm(packed).view(2, 4 * hidden, width)
        # Both directions' share of each input, summed by the one product.
        grad_packed = grad_gates.mm(weights_ih.reshape(8 * hidden, width))  # (N, D)
        grad_inputs = grad_packed.new_zeros(batch_size * steps, width)
        grad_inputs[real] = grad_packed
        return grad_inputs.view(batch_size, steps, width), None, grad_ih, grad_hh, grad_biases


def _reversal_index(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """(B, T) index that reverses each row within its length and keeps its padding in place;
    it is its own inverse."""
    positions = torch.arange(steps, device=lengths.device).unsqueeze(0)  # (1, T)
    last = (lengths - 1).unsqueeze(1)  # (B, 1)
    return torch.where(positions <= last, last - positions, positions)


def _reverse_rows(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """values (B, T, F) with each row's first ``length`` steps reversed (``index`` from
    :func:`_reversal_index`)."""
    return values.gather(1, index.unsqueeze(2).expand_as(values))


class _BiLSTMLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, lengths, weights_ih, weights_hh, biases):
        batch_size, steps, width = inputs.shape
        order = torch.argsort(lengths, descending=True, stable=True)
        sorted_lengths = lengths[order]
        running = _running_counts(sorted_lengths, steps)
        reversal = _reversal_index(sorted_lengths, steps)
        packing = _packing_index(running, steps, inputs.device)  # (N,)
        rows = inputs[order]
        both = torch.stack([rows, _reverse_rows(rows, reversal)])  # (2, B, T, D)
        packed = both.view(2, batch_size * steps, width)[:, packing]  # (2, N, D)
        # Every step's input projection at once, real positions only.
        projected = torch.baddbmm(biases.unsqueeze(1), packed, weights_ih.transpose(1, 2))
        gates, cells, states = _forward_loop(projected, weights_hh.transpose(1, 2), running)
        ctx.save_for_backward(packed, weights_ih, weights_hh, gates, cells, states)
        ctx.layout = (order, reversal, running, packing, (batch_size, steps, width))
        hidden = weights_hh.size(2)
        padded = states.new_zeros(2, batch_size * steps, hidden).index_copy_(1, packing, states)
        padded = padded.view(2, batch_size, steps, hidden)
        output = torch.cat([padded[0], _reverse_rows(padded[1], reversal)], dim=2)
        return _unsort(output, order)

    @staticmethod
    def backward(ctx, grad_output):
        packed, weights_ih, weights_hh, gates, cells, states = ctx.saved_tensors
        order, reversal, running, packing, (batch_size, steps, width) = ctx.layout
        hidden = weights_hh.size(2)
        grad = grad_output[order]  # (B, T, 2H), sorted rows
        grad_both = torch.stack([grad[..., :hidden], _reverse_rows(grad[..., hidden:], reversal)])
        grad_states = grad_both.reshape(2, batch_size * steps, hidden)[:, packing]  # (2, N, H)
        grad_gates = _backward_loop(grad_states, gates, cells, weights_hh, running)  # (2, N, 4H)
        # The weight gradients: sums over every step and row, as a few large products.
        previous = _previous_states(states, running)  # h_{t-1} of every packed row, (2, N, H)
        grad_hh = grad_gates.transpose(1, 2).bmm(previous)  # (2, 4H, H)
        grad_biases = grad_gates.sum(1)  # (2, 4H)
        grad_ih = grad_gates.transpose(1, 2).bmm(packed)  # (2, 4H, D)
        grad_packed = grad_gates.bmm(weights_ih)  # (2, N, D)
        grad_inputs = grad_packed.new_zeros(2, batch_size * steps, width)
        grad_inputs = grad_inputs.index_copy_(1, packing, grad_packed)
        grad_inputs = grad_inputs.view(2, batch_size, steps, width)
        grad_rows = grad_inputs[0] + _reverse_rows(grad_inputs[1], reversal)
        return _unsort(grad_rows, order), None, grad_ih, grad_hh, grad_biases


def _running_counts(sorted_lengths: torch.Tensor, steps: int) -> list[int]:
    """running[t]: how many rows (sorted longest first) are still running at step t."""
    positions = torch.arange(steps, device=sorted_lengths.device)
    return (sorted_lengths.unsqueeze(0) > positions.unsqueeze(1)).sum(1).tolist()


def _packing_index(running: list[int], steps: int, device: torch.device) -> torch.Tensor:
    """(N,) flat indices ``row * T + t`` of the real positions, time-major: step 0's running
    rows, then step 1's, ... (the layout of a PackedSequence). N = sum(running)."""
    return torch.cat(
        [torch.arange(n, device=device) * steps + t for t, n in enumerate(running) if n]
    )


def _offsets(running: list[int]) -> list[int]:
    """Where each step's rows start in the packed layout."""
    offsets = [0]
    for n in running[:-1]:
        offsets.append(offsets[-1] + n)
    return offsets


def _forward_loop(projected, weights_hh_t, running):
    """The recurrence of both directions over packed rows. projected (2, N, 4H), weights_hh_t
    (2, H, 4H). Returns the activated gates (2, N, 4H: sigmoid i, f, tanh g, sigmoid o), the
    cells and the states (2, N, H)."""
    hidden = weights_hh_t.size(1)
    gates = torch.empty_like(projected)
    cells = projected.new_empty(2, projected.size(1), hidden)
    states = torch.empty_like(cells)
    offsets = _offsets(running)
    for t, (start, n) in enumerate(zip(offsets, running, strict=True)):
        if not n:
            break
        rows = slice(start, start + n)
        step_gates = gates[:, rows]
        if t:
            before = slice(offsets[t - 1], offsets[t - 1] + n)  # the same rows one step earlier
            torch.baddbmm(projected[:, rows], states[:, before], weights_hh_t, out=step_gates)
        else:
            step_gates.copy_(projected[:, rows])
        step_gates[..., : 2 * hidden].sigmoid_()  # i, f
        step_gates[..., 2 * hidden : 3 * hidden].tanh_()  # g
        step_gates[..., 3 * hidden :].sigmoid_()  # o
        i, f, g, o = step_gates.split(hidden, dim=2)
        cell = cells[:, rows]
        if t:
            torch.mul(f, cells[:, before], out=cell)
            cell.addcmul_(i, g)
        else:
            torch.mul(i, g, out=cell)
        torch.mul(o, cell.tanh(), out=states[:, rows])
    return gates, cells, states


def _backward_loop(grad_states, gates, cells, weights_hh, running):
    """Back-propagation through time for both directions over packed rows: the gradient of
    the loss with respect to every step's gate pre-activations, (2, N, 4H)."""
    hidden = weights_hh.size(2)
    grad_gates = torch.empty_like(gates)
    tanh_cells = cells.tanh()
    # The derivatives of the activations, for every step at once: s (1 - s), and 1 - g^2.
    slopes = gates * (1 - gates)
    slopes[..., 2 * hidden : 3 * hidden] = 1 - gates[..., 2 * hidden : 3 * hidden].square()
    offsets = _offsets(running)
    recurrent = cell_carry = None  # dL/dh_t and dL/dc_t through step t + 1, its n rows
    for t in range(len(running) - 1, -1, -1):
        start, n = offsets[t], running[t]
        if not n:
            continue
        rows = slice(start, start + n)
        i, f, g, o = gates[:, rows].split(hidden, dim=2)
        tanh_cell = tanh_cells[:, rows]
        total = grad_states[:, rows]  # dL/dh_t
        if recurrent is not None:
            later = recurrent.size(1)  # rows still running at t + 1: a prefix
            total = total.clone()
            total[:, :later] += recurrent
        cell_grad = total * o * (1 - tanh_cell.square())
        if recurrent is not None:
            cell_grad[:, :later] += cell_carry
        previous_cell = cells[:, offsets[t - 1] : offsets[t - 1] + n] if t else 0.0
        step = torch.cat(
            [cell_grad * g, cell_grad * previous_cell, cell_grad * i, total * tanh_cell], dim=2
        )
        step_grad = torch.mul(step, slopes[:, rows], out=grad_gates[:, rows])
        cell_carry = cell_grad * f
        recurrent = step_grad.bmm(weights_hh)
    return grad_gates


def _previous_states(states: torch.Tensor, running: list[int]) -> torch.Tensor:
    """(2, N, H): for every packed row at step t, its state at step t - 1 (zeros at step 0)."""
    offsets = _offsets(running)
    pieces = [states.new_zeros(2, running[0], states.size(2))]
    for t in range(1, len(running)):
        if running[t]:
            pieces.append(states[:, offsets[t - 1] : offsets[t - 1] + running[t]])
    return torch.cat(pieces, dim=1)


def _unsort(values: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Rows back in their original order: values[order] undone."""
    return torch.empty_like(values).index_copy_(0, order, values)
