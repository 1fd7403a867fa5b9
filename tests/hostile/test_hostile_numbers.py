"""Numbers from the command line and the ``augment`` section that no range check catches: NaN
and the infinities (which compare false, or pass ``min=0``), and chances written in decimal
that add up to 1 but sum to a little more in binary."""

import pytest

from crftag.cli import COMMANDS, load_command
from crftag.training.checks import check_augment


def float_options() -> list[tuple[str, str]]:
    """Every float option of every command, as ``(command, --option)``."""
    found = []
    for name in COMMANDS:
        for param in load_command(name).params:
            if param.param_type_name == "option" and "float" in param.type.name:
                found.append((name, param.opts[0]))
    return found


def assert_one_line_error(result, *texts):
    assert result.status == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crftag: error: "), result.stderr
    for text in texts:
        assert text in lines[0], lines[0]


def test_the_float_options_are_found():
    assert {
        ("eval", "--typo-rate"),
        ("predict", "--min-confidence"),
        ("pretrain", "--time"),
        ("serve", "--max-wait-ms"),
        ("tune", "--time"),
    } <= set(float_options())


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
@pytest.mark.parametrize(("command", "option"), float_options())
def test_every_float_option_refuses_values_that_are_not_finite(invoke, command, option, value):
    shown = {"nan": "nan", "inf": "inf", "-inf": "-inf", "1e999": "inf"}[value]
    result = invoke([command, option, value])
    # a range check refuses the infinities outside it; the finite check refuses the rest
    assert_one_line_error(result, f"Invalid value for '{option}': ", shown)


@pytest.mark.parametrize("json", [[], ["--json"]])
def test_eval_perturb_refuses_a_typo_rate_that_is_not_a_number(invoke, sample_model, json):
    data = "data/ner_sample.dev.conll"
    args = ["eval", data, "-m", str(sample_model), "--perturb", "typos", "--typo-rate", "nan"]
    assert_one_line_error(invoke([*args, *json]), "--typo-rate", "expected a finite number")


def test_eval_perturb_refuses_an_unknown_change(invoke, sample_model):
    result = invoke(
        ["eval", "data/ner_sample.dev.conll", "-m", str(sample_model), "--perturb", "shout"]
    )
    assert_one_line_error(result, "--perturb", "shout")


@pytest.mark.parametrize(
    "chances",
    [(0.56, 0.34, 0.1), (0.7, 0.2, 0.1), (0.1, 0.2, 0.7), (1 / 3, 1 / 3, 1 / 3), (0.0, 0.0, 1.0)],
)
def test_case_chances_that_add_up_to_1_in_decimal_are_accepted(tiny_config, chances):
    lower, upper, title = chances
    check_augment(tiny_config(augment__lower=lower, augment__upper=upper, augment__title=title))


def test_case_chances_over_1_are_refused(tiny_config):
    config = tiny_config(augment__lower=0.56, augment__upper=0.34, augment__title=0.11)
    with pytest.raises(Exception, match=r"add up to at most 1, got 1\.01$"):
        check_augment(config)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("augment.lower=.nan", "augment.lower: expected a finite number, got nan"),
        ("augment.typo_rate=.inf", "augment.typo_rate: expected a finite number, got inf"),
        ("augment.typos=high", "augment.typos: expected float, got str 'high'"),
        ("augment.dev=[shout]", "augment.dev: expected names from"),
        ("augment.dev=lower", "augment.dev"),
        ("augment=[1,2]", "augment"),
    ],
)
def test_a_bad_augment_section_is_one_line_naming_the_key(invoke, tmp_path, setting, message):
    run = tmp_path / "run"
    result = invoke(
        ["train", "configs/sample.yaml", "--set", setting, "-o", str(run), "--device", "cpu"]
    )
    assert_one_line_error(result, message)
    assert not run.exists()
