"""benchmarks/encoder_exports.py on a tiny encoder model (tests/fixtures/encoder_models): both
ONNX exports made, the three forms scored on a labelled file, the float32 export's tags those of
torch on every sentence, and the verdicts computed from the scores written beside them."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("transformers")

SCRIPT = os.path.join("benchmarks", "encoder_exports.py")
MODEL = os.path.join("tests", "fixtures", "encoder_models", "tf5.pt")
SAMPLE = os.path.join("data", "ner_sample.test.conll")
SENTENCES = 30


@pytest.mark.slow  # two exports and three processes' imports: about 40 s of CPU
def test_the_exports_are_scored_beside_the_torch_model(tmp_path):
    with open(SAMPLE, encoding="utf-8") as handle:
        blocks = handle.read().split("\n\n")[:SENTENCES]
    test_file = tmp_path / "test.conll"
    test_file.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    results = tmp_path / "encoder_exports.json"
    argv = [sys.executable, SCRIPT, f"tiny={MODEL}={test_file}", "--work", str(tmp_path)]
    done = subprocess.run([*argv, "--json", str(results)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    entry = json.loads(results.read_text())["tiny"]
    assert entry["sentences"] == SENTENCES
    forms = entry["forms"]
    assert set(forms) == {"torch", "onnx float32", "onnx int8"}
    assert forms["torch"]["sentences_as_torch"] == SENTENCES
    assert forms["onnx float32"]["sentences_as_torch"] == SENTENCES  # float32 tags as torch
    assert entry["float32_tags_as_torch"] is True
    loss = round(forms["onnx float32"]["score"] - forms["onnx int8"]["score"], 2)
    assert entry["int8_points_below_float32"] == loss
    assert entry["int8_within_tolerance"] == (loss <= 0.3)
    assert (tmp_path / "tiny-float32.onnx").exists() and (tmp_path / "tiny-int8.onnx").exists()
