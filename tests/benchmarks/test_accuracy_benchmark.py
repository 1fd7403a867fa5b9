"""benchmarks/accuracy.py: finished runs are reused, --merge keeps the other configs' entries, and
the Markdown results file is regenerated from the JSON (never the README).

No training here: each run directory is given a finished metrics.json, which the benchmark reads
instead of training (what lets an interrupted benchmark continue).
"""

import json
import os
import sys

import pytest


@pytest.fixture(scope="module")
def accuracy(load_benchmark):
    return load_benchmark("accuracy")


def _finished_run(runs, config, seed, dev, test):
    directory = os.path.join(runs, f"{os.path.splitext(os.path.basename(config))[0]}-seed{seed}")
    os.makedirs(directory)
    metrics = {
        "dev": dev,
        "test": test,
        "epochs": 10,
        "best_epoch": 7,
        "train_seconds": 100.0,
        "tokens_per_second": 5000.0,
        "device": "cpu",
    }
    with open(os.path.join(directory, "metrics.json"), "w", encoding="utf-8") as handle:
        json.dump(metrics, handle)


def _main(accuracy, monkeypatch, arguments):
    monkeypatch.setattr(sys, "argv", ["accuracy.py", *arguments])
    accuracy.main()


def test_merge_replaces_only_the_named_config(accuracy, monkeypatch, tmp_path, capsys):
    runs, output = str(tmp_path / "runs"), str(tmp_path / "accuracy.json")
    results_md = tmp_path / "RESULTS.md"
    earlier = {
        "machine": {},
        "results": {
            "configs/a.yaml": {"seeds": [], "dev": {"mean": 0.1}, "test": {"mean": 0.1}},
            "configs/b.yaml": {"seeds": [], "dev": {"mean": 0.2}, "test": {"mean": 0.2}},
        },
        "crfsuite_baseline": {"dev": 0.5, "test": 0.4, "iterations": 3, "train_seconds": 1.0},
    }
    with open(output, "w", encoding="utf-8") as handle:
        json.dump(earlier, handle)
    for seed, (dev, test) in enumerate([(0.90, 0.80), (0.92, 0.84)], start=1):
        _finished_run(runs, "configs/a.yaml", seed, dev, test)

    arguments = ["--configs", "configs/a.yaml", "--seeds", "1", "2", "--runs", runs]
    arguments += ["--results-md", str(results_md)]
    _main(accuracy, monkeypatch, [*arguments, "--json", output, "--merge"])
    with open(output, encoding="utf-8") as handle:
        report = json.load(handle)

    assert list(report["results"]) == ["configs/a.yaml", "configs/b.yaml"]
    assert report["results"]["configs/b.yaml"] == earlier["results"]["configs/b.yaml"]
    assert report["crfsuite_baseline"] == earlier["crfsuite_baseline"]
    a = report["results"]["configs/a.yaml"]
    assert [s["seed"] for s in a["seeds"]] == [1, 2]
    assert a["dev"]["mean"] == pytest.approx(0.91)
    assert a["test"]["mean"] == pytest.approx(0.82)
    assert a["test"]["std"] == pytest.approx(0.0282843, abs=1e-6)
    mean_row = "| configs/a.yaml | mean ± sd | 91.00 ± 1.41 | 82.00 ± 2.83 |"
    assert mean_row in capsys.readouterr().out
    table = results_md.read_text(encoding="utf-8")
    assert mean_row in table
    assert "| configs/b.yaml |" not in table  # b has no seeds to list
    assert "| CRFsuite baseline | - | 50.00 | 40.00 | 3 iterations |" in table

    # Without --merge the file holds only what this invocation measured.
    _main(accuracy, monkeypatch, [*arguments, "--json", output])
    with open(output, encoding="utf-8") as handle:
        assert list(json.load(handle)["results"]) == ["configs/a.yaml"]
