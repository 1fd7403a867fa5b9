"""``crftag eval``: a model scored on labelled files."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Annotated

import typer

from crftag.cli.options import DataFormat, DeviceChoice, Misaligned, ModelOption
from crftag.registry import DEFAULT_MODEL

__all__ = ["evaluate"]


def evaluate(
    files: Annotated[
        list[str],
        typer.Argument(help="Labelled files: CoNLL, CoNLL-U, span JSONL, Label Studio JSON, brat."),
    ],
    model: ModelOption = DEFAULT_MODEL,
    data_format: Annotated[
        DataFormat,
        typer.Option(help="The files' format; auto: as data.format auto in training configs."),
    ] = DataFormat.auto,
    misaligned: Annotated[
        Misaligned,
        typer.Option(help="Spans of jsonl or brat files off token boundaries (data.misaligned)."),
    ] = Misaligned.error,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per file.")] = False,
    device: Annotated[DeviceChoice, typer.Option(help="Where to run.")] = DeviceChoice.auto,
    batch_size: Annotated[int, typer.Option(min=1, help="Sentences per batch.")] = 64,
    with_calibration: Annotated[
        bool,
        typer.Option(
            "--calibration",
            help="Also a reliability table of span confidence, its expected calibration error, "
            "and precision/recall when low-confidence spans are dropped.",
        ),
    ] = False,
) -> None:
    """Score a model on labelled files: entity P/R/F1 (seqeval) and token accuracy."""
    from crftag.evaluate import score_sentences, unseen_labels
    from crftag.inference.loading import load_tagger

    tagger = load_tagger(model, device.value)
    # The model's column settings, the format and alignment policy asked for here.
    reading = replace(tagger.config.data, format=data_format.value, misaligned=misaligned.value)
    for path in files:
        gold = reading.read(path)
        scores = score_sentences(
            tagger, gold, batch_size=batch_size, with_calibration=with_calibration
        )
        _report_unseen_labels(path, unseen_labels(tagger, gold))
        _print_scores(path, scores, as_json=as_json)
        if with_calibration and not tagger.tags_are_spans:
            typer.echo(f"crftag: warning: {path}: no spans, so no span calibration", err=True)


def _print_scores(path: str, scores: dict, *, as_json: bool) -> None:
    """One JSON line; else tables drawn for a terminal, or fixed-width text for a pipe."""
    from crftag.evaluate import format_calibration, format_scores, score_tables, to_json
    from crftag.tables import is_terminal, print_table

    if as_json:
        typer.echo(to_json({"file": path, **scores}))
    elif is_terminal(sys.stdout):
        for title, headers, rows in score_tables(path, scores):
            print_table(title, headers, rows, sys.stdout)
    else:
        typer.echo(format_scores(path, scores))
        if "calibration" in scores:
            typer.echo(format_calibration(scores["calibration"]))


def _report_unseen_labels(path: str, unseen: list[str]) -> None:
    if unseen:
        typer.echo(
            f"crftag: warning: {path}: labels never seen in training, counted as errors: "
            f"{', '.join(unseen)}",
            err=True,
        )
