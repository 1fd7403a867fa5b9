"""benchmarks/encoder_speed.py's int8 limit times ONNX Runtime's int8 product: the graph it
times holds no float matrix product, and it computes the float product to int8's precision."""

import math
import os
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import encoder_speed  # noqa: E402
from encoder_speed import best_rate, int8_matmul_rate, int8_product  # noqa: E402


def test_the_timed_product_is_int8_and_close_to_the_float_one():
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((64, 96), np.float32)
    left = rng.standard_normal((40, 64), np.float32)
    product, op_types = int8_product(weight, 1)
    assert "MatMul" not in op_types  # quantised: no float product left to time
    found = product.run(None, {"left": left})[0]
    exact = left @ weight
    assert found.shape == exact.shape
    # int8's rounding, and on CPUs without VNNI the odd saturated sum (ONNX Runtime's u8s8
    # products on AVX2): small on the whole, so judged on the mean.
    assert np.abs(found - exact).mean() < 0.03 * np.abs(exact).mean()
    assert not np.array_equal(found, exact)  # and it did round: not the float product


def test_the_int8_rate_is_a_positive_finite_number_of_multiply_adds_a_second():
    rate = int8_matmul_rate(16, 32, 1)
    assert math.isfinite(rate) and rate > 0


def test_a_rate_is_the_best_of_its_timings(monkeypatch):
    """Each timing of 2 calls; the calls of the three timings take 0.2, 0.1 and 0.3 s each on
    a clock the product moves: the rate is the fastest timing's, 1,000 / 0.1."""
    clock = [0.0]
    durations = iter([0.2, 0.2, 0.1, 0.1, 0.3, 0.3])
    monkeypatch.setattr(encoder_speed.time, "perf_counter", lambda: clock[0])

    def product():
        clock[0] += next(durations)

    assert encoder_speed.TRIES == 3
    assert best_rate(product, 1_000, repeats=2) == pytest.approx(10_000)
