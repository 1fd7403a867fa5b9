"""``crftag pretrain``: unlabelled text in, a directory of character language models out, for
``model.char_lm`` (docs/your-data.md)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from crftag.cli.options import DeviceChoice, MinutesOption
from crftag.errors import CrftagError

__all__ = ["pretrain"]


_OBJECTIVES = ("char_lm",)  # crftag.training.pretrain_objectives.OBJECTIVES, kept light to import


def _objective(value: str) -> str:
    """``--objective``'s value; a removed one is refused with why."""
    from crftag.config.removed import REMOVED_OBJECTIVES

    if value in REMOVED_OBJECTIVES:
        raise CrftagError(f"--objective {value}: {REMOVED_OBJECTIVES[value]}")
    if value not in _OBJECTIVES:
        raise typer.BadParameter(f"expected one of {', '.join(_OBJECTIVES)}, got {value!r}")
    return value


def pretrain(
    texts: Annotated[
        list[str] | None,
        typer.Argument(
            help="Text files: one sentence or document a line; plain, .gz, .bz2 or .xz.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Directory to write.", show_default=False)
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume", help="Continue the pretraining stopped in DIR.", show_default=False
        ),
    ] = None,
    objective: Annotated[
        str,
        typer.Option(
            "--objective",
            callback=_objective,
            help="char_lm: character language models (model.char_lm).",
        ),
    ] = "char_lm",
    hidden: Annotated[int, typer.Option("--hidden", min=1, help="LSTM units of each model.")] = 256,
    char_dim: Annotated[
        int, typer.Option("--char-dim", min=1, help="Size of the character embedding.")
    ] = 32,
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Passes over the text.")] = 10,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Lines a batch.")] = 32,
    max_length: Annotated[
        int, typer.Option("--length", min=1, help="Characters a piece: longer lines are cut.")
    ] = 250,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 1,
    minutes: MinutesOption = None,
    device: Annotated[DeviceChoice, typer.Option(help="Where to train.")] = DeviceChoice.auto,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Train a forward and a backward character language model on unlabelled text.

    Writes OUTPUT/char_lm.pt, for model.char_lm in a config, and OUTPUT/perplexity.json, the
    perplexity of each model on the last lines of the text, held out. Ctrl-C stops at the next
    batch and keeps the state: crftag pretrain --resume OUTPUT continues to the same models an
    uninterrupted run gives.
    """
    from crftag.cli.outputs import refuse_input_as_output
    from crftag.data.paths import check_regular_file
    from crftag.nn.devices import resolve_device
    from crftag.training.checks import check_output_dir
    from crftag.training.pretrain import PretrainSettings, resume_pretraining
    from crftag.training.pretrain import pretrain as run_pretraining
    from crftag.training.signals import StopSignals

    if resume is not None and (texts or output):
        raise CrftagError("--resume continues with its own text and settings: give no TEXT or -o")
    if resume is None and not (texts and output):
        raise CrftagError("pretrain needs TEXT files and -o DIR (or --resume DIR)")
    for text in texts or []:  # a FIFO would block the reading, deaf to Ctrl-C and SIGTERM
        if os.path.lexists(text):
            check_regular_file(text)
    refuse_input_as_output([output], texts or [])
    check_output_dir(resume or output)  # before any work, not when the models are saved
    chosen = resolve_device(device.value)
    with StopSignals() as stop_requested:
        stop_requested.defer()
        common = dict(minutes=minutes, device=chosen, stop_requested=stop_requested)
        if resume is not None:
            result = resume_pretraining(resume, show_progress=not quiet, **common)
        else:
            settings = PretrainSettings(
                hidden_size=hidden,
                char_dim=char_dim,
                max_length=max_length,
                batch_size=batch_size,
                epochs=epochs,
                seed=seed,
                objective=objective,
            )
            result = run_pretraining(texts, output, settings, show_progress=not quiet, **common)
    typer.echo(_summary(result, resume or output), err=True)


def _summary(result, where: str) -> str:
    """The held-out score of what ``crftag pretrain`` wrote, and the config key that reads it."""
    perplexity = result.perplexity
    return (
        f"held-out perplexity: forward {perplexity['forward']:.3f}, backward "
        f"{perplexity['backward']:.3f} ({perplexity['characters']} characters); "
        f"model.char_lm: {where}"
    )
