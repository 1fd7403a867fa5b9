"""``crftag train``: a config in, a run directory out."""

from __future__ import annotations

import os
import sys
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
from crftag.cli.outputs import refuse_input_as_output
from crftag.errors import CrftagError

__all__ = ["new_run_config", "report_training", "train"]


def train(
    config: Annotated[
        str | None, typer.Argument(help="YAML config file.", show_default=False)
    ] = None,
    output: RunDirOption = "runs/latest",
    overrides: SetOption = None,
    device: TrainDeviceOption = DeviceChoice.auto,
    seed: SeedOption = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue the interrupted run in this directory, with its own config.",
            show_default=False,
        ),
    ] = None,
    overwrite: OverwriteOption = False,
    quiet: QuietOption = False,
) -> None:
    """Train a BiLSTM-CRF from CONFIG and save it in the run directory.

    A run directory holding an earlier run is refused unless --overwrite is given, and one run
    at a time trains in a directory. SIGINT (Ctrl-C) or SIGTERM writes a resumable checkpoint
    and exits with 130 or 143; `crftag train --resume DIR` continues the run where it stopped.
    """
    from crftag.nn.devices import resolve_device
    from crftag.training.run import train as run_training

    if resume is not None:
        if config is not None or overrides or seed is not None or overwrite:
            raise CrftagError(
                "--resume continues a run with its own config: give no CONFIG, --set, --seed "
                "or --overwrite"
            )
        metrics = _resume(resume, resolve_device(device.value), show_progress=not quiet)
        output = resume
    else:
        if config is None:
            raise CrftagError("train needs a CONFIG file (or --resume RUN_DIR)")
        loaded_config, base = new_run_config(config, overrides, seed, output)
        resolved = resolve_device(device.value)
        metrics = run_training(
            loaded_config,
            output,
            device=resolved,
            show_progress=not quiet,
            overwrite=overwrite,
            base=base,
        )
    if os.environ.get("RANK", "0") != "0":
        return  # under torchrun, rank 0 reports
    report_training(metrics, os.path.join(output, "model.pt"))


def new_run_config(
    config_path: str, overrides: list[str] | None, seed: int | None, output: str, inputs=()
):
    """A new run's (config, base config): CONFIG with --set and --seed on top, once no input
    (the config, ``inputs``, the corpus files) is one of the files the run writes in
    ``output``."""
    from crftag.training.corpus import training_files
    from crftag.training.init_from import load_training_config
    from crftag.training.rundir import RUN_FILES

    settings = list(overrides or [])
    if seed is not None:
        settings.append(f"train.seed={seed}")
    loaded_config, base = load_training_config(config_path, settings)
    data = loaded_config.data
    refuse_input_as_output(
        [os.path.join(output, name) for name in RUN_FILES],
        [config_path, *inputs, *training_files(loaded_config), data.dev, data.test],
    )
    return loaded_config, base


def _resume(output_dir: str, device, *, show_progress: bool) -> dict:
    """Continue the run in ``output_dir``: a tagger's, or a student's (``crftag distill``)."""
    from crftag.training.distill import distill
    from crftag.training.run import train as run_training
    from crftag.training.rundir import resumed_task

    if resumed_task(output_dir) == "distill":
        return distill(
            None, None, [], output_dir, device=device, show_progress=show_progress, resume=True
        )
    return run_training(None, output_dir, device=device, show_progress=show_progress, resume=True)


def report_training(metrics: dict, model_path: str) -> None:
    """The end of a run, on stderr: a table on a terminal, two plain lines in a log."""
    from crftag.scoring.tables import is_terminal, print_table

    dev, test = metrics.get("dev"), metrics.get("test")
    if is_terminal(sys.stderr):
        rows = [["epochs", str(metrics["epochs"])]]
        if dev is not None:
            rows += [["best dev", f"{100 * dev:.2f} (epoch {metrics['best_epoch']})"]]
        if test is not None:
            rows += [["test", f"{100 * test:.2f}"]]
        rows += [
            ["training time", f"{metrics['train_seconds']:.1f} s"],
            ["tokens/s", f"{metrics['tokens_per_second']:,.0f} (mean of epochs)"],
        ]
        print_table(f"saved {model_path}", ["run", "result"], rows, sys.stderr)
        return
    if test is not None:
        typer.echo(f"test {100 * test:6.2f}", err=True)
    summary = f"saved {model_path}"
    if dev is not None:
        summary += f" (best dev {100 * dev:.2f} at epoch {metrics['best_epoch']})"
    typer.echo(summary, err=True)
