"""Every command that writes a file refuses an output that is one of its inputs (by name, or
through a symbolic or a hard link) before it reads anything, and leaves that input as it was."""

import os
import shutil

import pytest

from crftag.cli.outputs import refuse_input_as_output
from crftag.errors import CrftagError

CONLL = "data/ner_sample.dev.conll"
POOL = "data/sentences.txt"


def _same_name(tmp_path, source):
    return source, source


def _symbolic_link(tmp_path, source):
    link = tmp_path / "link"
    link.symlink_to(source)
    return source, link


def _hard_link(tmp_path, source):
    link = tmp_path / "hard"
    os.link(source, link)
    return source, link


LINKS = [_same_name, _symbolic_link, _hard_link]


def _assert_refused(result, output, kept, before):
    assert result.status == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"crftag: error: {output}: ")
    assert "writing it would replace the input: give another output" in result.stderr
    assert kept.read_bytes() == before


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize(
    ("original", "command"),
    [
        (POOL, ["select", "-m", "en-ner", "-n", "2", "-o", "OUT", "IN"]),
        (CONLL, ["convert", "IN", "OUT", "--to", "jsonl"]),
    ],
    ids=["select", "convert"],
)
def test_an_output_onto_its_input_keeps_the_input(invoke, tmp_path, link, original, command):
    data = tmp_path / "input"
    shutil.copy(original, data)
    before = data.read_bytes()
    source, output = link(tmp_path, data)
    result = invoke([{"IN": str(source), "OUT": str(output)}.get(arg, arg) for arg in command])
    _assert_refused(result, output, data, before)


def test_select_onto_its_exclude_file(invoke, tmp_path):
    done = tmp_path / "done.jsonl"
    done.write_text('{"text": "Berlin", "spans": []}\n')
    before = done.read_bytes()
    result = invoke(["select", POOL, "-n", "2", "-o", str(done), "--exclude", str(done)])
    _assert_refused(result, done, done, before)


def test_export_onto_the_checkpoint_of_its_run_directory(invoke, sample_model, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(sample_model, run)
    before = (run / "model.pt").read_bytes()
    result = invoke(["export", str(run), str(run / "model.pt"), "--half"])
    _assert_refused(result, run / "model.pt", run / "model.pt", before)


def test_eval_errors_onto_the_gold_file(invoke, tmp_path):
    gold = tmp_path / "gold.conll"
    shutil.copy(CONLL, gold)
    before = gold.read_bytes()
    result = invoke(["eval", str(gold), "-m", "en-ner", "--errors", str(gold)])
    _assert_refused(result, gold, gold, before)


def test_tune_onto_the_config_it_reads(invoke, tmp_path):
    study = tmp_path / "study"
    study.mkdir()
    config = study / "best.yaml"
    shutil.copy("configs/sample.yaml", config)
    config.write_text(config.read_text().replace("../data/", os.path.abspath("data") + "/"))
    before = config.read_bytes()
    result = invoke(["tune", str(config), "-o", str(study), "--trials", "1", "--device", "cpu"])
    _assert_refused(result, config, config, before)
    assert sorted(os.listdir(study)) == ["best.yaml"]


def test_train_onto_its_training_file(invoke, tmp_path, tiny_args):
    run = tmp_path / "run"
    run.mkdir()
    data = run / "metrics.json"  # a data file named as a run's file
    shutil.copy("data/ner_sample.train.conll", data)
    before = data.read_bytes()
    config = tmp_path / "config.yaml"
    config.write_text(f"data:\n  train: {data}\n  dev: {os.path.abspath(CONLL)}\n")
    result = invoke(["train", str(config), "-o", str(run), *tiny_args()])
    _assert_refused(result, data, data, before)


def test_plot_onto_a_run_it_draws(invoke, sample_model, tmp_path):
    metrics = tmp_path / "metrics.json"
    shutil.copy(sample_model / "metrics.json", metrics)
    before = metrics.read_bytes()
    result = invoke(["plot", str(metrics), "-o", str(metrics)])
    _assert_refused(result, metrics, metrics, before)


def test_streams_and_new_files_are_not_inputs(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("x\n")
    refuse_input_as_output(["-", None, str(tmp_path / "new.txt")], ["-", str(source), None])
    with pytest.raises(CrftagError, match="both an input and the output"):
        refuse_input_as_output([str(source)], ["-", str(source)])
