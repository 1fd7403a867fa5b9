"""``crftag tune``: a hyper-parameter search over the user's data with Optuna (TPE sampling,
median pruning of trials whose dev score per epoch falls behind), kept in SQLite so that
running the command again continues the study.

A study directory holds ``study.db`` (Optuna's storage), ``trials/NNN`` (each trial a run
directory of :func:`crftag.training.run.train`, with its ``metrics.json``), ``trials.json`` (the
trials as plain values, for ``crftag plot``), ``best.yaml`` (the best trial's config, which
``crftag train`` takes as it is) and ``best.json`` (the best trial, and its model's test score).
Trials train without the test file and are chosen on their dev score; the test file is scored
once, for the best trial's model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import yaml

from crftag.config.sections import Config
from crftag.data.atomic import atomic_output
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.inference import loading
from crftag.modelfiles.checkpoint import LoadedModel
from crftag.scoring.evaluate import headline, score_sentences
from crftag.training.checks import check_config
from crftag.training.loop import EpochResult
from crftag.training.run import train
from crftag.training.search_space import check_space, config_params, draw_config, searched
from crftag.training.signals import StopSignals
from crftag.training.study_file import CONFIG_ATTR, check_study_config, check_study_file

__all__ = [
    "STUDY_FILE",
    "STUDY_OUTPUTS",
    "TRIALS_FILE",
    "Budget",
    "Objective",
    "StudyReport",
    "import_optuna",
    "tune",
]

STUDY_FILE = "study.db"
TRIALS_FILE = "trials.json"
STUDY_NAME = "crftag"
STUDY_OUTPUTS = (STUDY_FILE, TRIALS_FILE, "best.yaml", "best.json")  # beside trials/NNN
INSTALL_HINT = "crftag tune needs Optuna, which is not installed: pip install 'crftag[tune]'"


@dataclass(frozen=True)
class Budget:
    """How much a study may run: ``trials`` in all (those of earlier runs of the command
    count), ``minutes`` from now (None: no limit), ``jobs`` trials at once."""

    trials: int
    minutes: float | None = None
    jobs: int = 1


def import_optuna():
    """The optuna module, or a one-line error saying how to install it."""
    try:
        import optuna
    except ModuleNotFoundError as error:
        if error.name != "optuna":
            raise
        raise CrftagError(INSTALL_HINT) from None
    # Failed and pruned trials are in the trial table; Optuna's own warnings would repeat them.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna


@dataclass(frozen=True)
class StudyReport:
    """What a run of the study leaves: ``summary``, what ``best.json`` holds (None for the best
    if no trial has completed), and ``trials``, what ``trials.json`` holds."""

    summary: dict
    trials: list[dict]


def tune(
    config: Config,
    output_dir: str,
    budget: Budget,
    *,
    device: torch.device,
    overwrite=False,
    base: LoadedModel | None = None,
) -> StudyReport:
    """Run (or continue) the study of ``config`` in ``output_dir``. A study begun with another
    config is refused, unless ``overwrite``: then its files are removed and a new study begins.
    Every trial starts from ``base``, the ``train.init_from`` model as
    :func:`crftag.training.init_from.load_training_config` loaded it."""
    optuna = import_optuna()
    if config.data.dev is None:
        raise CrftagError("data.dev: crftag tune chooses trials on the dev score; set a dev file")
    check_config(config)
    check_space(config)
    keys = searched(config)
    if overwrite:
        _remove_study(output_dir)
    check_study_file(output_dir, STUDY_FILE, STUDY_NAME)
    os.makedirs(output_dir, exist_ok=True)
    study = _open_study(optuna, config, output_dir)
    os.makedirs(os.path.join(output_dir, "trials"), exist_ok=True)
    finished = [t for t in study.trials if t.state.is_finished() and t.state.name != "FAIL"]
    remaining = max(0, budget.trials - len(finished))
    deadline = None if budget.minutes is None else time.monotonic() + 60 * budget.minutes
    objective = Objective(optuna, config, keys, output_dir, device, deadline, base)
    if remaining and not finished:
        # The study starts from the config as written (again, if an interruption stopped that
        # trial), alone: Optuna's worker threads can both take a queued trial.
        if not study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.WAITING,)):
            study.enqueue_trial(config_params(config, keys))
        _optimize(study, objective, 1, dataclasses.replace(budget, jobs=1), output_dir)
        remaining -= 1
    if remaining:
        trials = _optimize(study, objective, remaining, budget, output_dir)
    else:
        trials = write_trials(study, output_dir)
    return StudyReport(_finish(study, config, output_dir, device), trials)


def _optimize(
    study, objective: Objective, trials: int, budget: Budget, output_dir: str
) -> list[dict]:
    """Run ``trials`` more trials, ``budget.jobs`` at once, within the objective's deadline;
    return every trial as ``trials.json`` holds it.

    Only the main thread takes signals: a trial there stops at its next batch on SIGINT or
    SIGTERM (as ``crftag train`` does), one in a worker thread at the end of its epoch; either
    way the trials under way are marked failed and the study stops."""
    threads = torch.get_num_threads()
    if budget.jobs > 1:  # the cores shared out, so trials at once do not fight over them
        torch.set_num_threads(max(1, threads // budget.jobs))
    deadline = objective.deadline
    with StopSignals() as stop_requested:
        stop_requested.defer()
        objective.stop_requested = stop_requested
        try:
            study.optimize(
                objective,
                n_trials=trials,
                timeout=None if deadline is None else max(0.0, deadline - time.monotonic()),
                n_jobs=budget.jobs,
            )
            signal_number = stop_requested()  # trials in threads stop, but do not raise here
        except TrainingInterrupted as interruption:
            signal_number = interruption.exit_code - 128
        finally:
            torch.set_num_threads(threads)
            written = write_trials(study, output_dir)
    if signal_number is not None:
        raise TrainingInterrupted(
            signal_number,
            f"interrupted; the finished trials are kept in {output_dir}: run the same command "
            "to continue the study",
        )
    return written


def _open_study(optuna, config: Config, output_dir: str):
    """The study kept in ``output_dir``, created on the first run; trials an interrupted run
    left running are marked failed (they are run afresh, under new numbers)."""
    path = os.path.join(output_dir, STUDY_FILE)
    try:
        study = optuna.create_study(
            study_name=STUDY_NAME,
            storage=f"sqlite:///{os.path.abspath(path)}",
            load_if_exists=True,
            direction="maximize",
            pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=2),
        )
    except (optuna.exceptions.StorageInternalError, RuntimeError) as error:
        # What check_study_file cannot see beforehand (a schema of another Optuna version).
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise CrftagError(f"{path}: Optuna cannot open this study ({reason})") from None
    _check_config(study, config, path)
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    # A continued study draws afresh: a sampler seeded as the first run's would repeat its
    # first random draws.
    study.sampler = optuna.samplers.TPESampler(seed=config.train.seed + len(study.trials))
    return study


def _check_config(study, config: Config, path: str) -> None:
    """The study began with ``config``; a new study (or one begun before studies kept their
    config) records it."""
    current = json.loads(json.dumps(config.to_dict()))  # as Optuna gives it back: JSON values
    stored = study.user_attrs.get(CONFIG_ATTR)
    if stored is None:
        study.set_user_attr(CONFIG_ATTR, current)
    else:
        check_study_config(path, stored, current)


def _remove_study(output_dir: str) -> None:
    """An earlier study's files, so that ``--overwrite`` starts a new one in ``output_dir``."""
    for name in STUDY_OUTPUTS:
        path = os.path.join(output_dir, name)
        if os.path.isfile(path) or os.path.islink(path):
            os.remove(path)
    shutil.rmtree(os.path.join(output_dir, "trials"), ignore_errors=True)


class Objective:
    """One trial: its config drawn, trained in ``trials/NNN`` without the test file, its dev
    score reported after every epoch; a trial the pruner drops, or one under way at the time
    limit, ends after that epoch (its run directory finished as any run's) and is pruned."""

    def __init__(self, optuna, config, keys, output_dir, device, deadline, base=None) -> None:
        self.optuna, self.config, self.keys = optuna, config, keys
        self.output_dir, self.device, self.deadline = output_dir, device, deadline
        self.base = base  # the train.init_from model, loaded once for every trial
        self.stop_requested: Callable[[], int | None] = lambda: None  # a signal's number

    def __call__(self, trial) -> float:
        drawn = draw_config(trial, self.config, self.keys)
        drawn = dataclasses.replace(drawn, data=dataclasses.replace(drawn.data, test=None))
        run_dir = trial_directory(self.output_dir, trial.number)
        trial.set_user_attr("run_dir", os.path.relpath(run_dir, self.output_dir))
        stopped: list[str] = []

        def report(result: EpochResult) -> bool:
            signal_number = self.stop_requested()
            if signal_number is not None:
                trial.study.stop()
                raise TrainingInterrupted(signal_number, "interrupted")
            trial.report(result.dev_score, result.epoch)
            if trial.should_prune():
                stopped.append("pruned")
            elif self.deadline is not None and time.monotonic() > self.deadline:
                stopped.append("time limit")
            return bool(stopped)

        metrics = train(
            drawn,
            run_dir,
            device=self.device,
            show_progress=False,
            on_epoch=report,
            base=self.base,
        )
        trial.set_user_attr("epochs", metrics["epochs"])
        trial.set_user_attr("seconds", metrics["train_seconds"])
        if stopped:
            trial.set_user_attr("stopped", stopped[0])
            raise self.optuna.TrialPruned(stopped[0])
        return metrics["dev"]


def trial_directory(output_dir: str, number: int) -> str:
    return os.path.join(output_dir, "trials", f"{number:03d}")


def write_trials(study, output_dir: str) -> list[dict]:
    """``trials.json``: every trial as plain values (number, state, dev score, parameters,
    dev score per epoch, run directory), for the trial table and ``crftag plot``."""
    trials = [
        {
            "number": t.number,
            "state": t.state.name.lower(),
            "dev": t.value,
            "params": t.params,
            "dev_per_epoch": {str(k): v for k, v in sorted(t.intermediate_values.items())},
            **t.user_attrs,
        }
        for t in study.trials
        if t.state.name != "WAITING"  # queued, not started: the time ran out before it
    ]
    path = os.path.join(output_dir, TRIALS_FILE)
    with atomic_output(path) as handle:
        json.dump(trials, handle, indent=1)
    return trials


def _finish(study, config: Config, output_dir: str, device: torch.device) -> dict:
    """``best.yaml`` and ``best.json`` for the best completed trial, its model scored once on
    the test file (not again when a later run of the command finds the same best)."""
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    if not complete:
        return {"best": None, "trials": len(study.trials)}
    best = max(complete, key=lambda t: (t.value, -t.number))
    path = os.path.join(output_dir, "best.json")
    previous = _read_json(path)
    if previous.get("best", {}).get("number") == best.number:
        return previous
    best_config = draw_config(_Fixed(best.params), config, list(best.params))
    write_best_config(best_config, os.path.join(output_dir, "best.yaml"))
    summary: dict = {
        "best": {"number": best.number, "dev": best.value, "params": best.params},
        "trials": len(study.trials),
        "run_dir": best.user_attrs.get("run_dir"),
    }
    if config.data.test:
        run_dir = trial_directory(output_dir, best.number)
        scores = score_sentences(loading.load(run_dir, device), config.data.read(config.data.test))
        summary["best"]["test"] = headline(scores)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    return summary


class _Fixed:
    """A stand-in for an Optuna trial that gives back the values a finished trial drew."""

    def __init__(self, params: dict) -> None:
        self.params = params

    def suggest_categorical(self, name, choices):
        return self.params[name]

    def suggest_float(self, name, low, high, log=False):
        return self.params[name]


def write_best_config(config: Config, path: str) -> None:
    """A config file ``crftag train`` takes as it is: every section but ``tune``; paths are
    absolute (as loading made them), so the file works from any directory."""
    raw = config.to_dict()
    del raw["tune"]
    with atomic_output(path) as handle:
        handle.write("# The best trial of crftag tune: train it with crftag train best.yaml\n")
        yaml.safe_dump(raw, handle, sort_keys=False)


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}
