"""Outgrowing one process: DDP training under torchrun (gloo on CPU)."""

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
