"""benchmarks/gpu.py, the path `make bench-gpu` runs, on the CPU with the tiny model: the machine,
training to the end with every epoch's speed, the test file tagged at batch 1 and 1024, the
report written as it goes; and the CUDA tests skipped cleanly where there is no GPU."""

import json

import pytest
import torch

from tests.conftest import SAMPLE_CONFIG, TINY_SETTINGS


@pytest.fixture
def gpu_benchmark(load_benchmark, monkeypatch, tmp_path):
    module = load_benchmark("gpu")
    monkeypatch.setattr(module, "RUNS", str(tmp_path / "gpu"))
    return module


def test_the_cpu_path_trains_tags_and_writes_its_report(gpu_benchmark, tmp_path):
    overrides = [f"{key}={value}" for key, value in TINY_SETTINGS.items()]
    json_path = tmp_path / "gpu.json"
    report = gpu_benchmark.run_benchmark(
        torch.device("cpu"),
        SAMPLE_CONFIG,
        overrides,
        str(json_path),
        with_tests=False,
        tag_sentences=16,
    )
    assert json.loads(json_path.read_text()) == report
    assert report["machine"]["device"] == "cpu" and report["machine"]["torch"] == torch.__version__
    recipe = report["recipe"]
    assert recipe["finished"] and recipe["device"] == "cpu"
    assert [epoch["epoch"] for epoch in recipe["epochs"]] == [1, 2, 3]
    assert all(epoch["tokens_per_s"] > 0 for epoch in recipe["epochs"])
    assert 0 < recipe["dev"] <= 1 and 0 < recipe["test"] <= 1
    assert recipe["dev"] == max(epoch["dev"] for epoch in recipe["epochs"])
    assert [(row["path"], row["batch_size"]) for row in report["tagging"]] == [
        ("tag", 1),
        ("tag", 1024),
        ("predict_files", 1024),
    ]
    for row in report["tagging"]:
        assert row["sentences"] == 16 and row["tokens_per_s"] == row["tokens"] / row["seconds"]
    lines = gpu_benchmark.summary(report).splitlines()
    assert lines[0] == "device: cpu" and lines[-1].startswith("predict_files batch 1024: ")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device runs the tests instead")
def test_the_cuda_tests_skip_cleanly_without_a_gpu(gpu_benchmark, tmp_path):
    result = gpu_benchmark.cuda_tests(str(tmp_path))
    assert result["exit_status"] == 0
    assert result["skipped"] > 0 and result["passed"] == result["failures"] == result["errors"] == 0


def test_the_step_profile_counts_padding_batch_building_and_synchronisations(
    load_benchmark, tiny_config
):
    profile = load_benchmark("gpu_profile")
    config = tiny_config(train__batch_size=8)
    summary = profile.profile_steps(config, torch.device("cpu"), steps=2)
    assert summary["steps"] == 2 and summary["sentences_per_step"] == 8
    assert 0 <= summary["padding_share"] < 1 and summary["seconds_to_build_a_batch"] > 0
    assert summary["tokens_per_s_under_profiler"] > 0
    names = {event.key for event in summary["profiler"].key_averages()}
    assert "aten::mm" in names or "aten::addmm" in names
    assert set(summary["syncs_per_step"]) <= set(profile.SYNC_OPS)
