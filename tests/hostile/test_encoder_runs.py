"""An encoder model's runs: SIGINT while the encoder's features are extracted (nothing to resume:
one line saying so), ``train.init_from`` from an encoder model into a config without one and
the reverse, ``serve -m`` an encoder model given bad and odd requests, and ``--device cuda``
without a GPU: each a one-line answer or the right result, never a traceback."""

import json
import pathlib
import shutil
import signal
import subprocess
import sys

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "encoder_models"
MODEL = FIXTURES / f"tf{transformers.__version__.split('.')[0]}.pt"
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def few_sentences(tmp_path_factory):
    """The NER sample's first 20 training sentences, in a file of their own."""
    text = pathlib.Path("data/ner_sample.dev.conll").read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("data") / "few.conll"
    path.write_text("\n\n".join(text.split("\n\n")[:20]) + "\n", encoding="utf-8")
    return path


def test_sigint_while_the_encoder_reads_the_corpus(bert, tmp_path, invoke):
    run = tmp_path / "run"
    sets = ["data.train=data/ner_sample.train.conll", "data.dev=null", "data.test=null"]
    sets += [f"model.transformer={bert}", "train.epochs=1", "model.hidden_size=16"]
    command = [sys.executable, "-m", "crftag", "train", "configs/sample.yaml", "-o", str(run)]
    command += [part for setting in sets for part in ("--set", setting)] + ["--device", "cpu"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    seen = []
    while not seen or seen[-1] and not seen[-1].startswith("transformer features"):
        seen.append(process.stderr.readline())
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) == 128 + signal.SIGINT
    rest = process.stderr.read()
    assert "Traceback" not in rest and "nothing to resume: run the same command again" in rest
    resumed = invoke(["train", "--resume", str(run), "--device", "cpu", "--quiet"])
    assert resumed.status == 2 and resumed.stderr.count("\n") == 1
    assert "no resume.pt here" in resumed.stderr


def test_init_from_an_encoder_model_into_a_config_without_one(few_sentences, tmp_path, invoke):
    config = tmp_path / "config.yaml"
    config.write_text(f"data:\n  train: {few_sentences}\ntrain:\n  epochs: 1\n")
    run = tmp_path / "run"
    args = ["train", str(config), "-o", str(run), "--device", "cpu", "--quiet"]
    result = invoke([*args, "--set", f"train.init_from={MODEL}"])
    assert result.status == 0, result.stderr
    base = torch.load(MODEL, weights_only=True)["state_dict"]
    trained = torch.load(run / "model.pt", weights_only=True)["state_dict"]
    encoder = [name for name in base if name.startswith("transformer.encoder.")]
    assert encoder and all(torch.equal(base[name], trained[name]) for name in encoder)  # frozen
    tagged = invoke(["predict", "-m", str(run), "--input-format", "tokens"], stdin="John Smith\n")
    assert tagged.status == 0, tagged.stderr
    assert [line.split("\t")[0] for line in tagged.stdout.splitlines() if line] == ["John", "Smith"]


def test_init_from_a_model_without_an_encoder_into_a_config_with_one(
    sample_model, bert, tmp_path, invoke
):
    config = tmp_path / "config.yaml"
    config.write_text(f"data:\n  train: {pathlib.Path('data/ner_sample.dev.conll').resolve()}\n")
    sets = ["--set", f"train.init_from={sample_model}", "--set", f"model.transformer={bert}"]
    result = invoke(["train", str(config), "-o", str(tmp_path / "run"), *sets, "--quiet"])
    assert result.status == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crftag: error: train.init_from"), lines
    assert f"model.transformer {bert} (model: None)" in lines[0]


@NO_CUDA
@pytest.mark.parametrize("command", ["predict", "eval"])
def test_device_cuda_without_a_gpu_is_one_line(invoke, command):
    args = [command, "-m", str(MODEL), "--device", "cuda"]
    if command == "eval":
        args.append("data/ner_sample.test.conll")
    result = invoke(args, stdin="John Smith\n")
    assert result.status == 2 and result.stdout == ""
    assert (
        result.stderr
        == "crftag: error: --device cuda: no CUDA device is available; use --device cpu\n"
    )


@NO_CUDA
def test_training_on_cuda_without_a_gpu_is_one_line(bert, few_sentences, tmp_path, invoke):
    sets = ["--set", f"model.transformer={bert}", "--set", f"data.train={few_sentences}"]
    result = invoke(
        ["train", "configs/sample.yaml", "-o", str(tmp_path), *sets, "--device", "cuda"]
    )
    assert result.status == 2 and result.stderr.count("\n") == 1 and "no CUDA" in result.stderr


# Requests to an encoder model: (body, status, a text of the answer).
REQUESTS = [
    (b"{bad", 400, "not valid JSON"),
    (b'{"tokens": [[""]]}', 400, "tokens[0][0]"),
    (b'{"tokens": [["a b"]]}', 400, "tokens[0][0]"),
    (b'{"tokens": "John"}', 400, "tokens"),
    (b'{"text": "a", "model": "other"}', 404, "other"),
]
ODD_TOKENS = [["\ufeff", "John"], ["\u200b"], ["\u0301", "\U0001f600", "\u05e9\u05dc\u05d5\u05dd"]]


def test_serve_an_encoder_model(tmp_path):
    pytest.importorskip("uvicorn")
    from tests.serve.test_serve_http import Server

    model = shutil.copyfile(MODEL, tmp_path / "model.pt")
    server = Server("-m", str(model), "--device", "cpu")
    try:
        for body, status, text in REQUESTS:
            answer = server.request("/predict", body)
            assert answer[0] == status and text in answer[1], (body, answer[:2])
        status, body, _ = server.predict({"tokens": ODD_TOKENS})
        assert status == 200, body
        records = [json.loads(line) for line in body.splitlines()]
        assert [record["tokens"] for record in records] == ODD_TOKENS
        assert [len(record["tags"]) for record in records] == [2, 1, 3]
        long = ["Berlin"] * 3000
        status, body, _ = server.predict({"tokens": [long]})
        assert status == 200 and len(json.loads(body)["tags"]) == 3000
    finally:
        code, errors = server.stop()
    assert code == 0 and "Traceback" not in errors, errors[-2000:]
