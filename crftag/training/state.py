"""Where a training run stands, so it can stop and go on: the best-score tracker, the run state
with each finished epoch's result, and the resume file that holds them with the weights, the
optimizer's state and a fingerprint of the data the run began with, checked in full before a run
continues from it. ``crftag train`` and ``crftag pretrain`` write and read the same file; its
``task`` says which of them continues it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import random
from dataclasses import dataclass, field

import torch

from crftag.config.sections import Config
from crftag.data.annotations import brat_names
from crftag.data.paths import is_regular_file
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import (
    read_checkpoint,
    write_checkpoint,
)
from crftag.modelfiles.checkpoint_schema import check_payload, check_weights
from crftag.training.averaging import WeightAverage
from crftag.training.corpus import training_files

__all__ = [
    "RESUME_FILE",
    "BestScoreTracker",
    "EpochResult",
    "RunState",
    "check_resume_fits",
    "check_resume_parts",
    "check_run_state",
    "data_fingerprint",
    "load_resume",
    "read_resume",
    "restore_run",
    "resume_file",
    "save_resume",
]

RESUME_FILE = "resume.pt"
RESUME_FORMAT = "crftag-resume"
# What a resume file continues: a tagger, language models, or a tagger taught by a teacher.
TASKS = ("train", "pretrain", "distill")
_OLD_PRETRAIN_FORMAT = "crftag-pretrain-resume"  # an older crftag pretrain's own: refused
RESUME_PARTS = {  # beside a model checkpoint's keys
    "optimizer": dict,
    "average": dict,
    "run_state": dict,
    "torch_rng": torch.Tensor,
    "fingerprint": dict,
}


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    loss: float  # mean loss per training example (a tagger's sentence, a language model's piece)
    dev_score: float | None  # entity micro F1 (spans) or token accuracy, in [0, 1]
    best: bool  # this epoch's model is the best so far and was saved
    seconds: float
    tokens_per_second: float  # words (a tagger), characters (language models)
    learning_rate: float
    averaged: bool = False  # dev score and saved model are the weight average (train.average_from)


@dataclass
class BestScoreTracker:
    """The best dev score so far, and how many epochs have passed without beating it (early
    stopping, as allennlp's metric tracker). Without a dev score every epoch counts as best."""

    patience: int = 0  # epochs without gain before stopping; 0 = never stop early
    best_score: float = -math.inf
    epochs_without_gain: int = 0

    def update(self, score: float | None) -> bool:
        """Record an epoch's dev score; return whether its model is the best so far."""
        if score is None or score > self.best_score:
            self.best_score = self.best_score if score is None else score
            self.epochs_without_gain = 0
            return True
        self.epochs_without_gain += 1
        return False

    @property
    def should_stop(self) -> bool:
        return bool(self.patience) and self.epochs_without_gain >= self.patience

    def state_dict(self) -> dict:
        return {"best_score": self.best_score, "epochs_without_gain": self.epochs_without_gain}

    def load_state_dict(self, state: dict) -> None:
        self.best_score = float(state["best_score"])
        self.epochs_without_gain = int(state["epochs_without_gain"])


@dataclass
class RunState:
    """Where a run stands: with the weights, the optimizer's state and the tracker, all that
    resuming needs. The learning-rate schedule is a function of ``epoch`` alone."""

    epoch: int = 1  # the epoch under way, 1-based
    step: int = 0  # batches of it already done
    batch_order_state: tuple | None = None  # the batch-order generator at the epoch's start
    epoch_loss: float = 0.0  # summed loss of the batches done
    epoch_seconds: float = 0.0  # time spent on the epoch before an interruption
    history: list = field(default_factory=list)  # one EpochResult dict per finished epoch

    def finish_epoch(self, result: dict, batch_order_state: tuple) -> None:
        """Record a finished epoch and stand at the start of the next."""
        self.history.append(result)
        self.epoch, self.step = self.epoch + 1, 0
        self.epoch_loss, self.epoch_seconds = 0.0, 0.0
        self.batch_order_state = batch_order_state

    def state_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state: dict) -> RunState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in state.items() if key in names})


def save_resume(
    path: str,
    task: str,
    described: dict,
    optimizer: torch.optim.Optimizer,
    average: WeightAverage,
    run_state: RunState,
    tracker: BestScoreTracker,
    fingerprint: dict,
) -> None:
    """Write everything a resumed run of ``task`` (one of :data:`TASKS`) needs, atomically: the
    model as ``described`` (a tagger's checkpoint payload, a language model's settings,
    characters and weights), plus the optimizer, the weight average, the run state, the random
    generator and the fingerprint of the data the run began with (:func:`data_fingerprint`)."""
    assert task in TASKS, task
    payload = {
        **described,
        "format": RESUME_FORMAT,
        "task": task,
        "optimizer": optimizer.state_dict(),
        "average": average.state_dict(),
        "run_state": {**run_state.state_dict(), **tracker.state_dict()},
        "torch_rng": torch.get_rng_state(),
        "fingerprint": fingerprint,
    }
    write_checkpoint(path, payload)


def data_fingerprint(config: Config) -> dict:
    """What a resumed run must find as the run began: the sha256 of the resolved config, and
    of the bytes of each training file (and of ``train.rehearsal``'s)."""
    paths = training_files(config)
    if config.train.rehearsal is not None:
        paths.append(config.train.rehearsal)
    text = json.dumps(config.to_dict(), sort_keys=True)
    return {
        "config": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "files": {path: _file_digest(path) for path in paths},
    }


def resume_file(output_dir: str) -> str:
    """The path of ``output_dir``'s resume file, which must exist."""
    path = os.path.join(output_dir, RESUME_FILE)
    if not os.path.isfile(path):
        raise CrftagError(
            f"{output_dir}: no {RESUME_FILE} here; nothing to resume (finished, or not a run)"
        )
    return path


def read_resume(output_dir: str, task: str) -> tuple[dict, str]:
    """(the resume file of ``output_dir`` as read, without executing anything, its path),
    refused in one line unless it is one that ``crftag {task} --resume`` continues."""
    path = resume_file(output_dir)
    state = read_checkpoint(path)
    if state.get("format") == _OLD_PRETRAIN_FORMAT:
        raise CrftagError(
            f"{path}: written by an older crftag pretrain, which this one cannot continue; "
            "start the pretraining again in another directory"
        )
    if state.get("format") != RESUME_FORMAT:
        raise CrftagError(f"{path}: not a crftag resume file")
    written_by = state.get("task", "train")  # a file without one is a tagger's
    if written_by != task:
        command = f"crftag {written_by} --resume {output_dir}"
        shown = repr(written_by)[:40]
        raise CrftagError(
            f"{path}: the state of a crftag {written_by} run; continue it with {command}"
            if written_by in TASKS
            else f"{path}: task: expected one of {', '.join(TASKS)}, got {shown}"
        )
    return state, path


def check_resume_parts(state: dict, path: str) -> None:
    """The parts of a resume file beside the model each have their type."""
    for key, kind in RESUME_PARTS.items():
        if not isinstance(state.get(key), kind):
            got = type(state[key]).__name__ if key in state else "nothing"
            raise CrftagError(f"{path}: {key}: expected {kind.__name__}, got {got}")


def load_resume(output_dir: str, task: str = "train") -> tuple[dict, Config]:
    """The resumable state of a ``crftag train`` (or ``task``) run directory and the run's
    config; checked
    against what a resume file holds and against the training data, so a damaged file or
    changed data is a one-line error, never a traceback or a run on other data.
    :func:`check_resume_fits` checks the rest once the network is built."""
    state, path = read_resume(output_dir, task)
    if "state_dict" not in state:
        raise CrftagError(f"{path}: written by an older crftag that this one cannot continue")
    if "fingerprint" not in state and isinstance(state.get("run_state"), dict):
        raise CrftagError(
            f"{path}: written by an older crftag, without the fingerprint of the training data "
            f"that resuming checks; start the run again with crftag train CONFIG -o "
            f"{output_dir} --overwrite"
        )
    check_payload(state, path)
    check_resume_parts(state, path)
    for flag in ("lowercase", "normalize_digits"):
        if not isinstance(state["vocabularies"].get(flag), bool):
            raise CrftagError(f"{path}: vocabularies.{flag}: expected true or false")
    config = Config.from_dict(state["config"], source=path)  # the network's sizes bounded
    check_run_state(state["run_state"], config.train.epochs, "train.epochs", path)
    _check_fingerprint(state["fingerprint"], config, output_dir, path)
    return state, config


def check_resume_fits(
    resume: dict, model: torch.nn.Module, optimizer: torch.optim.Optimizer, batches: int, path: str
) -> None:
    """The parts of a resume file that need the network it continues: its weights, the
    optimizer's and the average's tensors, the random state, and the step within an epoch of
    ``batches`` batches."""
    check_weights(resume["state_dict"], model.state_dict(), path)
    step = resume["run_state"]["step"]
    if step > batches:
        raise CrftagError(f"{path}: run_state.step {step} is beyond the epoch's {batches} batches")
    trained = [p for p in model.parameters() if p.requires_grad]
    average = resume["average"]
    count, mean = average.get("count"), average.get("mean")
    if not _is_int(count) or count < 0 or not isinstance(mean, list):
        raise CrftagError(f"{path}: average: expected a count of 0 or more and a list of means")
    if count:
        _check_tensors(mean, [p.shape for p in trained], path, "average.mean")
    _check_optimizer(resume["optimizer"], optimizer, path)
    rng, expected = resume["torch_rng"], torch.get_rng_state()
    if rng.dtype != expected.dtype or rng.shape != expected.shape:
        raise CrftagError(f"{path}: torch_rng: not the state of torch's random generator")


def restore_run(run, resume: dict) -> None:
    """Continue ``run`` (a :class:`crftag.training.loop.LoopRun`) from a resume file checked
    by :func:`check_resume_fits`: its weights, optimizer, average, run state, tracker and the
    random generator's state."""
    run.model.load_state_dict(resume["state_dict"])
    run.optimizer.load_state_dict(resume["optimizer"])
    run.average.load_state_dict(resume["average"])
    run.state = RunState.from_state(resume["run_state"])
    run.tracker.load_state_dict(resume["run_state"])
    torch.set_rng_state(resume["torch_rng"])


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_run_state(state: dict, epochs: int, epochs_key: str, path: str) -> None:
    """Where the run stands is a place within its ``epochs`` (the setting ``epochs_key``), and
    every value has its type: a finished epoch's end (epochs + 1 when only the final files are
    missing) or a step into the next one; one :class:`EpochResult` for each finished epoch."""

    def fail(key: str, expected: str) -> CrftagError:
        shown = repr(state.get(key))[:80] if key in state else "nothing"
        return CrftagError(f"{path}: run_state.{key}: expected {expected}, got {shown}")

    epoch, step = state.get("epoch"), state.get("step")
    if not _is_int(epoch) or not 1 <= epoch <= epochs + 1:
        raise fail("epoch", f"an epoch from 1 to {epochs + 1} ({epochs_key} + 1)")
    if not _is_int(step) or step < 0 or (epoch == epochs + 1 and step):
        raise fail("step", "a batch count of 0 or more (0 after the last epoch)")
    for key in ("epoch_loss", "epoch_seconds"):
        value = state.get(key)
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            raise fail(key, "a finite number of 0 or more")
    best = state.get("best_score")
    if not _is_number(best) or math.isnan(best) or best == math.inf:
        raise fail("best_score", "a number (-inf before any dev score)")
    if not _is_int(state.get("epochs_without_gain")) or state["epochs_without_gain"] < 0:
        raise fail("epochs_without_gain", "a count of 0 or more")
    try:
        random.Random().setstate(state.get("batch_order_state"))
    except (TypeError, ValueError, OverflowError):
        raise fail("batch_order_state", "the state of Python's random generator") from None
    history = state.get("history")
    if not isinstance(history, list) or len(history) != epoch - 1:
        raise fail("history", f"one entry for each of the {epoch - 1} finished epochs")
    for position, entry in enumerate(history, start=1):
        if not isinstance(entry, dict) or entry.get("epoch") != position:
            raise fail("history", f"entry {position} to be epoch {position}'s result")
    _check_history(history, path)


def _check_history(history: list, path: str) -> None:
    """Each finished epoch's entry has an :class:`EpochResult`'s fields, each a number (or, for
    the dev score, none)."""
    fields = {f.name for f in dataclasses.fields(EpochResult)}
    for entry in history:
        where = f"{path}: run_state.history: epoch {entry['epoch']}'s entry has "
        if set(entry) != fields:
            raise CrftagError(f"{where}other fields than a result's")
        if not all(isinstance(value, int | float | None) for value in entry.values()):
            raise CrftagError(f"{where}a value that is not a number")


def _check_fingerprint(stored: dict, config: Config, output_dir: str, path: str) -> None:
    """The config and the training files are those the run began with."""
    files = stored.get("files")
    if not isinstance(stored.get("config"), str) or not isinstance(files, dict):
        raise CrftagError(f"{path}: fingerprint: expected the digests of the config and files")
    again = f"start the run again with crftag train CONFIG -o {output_dir} --overwrite"
    current = data_fingerprint(config)
    if stored["config"] != current["config"]:
        raise CrftagError(f"{path}: the config it holds is not the one the run began with; {again}")
    for name, digest in current["files"].items():
        if digest is None:
            raise CrftagError(
                f"{path}: {name}, which the run began with, is missing: put it back, or {again}"
            )
        if files.get(name) != digest:
            raise CrftagError(
                f"{path}: {name} has changed since the run began, and a run continues only on "
                f"the data it began with: put the file back as it was, or {again}"
            )


def _check_tensors(tensors: list, shapes: list, path: str, where: str) -> None:
    if len(tensors) != len(shapes):
        raise CrftagError(f"{path}: {where}: {len(tensors)} tensors for {len(shapes)} weights")
    for tensor, shape in zip(tensors, shapes, strict=True):
        if not isinstance(tensor, torch.Tensor) or tensor.shape != shape:
            raise CrftagError(f"{path}: {where}: a tensor that does not fit its weight")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CrftagError(f"{path}: {where}: holds NaN or infinite values")


def _check_optimizer(saved: dict, optimizer: torch.optim.Optimizer, path: str) -> None:
    """``saved`` is a state of ``optimizer``: the same groups of weights, and a state per
    weight whose tensors are scalars or of the weight's shape."""
    groups, state = saved.get("param_groups"), saved.get("state")
    live = [group["params"] for group in optimizer.param_groups]
    if not isinstance(groups, list) or not isinstance(state, dict):
        raise CrftagError(f"{path}: optimizer: expected its param_groups and state")
    sizes = [len(g.get("params", ())) if isinstance(g, dict) else -1 for g in groups]
    if sizes != [len(params) for params in live]:
        raise CrftagError(f"{path}: optimizer: its groups of weights are not this model's")
    weights = [p for params in live for p in params]
    for index, values in state.items():
        if not _is_int(index) or not 0 <= index < len(weights) or not isinstance(values, dict):
            raise CrftagError(f"{path}: optimizer.state: an entry for no weight ({index!r})")
        tensors = [v for v in values.values() if isinstance(v, torch.Tensor) and v.dim()]
        shapes = [weights[index].shape] * len(tensors)
        _check_tensors(tensors, shapes, path, f"optimizer.state.{index}")


def _file_digest(path: str) -> str | None:
    """The sha256 of a regular file's bytes, or of a brat folder's ``.txt`` and ``.ann`` files
    with their names (what the reader reads); None for a path that is neither. Nothing else is
    opened: a FIFO in the folder would block, a device might never end."""
    if os.path.isdir(path):
        names = [name + suffix for name in brat_names(path) for suffix in (".txt", ".ann")]
    elif is_regular_file(path):
        names = [""]
    else:
        return None
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        with open(os.path.join(path, name) if name else path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()
