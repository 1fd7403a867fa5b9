"""The distill section: its defaults, its checks, and --set on its keys."""

import pytest

from crftag.config import DistillConfig, load_config
from crftag.errors import CrftagError

SAMPLE = "configs/sample.yaml"


def test_a_config_without_the_section_takes_its_defaults():
    config = load_config(SAMPLE)
    assert config.distill == DistillConfig()
    assert (config.distill.objective, config.distill.weight) == ("exact", 1.0)
    assert config.distill.temperature == 1.0 and config.distill.sentences is None


def test_set_reaches_every_key():
    settings = [
        "distill.objective=hard",
        "distill.weight=0.5",
        "distill.temperature=2",
        "distill.sentences=100",
    ]
    distill = load_config(SAMPLE, settings).distill
    assert distill == DistillConfig(objective="hard", weight=0.5, temperature=2.0, sentences=100)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("distill.objective=soft", "distill.objective: expected one of exact|hard"),
        ("distill.temperature=0", "distill.temperature: expected a value >= 0.05"),
        ("distill.weight=-1", "distill.weight: expected a value >= 0"),
        ("distill.sentences=0", "distill.sentences: expected a value >= 1"),
        ("distill.wieght=2", "wieght"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(setting, message):
    with pytest.raises(CrftagError) as error:
        load_config(SAMPLE, [setting])
    assert message in str(error.value) and "\n" not in str(error.value)
