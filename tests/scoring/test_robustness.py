"""Scores on perturbed copies: the library function and ``crftag eval --perturb``."""

import json

import pytest

from crftag.data.perturb import perturb_sentences
from crftag.scoring.evaluate import score_sentences
from crftag.scoring.robustness import parse_perturbations, perturbed_table, score_perturbed

DEV = "data/ner_sample.dev.conll"


def test_perturbation_names_are_checked():
    assert parse_perturbations("typos, lower") == ["typos", "lower"]
    with pytest.raises(ValueError, match="expected names from lower,upper,title,typos, got 'x'"):
        parse_perturbations("lower,x")
    with pytest.raises(ValueError, match="'upper' is named twice"):
        parse_perturbations("upper,upper")


def test_each_copy_is_scored_as_the_perturbed_sentences_are(sample_model):
    from crftag.inference.loading import load

    tagger = load(str(sample_model), "cpu")
    gold = tagger.config.data.read(DEV)
    scores = score_perturbed(tagger, gold, ["upper", "typos"], seed=4, typo_rate=0.5)
    assert list(scores) == ["upper", "typos"]
    for change in scores:
        copy = perturb_sentences(gold, change, seed=4, typo_rate=0.5)
        assert scores[change] == score_sentences(tagger, copy)
    assert scores["upper"] != score_sentences(tagger, gold)


def test_the_table_has_a_row_for_the_text_as_given_and_one_per_copy():
    micro = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3}
    scores = {
        "accuracy": 0.9,
        "entities": {"micro": micro},
        "perturbed": {"lower": {"accuracy": 0.8, "entities": {"micro": micro}}},
        "perturbation": {"seed": 3, "typo_rate": 0.1},
    }
    title, headers, rows = perturbed_table("f.conll", scores)
    assert title.startswith("f.conll: as given and perturbed (seed 3, typos in 10% of")
    assert headers[0] == "text" and headers[-1] == "token accuracy"
    assert rows == [
        ["as given", "50.00", "25.00", "33.33", "90.00"],
        ["lower", "50.00", "25.00", "33.33", "80.00"],
    ]
    pos = perturbed_table("p", {**scores, "entities": None})[2]
    assert pos[0] == ["as given", "", "", "", "90.00"]


def test_eval_perturb_prints_one_table_and_json_deterministic_by_seed(invoke, sample_model):
    args = ["eval", DEV, "-m", str(sample_model), "--perturb", "lower,upper,title,typos"]
    result = invoke(args)
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(next(line for line in lines if "as given and perturbed" in line))
    assert [line.split()[0] for line in lines[start + 2 : start + 7]] == [
        "as",
        "lower",
        "upper",
        "title",
        "typos",
    ]
    first = json.loads(invoke([*args, "--json", "--seed", "3", "--typo-rate", "0.5"]).stdout)
    again = json.loads(invoke([*args, "--json", "--seed", "3", "--typo-rate", "0.5"]).stdout)
    other = json.loads(invoke([*args, "--json", "--seed", "4", "--typo-rate", "0.5"]).stdout)
    assert first == again and first["perturbation"] == {"seed": 3, "typo_rate": 0.5}
    assert sorted(first["perturbed"]) == ["lower", "title", "typos", "upper"]
    assert first["perturbed"]["typos"] != other["perturbed"]["typos"]
    assert first["perturbed"]["upper"] == other["perturbed"]["upper"]  # no random draw
    assert first["entities"] == json.loads(invoke(args[:4] + ["--json"]).stdout)["entities"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--perturb", "lower,shout"], "'--perturb': expected names from lower,upper,title,typos"),
        (["--seed", "2"], "--seed: it sets --perturb's copies; add --perturb"),
        (["--typo-rate", "0.3"], "--typo-rate: it sets --perturb's copies; add --perturb"),
        (["--perturb", "typos", "--typo-rate", "2"], "'--typo-rate'"),
    ],
)
def test_eval_perturb_mistakes_are_one_line(invoke, sample_model, extra, message):
    result = invoke(["eval", DEV, "-m", str(sample_model), *extra])
    assert result.status == 2 and result.stdout == ""
    assert message in result.stderr and "Traceback" not in result.stderr
