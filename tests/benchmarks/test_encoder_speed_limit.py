"""benchmarks/encoder_speed.py's int8 limit: ONNX Runtime's int8 matrix product, timed on a
small weight, gives a finite positive rate (multiply-adds a second)."""

import math
import os
import sys

import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

from encoder_speed import int8_matmul_rate  # noqa: E402


def test_the_int8_rate_is_a_positive_finite_number_of_multiply_adds_a_second():
    rate = int8_matmul_rate(16, 32, 1)
    assert math.isfinite(rate) and rate > 2048 * 16 * 32  # more than one product a second
