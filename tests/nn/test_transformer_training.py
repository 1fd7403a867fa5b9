"""A model with ``model.transformer`` through the CLI, on a tiny random BERT saved to a
temporary folder: trained, interrupted and resumed, then used where the encoder's folder is
gone (the model file holds its weights and tokenizer); the one-line errors."""

import importlib.util
import json
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

pytest.importorskip("transformers")

from crftag.inference.loading import load  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import load_model  # noqa: E402
from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402

# 200 sentences in batches of 4: 50 steps an epoch, so a signal sent after epoch 1 lands in
# epoch 2.
SMALL = {
    "data__train": "data/ner_sample.dev.conll",
    "data__dev": "data/ner_sample.test.conll",
    "data__test": None,
    "train__batch_size": 4,
    "train__seed": 3,
    "train__epochs": 2,
}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert"))


def _options(tiny_args, bert, **settings):
    encoder = {"model__transformer": str(bert), "model__transformer_layers": 2}
    return tiny_args(**{**SMALL, **encoder, **settings})


def _crftag(*args):
    command = [sys.executable, "-m", "crftag", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_epoch(process, timeout=120):
    deadline, lines = time.time() + timeout, []
    while time.time() < deadline:
        line = process.stderr.readline()
        lines.append(line)
        if not line or line.startswith("epoch   1"):
            return
    raise AssertionError(f"no epoch 1 in {lines}")


def test_trained_interrupted_resumed_and_used_without_the_encoder_folder(
    tmp_path, tiny_args, invoke, bert
):
    options = _options(tiny_args, bert, model__transformer_pooling="mean")
    broken = tmp_path / "broken"
    process = _crftag("train", "configs/sample.yaml", "-o", str(broken), *options)
    _wait_for_epoch(process)
    process.send_signal(signal.SIGINT)  # lands in epoch 2
    assert process.wait(timeout=120) == 128 + signal.SIGINT
    assert "Traceback" not in process.stderr.read() and (broken / "resume.pt").exists()
    # The resume and the uninterrupted run in this process: only the broken run needs one of its
    # own, to take the signal.
    resumed = invoke(["train", "--resume", str(broken), "--device", "cpu", "--quiet"])
    assert resumed.status == 0, resumed.stderr
    straight = tmp_path / "straight"
    assert invoke(["train", "configs/sample.yaml", "-o", str(straight), *options]).status == 0
    expected = json.loads((straight / "metrics.json").read_text())
    got = json.loads((broken / "metrics.json").read_text())
    assert got["dev"] == expected["dev"] and got["epochs"] == expected["epochs"] == 2
    weights = torch.load(broken / "model.pt", weights_only=True)["state_dict"]
    assert any(name.startswith("transformer.encoder.") for name in weights)
    assert "transformer.mix.weights" in weights

    moved = shutil.move(str(bert), str(tmp_path / "elsewhere"))  # the model needs it no more
    continued = tmp_path / "continued"
    try:
        tagged = invoke(["predict", "-m", str(broken)], "John Smith lives in Berlin .\n")
        scored = invoke(["eval", "data/ner_sample.dev.conll", "-m", str(broken), "--json"])
        picked = ["select", "data/sentences.txt", "-n", "2", "-o", str(tmp_path / "picked.jsonl")]
        selected = invoke([*picked, "-m", str(broken)])
        start = ["--set", f"train.init_from={broken}", "--set", "train.epochs=1"]
        config = tmp_path / "continue.yaml"  # no model section: the base model's architecture
        train_file = pathlib.Path("data/ner_sample.test.conll").resolve()
        config.write_text(f"data: {{train: {train_file}}}\ntrain: {{optimizer: adam}}\n")
        trained = invoke(["train", str(config), "-o", str(continued), *start, "--device", "cpu"])
    finally:
        shutil.move(moved, str(bert))
    assert tagged.status == 0 and len(tagged.stdout.split("\n\n")[0].splitlines()) == 6
    assert scored.status == 0 and json.loads(scored.stdout)
    assert selected.status == 0 and len((tmp_path / "picked.jsonl").read_text().splitlines()) == 2
    assert trained.status == 0, trained.stderr
    continued_weights = torch.load(continued / "model.pt", weights_only=True)["state_dict"]
    assert continued_weights["transformer.mix.weights"].shape == (2,)


def test_a_crf_straight_on_the_encoder(tmp_path, tiny_args, invoke, bert):
    options = _options(tiny_args, bert, model__hidden_size=0, train__epochs=1)
    assert invoke(["train", "configs/sample.yaml", "-o", str(tmp_path), *options]).status == 0
    weights = torch.load(tmp_path / "model.pt", weights_only=True)["state_dict"]
    assert not any(name.startswith("encoder.") for name in weights)
    assert weights["projection.weight"].shape[1] == 32 + 32 + 30  # words, characters, encoder
    result = invoke(["export", str(tmp_path), str(tmp_path / "out.npz"), "--format", "numpy"])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert (
        "model.transformer: " in result.stderr
        and "takes no pretrained transformer" in result.stderr
    )
    if importlib.util.find_spec("onnxruntime") is None:
        return
    exported = str(tmp_path / "out.onnx")
    assert invoke(["export", str(tmp_path), exported, "--format", "onnx"]).status == 0
    sentences = ["John Smith lives in Berlin .".split(), "UN backs Dutch plan".split() * 5]
    expected = Tagger.from_loaded(load_model(str(tmp_path / "model.pt"))).tag(sentences)
    assert load(exported).tag(sentences) == expected


def test_without_the_extra_a_config_naming_it_is_a_one_line_error(
    tmp_path, tiny_args, invoke, bert, monkeypatch
):
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if it were not installed
    result = invoke(
        ["train", "configs/sample.yaml", "-o", str(tmp_path), *_options(tiny_args, bert)]
    )
    assert result.status == 2
    assert result.stderr == (
        "crftag: error: model.transformer needs the transformers package: "
        "pip install 'crftag[transformers]'\n"
    )


def test_a_missing_model_folder_is_a_one_line_error(tmp_path, tiny_args, invoke, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-model"
    options = _options(tiny_args, missing)
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *options])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert f"model.transformer: no model folder {missing}" in result.stderr
    assert "Hugging Face cache" in result.stderr


def test_no_bilstm_without_an_encoder_is_a_one_line_error(tmp_path, tiny_args, invoke):
    options = tiny_args(model__hidden_size=0)
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path), *options])
    assert result.status == 2
    assert result.stderr == (
        "crftag: error: model.hidden_size: 0 (no BiLSTM) is for a CRF on model.transformer; "
        "set one, or hidden_size of 1 or more\n"
    )
