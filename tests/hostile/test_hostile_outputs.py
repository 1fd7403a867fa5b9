"""Outputs onto inputs and into places that cannot be written: `train -o`, `eval --errors`,
`export`. Each is one line naming the file, with a non-zero exit, and every input is left as
it was."""

import os
import shutil

import pytest
from hostile_files import assert_refused, read_only_folder, snapshot

DEV = "data/ner_sample.dev.conll"


def test_eval_errors_onto_the_scored_file_is_refused(invoke, sample_model, tmp_path):
    scored = tmp_path / "dev.conll"
    shutil.copy(DEV, scored)
    before = snapshot(scored, sample_model)
    result = invoke(["eval", str(scored), "-m", str(sample_model), "--errors", str(scored)])
    assert_refused(result, scored, "replace the input")
    assert snapshot(scored, sample_model) == before


def test_eval_errors_into_a_read_only_folder_is_one_line(invoke, sample_model, tmp_path):
    errors = os.path.join(read_only_folder(tmp_path), "errors.jsonl")
    result = invoke(["eval", DEV, "-m", str(sample_model), "--errors", errors])
    assert_refused(result, errors)


@pytest.mark.parametrize("file_format", ["checkpoint", "numpy"])
def test_export_into_a_read_only_folder_is_one_line(invoke, sample_model, tmp_path, file_format):
    before = snapshot(sample_model)
    target = os.path.join(read_only_folder(tmp_path), "model.out")
    result = invoke(["export", str(sample_model), target, "--format", file_format])
    assert_refused(result, target)
    assert snapshot(sample_model) == before


def test_export_onto_its_model_is_refused(invoke, sample_model):
    before = snapshot(sample_model)
    model = sample_model / "model.pt"
    assert_refused(invoke(["export", str(model), str(model)]), model, "replace the input")
    assert snapshot(sample_model) == before


def test_train_into_a_read_only_folder_is_one_line(invoke, tiny_args, tmp_path):
    run = os.path.join(read_only_folder(tmp_path), "run")
    result = invoke(["train", "configs/sample.yaml", "-o", run, *tiny_args()])
    assert_refused(result, run)


def test_train_onto_its_training_file_is_refused(invoke, tiny_args, tmp_path):
    train = tmp_path / "train.conll"
    shutil.copy("data/ner_sample.train.conll", train)
    before = snapshot(train)
    settings = [*tiny_args(), "--set", f"data.train={train}"]
    result = invoke(["train", "configs/sample.yaml", "-o", str(train), *settings])
    assert_refused(result, train)
    assert snapshot(train) == before
