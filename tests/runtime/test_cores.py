"""How a crftag process shares the cores (crftag/runtime/cores.py): the OpenMP wait policy and
thread counts in effect in a training and a tagging process, read from OpenMP itself
(OMP_DISPLAY_ENV prints its settings when it loads), a user's own settings kept, and a program
that imports the library left with its own environment."""

import json
import os
import subprocess
import sys

import pytest

import crftag
from crftag.runtime import cores
from tests.conftest import SAMPLE_CONFIG, TINY

OPENMP_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "OMP_DISPLAY_ENV")


def openmp_settings(args: list[str], **environment: str) -> dict[str, str]:
    """Run ``python -m crftag ARGS`` with OpenMP printing its settings as it loads; return them,
    e.g. {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "2"}."""
    clean = {k: v for k, v in os.environ.items() if k not in OPENMP_SETTINGS}
    finished = subprocess.run(
        [sys.executable, "-m", "crftag", *args],
        env={**clean, "OMP_DISPLAY_ENV": "TRUE", **environment},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stderr
    settings = {}
    for line in finished.stderr.splitlines():
        name, equals, value = line.strip().partition(" = ")
        if equals and name.startswith("OMP_"):
            settings[name] = value.strip("'")
    assert settings, "OpenMP did not load: " + finished.stderr
    return settings


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """(training's OpenMP settings, the run directory). OpenMP prints its settings as it loads,
    before the first batch, so the run is one epoch of the sample's first 20 sentences."""
    directory = tmp_path_factory.mktemp("run")
    with open("data/ner_sample.train.conll", encoding="utf-8") as sample:
        sentences = sample.read().split("\n\n")[:20]
    train = tmp_path_factory.mktemp("data") / "train.conll"
    train.write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
    data = [f"data.train={train}", f"data.dev={train}", "data.test=null", "train.epochs=1"]
    args = ["train", SAMPLE_CONFIG, "-o", str(directory), *TINY]
    return openmp_settings(args + [part for d in data for part in ("--set", d)]), directory


def test_training_runs_with_the_passive_policy_on_every_core(sample_run):
    settings, _ = sample_run
    assert settings["OMP_WAIT_POLICY"] == "PASSIVE"
    assert settings["OMP_NUM_THREADS"] == str(len(os.sched_getaffinity(0)))


def test_tagging_with_a_checkpoint_runs_with_the_passive_policy(sample_run, tmp_path):
    _, directory = sample_run
    text = tmp_path / "text.txt"
    text.write_text("John lives in Berlin .\n")
    settings = openmp_settings(["predict", "-m", str(directory), str(text)])
    assert settings["OMP_WAIT_POLICY"] == "PASSIVE"


def test_tagging_with_the_numpy_runtime_runs_with_the_passive_policy(compiled_loops, tmp_path):
    # No torch here: OpenMP comes with the compiled BiLSTM loops.
    text = tmp_path / "text.txt"
    text.write_text("John lives in Berlin .\n")
    settings = openmp_settings(["predict", "-m", "en-ner", str(text)])
    assert settings["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_users_own_settings_are_kept(sample_run, tmp_path):
    _, directory = sample_run
    text = tmp_path / "text.txt"
    text.write_text("John lives in Berlin .\n")
    args = ["predict", "-m", str(directory), str(text)]
    settings = openmp_settings(args, OMP_WAIT_POLICY="ACTIVE", OMP_NUM_THREADS="1")
    assert settings["OMP_WAIT_POLICY"] == "ACTIVE"
    assert settings["OMP_NUM_THREADS"] == "1"


def test_share_cores_keeps_a_spin_count_the_user_set(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("GOMP_SPINCOUNT", "1000")
    cores.share_cores()
    assert "OMP_WAIT_POLICY" not in os.environ


def test_share_cores_sets_nothing_once_torch_is_loaded(monkeypatch):
    # OpenMP has read its settings by then: a value set now would describe nothing.
    pytest.importorskip("torch")
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    cores.share_cores()
    assert "OMP_WAIT_POLICY" not in os.environ


@pytest.mark.parametrize("modules", [["crftag"], ["crftag", "crftag.cli", "crftag.nn.fused_lstm"]])
def test_importing_the_library_leaves_the_environment_as_it_was(modules):
    # Only the command sets the policy, for its own process: a host program keeps its own.
    imports = "; ".join(f"import {name}" for name in modules)
    program = (
        "import json, os\n"
        "before = dict(os.environ)\n"
        f"{imports}\n"
        "print(json.dumps([before, dict(os.environ)]))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in OPENMP_SETTINGS}
    finished = subprocess.run(
        [sys.executable, "-c", program], env=clean, capture_output=True, text=True, timeout=120
    )
    before, after = json.loads(finished.stdout)
    assert after == before
    assert "OMP_WAIT_POLICY" not in after


def test_the_command_sets_the_policy_for_the_processes_it_starts():
    program = "import os; print(os.environ.get('OMP_WAIT_POLICY'))"
    clean = {k: v for k, v in os.environ.items() if k not in OPENMP_SETTINGS}
    wrapper = (
        "import subprocess, sys\n"
        "from crftag.cli import main\n"
        "sys.argv = ['crftag', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        f"    subprocess.run([sys.executable, '-c', {program!r}])\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", wrapper], env=clean, capture_output=True, text=True, timeout=120
    )
    assert finished.stdout.split() == ["crftag", crftag.__version__, "PASSIVE"]
