"""Training runs: on disk (``crftag train``: a run directory with the best model, ``metrics.json``
and, while unfinished, a resume file) or in memory (:func:`train_in_memory`, for code and tests).

Both set a run up (:mod:`crftag.training.setup`), drive :func:`crftag.training.loop.fit` with an
evaluation of the dev sentences, and differ only in where the best model goes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

import torch

from crftag.config.sections import Config
from crftag.data.conll import Sentence
from crftag.data.perturb import perturb_sentences
from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import LoadedModel, model_payload, save_model
from crftag.modelfiles.registry import MODEL_FILE
from crftag.scoring.evaluate import headline, score_sentences
from crftag.training.checks import check_config, check_device, check_output_dir
from crftag.training.corpus import read_training_files
from crftag.training.distributed import Group, join, launched_rank, leave
from crftag.training.loop import EpochResult, Task, fit
from crftag.training.rundir import (
    METRICS_FILE,
    clear_run,
    hold_run_directory,
    write_metrics,
    writing,
)
from crftag.training.setup import Run, start_run
from crftag.training.signals import StopSignals
from crftag.training.state import (
    RESUME_FILE,
    data_fingerprint,
    load_resume,
    resume_file,
    save_resume,
)
from crftag.training.tagging_task import TaggingTask

__all__ = [
    "EpochResult",
    "format_epoch",
    "read_optional",
    "run_on_disk",
    "train",
    "train_in_memory",
]


def train(
    config: Config | None,
    output_dir: str,
    *,
    device: torch.device,
    show_progress: bool = True,
    resume: bool = False,
    overwrite: bool = False,
    on_epoch: Callable[[EpochResult], bool] | None = None,
    base: LoadedModel | None = None,
) -> dict:
    """Train and write ``output_dir/model.pt`` and ``output_dir/metrics.json``; return metrics.

    With ``resume``, continue the interrupted run in ``output_dir`` (its config is used). A
    directory holding an earlier run is refused unless ``overwrite``, whose files are removed
    once the new run is set up; the directory is locked while the run lasts
    (:mod:`crftag.training.rundir`). SIGINT or SIGTERM stops the run after writing
    ``resume.pt`` (:class:`StopSignals`). ``on_epoch``, if given, is called with each epoch's
    result instead of printing it; when it returns True the run ends there as if it had run its
    last epoch (``crftag tune`` prunes trials so). ``base`` is the ``train.init_from`` model
    as :func:`crftag.training.init_from.load_training_config` loaded it (read again if not
    given; a resumed run needs none).
    """
    if resume and overwrite:
        raise CrftagError("--overwrite starts a new run and --resume continues one: give one")
    with StopSignals(_stopped_early(output_dir, resume)) as stop_requested:
        if resume:
            resume_file(output_dir)  # before the lock: a missing run is not a locked one
        else:
            config = check_before_work(config, device, output_dir)
        main = launched_rank() == 0  # under torchrun, rank 0 holds the directory for all
        with hold_run_directory(output_dir, resume=resume, overwrite=overwrite, main=main):
            resume_state = None
            if resume:
                resume_state, config = load_resume(output_dir)
                config = check_before_work(config, device, output_dir)
            group, device = join(device)
            try:
                return _train_run(
                    config,
                    output_dir,
                    device=device,
                    group=group,
                    resume_state=resume_state,
                    overwrite=overwrite,
                    stop_requested=stop_requested,
                    on_epoch=on_epoch,
                    show_progress=show_progress,
                    base=base,
                )
            finally:
                leave(group)


def _train_run(
    config: Config,
    output_dir: str,
    *,
    device: torch.device,
    group: Group,
    resume_state: dict | None,
    overwrite: bool,
    stop_requested: StopSignals,
    show_progress: bool,
    on_epoch: Callable[[EpochResult], bool] | None = None,
    base: LoadedModel | None = None,
) -> dict:
    """The run itself, in a held run directory and a joined process group."""
    fingerprint = resume_state["fingerprint"] if resume_state else data_fingerprint(config)
    files = read_training_files(config)
    dev = read_optional(config, config.data.dev)
    test = read_optional(config, config.data.test)  # a bad file found before any epoch
    run = start_run(
        config,
        files,
        device=device,
        group=group,
        resume=resume_state,
        show_progress=show_progress,
        output_dir=output_dir,
        base=base,
    )
    if overwrite and group.main:
        clear_run(output_dir)
    return run_on_disk(
        run,
        TaggingTask(run),
        output_dir,
        dev=dev,
        test=test,
        fingerprint=fingerprint,
        stop_requested=stop_requested,
        show_progress=show_progress,
        on_epoch=on_epoch,
    )


def run_on_disk(
    run: Run,
    task: Task,
    output_dir: str,
    *,
    dev: list[Sentence],
    test: list[Sentence],
    fingerprint: dict,
    stop_requested: StopSignals,
    show_progress: bool,
    on_epoch: Callable[[EpochResult], bool] | None = None,
) -> dict:
    """Train the set-up ``run`` by ``task`` in its held run directory: the epoch table on
    stderr (or ``on_epoch``), the best model, the resume file after every epoch and on a
    signal, and at the end the test score and ``metrics.json``; return the metrics."""
    stop_requested.defer()
    epochs = fit(
        run,
        task,
        evaluate=_dev_evaluation(run, dev),
        save_best=lambda epoch, score: _save_best(run, output_dir, epoch, score),
        save_state=lambda: _save_state(run, output_dir, fingerprint),
        stop_requested=stop_requested,
        show_progress=show_progress,
    )
    for result in epochs:
        if on_epoch is not None:
            if on_epoch(result):
                break
        elif run.group.main:
            print(format_epoch(result), file=sys.stderr, flush=True)
    return _finish(run, output_dir, test)


def train_in_memory(
    config: Config,
    train: list[Sentence],
    dev: list[Sentence] | None = None,
    *,
    device: torch.device | str = "cpu",
    show_progress: bool = False,
) -> tuple[Tagger, list[EpochResult]]:
    """Train on labelled sentences in memory, with no files read or written besides
    ``model.embeddings``; return a tagger with the best-on-dev weights and the epochs.
    ``config.data``'s file paths are not read (only its column and scheme settings count)."""
    device = torch.device(device)
    config = check_config(config, data_files=False)
    check_device(config, device)
    run = start_run(config, [("<memory>", list(train))], device=device, show_progress=False)
    best: dict[str, torch.Tensor] = {}

    def keep_best(epoch: int, score: float | None) -> None:
        best.update({k: v.detach().clone() for k, v in run.model.state_dict().items()})

    epochs = list(
        fit(
            run,
            TaggingTask(run),
            evaluate=_dev_evaluation(run, dev or []),
            save_best=keep_best,
            show_progress=show_progress,
        )
    )
    run.model.load_state_dict(best)
    return _tagger(run), epochs


def format_epoch(result: EpochResult) -> str:
    """One line of the training log."""
    dev = f"  dev {100 * result.dev_score:6.2f}" if result.dev_score is not None else ""
    mark = "  *" if result.best and result.dev_score is not None else ""
    mark = ("  avg" if result.averaged else "") + mark
    return (
        f"epoch {result.epoch:3d}  loss {result.loss:9.4f}{dev}  "
        f"lr {result.learning_rate:.4g}  {result.seconds:6.1f}s  "
        f"{result.tokens_per_second:8.0f} tok/s{mark}"
    )


def read_optional(config: Config, path: str | None) -> list[Sentence]:
    """The labelled sentences of ``path`` (a dev or test file), none without one."""
    return config.data.read(path) if path else []


def _dev_evaluation(run: Run, dev: list[Sentence]) -> Callable[[], float | None]:
    """The dev score of the run's model as it stands, or None without dev sentences: with
    ``augment.dev``, the mean over the sentences as given and each perturbed copy."""
    if not dev:
        return lambda: None
    tagger = _tagger(run)
    seed, augment = run.config.train.seed, run.config.augment
    copies = [dev] + [
        perturb_sentences(dev, change, seed=seed, typo_rate=augment.typo_rate)
        for change in augment.dev or ()
    ]
    return lambda: sum(headline(score_sentences(tagger, copy)) for copy in copies) / len(copies)


def _tagger(run: Run) -> Tagger:
    """A tagger of the run's network, which tags with its weights as they stand."""
    training = run.training
    return Tagger(
        run.model,
        training.vocabularies,
        config=run.config,
        data_scheme=training.data_scheme,
        train_scheme=training.train_scheme,
        device=run.device,
    )


def check_before_work(
    config: Config, device: torch.device, output_dir: str, *, distilling: bool = False
) -> Config:
    """The checks of a new run (a student's of ``crftag distill``: ``distilling``); the config
    with what it leaves to the files filled in."""
    config = check_config(config, distilling=distilling)
    check_device(config, device)
    check_output_dir(output_dir)
    return config


def _stopped_early(output_dir: str, resume: bool) -> str:
    """What a signal before the first batch means: a resumed run's resume file is untouched;
    a new run has written nothing to resume."""
    if resume:
        return (
            "interrupted before training went on; continue with: "
            f"crftag train --resume {output_dir}"
        )
    return (
        "interrupted before the first batch, so this run has nothing to resume: "
        "run the same command again"
    )


def _save_best(run: Run, output_dir: str, epoch: int, score: float | None) -> None:
    path = os.path.join(output_dir, MODEL_FILE)
    with writing(path, output_dir):
        save_model(path, run.loaded({"epoch": epoch, "dev": score}))


def _save_state(run: Run, output_dir: str, fingerprint: dict) -> None:
    if run.group.main:
        path = os.path.join(output_dir, RESUME_FILE)
        with writing(path, output_dir):
            save_resume(
                path,
                "train" if run.distillation is None else "distill",
                model_payload(run.loaded({})),
                run.optimizer,
                run.average,
                run.state,
                run.tracker,
                fingerprint,
            )


def _finish(run: Run, output_dir: str, test: list[Sentence]) -> dict:
    """The run's metrics, with the best model's test score and the per-epoch ``history``
    (:class:`EpochResult` fields, for ``crftag plot``), written to ``metrics.json``; the resume
    file goes, as nothing is left to resume."""
    history = [EpochResult(**result) for result in run.state.history]
    best = [r for r in history if r.best]
    metrics: dict = {
        "epochs": len(history),
        "best_epoch": best[-1].epoch if best else None,
        "dev": max((r.dev_score for r in history if r.dev_score is not None), default=None),
        "train_seconds": sum(r.seconds for r in history),
        "tokens_per_second": (
            sum(r.tokens_per_second for r in history) / len(history) if history else None
        ),
        "device": str(run.device),
        "processes": run.group.world_size,
        "history": [dataclasses.asdict(result) for result in history],
    }
    if run.distillation is not None:
        metrics["distillation"] = run.distillation
    if not run.group.main:
        return metrics
    if test:
        test_scores = score_sentences(loading.load(output_dir, run.device), test)
        metrics["test"] = headline(test_scores)
        metrics["test_scores"] = test_scores
    with writing(os.path.join(output_dir, METRICS_FILE), output_dir):
        write_metrics(output_dir, metrics)
    os.unlink(os.path.join(output_dir, RESUME_FILE))
    return metrics
