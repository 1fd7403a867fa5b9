"""crftag/config/removed.py: a removed setting named in a config, on the command line or in a
resume state is one line saying why; a model file that left it off still loads."""

import os

import pytest

from crftag.config.removed import REMOVED_KEYS, REMOVED_OBJECTIVES
from crftag.config.sections import Config
from crftag.errors import CrftagError

TRUECASER = "model.truecaser"


def removal_line(source: str, name: str) -> str:
    return f"{source}: {name}: {REMOVED_KEYS[name][1]}"


@pytest.mark.parametrize(
    ("yaml_text", "name"),
    [
        ("  truecaser: some/dir\n", "model.truecaser"),
        ("  truecaser: null\n", "model.truecaser"),
        ("  truecaser_finetune: false\n", "model.truecaser_finetune"),
    ],
)
def test_a_config_naming_a_removed_key_is_one_line(tmp_path, invoke, yaml_text, name):
    config = tmp_path / "config.yaml"
    train = os.path.abspath("data/ner_sample.train.conll")
    config.write_text(f"data:\n  train: {train}\nmodel:\n{yaml_text}", encoding="utf-8")
    result = invoke(["train", str(config), "-o", str(tmp_path / "run"), "--device", "cpu"])
    assert result.status == 2
    assert result.stderr == f"crftag: error: {removal_line(str(config), name)}\n"
    assert not (tmp_path / "run" / "model.pt").exists()


def test_a_removed_key_given_with_set_is_one_line(tmp_path, invoke):
    options = ["--set", f"{TRUECASER}=x", "--device", "cpu"]
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *options])
    assert result.status == 2
    assert result.stderr == f"crftag: error: {removal_line('configs/sample.yaml', TRUECASER)}\n"


def test_a_stored_config_leaving_a_removed_key_off_loads():
    raw = {"data": {"train": "t"}, "model": {"truecaser": None, "truecaser_finetune": False}}
    assert Config.from_dict(raw, source="m.npz") == Config.from_dict({"data": {"train": "t"}})


@pytest.mark.parametrize(
    ("name", "value"), [("model.truecaser", "dir"), ("model.truecaser_finetune", True)]
)
def test_a_stored_config_that_used_a_removed_key_is_refused_naming_it(name, value):
    raw = {"data": {"train": "t"}, "model": {name.split(".")[1]: value}}
    with pytest.raises(CrftagError) as raised:
        Config.from_dict(raw, source="m.npz")
    assert str(raised.value) == removal_line("m.npz", name)


def test_the_bundled_pos_model_names_the_removed_keys_and_still_loads():
    """The archive was written while the keys existed; its config names them, left off."""
    from crftag.inference.array_tagger import ArrayTagger
    from crftag.runtime.archive import read_archive

    metadata, weights = read_archive("crftag/models/en-pos.npz")
    assert metadata["config"]["model"]["truecaser"] is None
    assert not any(name.startswith("truecaser") for name in weights)
    tagger = ArrayTagger(metadata, weights, "en-pos.npz")
    assert tagger.tag([["The", "cat", "sat", "."]], 8) == [["DET", "NOUN", "VERB", "PUNCT"]]


def test_pretrain_with_a_removed_objective_is_one_line(tmp_path, invoke):
    text = tmp_path / "text.txt"
    text.write_text("one line\nanother line\n", encoding="utf-8")
    options = ["-o", str(tmp_path / "out"), "--objective", "truecase", "--device", "cpu"]
    result = invoke(["pretrain", str(text), *options])
    assert result.status == 2
    assert (
        result.stderr == f"crftag: error: --objective truecase: {REMOVED_OBJECTIVES['truecase']}\n"
    )
    assert not (tmp_path / "out").exists()


def test_resuming_a_pretraining_of_a_removed_objective_is_one_line(tmp_path, invoke):
    """A resume state written before the removal names the objective in its settings."""
    import dataclasses

    from crftag.modelfiles.checkpoint import write_checkpoint
    from crftag.training.pretrain import PretrainSettings

    directory = tmp_path / "out"
    directory.mkdir()
    settings = dataclasses.asdict(PretrainSettings(objective="truecase"))
    state = {"format": "crftag-resume", "task": "pretrain", "settings": settings}
    write_checkpoint(str(directory / "resume.pt"), state)
    result = invoke(["pretrain", "--resume", str(directory), "--device", "cpu"])
    assert result.status == 2
    assert (
        result.stderr == f"crftag: error: --objective truecase: {REMOVED_OBJECTIVES['truecase']}\n"
    )
