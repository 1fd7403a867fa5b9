"""``crftag predict`` and ``crftag merge``: tagging streams, in one process, several, or shards."""

from __future__ import annotations

import os
import re
import sys
from typing import Annotated

import typer

from crftag.cli.options import (
    DEFAULT_MODEL,
    DeviceChoice,
    InputFormat,
    ModelOption,
    OnError,
    OutputFormat,
    Probabilities,
    finite,
)
from crftag.errors import CrftagError

__all__ = ["MAX_BATCH_SIZE", "MAX_JOBS", "MAX_NBEST", "MAX_SHARDS", "merge", "predict"]

# Upper bounds that keep a typo from asking for terabytes or a million processes.
MAX_BATCH_SIZE = 100_000
MAX_NBEST = 100
MAX_JOBS = 256
MAX_SHARDS = 100_000


def predict(
    files: Annotated[
        list[str] | None, typer.Argument(help="Input files; none or - reads stdin.")
    ] = None,
    model: ModelOption = DEFAULT_MODEL,
    input_format: Annotated[
        InputFormat,
        typer.Option(help="text: raw sentences, one per line; tokens: split on spaces."),
    ] = InputFormat.text,
    output_format: Annotated[
        OutputFormat | None,
        typer.Option("--format", help="Output format [default: conll]."),
    ] = None,
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH_SIZE, help="Sentences per batch.")
    ] = 64,
    device: Annotated[DeviceChoice, typer.Option(help="Where to run.")] = DeviceChoice.auto,
    probs: Annotated[
        Probabilities | None,
        typer.Option(
            help="jsonl: each token's probability of its tag (--probs or --probs tag), "
            "or of every tag (--probs all)."
        ),
    ] = None,
    nbest: Annotated[
        int, typer.Option(min=1, max=MAX_NBEST, help="jsonl: also list the K best tag sequences.")
    ] = 1,
    min_confidence: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            callback=finite,
            help="Drop spans less likely than this (tokens become O).",
        ),
    ] = 0.0,
    token_offsets: Annotated[
        bool,
        typer.Option(
            "--token-offsets",
            help="jsonl: also each token's [start, end) character offsets in its input line.",
        ),
    ] = False,
    on_error: Annotated[
        OnError,
        typer.Option(
            help="An unreadable input line: stop with its line number (after writing everything "
            "before it), or skip it with a warning (an empty record for text input; column "
            "input writes the line back in place, untagged)."
        ),
    ] = OnError.stop,
    shard: Annotated[
        str | None,
        typer.Option(
            help="I/N: tag only batches I, I+N, I+2N, ... (0-based) of --batch-size records; "
            "`crftag merge` restores the input order of the N outputs.",
            show_default=False,
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(min=1, max=MAX_JOBS, help="Tag with this many processes on this machine."),
    ] = 1,
) -> None:
    """Tag sentences from files or stdin; one record per input sentence, in order, on stdout."""
    from crftag.inference.streaming import PredictOptions, tag_files

    inputs = files or ["-"]
    if inputs.count("-") > 1:
        raise CrftagError(
            f"- (standard input) is named {inputs.count('-')} times: it can be read only once"
        )
    shard_of = _parse_shard(shard) if shard else (0, 1)
    if jobs > 1 and shard is not None:
        raise CrftagError("--jobs and --shard do not combine; run one or the other")
    options = PredictOptions(
        model=model,
        device=device.value,
        input_format=input_format.value,
        output_format=(output_format or OutputFormat.conll).value,
        batch_size=batch_size,
        probs=probs.value if probs else None,
        nbest=nbest,
        min_confidence=min_confidence,
        on_error=on_error.value,
        token_offsets=token_offsets,
    )
    if jobs > 1:
        from crftag.inference.parallel import predict_in_processes

        predict_in_processes(jobs, inputs, options, sys.stdout)
    else:
        tag_files(options, inputs, sys.stdout, shard=shard_of)


def _parse_shard(text: str) -> tuple[int, int]:
    """I/N in ASCII digits (str.isdigit also takes other scripts' digits and superscripts), with
    N at most MAX_SHARDS."""
    match = re.fullmatch(r"([0-9]{1,9})/([0-9]{1,9})", text)
    if not match or not int(match[1]) < int(match[2]) <= MAX_SHARDS:
        raise CrftagError(
            f"--shard {text}: expected I/N with 0 <= I < N <= {MAX_SHARDS} in ASCII digits, "
            "e.g. --shard 0/4"
        )
    return int(match[1]), int(match[2])


def merge(
    files: Annotated[
        list[str], typer.Argument(help="Outputs of predict --shard 0/N ... N-1/N, in that order.")
    ],
    output_format: Annotated[
        OutputFormat | None,
        typer.Option(
            "--format", help="The format the shards were written in (checked; their headers say)."
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_BATCH_SIZE,
            help="The --batch-size the shards were tagged with (checked; their headers say).",
        ),
    ] = None,
) -> None:
    """Merge the outputs of `crftag predict --shard I/N` back into input order."""
    from crftag.inference.shards import merge_shards

    for path in files:
        if os.path.isdir(path):
            raise CrftagError(f"{path}: is a directory, expected a shard file")
        if os.path.exists(path) and not os.path.isfile(path):
            # Each shard is read twice: its header is checked before any record is merged.
            raise CrftagError(
                f"{path}: not a regular file; merge reads each shard twice, so save the "
                "shards to files first"
            )
        if not os.path.isfile(path):
            raise CrftagError(f"{path}: no such file")
    merge_shards(files, output_format.value if output_format else None, sys.stdout, batch_size)
