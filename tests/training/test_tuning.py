"""crftag tune: a study on the sample that continues after an interruption and writes a
best.yaml that trains; pruning and the time limit end a trial as a finished run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import crftag.training.tuning as tuning
from crftag.errors import TrainingInterrupted
from crftag.training.tuning import Budget, Objective, import_optuna

# Trials of the tiny model: one epoch each, the sizes fixed, the rest of the space drawn.
QUICK = [
    "train.epochs=1",
    "model.word_dim=16",
    "tune.hidden_size=[16]",
    "tune.char_dim=[10]",
    "tune.char_size=[10]",
    "tune.batch_size=[16,32]",
]


def _tune_args(study, *extra):
    sets = [part for setting in QUICK for part in ("--set", setting)]
    return ["tune", "configs/sample.yaml", "-o", str(study), *sets, "--device", "cpu", *extra]


def _trials(study):
    return json.loads((study / "trials.json").read_text())


def test_a_study_continues_after_an_interruption_and_its_best_config_trains(
    tmp_path, invoke, monkeypatch
):
    study = tmp_path / "study"
    real_train, calls = tuning.train, []

    def interrupted_second(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise TrainingInterrupted(2, "interrupted")  # what Ctrl-C mid-trial raises
        return real_train(*args, **kwargs)

    monkeypatch.setattr(tuning, "train", interrupted_second)
    first = invoke(_tune_args(study, "--trials", "3"))
    assert first.status == 130
    assert "run the same command to continue the study" in first.stderr
    assert [t["state"] for t in _trials(study)] == ["complete", "fail"]
    kept = os.stat(study / "trials" / "000" / "metrics.json").st_mtime_ns

    monkeypatch.setattr(tuning, "train", real_train)
    second = invoke(_tune_args(study, "--trials", "3", "--jobs", "2"))
    assert second.status == 0, second.stderr
    assert second.stdout == ""
    trials = _trials(study)
    assert [t["state"] for t in trials].count("complete") == 3
    assert os.stat(study / "trials" / "000" / "metrics.json").st_mtime_ns == kept  # not rerun
    for trial in trials:
        if trial["state"] == "complete":
            metrics = json.loads((study / trial["run_dir"] / "metrics.json").read_text())
            assert "test" not in metrics  # trials never see the test file
            assert metrics["dev"] == trial["dev"]
    best = json.loads((study / "best.json").read_text())["best"]
    assert best["dev"] == max(t["dev"] for t in trials if t["state"] == "complete")
    assert 0 <= best["test"] <= 1
    assert f"best: trial {best['number']:03d}" in second.stderr

    trained = invoke(["train", str(study / "best.yaml"), "-o", str(tmp_path / "run"), "-q"])
    assert trained.status == 0, trained.stderr
    config = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert config["epochs"] == 1

    drawn = invoke(["plot", str(study), "-o", str(tmp_path / "history.png")])
    assert drawn.status == 0, drawn.stderr
    assert (tmp_path / "history.png").read_bytes()[:4] == b"\x89PNG"


class _Trial:
    """An Optuna trial's stand-in, which asks to prune after the first epoch if ``prune``."""

    number = 0

    def __init__(self, prune):
        self.prune, self.reported, self.attrs = prune, [], {}

    def report(self, value, step):
        self.reported.append((step, value))

    def should_prune(self):
        return self.prune

    def set_user_attr(self, name, value):
        self.attrs[name] = value

    def suggest_categorical(self, name, choices):
        return choices[0]

    def suggest_float(self, name, low, high, log=False):
        return low


@pytest.mark.parametrize("deadline", [None, 0.0])
def test_a_pruned_or_late_trial_ends_as_a_finished_run(tiny_config, tmp_path, deadline):
    optuna = import_optuna()
    config = tiny_config(train__epochs=3)
    objective = Objective(optuna, config, ["dropout"], str(tmp_path), torch.device("cpu"), deadline)
    trial = _Trial(prune=deadline is None)  # 0.0: the deadline long past
    with pytest.raises(optuna.TrialPruned):
        objective(trial)
    metrics = json.loads((tmp_path / "trials" / "000" / "metrics.json").read_text())
    assert metrics["epochs"] == 1 and len(trial.reported) == 1
    assert trial.attrs["stopped"] == ("pruned" if deadline is None else "time limit")
    assert not (tmp_path / "trials" / "000" / "resume.pt").exists()


def test_the_time_limit_stops_starting_trials(tiny_config, tmp_path):
    config = tiny_config(train__epochs=2)
    tuning.tune(config, str(tmp_path), Budget(trials=5, minutes=0.0001), device=torch.device("cpu"))
    trials = _trials(tmp_path)
    assert len(trials) <= 1
    assert all(t["state"] == "pruned" and t["stopped"] == "time limit" for t in trials)


def test_a_missing_optuna_is_one_line_saying_what_to_install(invoke, monkeypatch, tmp_path):
    monkeypatch.setitem(__import__("sys").modules, "optuna", None)
    result = invoke(_tune_args(tmp_path / "study"))
    assert result.status == 2
    assert result.stderr == (
        "crftag: error: crftag tune needs Optuna, which is not installed: "
        "pip install 'crftag[tune]'\n"
    )
    assert not (tmp_path / "study").exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("data.dev=null", "data.dev: crftag tune chooses trials on the dev score; set a dev file"),
        ("tune.dropout=[0.5,0.99]", "tune.dropout: expected a probability in [0, 0.95], got 0.99"),
        ("tune.serch=[lr]", "unknown key 'tune.serch'; did you mean 'tune.search'?"),
    ],
)
def test_a_bad_study_config_is_one_line_and_writes_nothing(invoke, tmp_path, setting, message):
    result = invoke(_tune_args(tmp_path / "study", "--set", setting))
    assert result.status == 2
    assert result.stderr.startswith("crftag: error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert result.stdout == ""
    assert not (tmp_path / "study").exists()


def test_ctrl_c_stops_parallel_trials_and_the_study_continues(tmp_path, invoke):
    """A real SIGINT to `crftag tune --jobs 2`: the trials under way (in worker threads) stop at
    their epoch's end and are marked failed, the command exits 130, and a rerun continues."""
    study = tmp_path / "study"
    long_trials = ("--set", "train.epochs=200")
    # The config as written, the first trial of a new study, runs alone: a few seconds of it
    # first (in this process; the signal is for the study's second command), which the time
    # limit ends (pruned) after an epoch.
    first = invoke(_tune_args(study, "--trials", "1", "--time", "0.05", *long_trials))
    assert first.status == 0, first.stderr
    args = _tune_args(study, "--trials", "3", "--jobs", "2", *long_trials)
    process = subprocess.Popen([sys.executable, "-m", "crftag", *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (study / "trials" / "002" / "model.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # both trials have finished an epoch
    process.send_signal(signal.SIGINT)
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 130, errors.decode()
    assert b"run the same command to continue the study" in errors
    assert b"Traceback" not in errors
    assert [t["state"] for t in _trials(study)] == ["pruned", "fail", "fail"]


def test_the_first_trial_is_the_config_as_written_where_the_space_holds_it(tmp_path, invoke):
    study = tmp_path / "study"
    result = invoke(_tune_args(study, "--trials", "1", "--set", "tune.batch_size=[8,32]"))
    assert result.status == 0, result.stderr
    params = _trials(study)[0]["params"]
    # configs/sample.yaml: adam at 0.005, dropout 0.3 (inside the default space) ...
    assert params["optimizer"] == "adam"
    assert params["lr"] == pytest.approx(0.005)
    assert params["dropout"] == pytest.approx(0.3)
    # ... batch size 16, which the space above leaves out: drawn from it instead.
    assert params["batch_size"] in (8, 32)


def test_an_interrupted_first_trial_is_the_config_as_written_again(tmp_path, invoke, monkeypatch):
    study, real_train = tmp_path / "study", tuning.train

    def interrupted(*args, **kwargs):
        raise TrainingInterrupted(2, "interrupted")  # Ctrl-C in the first trial

    monkeypatch.setattr(tuning, "train", interrupted)
    assert invoke(_tune_args(study, "--trials", "1")).status == 130
    monkeypatch.setattr(tuning, "train", real_train)
    result = invoke(_tune_args(study, "--trials", "1"))
    assert result.status == 0, result.stderr
    failed, rerun = _trials(study)
    assert (failed["state"], rerun["state"]) == ("fail", "complete")
    assert rerun["params"]["lr"] == pytest.approx(0.005) and rerun["params"]["optimizer"] == "adam"
