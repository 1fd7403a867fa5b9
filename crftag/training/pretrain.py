"""``crftag pretrain``: a model trained on unlabelled text, by one of the objectives of
:mod:`crftag.training.pretrain_objectives`: a forward and a backward character language model
(:class:`crftag.nn.char_lm.CharLanguageModels`, for ``model.char_lm``).

The last lines of the text (``held_out`` of them, at least one) are kept out of training and
give the score the directory records (perplexity). Each epoch
visits the training pieces (lines cut to ``max_length`` characters) in an order drawn from the
seed and the epoch number, so a run stopped by a signal and resumed (its state in
DIR/resume.pt) gives the same models, bit for bit, as one never stopped. A time budget ends
training after the batch that reaches it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from crftag.data.char_codes import CharCodes
from crftag.data.progress import progress_bar
from crftag.data.raw_text import read_text_lines
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.modelfiles.char_lm_files import PretrainedCharLM
from crftag.modelfiles.checkpoint import read_checkpoint, write_checkpoint
from crftag.training.pretrain_objectives import objective_named

__all__ = ["PretrainSettings", "pretrain", "resume_pretraining"]

RESUME_FILE = "resume.pt"
_RESUME_FORMAT = "crftag-pretrain-resume"


@dataclass(frozen=True)
class PretrainSettings:
    hidden_size: int = 256  # each model's LSTM units (flair's small models: 1024)
    char_dim: int = 32  # the character embedding, shared by the two models
    max_length: int = 250  # characters a training piece: longer lines are cut
    batch_size: int = 32  # pieces a batch
    epochs: int = 10
    learning_rate: float = 0.002  # Adam's
    clip: float = 1.0  # the gradients' largest norm
    seed: int = 1
    max_symbols: int = 300  # the most frequent characters kept; the rest read as unknown
    held_out: float = 0.05  # the share of lines, the last ones, kept for the held-out score
    objective: str = "char_lm"  # crftag.training.pretrain_objectives.OBJECTIVES


@dataclass
class _Run:
    """A pretraining under way: what it reads, what it trains, and where it stands."""

    paths: list[str]
    directory: str
    settings: PretrainSettings
    minutes: float | None
    codes: CharCodes
    training: list  # the objective's pieces
    held_out: list
    models: torch.nn.Module
    optimizer: torch.optim.Optimizer
    device: torch.device
    epoch: int = 1
    step: int = 0  # batches of the epoch done
    seconds: float = 0.0  # training time before this process
    text_digest: str = ""  # of the lines read, which a resumed run reads again


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
    training, held_out = _split(lines, settings.held_out, paths)
    codes = CharCodes.counted(objective.vocabulary_text(training), settings.max_symbols)
    torch.manual_seed(settings.seed)
    models = objective.build(len(codes), settings.char_dim, settings.hidden_size).to(device)
    optimizer = torch.optim.Adam(models.parameters(), lr=settings.learning_rate)
    run = _Run(
        paths,
        directory,
        settings,
        minutes,
        codes,
        *_pieces(codes, training, held_out, settings),
        models,
        optimizer,
        device,
        text_digest=_digest(lines),
    )
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
    path = os.path.join(directory, RESUME_FILE)
    if not os.path.isfile(path):
        raise CrftagError(f"{directory}: nothing to resume (no {RESUME_FILE})")
    state = read_checkpoint(path)
    if state.get("format") != _RESUME_FORMAT:
        raise CrftagError(f"{path}: not the resume state of crftag pretrain")
    settings = PretrainSettings(**state["settings"])
    objective = objective_named(settings.objective)  # a removed one: refused before any reading
    lines = read_text_lines(state["paths"])
    if _digest(lines) != state["text_digest"]:
        raise CrftagError(
            f"{', '.join(state['paths'])}: the text changed since the pretraining in {directory} "
            "began; resuming needs the same text (or begin anew in another directory)"
        )
    training, held_out = _split(lines, settings.held_out, state["paths"])
    codes = CharCodes(list(state["symbols"]))
    models = objective.build(len(codes), settings.char_dim, settings.hidden_size)
    models.load_state_dict(state["state_dict"])
    models.to(device)
    optimizer = torch.optim.Adam(models.parameters(), lr=settings.learning_rate)
    optimizer.load_state_dict(state["optimizer"])
    progress = state["progress"]
    run = _Run(
        list(state["paths"]),
        directory,
        settings,
        state["minutes"] if minutes is None else minutes,
        codes,
        *_pieces(codes, training, held_out, settings),
        models,
        optimizer,
        device,
        progress["epoch"],
        progress["step"],
        progress["seconds"],
        state["text_digest"],
    )
    return _train(run, stop_requested, show_progress)


def _split(lines: list[str], share: float, paths: list[str]) -> tuple[list[str], list[str]]:
    """(training lines, held-out lines): the last ``share`` of the lines, at least one."""
    if len(lines) < 2:
        raise CrftagError(
            f"{', '.join(paths)}: one line of text; pretraining needs at least two "
            "(the last ones are held out to measure the model)"
        )
    held = min(len(lines) - 1, max(1, round(share * len(lines))))
    return lines[:-held], lines[-held:]


def _pieces(
    codes: CharCodes, training: list[str], held_out: list[str], settings: PretrainSettings
) -> tuple[list, list]:
    """The objective's pieces of the lines, each of at most ``max_length`` characters."""
    objective = objective_named(settings.objective)
    size = settings.max_length
    return objective.pieces(codes, training, size), objective.pieces(codes, held_out, size)


def _epoch_batches(run: _Run) -> list[list[int]]:
    """The epoch's batches of training pieces, in an order drawn from the seed and the epoch."""
    generator = torch.Generator().manual_seed(run.settings.seed * 100_003 + run.epoch)
    order = torch.randperm(len(run.training), generator=generator).tolist()
    size = run.settings.batch_size
    return [order[i : i + size] for i in range(0, len(order), size)]


def _train(
    run: _Run, stop_requested: Callable[[], int | None], show_progress: bool
) -> PretrainedCharLM:
    """Train from where ``run`` stands to the last epoch or the time budget, then measure the
    held-out score and write the directory."""
    started = time.perf_counter()
    budget = None if run.minutes is None else 60 * run.minutes
    out_of_time = False
    while run.epoch <= run.settings.epochs and not out_of_time:
        batches = _epoch_batches(run)
        bar = progress_bar(
            show=show_progress,
            total=len(batches),
            initial=run.step,
            desc=f"epoch {run.epoch}",
            unit="batch",
            leave=False,
        )
        with bar:
            for rows in batches[run.step :]:
                loss = _train_step(run, [run.training[row] for row in rows])
                run.step += 1
                bar.update()
                bar.set_postfix(loss=f"{loss:.3f}")
                signal_number = stop_requested()
                if signal_number is not None:
                    _save_resume(run, run.seconds + time.perf_counter() - started)
                    raise TrainingInterrupted(
                        signal_number,
                        f"stopped at epoch {run.epoch}, batch {run.step} of {len(batches)}; "
                        f"continue with: crftag pretrain --resume {run.directory}",
                    )
                if budget is not None and run.seconds + time.perf_counter() - started >= budget:
                    out_of_time = True
                    break
        if run.step == len(batches):
            print(f"epoch {run.epoch}: done", file=sys.stderr, flush=True)
            run.epoch, run.step = run.epoch + 1, 0
            _save_resume(run, run.seconds + time.perf_counter() - started)
    if out_of_time:
        print(f"stopped by --time at epoch {run.epoch}, batch {run.step}", file=sys.stderr)
    return _finish(run)


def _train_step(run: _Run, pieces: list) -> float:
    """One optimizer step on the objective's mean loss a character; returns that mean."""
    run.models.train()
    objective = objective_named(run.settings.objective)
    run.optimizer.zero_grad()
    loss = objective.loss(run.models, objective.batch(pieces, run.device))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(run.models.parameters(), run.settings.clip)
    run.optimizer.step()
    return float(loss.detach())


def _held_out_score(run: _Run) -> dict:
    """The objective's score of the model on the held-out pieces."""
    objective = objective_named(run.settings.objective)
    run.models.eval()
    size = run.settings.batch_size
    with torch.no_grad():
        batches = [
            objective.batch(run.held_out[start : start + size], run.device)
            for start in range(0, len(run.held_out), size)
        ]
        return objective.score(run.models, batches)


def _finish(run: _Run) -> PretrainedCharLM:
    """Measure the held-out score, write the directory, remove the resume state."""
    scores = _held_out_score(run)
    settings = dataclasses.asdict(run.settings)
    objective = objective_named(run.settings.objective)
    pretrained = objective.save(run.directory, run.codes, run.models, settings, scores)
    resume = os.path.join(run.directory, RESUME_FILE)
    if os.path.exists(resume):
        os.unlink(resume)
    return pretrained


def _digest(lines: list[str]) -> str:
    """SHA-256 of the text's lines: what a resumed run checks the text it reads again against."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _save_resume(run: _Run, seconds: float) -> None:
    """Everything a resumed run needs, written whole or not at all."""
    write_checkpoint(
        os.path.join(run.directory, RESUME_FILE),
        {
            "format": _RESUME_FORMAT,
            "paths": [os.path.abspath(path) for path in run.paths],
            "settings": dataclasses.asdict(run.settings),
            "minutes": run.minutes,
            "symbols": list(run.codes.symbols),
            "state_dict": run.models.state_dict(),
            "optimizer": run.optimizer.state_dict(),
            "progress": {"epoch": run.epoch, "step": run.step, "seconds": seconds},
            "text_digest": run.text_digest,
        },
    )
