"""docs/config.md is what crftag.config.reference renders from crftag/config/sections.py, and
every key has a description to render."""

import dataclasses
import pathlib
import typing

import pytest

from crftag.config import reference as config_reference
from crftag.config import sections as config

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "config.md"


def test_docs_config_md_is_current():
    assert REFERENCE.read_text(encoding="utf-8") == config_reference.render(), (
        "docs/config.md disagrees with crftag/config/sections.py: run `make docs`"
    )


def test_every_key_has_a_description():
    for section in (config.DataConfig, config.VocabConfig, config.ModelConfig, config.TrainConfig):
        for spec in dataclasses.fields(section):
            assert spec.metadata.get("doc", "").strip(), f"{section.__name__}.{spec.name}"


def test_every_key_is_in_the_reference():
    text = config_reference.render()
    for name, section in typing.get_type_hints(config.Config).items():
        for spec in dataclasses.fields(section):
            assert f"| `{name}.{spec.name}` |" in text


def test_a_key_without_description_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Section:
        described: int = config._key(1, "A key with a description.")
        bare: int = 2

    @dataclasses.dataclass(frozen=True)
    class Shape:
        data: Section

    with pytest.raises(ValueError, match="expected a description in the metadata of data.bare"):
        config_reference.render(Shape)


def test_allowed_values_follow_the_checks():
    text = config_reference.render()
    assert "| `model.char_encoder` | `str` | `cnn` | `cnn`, `lstm`, `none` |" in text
    assert "| `model.dropout` | `float` | `0.5` | [0, 0.95] |" in text
    assert "| `train.word_dropout` | `float` | `0.0` | [0, 1] |" in text
    assert "| `train.batch_size` | `int` | `10` | 1 to 10000 |" in text
    assert "| `data.tag_column` | `int \\| None` | `null` | -1000 to 1000 |" in text
    assert "| `data.train` | `str \\| list[str]` | (required) |" in text


def test_check_fails_on_a_stale_file_and_passes_on_a_current_one(tmp_path, capsys):
    path = tmp_path / "config.md"
    path.write_text(config_reference.render().replace("Initial learning rate", "Rate"))
    assert config_reference.main(["--check", str(path)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert config_reference.main([str(path)]) == 0
    assert config_reference.main(["--check", str(path)]) == 0
    assert config_reference.main(["--check", str(tmp_path / "missing.md")]) == 1
