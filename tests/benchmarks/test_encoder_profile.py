"""benchmarks/encoder_profile.py: an exported encoder model's tagging time split between ONNX
Runtime's run and the rest, and ONNX Runtime's kernel time by operator type."""

import pytest

pytest.importorskip("transformers")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from tests.inference.encoder_exports import encoder_model  # noqa: E402


def test_the_int8_exports_time_is_split_by_where_it_is_spent(load_benchmark, tiny_args, tmp_path):
    encoder_profile = load_benchmark("encoder_profile")
    _, _, int8 = encoder_model(tmp_path, tiny_args)
    corpus = read_corpus("data/ner_sample.test.conll", ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in corpus][:30]
    found = encoder_profile.profile(str(int8), sentences, runs=1, threads=1, top=2)
    assert found["sentences"] == 30 and found["tokens_per_second"] > 0
    assert 0 < found["share_in_onnx_runtime"] <= 1
    shares = found["kernel_time_by_operator"]
    assert len(shares) == 3 and "other" in shares  # the 2 largest, and the rest
    assert sum(shares.values()) == pytest.approx(1, abs=1e-3)
    first, second = list(shares)[:2]
    assert shares[first] >= shares[second]
    every = encoder_profile.profile(str(int8), sentences, runs=1, threads=1, top=100)
    shares = every["kernel_time_by_operator"]
    assert "other" not in shares and sum(shares.values()) == pytest.approx(1, abs=1e-3)
    assert {"DynamicQuantizeMatMul", "MatMulIntegerToFloat"} & set(shares)  # --int8's products
