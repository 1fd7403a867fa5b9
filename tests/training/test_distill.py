"""crftag distill end to end: a student run directory that records its teacher, takes eval and
export like any model, reuses its teacher's labels, and after SIGINT or SIGTERM continues, by
crftag distill --resume or crftag train --resume, to the weights of an uninterrupted run."""

import json
import signal
from pathlib import Path

import pytest
import torch
from test_resume import SMALL_BATCHES, crftag, wait_for_line

from crftag.inference.teacher_store import teacher_digest
from crftag.modelfiles.checkpoint import load_model

CONFIG = "configs/sample.yaml"


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    """Unlabelled text: the sample's training sentences, one a line (none of dev or test)."""
    path = tmp_path_factory.mktemp("text") / "text.txt"
    blocks = Path("data/ner_sample.train.conll").read_text(encoding="utf-8").split("\n\n")
    lines = [" ".join(row.split()[0] for row in block.splitlines()) for block in blocks]
    lines = [line for line in lines if line and not line.startswith("-DOCSTART-")]
    path.write_text("\n".join(lines[:80]) + "\n", encoding="utf-8")
    return path


def distill_args(teacher, text, output, options):
    return ["distill", str(teacher), CONFIG, "--text", str(text), "-o", str(output), *options]


def test_a_student_records_its_teacher_and_is_a_model_like_any(
    invoke, tmp_path, sample_model, text, tiny_args
):
    student = tmp_path / "student"
    options = tiny_args(train__epochs=2, distill__objective="hard")
    result = invoke(distill_args(sample_model, text, student, options))
    assert result.status == 0, result.stderr
    assert result.stdout == ""
    assert "epoch   2" in result.stderr and f"saved {student}/model.pt" in result.stderr
    record = load_model(str(student)).distillation
    assert record["teacher"] == str(sample_model)
    assert record["teacher_digest"] == teacher_digest(str(sample_model))
    assert record["objective"] == "hard" and record["text"] == [str(text)]
    metrics = json.loads((student / "metrics.json").read_text())
    assert metrics["distillation"]["text_digest"] == record["text_digest"]
    assert metrics["test"] > 0 and len(metrics["history"]) == 2
    scored = invoke(["eval", "-m", str(student), "data/ner_sample.test.conll"])
    assert scored.status == 0, scored.stderr
    exported = invoke(["export", str(student), str(tmp_path / "student.npz"), "--format", "numpy"])
    assert exported.status == 0, exported.stderr
    assert load_model(str(tmp_path / "student.npz")).distillation == record

    # The same run again with --overwrite reuses the teacher's labels: labelled once.
    manifest = (student / "teacher" / "manifest.json").read_bytes()
    again = invoke([*distill_args(sample_model, text, student, options), "--overwrite"])
    assert again.status == 0, again.stderr
    assert "labelling" not in again.stderr
    assert (student / "teacher" / "manifest.json").read_bytes() == manifest


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signal_number", "command"), [(signal.SIGINT, "distill"), (signal.SIGTERM, "train")]
)
def test_a_stopped_student_resumes_to_the_uninterrupted_weights(
    tmp_path, sample_model, text, tiny_args, signal_number, command
):
    options = tiny_args(**SMALL_BATCHES, distill__sentences=40)
    straight = tmp_path / "straight"
    done = crftag(*distill_args(sample_model, text, straight, options))
    assert done.wait(timeout=600) == 0, done.stderr.read()

    broken = tmp_path / "broken"
    process = crftag(*distill_args(sample_model, text, broken, options))
    wait_for_line(process, "epoch   1", timeout=600)
    process.send_signal(signal_number)  # lands somewhere in epoch 2
    assert process.wait(timeout=120) == 128 + signal_number
    message = process.stderr.read()
    assert "Traceback" not in message
    assert f"crftag distill --resume {broken}" in message
    assert (broken / "resume.pt").exists()

    resumed = crftag(command, "--resume", str(broken), "--device", "cpu", "--quiet")
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    assert not (broken / "resume.pt").exists()
    expected = json.loads((straight / "metrics.json").read_text())
    got = json.loads((broken / "metrics.json").read_text())
    assert got["dev"] == expected["dev"] and got["test"] == expected["test"]
    assert got["epochs"] == expected["epochs"] == 3
    a = torch.load(straight / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(broken / "model.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[name], b[name]) for name in a)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["distill"], "distill needs a TEACHER and a CONFIG"),
        (["distill", "en-ner", CONFIG], "needs unlabelled text: --text FILE"),
        (["distill", "--resume", "DIR", "en-ner"], "--resume continues a run with its own"),
        (["distill", "--resume", "DIR", "--overwrite"], "--overwrite starts a new run"),
    ],
)
def test_missing_or_clashing_arguments_are_one_line(invoke, args, message):
    result = invoke(args)
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("crftag: error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_resuming_what_is_not_a_stopped_student_says_what_it_is(invoke, tmp_path):
    result = invoke(["distill", "--resume", str(tmp_path)])
    assert result.status == 2 and "nothing to resume" in result.stderr


def test_a_diverging_student_stops_in_one_line_and_saves_no_model(
    invoke, tmp_path, sample_model, text, tiny_args
):
    diverging = {
        "train__optimizer": "sgd",
        "train__lr": 10.0,
        "train__loss_reduction": "sum",
        "train__clip_grad_norm": None,
        "distill__weight": 100.0,
    }
    student = tmp_path / "student"
    result = invoke(distill_args(sample_model, text, student, tiny_args(**diverging)))
    assert (result.status, result.stdout) == (2, "")
    error = [line for line in result.stderr.splitlines() if line.startswith("crftag: error:")]
    assert len(error) == 1 and "training diverged in epoch 1" in error[0]
    assert "lower distill.weight" in error[0]
    assert not (student / "model.pt").exists()
