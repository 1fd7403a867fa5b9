"""docs/your-data.md runs: every crftag command in it, as written, on a tiny Label Studio export
of the sample with its labels renamed (only tune's budget is made smaller); the served model
answers under the new labels."""

import json
import re
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.data.schemes import to_spans

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "your-data.md"
RENAMED = {"PER": "person", "LOC": "place", "ORG": "company", "MISC": "product"}
QUICK_TUNE = [
    "--trials",
    "2",
    *("--set", "train.epochs=1", "--set", "model.word_dim=16"),
    *("--set", "tune.hidden_size=[16]", "--set", "tune.char_dim=[10]"),
    *("--set", "tune.char_size=[10]"),
]


def _label_studio(conll: str, count: int) -> list[dict]:
    """The first ``count`` sentences of ``conll`` as Label Studio tasks, labels renamed."""
    tasks = []
    for number, sentence in enumerate(read_corpus(conll, ColumnSpec.for_format("conll"))[:count]):
        starts = [sum(len(t) + 1 for t in sentence.tokens[:i]) for i in range(len(sentence.tokens))]
        text = " ".join(sentence.tokens)
        result = []
        for span in to_spans(sentence.tags):
            start, end = (
                starts[span.start],
                starts[span.end - 1] + len(sentence.tokens[span.end - 1]),
            )
            value = {"start": start, "end": end, "text": text[start:end]}
            result.append(
                {
                    "type": "labels",
                    "from_name": "label",
                    "to_name": "text",
                    "value": {**value, "labels": [RENAMED[span.label]]},
                }
            )
        tasks.append({"id": number, "data": {"text": text}, "annotations": [{"result": result}]})
    return tasks


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _commands() -> list[list[str]]:
    lines = [line for block in _blocks("sh") for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("crftag ")]


@pytest.fixture
def export(tmp_path, monkeypatch):
    """The guide's files in a directory of their own: the exports, and its config files."""
    for name, source, count in (("train", "train", 60), ("dev", "dev", 30), ("test", "test", 30)):
        tasks = _label_studio(str(ROOT / "data" / f"ner_sample.{source}.conll"), count)
        (tmp_path / f"{name}.json").write_text(json.dumps(tasks), encoding="utf-8")
    for block in _blocks("yaml"):
        name = block.splitlines()[0].removeprefix("# ").strip()
        (tmp_path / name).write_text(block, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_guide_runs_from_export_to_a_served_model(export, invoke):
    commands = _commands()
    assert [c[1] for c in commands] == [
        "convert",
        "convert",
        "convert",
        "train",
        "tune",
        "train",
        "plot",
        "eval",
        "export",
        "serve",
    ]
    for command in commands[:-1]:
        args = command[1:] + (QUICK_TUNE if command[1] == "tune" else [])
        result = invoke(args)
        assert result.status == 0, (command, result.stderr)
    tags = {line.split()[-1] for line in Path("train.conll").read_text().splitlines() if line}
    assert {"B-person", "B-place", "B-company", "B-product"} <= tags
    errors = [json.loads(line) for line in Path("errors.jsonl").read_text().splitlines()]
    assert all(e["label"] in RENAMED.values() for e in errors if "label" in e)
    assert json.loads(Path("runs/tune/best.json").read_text())["best"]["test"] >= 0
    _serve(commands[-1])


def _serve(command: list[str]) -> None:
    """Run the guide's serve command on a free port and send it the guide's curl request."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    previous = ["", *command[:-1]]
    args = [str(port) if p == "--port" else a for p, a in zip(previous, command, strict=True)]
    body = re.search(r"curl -s -d '(.*?)'", GUIDE.read_text(encoding="utf-8")).group(1)
    process = subprocess.Popen([sys.executable, "-m", "crftag", *args[1:]], stderr=subprocess.PIPE)
    try:
        answer = _post(f"http://127.0.0.1:{port}/predict", body.encode())
    finally:
        process.terminate()
        process.communicate(timeout=60)
    records = [json.loads(line) for line in answer.splitlines()]
    labels = {span["label"] for record in records for span in record["spans"]}
    assert labels and labels <= set(RENAMED.values())


JSON_BODY = {"Content-Type": "application/json"}  # the guide's curl -H


def _post(url: str, body: bytes) -> str:
    deadline = time.monotonic() + 60
    while True:
        try:
            request = urllib.request.Request(url, data=body, headers=JSON_BODY)
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
