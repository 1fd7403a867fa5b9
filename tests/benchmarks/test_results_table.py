"""benchmarks/results_table.py: benchmarks/RESULTS.md is what the JSON results render to."""

import json
import shutil

import pytest


@pytest.fixture(scope="module")
def results_table(load_benchmark):
    return load_benchmark("results_table")


def test_results_md_is_current(results_table):
    with open(results_table.OUTPUT, encoding="utf-8") as handle:
        current = handle.read()
    assert current == results_table.render(results_table.load(results_table.RESULTS)), (
        "benchmarks/RESULTS.md disagrees with benchmarks/results/*.json: run `make results`"
    )


def test_check_fails_when_a_result_changes(results_table, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(results_table.RESULTS, results)
    output = str(tmp_path / "RESULTS.md")
    arguments = ["--results", str(results), "--output", output]
    assert results_table.main([*arguments, "--check"]) == 1  # not written yet
    assert results_table.main(arguments) == 0
    assert results_table.main([*arguments, "--check"]) == 0

    speed = json.loads((results / "speed.json").read_text(encoding="utf-8"))
    speed["training_step"]["ratio"] = 9.87
    (results / "speed.json").write_text(json.dumps(speed), encoding="utf-8")
    assert results_table.main([*arguments, "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert results_table.main(arguments) == 0
    with open(output, encoding="utf-8") as handle:
        assert "9.87x (<= 1.25)" in handle.read()


def test_every_accuracy_figure_comes_from_the_json(results_table):
    report = results_table.load(results_table.RESULTS)["accuracy"]
    table = "\n".join(results_table.accuracy_table(report))
    for config, result in report["results"].items():
        for seed in result["seeds"]:
            dev, test = 100 * seed["dev"], 100 * seed["test"]
            assert f"| {config} | {seed['seed']} | {dev:.2f} | {test:.2f} |" in table
    baseline = report["crfsuite_baseline"]
    assert f"| CRFsuite baseline | - | {100 * baseline['dev']:.2f} |" in table
