"""``crftag select``: the sentences (or documents) worth annotating next, for active learning
(docs/active-learning.md)."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from crftag.cli.options import DEFAULT_MODEL, DeviceChoice, InputFormat, ModelOption
from crftag.cli.outputs import refuse_input_as_output
from crftag.cli.tagging import MAX_BATCH_SIZE
from crftag.errors import CrftagError
from crftag.inference.selection import STRATEGIES

__all__ = ["MAX_COUNT", "select"]

MAX_COUNT = 10_000_000  # a bound on the heap a typo could ask for

Strategy = Enum("Strategy", [(name, name) for name in STRATEGIES], type=str)


def select(
    files: Annotated[list[str], typer.Argument(help="Unlabelled input files; - reads stdin.")],
    count: Annotated[
        int, typer.Option("-n", "--count", min=1, max=MAX_COUNT, help="How many to select.")
    ],
    output: Annotated[
        str,
        typer.Option(
            "-o",
            "--output",
            help="Span JSONL to write (a JSON array for a .json name; - for stdout).",
        ),
    ],
    model: ModelOption = DEFAULT_MODEL,
    strategy: Annotated[
        Strategy, typer.Option(help="What makes a sentence worth annotating.")
    ] = Strategy["least-confidence"],
    normalize: Annotated[
        bool,
        typer.Option(
            help="least-confidence and entropy per token (MNLP; mean token entropy), so long "
            "sentences are not chosen for their length alone."
        ),
    ] = True,
    diverse: Annotated[
        bool,
        typer.Option(
            "--diverse",
            help="Pass over near-identical sentences, and hold back sentences whose predicted "
            "entity already fills two chosen ones.",
        ),
    ] = False,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            help="Already annotated files (span JSONL, Label Studio JSON, brat, CoNLL): their "
            "sentences are not selected again. Repeatable."
        ),
    ] = None,
    input_format: Annotated[
        InputFormat,
        typer.Option(help="text, tokens, conll, conllu, or doc (whole documents)."),
    ] = InputFormat.text,
    seed: Annotated[int, typer.Option(help="The draw of --strategy random.")] = 0,
    batch_size: Annotated[
        int, typer.Option(min=1, max=MAX_BATCH_SIZE, help="Sentences per batch.")
    ] = 64,
    device: Annotated[DeviceChoice, typer.Option(help="Where to run.")] = DeviceChoice.auto,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Select the N sentences the model is least sure of, pre-annotated with its spans."""
    from crftag.inference import loading
    from crftag.inference.selection_files import (
        SelectOptions,
        excluded_ids,
        select_files,
        selection_record,
        write_selection,
    )

    if files.count("-") > 1:
        raise CrftagError("- (standard input) is named more than once: it can be read only once")
    refuse_input_as_output([output], [*files, *(exclude or []), model])
    excluded = excluded_ids(exclude or [])
    tagger = loading.load(model, device.value)
    options = SelectOptions(
        strategy=strategy.value,
        count=count,
        input_format=input_format.value,
        normalize=normalize,
        diverse=diverse,
        seed=seed,
        batch_size=batch_size,
        show_progress=not quiet,
    )
    chosen, considered = select_files(tagger, files, options, excluded)
    records = [selection_record(c, rank, strategy.value) for rank, c in enumerate(chosen, 1)]
    write_selection(output, records)
    units = "documents" if input_format.value == "doc" else "sentences"
    print(
        f"crftag: selected {len(chosen)} of {considered} {units} ({strategy.value}) -> {output}",
        file=sys.stderr,
    )
