"""Run directories under attack: two runs at once, a run over an earlier one, what a kill leaves,
damaged or outdated resume files, signals before the first batch, a full disk or a file-size
limit, and a half-configured torchrun environment. Each is one line and an exit code, and the
last good checkpoint survives."""

import errno
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import types

import pytest
import torch

from crftag.config.sections import Config
from crftag.modelfiles.checkpoint import load_model
from crftag.training import run as training_run
from crftag.training.state import data_fingerprint

# Small batches, no dev file: many steps an epoch (125, seconds even on a fast machine), and
# every epoch's model is saved as best, so model.pt is written before resume.pt at the end of
# each epoch.
SETTINGS = {"train__epochs": 2, "train__batch_size": 8, "data__dev": None}
LOCK_MESSAGE = (
    "another crftag train is running in this run directory; wait for it to end, or give another -o"
)


def crftag(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "crftag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def wait_for_epoch(process, epoch=1, timeout=120):
    deadline, seen = time.time() + timeout, []
    while time.time() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(f"epoch {epoch:3d}"):
            return
    raise AssertionError(f"no epoch {epoch} line in {seen}")


def one_error(result, message, status=2):
    """The run failed with exactly this one line on stderr (after the log of the epochs it
    trained, if any) and nothing on stdout."""
    assert (result.status, result.stdout) == (status, ""), result.stderr
    *log, last = result.stderr.splitlines()
    assert last == f"crftag: error: {message}"
    assert all(line.startswith("epoch ") for line in log), result.stderr


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory, tiny_args):
    """A run stopped by SIGTERM early in epoch 2 of 2: model.pt of epoch 1 and resume.pt."""
    directory = tmp_path_factory.mktemp("interrupted") / "run"
    process = crftag("train", "configs/sample.yaml", "-o", str(directory), *tiny_args(**SETTINGS))
    wait_for_epoch(process)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 143, process.stderr.read()
    assert sorted(os.listdir(directory)) == ["model.pt", "resume.pt"]
    return directory


@pytest.fixture
def unfinished(interrupted, tmp_path):
    """A copy of the interrupted run, to damage or continue."""
    directory = tmp_path / "run"
    shutil.copytree(interrupted, directory)
    return directory


def contents(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


# One run at a time, and never over an earlier one unless told.


def test_a_second_run_or_resume_in_a_directory_in_use_fails_at_once(
    tmp_path, invoke, tiny_args, monkeypatch
):
    """Refused without waiting: each asks for the lock with LOCK_NB, never blocking on it."""
    from crftag.training import rundir

    directory = tmp_path / "run"
    # Short epochs: the first one's end (and resume.pt) comes soon, the 50th never.
    options = tiny_args(**{**SETTINGS, "train__epochs": 50, "train__batch_size": 32})
    first = crftag("train", "configs/sample.yaml", "-o", str(directory), *options)
    asked = []
    flock = rundir.fcntl.flock

    def recording(descriptor, operation):
        asked.append(operation)
        return flock(descriptor, operation)

    try:
        wait_for_epoch(first)  # resume.pt exists from here on
        monkeypatch.setattr(rundir.fcntl, "flock", recording)
        again = ["train", "configs/sample.yaml", "-o", str(directory), "--overwrite", *options]
        one_error(invoke(again), f"{directory}: {LOCK_MESSAGE}")
        one_error(invoke(["train", "--resume", str(directory)]), f"{directory}: {LOCK_MESSAGE}")
        monkeypatch.undo()
        assert asked == [rundir.fcntl.LOCK_EX | rundir.fcntl.LOCK_NB] * 2
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 143
    assert sorted(os.listdir(directory)) == ["model.pt", "resume.pt"]


def test_a_finished_run_is_kept_unless_overwrite_is_given(
    sample_model, tmp_path, invoke, tiny_args
):
    directory = tmp_path / "run"
    shutil.copytree(sample_model, directory)
    before = contents(directory)
    args = ["train", "configs/sample.yaml", "-o", str(directory), *tiny_args(train__epochs=1)]
    one_error(
        invoke(args),
        f"{directory}: holds a finished run (model.pt, metrics.json); give --overwrite to "
        "replace it, or another -o",
    )
    assert contents(directory) == before

    assert invoke([*args, "--overwrite"]).status == 0
    assert sorted(os.listdir(directory)) == ["metrics.json", "model.pt"]
    assert load_model(str(directory)).config.train.epochs == 1
    assert '"epochs": 1,' in (directory / "metrics.json").read_text()


def test_an_unfinished_run_is_kept_and_its_partial_files_go(unfinished, invoke, tiny_args):
    (unfinished / ".partial-k9x2.pt").write_bytes(b"half a checkpoint")
    before = contents(unfinished)
    del before[".partial-k9x2.pt"]
    args = ["train", "configs/sample.yaml", "-o", str(unfinished), *tiny_args(**SETTINGS)]
    one_error(
        invoke(args),
        f"{unfinished}: holds an unfinished run (model.pt, resume.pt); continue it with crftag "
        f"train --resume {unfinished}, or replace it: --overwrite",
    )
    assert contents(unfinished) == before  # the killed write's leftovers went, nothing else


def test_resume_and_overwrite_together_are_refused(unfinished, invoke):
    one_error(
        invoke(["train", "--resume", str(unfinished), "--overwrite"]),
        "--resume continues a run with its own config: give no CONFIG, --set, --seed or "
        "--overwrite",
    )


# Damaged resume files.


def _set_run_state(key, value):
    def change(state):
        state["run_state"][key] = value

    return change


def _drop(key):
    return lambda state: state.pop(key)


def _misshape_optimizer(state):
    first = state["optimizer"]["state"][0]
    first["exp_avg"] = first["exp_avg"][:1]


def _set_history_loss(state):
    state["run_state"]["history"][0]["loss"] = "low"


def _drop_weight(state):
    state["state_dict"].pop("crf.transitions")


def _set(key, value):
    def change(state):
        state[key] = value

    return change


DAMAGE = {
    "no optimizer": (_drop("optimizer"), "optimizer: expected dict, got nothing"),
    "no config": (_drop("config"), "no 'config' in the checkpoint"),
    "no fingerprint": (
        _drop("fingerprint"),
        "written by an older crftag, without the fingerprint of the training data that resuming "
        "checks; start the run again with crftag train CONFIG -o {run} --overwrite",
    ),
    "run state a list": (_set("run_state", []), "run_state: expected dict, got list"),
    "epoch a string": (
        _set_run_state("epoch", "2"),
        "run_state.epoch: expected an epoch from 1 to 3 (train.epochs + 1), got '2'",
    ),
    "negative epoch": (
        _set_run_state("epoch", -1),
        "run_state.epoch: expected an epoch from 1 to 3 (train.epochs + 1), got -1",
    ),
    "epoch beyond the end": (
        _set_run_state("epoch", 9),
        "run_state.epoch: expected an epoch from 1 to 3 (train.epochs + 1), got 9",
    ),
    "negative step": (
        _set_run_state("step", -5),
        "run_state.step: expected a batch count of 0 or more (0 after the last epoch), got -5",
    ),
    "step beyond the end": (
        _set_run_state("step", 10**6),
        "run_state.step 1000000 is beyond the epoch's 125 batches",
    ),
    "NaN loss": (
        _set_run_state("epoch_loss", float("nan")),
        "run_state.epoch_loss: expected a finite number of 0 or more, got nan",
    ),
    "batch order garbage": (
        _set_run_state("batch_order_state", (3, (1, 2), None)),
        "run_state.batch_order_state: expected the state of Python's random generator, got "
        "(3, (1, 2), None)",
    ),
    "history too short": (
        _set_run_state("history", []),
        "run_state.history: expected one entry for each of the 1 finished epochs, got []",
    ),
    "history entry with a text loss": (
        _set_history_loss,
        "run_state.history: epoch 1's entry has a value that is not a number",
    ),
    "weight missing": (_drop_weight, "state_dict: missing crf.transitions"),
    "optimizer state misshapen": (
        _misshape_optimizer,
        "optimizer.state.0: a tensor that does not fit its weight",
    ),
    "random state a float tensor": (
        _set("torch_rng", torch.zeros(3)),
        "torch_rng: not the state of torch's random generator",
    ),
    "not a resume file": (_set("format", "crftag"), "not a crftag resume file"),
    "an unknown task": (
        _set("task", "tune"),
        "task: expected one of train, pretrain, distill, got 'tune'",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_resume_file_is_one_line_naming_it(unfinished, invoke, damage):
    change, message = DAMAGE[damage]
    path = unfinished / "resume.pt"
    state = torch.load(path, weights_only=True)
    change(state)
    torch.save(state, path)
    before = contents(unfinished)
    message = message.format(run=unfinished)
    one_error(invoke(["train", "--resume", str(unfinished)]), f"{path}: {message}")
    assert contents(unfinished) == before


def test_a_resume_file_that_names_no_task_is_a_taggers_and_continues(unfinished, invoke):
    path = unfinished / "resume.pt"
    state = torch.load(path, weights_only=True)
    assert state.pop("task") == "train"
    torch.save(state, path)
    result = invoke(["train", "--resume", str(unfinished), "-q"])
    assert result.status == 0, result.stderr
    assert (unfinished / "metrics.json").exists() and not path.exists()


def _point_at_copy(directory, data):
    """Re-point the resume file at ``data`` (a copy of the training file), as if the run had
    begun on it."""
    path = directory / "resume.pt"
    state = torch.load(path, weights_only=True)
    state["config"]["data"]["train"] = str(data)
    state["fingerprint"] = data_fingerprint(Config.from_dict(state["config"]))
    torch.save(state, path)
    return path


@pytest.mark.parametrize(
    "change",
    [
        lambda text: text + "\nZorblax B-GALAXY\n",  # the file gained a tag
        lambda text: text.replace("B-PER", "B-ORG", 1),  # replaced by other data
    ],
    ids=["a new tag", "other data"],
)
def test_resume_refuses_training_data_that_changed(unfinished, tmp_path, invoke, change):
    data = tmp_path / "train.conll"
    shutil.copyfile("data/ner_sample.train.conll", data)
    path = _point_at_copy(unfinished, data)
    data.write_text(change(data.read_text()))
    before = contents(unfinished)
    one_error(
        invoke(["train", "--resume", str(unfinished)]),
        f"{path}: {data} has changed since the run began, and a run continues only on the data "
        f"it began with: put the file back as it was, or start the run again with crftag train "
        f"CONFIG -o {unfinished} --overwrite",
    )
    assert contents(unfinished) == before


def test_resume_refuses_training_data_that_is_gone(unfinished, tmp_path, invoke):
    data = tmp_path / "train.conll"
    shutil.copyfile("data/ner_sample.train.conll", data)
    path = _point_at_copy(unfinished, data)
    data.unlink()
    one_error(
        invoke(["train", "--resume", str(unfinished)]),
        f"{path}: {data}, which the run began with, is missing: put it back, or start the run "
        f"again with crftag train CONFIG -o {unfinished} --overwrite",
    )


def test_resume_refuses_a_config_altered_in_the_file(unfinished, invoke):
    path = unfinished / "resume.pt"
    state = torch.load(path, weights_only=True)
    state["config"]["train"]["lr"] = 0.5
    torch.save(state, path)
    one_error(
        invoke(["train", "--resume", str(unfinished)]),
        f"{path}: the config it holds is not the one the run began with; start the run again "
        f"with crftag train CONFIG -o {unfinished} --overwrite",
    )


# Signals before the first batch.


def _signal_while_reading(monkeypatch, number):
    read = training_run.read_training_files

    def read_and_signal(config):
        os.kill(os.getpid(), number)
        return read(config)

    monkeypatch.setattr(training_run, "read_training_files", read_and_signal)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_before_the_first_batch_says_nothing_is_resumable(
    tmp_path, invoke, monkeypatch, tiny_args, number
):
    _signal_while_reading(monkeypatch, number)
    directory = tmp_path / "run"
    result = invoke(["train", "configs/sample.yaml", "-o", str(directory), *tiny_args(**SETTINGS)])
    assert (result.status, result.stdout) == (128 + number, "")
    assert result.stderr == (
        "crftag: interrupted before the first batch, so this run has nothing to resume: "
        "run the same command again\n"
    )
    assert os.listdir(directory) == []


def test_a_signal_while_a_resume_is_set_up_keeps_the_resume_file(unfinished, invoke, monkeypatch):
    _signal_while_reading(monkeypatch, signal.SIGTERM)
    before = contents(unfinished)
    result = invoke(["train", "--resume", str(unfinished)])
    assert (result.status, result.stdout) == (143, "")
    assert result.stderr == (
        f"crftag: interrupted before training went on; continue with: crftag train --resume "
        f"{unfinished}\n"
    )
    assert contents(unfinished) == before


# A full disk and a file-size limit.


def _file_size_limit(limit):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


def _resume_limited(directory, limit):
    process = crftag(
        "train", "--resume", str(directory), "--device", "cpu", "-q",
        preexec_fn=_file_size_limit(limit),
    )  # fmt: skip
    process.wait(timeout=300)
    return process.returncode, process.stdout.read(), process.stderr.read()


@pytest.mark.parametrize(
    ("limit", "failing"), [(100_000, "model.pt"), (300_000, "resume.pt")]
)  # model.pt holds about 170 KB, resume.pt 510 KB
def test_a_file_size_limit_keeps_the_last_good_checkpoint(unfinished, limit, failing):
    before = contents(unfinished)
    status, out, err = _resume_limited(unfinished, limit)
    assert (status, out) == (2, ""), err
    assert err == (
        f"crftag: error: {unfinished / failing}: cannot write: File too large; the files written "
        f"before are kept: make room, then crftag train --resume {unfinished}\n"
    )
    if failing == "model.pt":
        assert contents(unfinished) == before  # nothing half-written beside them
    else:
        assert (unfinished / "resume.pt").read_bytes() == before["resume.pt"]
        assert sorted(os.listdir(unfinished)) == ["model.pt", "resume.pt"]
    assert load_model(str(unfinished)).metrics["epoch"] >= 1
    # Room again: the kept resume file continues the run to its end.
    status, _, err = _resume_limited(unfinished, resource.RLIM_INFINITY)
    assert status == 0, err
    assert sorted(os.listdir(unfinished)) == ["metrics.json", "model.pt"]


def test_a_full_disk_at_metrics_json_keeps_the_run_resumable(unfinished, invoke, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    import crftag.training.rundir as rundir

    monkeypatch.setattr(rundir, "json", types.SimpleNamespace(dump=full_disk))
    one_error(
        invoke(["train", "--resume", str(unfinished), "-q"]),
        f"{unfinished / 'metrics.json'}: cannot write: No space left on device; the files "
        f"written before are kept: make room, then crftag train --resume {unfinished}",
    )
    assert sorted(os.listdir(unfinished)) == ["model.pt", "resume.pt"]
    monkeypatch.undo()
    assert invoke(["train", "--resume", str(unfinished), "-q"]).status == 0
    assert sorted(os.listdir(unfinished)) == ["metrics.json", "model.pt"]


# A half-configured torchrun environment.


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


HINT = "start crftag train under torchrun (docs/distributed.md), or unset WORLD_SIZE"


def _recorded_waits(monkeypatch) -> list[float]:
    """The seconds each rendezvous step is given: rank 0's to torch's rendezvous, the others'
    to wait for the store to answer."""
    from crftag.training import distributed

    waited: list[float] = []
    wait_for_store, rendezvous = distributed._wait_for_store, distributed.dist.rendezvous

    def waiting(address, port, deadline, message):
        waited.append(deadline - time.monotonic())
        return wait_for_store(address, port, deadline, message)

    def meeting(url, timeout, **options):
        waited.append(timeout.total_seconds())
        return rendezvous(url, timeout=timeout, **options)

    monkeypatch.setattr(distributed, "_wait_for_store", waiting)
    monkeypatch.setattr(distributed.dist, "rendezvous", meeting)
    return waited


def test_world_size_without_the_rest_of_torchrun_is_refused(
    tmp_path, invoke, monkeypatch, tiny_args
):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"):
        monkeypatch.delenv(name, raising=False)
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    one_error(
        invoke(args),
        "WORLD_SIZE=2 asks for distributed training, but RANK, MASTER_ADDR, MASTER_PORT are "
        f"not set: {HINT}",
    )


@pytest.mark.parametrize(
    ("rank", "problem"),
    [
        ("0", "not all 2 processes of WORLD_SIZE joined within 2 s"),
        ("1", "nothing answered within 2 s"),
    ],
    ids=["peers never come", "master unreachable"],
)
def test_a_rendezvous_without_peers_times_out(
    tmp_path, invoke, monkeypatch, tiny_args, rank, problem
):
    port = _free_port()
    environment = {"WORLD_SIZE": "2", "RANK": rank, "MASTER_ADDR": "127.0.0.1"}
    for name, value in {
        **environment,
        "MASTER_PORT": str(port),
        "CRFTAG_JOIN_TIMEOUT": "2",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TORCHELASTIC_USE_AGENT_STORE", raising=False)
    waited = _recorded_waits(monkeypatch)
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    result = invoke(args)
    assert waited and all(0 < seconds <= 2.0 for seconds in waited)  # CRFTAG_JOIN_TIMEOUT's
    one_error(result, f"MASTER_ADDR=127.0.0.1 MASTER_PORT={port}: {problem}; {HINT}")
