"""Where one step of the CPU Viterbi forward pass spends its time (crftag.crf.kernels).

Times each NumPy call of a step at B=32 and K=9 / 18 against a plain contiguous add of the same
number of elements, to show what is compute, what is call overhead and what is the cost of the
broadcast in the first call (its inner loops run over the B axis only).

    python benchmarks/viterbi_step.py
"""

from __future__ import annotations

import timeit

import numpy as np


def microseconds(statement: str, names: dict, number: int = 20_000) -> float:
    return min(timeit.repeat(statement, number=number, repeat=7, globals=names)) / number * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'call':<52}{'K=9':>9}{'K=18':>9}  (microseconds, B=32)")
    rows: dict[str, list[float]] = {}
    for num_tags in (9, 18):
        batch = 32
        names = {
            "np": np,
            "previous": rng.random((num_tags, 1, batch), dtype=np.float32),
            "tiled": rng.random((num_tags, num_tags, batch), dtype=np.float32),
            "candidates": np.empty((num_tags, num_tags, batch), np.float32),
            "step": np.empty((num_tags, batch), np.float32),
            "emitted": rng.random((num_tags, batch), dtype=np.float32),
            "flat": np.empty(num_tags * num_tags * batch, np.float32),
            "flat_in": rng.random(num_tags * num_tags * batch, dtype=np.float32),
        }
        timed = {
            "add the tiled transitions (broadcast over 'to')": (
                "np.add(previous, tiled, out=candidates)"
            ),
            "the same number of elements, contiguous, no broadcast": (
                "np.add(flat_in, flat_in, out=flat)"
            ),
            "maximum over 'from' (np.maximum.reduce, axis 0)": (
                "np.maximum.reduce(candidates, axis=0, out=step)"
            ),
            "add the emissions": "np.add(step, emitted, out=step)",
            "a call on one element (the per-call floor)": "np.add(step[0, :1], 1.0)",
        }
        for label, statement in timed.items():
            rows.setdefault(label, []).append(microseconds(statement, names))
    for label, values in rows.items():
        print(f"{label:<52}" + "".join(f"{v:>9.2f}" for v in values))


if __name__ == "__main__":
    main()
