"""benchmarks/output.py: a benchmark run writes under runs/bench/ and leaves the committed
benchmarks/results/ alone unless it is given --record."""

import hashlib
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
RESULTS = os.path.join(BENCHMARKS, "results")


def committed_results() -> dict[str, str]:
    """Each file in benchmarks/results/ and the SHA-256 of its bytes."""
    digests = {}
    for name in sorted(os.listdir(RESULTS)):
        with open(os.path.join(RESULTS, name), "rb") as handle:
            digests[name] = hashlib.sha256(handle.read()).hexdigest()
    return digests


@pytest.fixture
def roundtrip(load_benchmark, monkeypatch, tmp_path):
    """benchmarks/convert_roundtrip.py on the shipped samples, its scratch and record folders
    moved under tmp_path (the run itself is the real one: `crftag convert` in subprocesses)."""
    module = load_benchmark("convert_roundtrip")
    monkeypatch.setattr(module.output, "SCRATCH", str(tmp_path / "runs" / "bench"))
    monkeypatch.setattr(module.output, "RESULTS", str(tmp_path / "recorded"))

    def run(*options):
        argv = [
            "convert_roundtrip.py",
            "--conll",
            os.path.join(ROOT, "data", "ner_sample.test.conll"),
        ]
        argv += ["--conllu", os.path.join(ROOT, "data", "ewt_sample.dev.conllu"), *options]
        monkeypatch.setattr(sys, "argv", argv)
        module.main()

    return run


def test_a_run_without_record_writes_under_runs_bench_only(roundtrip, tmp_path):
    before = committed_results()
    roundtrip()
    assert committed_results() == before
    assert os.listdir(tmp_path / "runs" / "bench") == ["convert_roundtrip.json"]
    assert not (tmp_path / "recorded").exists()


def test_record_replaces_the_results_file(roundtrip, tmp_path):
    roundtrip("--record")
    assert os.listdir(tmp_path / "recorded") == ["convert_roundtrip.json"]
    assert not (tmp_path / "runs" / "bench").exists()


def test_a_merging_run_starts_from_the_committed_rows_then_from_its_own(load_benchmark, tmp_path):
    output = load_benchmark("output")
    output.SCRATCH, output.RESULTS = str(tmp_path / "scratch"), str(tmp_path / "results")
    os.makedirs(output.RESULTS)
    committed = os.path.join(output.RESULTS, "rows.json")
    assert output.previous_path("rows.json", record=False) == committed
    scratch = output.result_path("rows.json", record=False)
    open(scratch, "w").close()
    assert output.previous_path("rows.json", record=False) == scratch
    assert output.previous_path("rows.json", record=True) == committed


WRITES_RESULTS = re.compile(r"""HERE, "results"|["']benchmarks/results/?["']""")
READERS = {"output.py", "results_table.py", "gpu_table.py"}  # they read the committed files


@pytest.mark.parametrize(
    "script", sorted(name for name in os.listdir(BENCHMARKS) if name.endswith(".py"))
)
def test_no_benchmark_builds_a_results_path_of_its_own(script):
    """A script that names benchmarks/results/ in code (not in its docstring) bypasses --record."""
    if script in READERS:
        return
    with open(os.path.join(BENCHMARKS, script), encoding="utf-8") as handle:
        assert not WRITES_RESULTS.search(handle.read()), f"{script}: use benchmarks/output.py"


def records(script: str) -> bool:
    with open(os.path.join(BENCHMARKS, script), encoding="utf-8") as handle:
        return "add_record_option" in handle.read()


def test_every_make_target_running_a_recording_benchmark_passes_record_flag():
    """`make bench-... RECORD=1` reaches every script that can record (a recipe line naming
    it, with its continuation lines, carries $(RECORD_FLAG))."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        recipe_lines = handle.read().replace("\\\n", " ").splitlines()
    calls = [
        (line, name)
        for line in recipe_lines
        for name in re.findall(r"benchmarks/(\w+\.py)", line)
        if line.startswith("\t") and records(name)
    ]
    assert calls
    assert [line for line, _ in calls if "$(RECORD_FLAG)" not in line] == []
