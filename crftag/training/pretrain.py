"""``crftag pretrain``: a model trained on unlabelled text, by one of the objectives of
:mod:`crftag.training.pretrain_objectives`: a forward and a backward character language model
(:class:`crftag.nn.char_lm.CharLanguageModels`, for ``model.char_lm``).

The last lines of the text (``held_out`` of them, at least one) are kept out of training and
give the score the directory records (perplexity). Training runs through the loop of
``crftag train`` (:func:`crftag.training.loop.fit`, with
:class:`crftag.training.pretrain_task.PretrainTask`), and a run stopped by a signal writes the
same resume file (DIR/resume.pt, :mod:`crftag.training.state`); resumed, it gives the same
models, bit for bit, as one never stopped. A time budget ends training after the batch that
reaches it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import sys
from collections.abc import Callable

import torch

from crftag.data.char_codes import CharCodes
from crftag.data.raw_text import read_text_lines
from crftag.errors import CrftagError
from crftag.modelfiles.char_lm_files import PretrainedCharLM
from crftag.training.loop import fit
from crftag.training.pretrain_objectives import objective_named
from crftag.training.pretrain_resume import read_stopped_pretraining
from crftag.training.pretrain_task import PretrainRun, PretrainSettings, PretrainTask
from crftag.training.state import RESUME_FILE, BestScoreTracker, check_resume_fits, restore_run

__all__ = ["PretrainSettings", "pretrain", "resume_pretraining"]


def pretrain(
    paths: list[str],
    directory: str,
    settings: PretrainSettings,
    *,
    minutes: float | None,
    device: torch.device,
    stop_requested: Callable[[], int | None],
    show_progress: bool,
) -> PretrainedCharLM:
    """Train the objective's model on the lines of ``paths`` and write it in ``directory``."""
    objective = objective_named(settings.objective)
    for name in (objective.result_file, RESUME_FILE):
        if os.path.exists(os.path.join(directory, name)):
            raise CrftagError(
                f"{directory}: already holds {name}; choose another directory"
                + (
                    f" or continue with crftag pretrain --resume {directory}"
                    if name == RESUME_FILE
                    else ""
                )
            )
    lines = read_text_lines(paths)
    training = _split(lines, settings.held_out, paths)[0]
    codes = CharCodes.counted(objective.vocabulary_text(training), settings.max_symbols)
    paths = [os.path.abspath(path) for path in paths]
    run = _run(paths, directory, settings, minutes, lines, _digest(lines), codes, device)
    return _train(run, stop_requested, show_progress)


def resume_pretraining(
    directory: str,
    *,
    minutes: float | None,
    device: torch.device,
    stop_requested: Callable[[], int | None],
    show_progress: bool,
) -> PretrainedCharLM:
    """Continue the pretraining stopped in ``directory`` (the same text files, read again)."""
    stopped = read_stopped_pretraining(directory)
    settings = stopped.settings
    lines = read_text_lines(stopped.paths)
    if _digest(lines) != stopped.text_digest:
        raise CrftagError(
            f"{', '.join(stopped.paths)}: the text changed since the pretraining in {directory} "
            "began; resuming needs the same text (or begin anew in another directory)"
        )
    minutes = stopped.minutes if minutes is None else minutes
    codes = CharCodes(stopped.symbols)
    run = _run(
        stopped.paths, directory, settings, minutes, lines, stopped.text_digest, codes, device
    )
    batches = math.ceil(len(run.training) / settings.batch_size)
    check_resume_fits(stopped.resume, run.model, run.optimizer, batches, stopped.path)
    restore_run(run, stopped.resume)
    return _train(run, stop_requested, show_progress)


def _run(
    paths: list[str],
    directory: str,
    settings: PretrainSettings,
    minutes: float | None,
    lines: list[str],
    text_digest: str,
    codes: CharCodes,
    device: torch.device,
) -> PretrainRun:
    """A run at its start: the objective's models drawn from the seed, Adam, and the pieces of
    the text's training and held-out lines."""
    objective = objective_named(settings.objective)
    torch.manual_seed(settings.seed)
    models = objective.build(len(codes), settings.char_dim, settings.hidden_size).to(device)
    training, held_out = _split(lines, settings.held_out, paths)
    size = settings.max_length
    return PretrainRun(
        paths,
        directory,
        settings,
        minutes,
        text_digest,
        codes,
        objective.pieces(codes, training, size),
        objective.pieces(codes, held_out, size),
        models,
        torch.optim.Adam(models.parameters(), lr=settings.learning_rate),
        device,
        tracker=BestScoreTracker(),
    )


def _train(
    run: PretrainRun, stop_requested: Callable[[], int | None], show_progress: bool
) -> PretrainedCharLM:
    """Train from where ``run`` stands to the last epoch or the time budget, then measure the
    held-out score and write the directory. The score is measured once, at the end: the loop's
    evaluation is none, so every epoch's models are the ones kept."""
    epochs = fit(
        run,
        PretrainTask(run),
        evaluate=lambda: None,
        save_best=lambda epoch, score: None,
        save_state=run.save_state,
        stop_requested=stop_requested,
        show_progress=show_progress,
        time_budget=None if run.minutes is None else 60 * run.minutes,
    )
    for result in epochs:
        print(f"epoch {result.epoch}: done, loss {result.loss:.3f}", file=sys.stderr, flush=True)
    if run.state.epoch <= run.settings.epochs:
        print(
            f"stopped by --time at epoch {run.state.epoch}, batch {run.state.step}",
            file=sys.stderr,
        )
    return _finish(run)


def _finish(run: PretrainRun) -> PretrainedCharLM:
    """Measure the held-out score, write the directory, remove the resume state."""
    objective = run.objective
    run.model.eval()
    size = run.settings.batch_size
    with torch.no_grad():
        batches = [
            objective.batch(run.held_out[start : start + size], run.device)
            for start in range(0, len(run.held_out), size)
        ]
        scores = objective.score(run.model, batches)
    settings = dataclasses.asdict(run.settings)
    pretrained = objective.save(run.directory, run.codes, run.model, settings, scores)
    resume = os.path.join(run.directory, RESUME_FILE)
    if os.path.exists(resume):
        os.unlink(resume)
    return pretrained


def _split(lines: list[str], share: float, paths: list[str]) -> tuple[list[str], list[str]]:
    """(training lines, held-out lines): the last ``share`` of the lines, at least one."""
    if len(lines) < 2:
        raise CrftagError(
            f"{', '.join(paths)}: one line of text; pretraining needs at least two "
            "(the last ones are held out to measure the model)"
        )
    held = min(len(lines) - 1, max(1, round(share * len(lines))))
    return lines[:-held], lines[-held:]


def _digest(lines: list[str]) -> str:
    """SHA-256 of the text's lines: what a resumed run checks the text it reads again against."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()
