"""`crftag pretrain`: a directory of character language models from unlabelled text, within a
time budget, resumable after a signal, and one-line errors for bad input."""

import gzip
import json
import re
import signal
import subprocess
import sys

import pytest
import torch
from diverging import diverge_in_epoch

from crftag.errors import TrainingInterrupted
from crftag.modelfiles.char_lm_files import load_char_lm
from crftag.training.pretrain import PretrainSettings, pretrain

TINY = ["--hidden", "8", "--char-dim", "4", "--batch-size", "8", "--device", "cpu", "--quiet"]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    """The words of the bundled NER sample, a sentence a line, labels stripped, gzip'd."""
    sentences, words = [], []
    with open("data/ner_sample.train.conll", encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                words.append(line.split()[0])
            elif words:
                sentences.append(" ".join(words))
                words = []
    path = tmp_path_factory.mktemp("text") / "text.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("\n".join(sentences[:200]) + "\n")
    return str(path)


def crftag(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "crftag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop_pretraining(texts, directory, settings, *, at_call):
    """Pretrain until the ``at_call``-th poll for a signal (one after each batch and each
    epoch) reports SIGINT, as StopSignals does; return the TrainingInterrupted raised."""
    calls = []

    def stop_requested():
        calls.append(1)
        return signal.SIGINT if len(calls) == at_call else None

    with pytest.raises(TrainingInterrupted) as stopped:
        pretrain(
            texts,
            str(directory),
            settings,
            minutes=None,
            device=torch.device("cpu"),
            stop_requested=stop_requested,
            show_progress=False,
        )
    return stopped.value


def test_pretrain_writes_models_and_their_held_out_perplexity(tmp_path, text_file, invoke):
    result = invoke(["pretrain", text_file, "-o", str(tmp_path / "lm"), "--epochs", "1", *TINY])
    assert result.status == 0, result.stderr
    assert result.stdout == ""
    stored = json.loads((tmp_path / "lm" / "perplexity.json").read_text())
    assert f"forward {stored['forward']:.3f}" in result.stderr
    pretrained = load_char_lm(str(tmp_path / "lm"))
    assert pretrained.perplexity == stored
    # Trained: better than guessing uniformly among the characters.
    assert 1 < stored["forward"] < len(pretrained.codes) and stored["backward"] < len(
        pretrained.codes
    )
    assert not (tmp_path / "lm" / "resume.pt").exists()


def test_off_a_terminal_progress_is_a_line_each_tenth_of_an_epoch(tmp_path, text_file, invoke):
    args = ["pretrain", text_file, "-o", str(tmp_path / "lm"), "--epochs", "2", *TINY[:-1]]
    logged = invoke(args).stderr
    rate = r"[\d.?]+(batch/s|s/batch)"  # tqdm turns a rate under 1 a second round
    pattern = rf"^epoch (\d): \d+% (\d+)/(\d+) \[\d\d:\d\d<[\d:?]+, +{rate}.*\]$"
    lines = [(int(e), int(n), int(t)) for e, n, t, _ in re.findall(pattern, logged, re.M)]
    total = lines[0][2]
    for epoch in (1, 2):  # a line as each tenth of the epoch is passed (and every 10 s)
        tenths = [n * 10 // total for e, n, _ in lines if e == epoch]
        assert set(tenths) == set(range(1, 11)) and tenths == sorted(tenths), lines
    assert logged.index("epoch 1: done") < logged.index("epoch 2: ")
    quiet = invoke([*args[:3], str(tmp_path / "quiet"), *args[4:], "--quiet"]).stderr
    assert "batch" not in quiet and "epoch 1: done" in quiet


def test_time_budget_stops_training_and_still_writes_the_models(tmp_path, text_file, invoke):
    out = tmp_path / "lm"
    result = invoke(
        ["pretrain", text_file, "-o", str(out), "--epochs", "1000", "--time", "0.01", *TINY]
    )
    assert result.status == 0, result.stderr
    # Where it stops depends on the machine's speed; that it stops long before 1000 epochs not.
    stopped = re.search(r"stopped by --time at epoch (\d+)", result.stderr)
    assert stopped and int(stopped.group(1)) < 1000, result.stderr
    assert load_char_lm(str(out)).perplexity["forward"] > 1


def test_interrupted_and_resumed_pretraining_equals_uninterrupted(tmp_path, text_file):
    options = ["--epochs", "3", "--batch-size", "2", *TINY[:4], *TINY[6:]]
    straight = crftag("pretrain", text_file, "-o", str(tmp_path / "straight"), *options)
    assert straight.wait(timeout=300) == 0, straight.stderr.read()

    broken = tmp_path / "broken"
    process = crftag("pretrain", text_file, "-o", str(broken), *options)
    while not process.stderr.readline().startswith("epoch 1: done"):
        assert process.poll() is None, process.stderr.read()
    process.send_signal(signal.SIGINT)  # lands in epoch 2
    assert process.wait(timeout=120) == 128 + signal.SIGINT
    message = process.stderr.read()
    assert "Traceback" not in message and f"crftag pretrain --resume {broken}" in message
    assert (broken / "resume.pt").exists() and not (broken / "char_lm.pt").exists()

    resumed = crftag("pretrain", "--resume", str(broken), "--device", "cpu", "--quiet")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    expected = load_char_lm(str(tmp_path / "straight"))
    got = load_char_lm(str(broken))
    assert got.perplexity == expected.perplexity
    a, b = expected.models.state_dict(), got.models.state_dict()
    assert all(torch.equal(a[name], b[name]) for name in a)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "missing.txt: no such text file"),
        (b"", "missing.txt: no text (the file is empty or blank)"),
        (b"ok\n\xff\xfe\n", "missing.txt:2: not valid UTF-8"),
        (b"only one line\n", "one line of text; pretraining needs at least two"),
    ],
)
def test_bad_text_is_one_line_and_exit_2(tmp_path, invoke, content, message):
    path = tmp_path / "missing.txt"
    if content is not None:
        path.write_bytes(content)
    result = invoke(["pretrain", str(path), "-o", str(tmp_path / "lm"), *TINY])
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_resume_refuses_text_that_changed(tmp_path, invoke):
    text = tmp_path / "text.txt"
    text.write_text("one line of text\nand another\nand a third\n")

    stopped = tmp_path / "stopped"
    settings = PretrainSettings(hidden_size=8, char_dim=4, batch_size=1, epochs=2)
    stop_pretraining([str(text)], stopped, settings, at_call=1)
    text.write_text("one line of text\nand another, longer\nand a third\n")
    result = invoke(["pretrain", "--resume", str(stopped)])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert "the text changed since the pretraining" in result.stderr


def test_resume_without_state_is_one_line(tmp_path, invoke):
    result = invoke(["pretrain", "--resume", str(tmp_path)])
    assert result.status == 2 and "nothing to resume" in result.stderr


@pytest.fixture(scope="module")
def char_lm_dir(tmp_path_factory, text_file):
    from crftag import cli

    directory = tmp_path_factory.mktemp("lm") / "lm"
    assert cli.run(["pretrain", text_file, "-o", str(directory), "--epochs", "1", *TINY]) == 0
    return directory


@pytest.mark.parametrize("finetune", [False, True])
def test_a_tagger_with_the_char_lm_trains_and_carries_its_weights(
    tmp_path, invoke, tiny_args, char_lm_dir, finetune
):
    from crftag.modelfiles.checkpoint import load_model

    run = tmp_path / "run"
    options = tiny_args(
        train__epochs=1, model__char_lm=str(char_lm_dir), model__char_lm_finetune=finetune
    )
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *options])
    assert result.status == 0, result.stderr
    model = load_model(str(run)).model
    pretrained = load_char_lm(str(char_lm_dir)).models.state_dict()
    trained = model.char_lm.state_dict()
    unchanged = all(torch.equal(trained[name], pretrained[name]) for name in pretrained)
    assert unchanged != finetune
    # The checkpoint is self-contained: it tags with the language model's directory gone.
    moved = tmp_path / "elsewhere"
    char_lm_dir.rename(moved)
    try:
        tagged = invoke(["predict", "-m", str(run)], stdin="Laura Joshi joined Acme Corp .\n")
    finally:
        moved.rename(char_lm_dir)
    assert tagged.status == 0 and len(tagged.stdout.split()) == 12


def test_a_missing_char_lm_directory_is_one_line(tmp_path, invoke, tiny_args):
    options = tiny_args(model__char_lm=str(tmp_path / "nowhere"))
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *options])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert "model.char_lm: " in result.stderr and "no char_lm.pt here" in result.stderr


def test_the_features_encoder_refuses_a_char_lm_in_one_line(tmp_path, invoke, char_lm_dir):
    features = ["model.encoder=features", "train.optimizer=sgd", "train.momentum=0"]
    features += ["train.clip_grad_norm=null", f"model.char_lm={char_lm_dir}"]
    options = [part for setting in features for part in ("--set", setting)]
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *options])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert "model.char_lm needs the BiLSTM encoder" in result.stderr


def test_pretraining_keeps_the_resume_file_of_crftag_train(tmp_path, text_file, invoke):
    """A stopped pretraining's resume.pt is crftag train's format: its run state, one result
    for each finished epoch; crftag train refuses it, naming the command that continues it."""
    stopped = tmp_path / "stopped"
    settings = PretrainSettings(hidden_size=8, char_dim=4, batch_size=8, epochs=3)
    stop = stop_pretraining([text_file], stopped, settings, at_call=30)
    assert re.fullmatch(r"interrupted at epoch 2, batch \d+ of \d+; continue with: .*", str(stop))
    state = torch.load(stopped / "resume.pt", weights_only=True)
    assert (state["format"], state["task"]) == ("crftag-resume", "pretrain")
    run_state = state["run_state"]
    step = int(re.search(r"batch (\d+)", str(stop)).group(1))
    assert (run_state["epoch"], run_state["step"], len(run_state["history"])) == (2, step, 1)
    first = run_state["history"][0]
    assert first["epoch"] == 1 and first["dev_score"] is None and 0 < first["loss"] < 10

    result = invoke(["train", "--resume", str(stopped)])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert f"continue it with crftag pretrain --resume {stopped}" in result.stderr


def test_a_resume_file_of_the_older_pretraining_format_is_one_line(tmp_path, invoke):
    from crftag.modelfiles.checkpoint import write_checkpoint

    directory = tmp_path / "lm"
    directory.mkdir()
    older = {"format": "crftag-pretrain-resume", "progress": {"epoch": 2, "step": 3}}
    write_checkpoint(str(directory / "resume.pt"), older)
    result = invoke(["pretrain", "--resume", str(directory), "--device", "cpu"])
    assert result.status == 2 and result.stderr.count("\n") == 1
    assert result.stderr == (
        f"crftag: error: {directory / 'resume.pt'}: written by an older crftag pretrain, which "
        "this one cannot continue; start the pretraining again in another directory\n"
    )


def test_a_diverging_pretraining_is_one_line_and_keeps_the_last_good_state(
    tmp_path, text_file, invoke, monkeypatch
):
    diverge_in_epoch(monkeypatch, 2)
    out = tmp_path / "lm"
    result = invoke(["pretrain", text_file, "-o", str(out), "--epochs", "3", *TINY])
    assert result.status == 2 and result.stderr.endswith(
        "nothing of this epoch is saved; begin again in another directory, with another --seed\n"
    )
    assert "crftag: error: training diverged in epoch 2: the loss (nan)" in result.stderr
    state = torch.load(out / "resume.pt", weights_only=True)
    assert state["run_state"]["epoch"] == 2 and not (out / "char_lm.pt").exists()
