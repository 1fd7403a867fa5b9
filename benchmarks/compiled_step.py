"""Whether torch.compile speeds up the fused BiLSTM's per-step arithmetic on this CPU: one step
of crftag/nn/fused_lstm.py's backward loop (the elementwise work between two matrix products),
eager against ``torch.compile(dynamic=True)``, at the row counts a training step runs.

    python benchmarks/compiled_step.py

Prints the compile time and microseconds per call of each. Both directions, 100 hidden units
(configs/conll03.yaml's word BiLSTM). A few minutes at most; not part of `make test`.
"""

from __future__ import annotations

import time

import torch

HIDDEN = 100
ROWS = (3, 10, 40, 200)


def backward_step(total, o, tanh_cell, g, previous_cell, i, slopes, f):
    """The elementwise part of one step of ``_backward_loop``: (2, n, H) inputs, slopes
    (2, n, 4H) -> gate gradients (2, n, 4H) and the cell gradient carried back (2, n, H)."""
    cell_grad = total * o * (1 - tanh_cell.square())
    step = torch.cat(
        [cell_grad * g, cell_grad * previous_cell, cell_grad * i, total * tanh_cell], dim=2
    )
    return step * slopes, cell_grad * f


def step_inputs(rows: int) -> tuple[torch.Tensor, ...]:
    def state(width=HIDDEN):
        return torch.randn(2, rows, width)

    return (state(), state(), state(), state(), state(), state(), state(4 * HIDDEN), state())


def microseconds(function, inputs, repeats=2000) -> float:
    function(*inputs)
    started = time.perf_counter()
    for _ in range(repeats):
        function(*inputs)
    return (time.perf_counter() - started) / repeats * 1e6


def main() -> None:
    torch.set_num_threads(2)
    torch.manual_seed(0)
    started = time.perf_counter()
    compiled = torch.compile(backward_step, dynamic=True)
    compiled(*step_inputs(7))
    print(f"compile: {time.perf_counter() - started:.1f} s")
    print("rows  eager us  compiled us")
    for rows in ROWS:
        inputs = step_inputs(rows)
        eager_us = microseconds(backward_step, inputs)
        compiled_us = microseconds(compiled, inputs)
        print(f"{rows:4d}  {eager_us:8.0f}  {compiled_us:11.0f}")


if __name__ == "__main__":
    main()
