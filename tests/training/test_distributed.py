"""Outgrowing one process: DDP training under torchrun (gloo on CPU), sharded predict."""

import json
import os
import subprocess
import sys

import pytest

from crftag import cli

TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


@pytest.mark.skipif(not os.path.exists(TORCHRUN), reason="torchrun is not installed beside python")
def test_two_process_training_matches_one_process(tmp_path):
    single, double = tmp_path / "single", tmp_path / "double"
    common = ["configs/sample.yaml", "--device", "cpu", "-q", "--seed", "5"]
    assert cli.run(["train", *common, "-o", str(single)]) == 0
    done = subprocess.run(
        [
            TORCHRUN,
            "--nproc_per_node",
            "2",
            "--master_port",
            "29517",
            "-m",
            "crftag",
            "train",
            *common,
            "-o",
            str(double),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(os.listdir(double)) == ["metrics.json", "model.pt"]  # one checkpoint, rank 0's
    assert done.stderr.count("saved ") == 1  # one report, rank 0's
    one = json.loads((single / "metrics.json").read_text())
    two = json.loads((double / "metrics.json").read_text())
    assert two["processes"] == 2
    assert abs(two["dev"] - one["dev"]) <= 0.02, (one["dev"], two["dev"])
    loaded = subprocess.run(
        [
            sys.executable,
            "-m",
            "crftag",
            "eval",
            "data/ner_sample.dev.conll",
            "-m",
            str(double),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert abs(json.loads(loaded.stdout)["entities"]["micro"]["f1"] - two["dev"]) < 1e-9


@pytest.mark.parametrize("output_format", ["conll", "jsonl"])
def test_sharded_predict_merged_equals_unsharded(invoke, sample_model, tmp_path, output_format):
    lines = [f"Anna Smith {i} lives in Berlin ." if i % 7 else "" for i in range(230)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = ["-m", str(sample_model), "--format", output_format, "--batch-size", "16"]
    whole = invoke(["predict", str(source), *options]).stdout
    shards = []
    for index in range(3):
        result = invoke(["predict", str(source), *options, "--shard", f"{index}/3"])
        assert result.status == 0, result.stderr
        path = tmp_path / f"shard{index}"
        path.write_text(result.stdout, encoding="utf-8")
        shards.append(str(path))
    merged = invoke(["merge", *shards, "--format", output_format, "--batch-size", "16"])
    assert merged.stdout == whole
    jobs = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", *options, "--jobs", "2"],
        input=source.read_bytes(),
        capture_output=True,
        check=True,
    )
    assert jobs.stdout.decode("utf-8") == whole


def test_bad_shard_is_a_clear_error(invoke, sample_model):
    result = invoke(["predict", "-m", str(sample_model), "--shard", "3/3"])
    assert result.status == 2 and "expected I/N with 0 <= I < N" in result.stderr
