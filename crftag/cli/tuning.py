"""``crftag tune``: a config in, a study directory out (docs/tuning.md)."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from crftag.cli.options import DeviceChoice, MinutesOption
from crftag.cli.outputs import refuse_input_as_output
from crftag.errors import CrftagError

__all__ = ["tune"]


def tune(
    config: Annotated[str, typer.Argument(help="YAML config file.", show_default=False)],
    output: Annotated[
        str, typer.Option("-o", "--output", help="Study directory (rerun to continue).")
    ] = "runs/tune",
    trials: Annotated[
        int, typer.Option("--trials", min=1, help="Trials in all, earlier runs' included.")
    ] = 20,
    minutes: MinutesOption = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Trials at once.")] = 1,
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config value: section.key=value (repeatable)."),
    ] = None,
    device: Annotated[DeviceChoice, typer.Option(help="Where to train.")] = DeviceChoice.auto,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Remove the study in OUTPUT and begin a new one."),
    ] = False,
) -> None:
    """Search the hyper-parameters of CONFIG on its dev set with Optuna.

    Each trial is a run directory OUTPUT/trials/NNN; OUTPUT/best.yaml is the best trial's
    config, for crftag train. The study is kept in OUTPUT/study.db: running the same command
    again continues it, and Ctrl-C loses at most the trials under way. A study begun with
    another config is refused; --overwrite replaces it with a new one.
    """
    from crftag.nn.devices import resolve_device
    from crftag.training.init_from import load_training_config
    from crftag.training.tuning import STUDY_OUTPUTS, Budget, import_optuna
    from crftag.training.tuning import tune as run_study

    import_optuna()  # a missing extra is said before any work
    refuse_input_as_output([os.path.join(output, name) for name in STUDY_OUTPUTS], [config])
    loaded, base = load_training_config(config, list(overrides or []))
    if os.path.exists(output) and not os.path.isdir(output):
        raise CrftagError(f"{output}: not a directory, expected a study directory")
    report = run_study(
        loaded,
        output,
        Budget(trials, minutes, jobs),
        device=resolve_device(device.value),
        overwrite=overwrite,
        base=base,
    )
    _report(output, report.summary, report.trials)


def _report(output: str, summary: dict, trials: list[dict]) -> None:
    """The trial table and the best trial, on stderr: rich on a terminal, plain in a log."""
    from crftag.scoring.tables import print_table

    names = sorted({name for trial in trials for name in trial["params"]})
    rows = [
        [
            f"{trial['number']:03d}",
            trial["state"] + (" (time)" if trial.get("stopped") == "time limit" else ""),
            "" if trial["dev"] is None else f"{100 * trial['dev']:.2f}",
            str(len(trial["dev_per_epoch"])),
            *[_shown(trial["params"].get(name)) for name in names],
        ]
        for trial in trials
    ]
    print_table(
        f"{len(trials)} trials in {output}",
        ["trial", "state", "dev", "epochs", *names],
        rows,
        sys.stderr,
    )
    best = summary.get("best")
    if best is None:
        typer.echo("no trial has finished yet: run the same command to continue", err=True)
        return
    test = f", test {100 * best['test']:.2f}" if "test" in best else ""
    typer.echo(
        f"best: trial {best['number']:03d}, dev {100 * best['dev']:.2f}{test}; "
        f"crftag train {os.path.join(output, 'best.yaml')}",
        err=True,
    )


def _shown(value) -> str:
    if value is None:
        return ""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
