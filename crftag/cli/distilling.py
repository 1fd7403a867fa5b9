"""``crftag distill``: a teacher model, a student config and unlabelled text in, a run directory
out."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from crftag.cli.options import (
    DeviceChoice,
    OverwriteOption,
    QuietOption,
    RunDirOption,
    SeedOption,
    SetOption,
    TrainDeviceOption,
)
from crftag.cli.training import new_run_config, report_training
from crftag.errors import CrftagError

__all__ = ["distill"]


def distill(
    teacher: Annotated[
        str | None,
        typer.Argument(
            help="The teacher: a run directory, a checkpoint, an export or a bundled name.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Argument(
            help="The student's YAML config, with its labelled data.", show_default=False
        ),
    ] = None,
    text: Annotated[
        list[str] | None,
        typer.Option(
            "--text",
            help="Unlabelled text, one sentence or document a line, plain or compressed "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    output: RunDirOption = "runs/latest",
    overrides: SetOption = None,
    device: TrainDeviceOption = DeviceChoice.auto,
    seed: SeedOption = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue the interrupted run in this directory, with its own config, teacher "
            "and text.",
            show_default=False,
        ),
    ] = None,
    overwrite: OverwriteOption = False,
    quiet: QuietOption = False,
) -> None:
    """Train a student from CONFIG on its labelled data and on TEACHER's labels of unlabelled
    text.

    The teacher labels the --text files once, into DIR/teacher (resumable; reused by a resumed
    run). Each epoch trains on the labelled sentences and the teacher's (the distill section of
    the config: objective, weight). The run directory is a crftag run like `crftag train`'s;
    SIGINT (Ctrl-C) or SIGTERM writes a resumable checkpoint, and `crftag distill --resume DIR`
    (or `crftag train --resume DIR`) continues it (docs/distillation.md).
    """
    from crftag.nn.devices import resolve_device
    from crftag.training.distill import distill as run_distillation

    if resume is not None:
        if teacher is not None or config is not None or text or overrides or seed is not None:
            raise CrftagError(
                "--resume continues a run with its own teacher, config and text: give no "
                "TEACHER, CONFIG, --text, --set or --seed"
            )
        if overwrite:
            raise CrftagError("--overwrite starts a new run and --resume continues one: give one")
        metrics = run_distillation(
            None,
            None,
            [],
            resume,
            device=resolve_device(device.value),
            show_progress=not quiet,
            resume=True,
        )
        report_training(metrics, os.path.join(resume, "model.pt"))
        return
    if teacher is None or config is None:
        raise CrftagError("distill needs a TEACHER and a CONFIG (or --resume RUN_DIR)")
    if not text:
        raise CrftagError("distill needs unlabelled text: --text FILE (repeatable)")
    loaded_config, _ = new_run_config(config, overrides, seed, output, [teacher, *text])
    metrics = run_distillation(
        teacher,
        loaded_config,
        list(text),
        output,
        device=resolve_device(device.value),
        show_progress=not quiet,
        overwrite=overwrite,
    )
    report_training(metrics, os.path.join(output, "model.pt"))
