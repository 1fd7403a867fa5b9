"""Bundled models (-m en-ner, the default, and -m en-pos) and `crftag export --half`."""

import os
from pathlib import Path

import pytest
import torch

from crftag.modelfiles import registry
from crftag.modelfiles.checkpoint import load_model
from crftag.modelfiles.registry import MODELS_DIR, resolve_model_path

HAVE_NER = os.path.exists(os.path.join(MODELS_DIR, "en-ner.npz"))
HAVE_POS = os.path.exists(os.path.join(MODELS_DIR, "en-pos.npz"))


@pytest.mark.skipif(not HAVE_NER, reason="en-ner not built (make models)")
def test_predict_without_a_model_uses_en_ner(invoke):
    result = invoke(["predict"], stdin="Angela Merkel visited Paris in May .\n")
    assert result.status == 0, result.stderr
    tags = [line.split("\t")[1] for line in result.stdout.strip().splitlines()]
    assert tags == ["B-PER", "I-PER", "O", "B-LOC", "O", "O", "O"]


@pytest.mark.skipif(not HAVE_POS, reason="en-pos not built (make models)")
def test_en_pos_tags_parts_of_speech(invoke):
    result = invoke(["predict", "-m", "en-pos"], stdin="She reads two books .\n")
    assert result.status == 0, result.stderr
    tags = [line.split("\t")[1] for line in result.stdout.strip().splitlines()]
    assert tags == ["PRON", "VERB", "NUM", "NOUN", "PUNCT"]


def test_a_missing_bundled_model_is_a_one_line_error(invoke, monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "MODELS_DIR", str(tmp_path))
    result = invoke(["predict", "-m", "en-pos"], stdin="A sentence .\n")
    assert result.status == 2 and result.stdout == ""
    assert "make models" in result.stderr and result.stderr.count("\n") == 1


def test_a_local_path_of_a_bundled_name_wins(tmp_path, monkeypatch):
    (tmp_path / "en-ner").mkdir()
    (tmp_path / "en-ner" / "model.pt").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert resolve_model_path("en-ner") == os.path.join("en-ner", "model.pt")


def test_export_half_keeps_the_predictions(sample_model, tmp_path, invoke):
    target = tmp_path / "half.pt"
    result = invoke(["export", str(sample_model), str(target), "--half"])
    assert result.status == 0, result.stderr
    state = torch.load(target, weights_only=True)["state_dict"]
    assert all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point())
    assert target.stat().st_size < 0.6 * (sample_model / "model.pt").stat().st_size
    loaded = load_model(str(target))
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    text = Path("data/sentences.txt").read_text(encoding="utf-8")
    full = invoke(["predict", "-m", str(sample_model)], stdin=text)
    half = invoke(["predict", "-m", str(target)], stdin=text)
    assert full.status == half.status == 0
    assert half.stdout == full.stdout
