"""benchmarks/robustness.py: a model's scores as given and perturbed, against its targets."""

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def robustness(load_benchmark):
    return load_benchmark("robustness")


def test_a_model_is_scored_as_eval_perturb_scores_it(
    robustness, sample_model, monkeypatch, invoke, tmp_path
):
    # The dev file's first 50 sentences: scoring more of them takes longer and proves no more.
    sentences = Path("data/ner_sample.dev.conll").read_text(encoding="utf-8").split("\n\n")
    dev = str(tmp_path / "dev.conll")
    Path(dev).write_text("\n\n".join(sentences[:50]) + "\n", encoding="utf-8")
    monkeypatch.setitem(robustness.TESTS, "ner", dev)
    monkeypatch.setitem(robustness.TARGETS, "ner", {"as given": 0.0, "lower": 101.0})
    entry = robustness.measure("ner", str(sample_model), seed=2, typo_rate=0.3)
    shown = invoke(
        [
            "eval",
            dev,
            "-m",
            str(sample_model),
            "--perturb",
            "lower,upper,title,typos",
            "--json",
            "--seed",
            "2",
            "--typo-rate",
            "0.3",
        ]
    )
    scores = json.loads(shown.stdout)
    expected = {"as given": scores["entities"]["micro"]["f1"]}
    expected |= {
        name: copy["entities"]["micro"]["f1"] for name, copy in scores["perturbed"].items()
    }
    assert entry["scores"] == {name: round(100 * f1, 2) for name, f1 in expected.items()}
    assert entry["missed"] == {"lower": [entry["scores"]["lower"], 101.0]}
    lines = robustness.table({"models": {"after": {"ner": entry}}}).splitlines()
    assert lines[0].split() == ["models", "task", "as", "given", "lower", "upper", "title", "typos"]
    assert lines[1].split()[:3] == ["after", "ner", f"{entry['scores']['as given']:.2f}"]
