"""``crftag eval``: a model scored on labelled files, and its errors analysed."""

from __future__ import annotations

import contextlib
import sys
from enum import Enum
from typing import Annotated, TextIO

import typer

from crftag.cli.options import DataFormat, DeviceChoice, Misaligned, ModelOption, finite
from crftag.cli.outputs import refuse_input_as_output
from crftag.errors import CrftagError
from crftag.modelfiles.registry import DEFAULT_MODEL
from crftag.scoring.analysis import MATCH_MODES

__all__ = ["evaluate"]

MatchMode = Enum("MatchMode", [(name, name) for name in MATCH_MODES], type=str)


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
    plot: Annotated[
        str | None,
        typer.Option(
            metavar="PNG",
            help="With --calibration: draw the reliability diagram to this file "
            "(needs matplotlib, the plot extra of crftag).",
        ),
    ] = None,
    errors: Annotated[
        str | None,
        typer.Option(
            metavar="OUT.jsonl",
            help="Write every false positive and false negative span (mistagged token for "
            "part-of-speech models) as a JSON line: its sentence, the spans around it, and "
            "its confidence.",
        ),
    ] = None,
    with_confusion: Annotated[
        bool,
        typer.Option(
            "--confusion",
            help="Also the entity-type confusion table (missed and spurious spans, boundary "
            "errors apart), or a part-of-speech model's most frequent tag confusions.",
        ),
    ] = False,
    match: Annotated[
        MatchMode | None,
        typer.Option(help="Also the SemEval-2013 scores of spans in this matching mode."),
    ] = None,
    perturb: Annotated[
        str | None,
        typer.Option(
            metavar="lower,upper,title,typos",
            help="Also the scores on copies of each file with every word lower-, upper- or "
            "title-cased, or with typos, the tags kept (docs/robustness.md).",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(min=0, help="With --perturb: the seed of the typos. [default: 1]")
    ] = None,
    typo_rate: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            callback=finite,
            help="With --perturb typos: the share of the words of 4 letters or more given one "
            "edit. [default: 0.2]",
        ),
    ] = None,
) -> None:
    """Score a model on labelled files: entity P/R/F1 (seqeval) and token accuracy."""
    from crftag.inference import loading
    from crftag.scoring.files import scored_files

    if plot is not None and not with_calibration:
        raise typer.BadParameter(
            "it draws what --calibration measures; add --calibration", param_hint="'--plot'"
        )
    if plot is not None and len(files) != 1:
        raise typer.BadParameter(
            f"it draws one file's diagram, got {len(files)} files", param_hint="'--plot'"
        )
    refuse_input_as_output([errors, plot], [*files, model])
    perturbation = _perturbations(perturb, seed, typo_rate)
    tagger = loading.load(model, device.value)
    spans = tagger.tags_are_spans
    if plot is not None and not spans:
        raise CrftagError(f"--plot: {model} tags no spans, so it has no span confidence to draw")
    with _errors_file(errors) as sink:
        for result in scored_files(
            tagger,
            files,
            data_format=data_format.value,
            misaligned=misaligned.value,
            batch_size=batch_size,
            calibration=with_calibration,
            confusion=with_confusion,
            match=match and match.value,
            errors=sink is not None,
            perturbation=perturbation,
        ):
            _report_unseen_labels(result.path, result.unseen)
            _print_scores(result.path, result.scores, as_json=as_json)
            if sink is not None:
                _write_errors(result.path, result.errors, sink, errors)
            if not spans and (with_calibration or match):
                asked = "span calibration" if with_calibration else "span matching"
                typer.echo(f"crftag: warning: {result.path}: no spans, so no {asked}", err=True)
    if plot is not None:
        from crftag.scoring.plots import reliability_diagram

        reliability_diagram(result.scores["calibration"], plot)
        typer.echo(f"crftag: drew the reliability diagram to {plot}", err=True)


def _perturbations(perturb: str | None, seed: int | None, typo_rate: float | None):
    """The :class:`~crftag.scoring.robustness.Perturbation` ``--perturb`` asks for (None
    without it), checked with the options that only it uses."""
    from crftag.scoring.robustness import Perturbation, parse_perturbations

    if perturb is None:
        for name, value in (("--seed", seed), ("--typo-rate", typo_rate)):
            if value is not None:
                raise typer.BadParameter(
                    "it sets --perturb's copies; add --perturb", param_hint=name
                )
        return None
    try:
        changes = tuple(parse_perturbations(perturb))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="'--perturb'") from None
    given = {"seed": seed, "typo_rate": typo_rate}
    return Perturbation(
        changes, **{key: value for key, value in given.items() if value is not None}
    )


@contextlib.contextmanager
def _errors_file(path: str | None):
    """The file ``--errors`` names, open for writing (before any tagging, so a path that
    cannot be written fails at once), or None."""
    if path is None:
        yield None
        return
    try:
        handle = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
    except OSError as error:
        raise CrftagError(f"{path}: cannot write it: {error.strerror or error}") from None
    with handle:
        yield handle


def _write_errors(path: str, records: list[dict], sink: TextIO, name: str) -> None:
    """Append the file's error records to ``sink``, each naming the file, and count them."""
    from crftag.data.jsonl import json_line

    counts: dict[str, int] = {}
    for record in records:
        sink.write(json_line({"file": path, **record}))
        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    told = ", ".join(f"{n} {kind.replace('_', ' ')}s" for kind, n in sorted(counts.items()))
    typer.echo(f"crftag: {path}: wrote {told or 'no errors'} to {name}", err=True)


def _print_scores(path: str, scores: dict, *, as_json: bool) -> None:
    """One JSON line; else tables drawn for a terminal, or fixed-width text for a pipe."""
    from crftag.scoring.analysis_tables import analysis_tables
    from crftag.scoring.evaluate import format_calibration, format_scores, score_tables, to_json
    from crftag.scoring.tables import is_terminal, print_table

    if as_json:
        typer.echo(to_json({"file": path, **scores}))
        return
    if is_terminal(sys.stdout):
        for title, headers, rows in score_tables(path, scores):
            print_table(title, headers, rows, sys.stdout)
    else:
        typer.echo(format_scores(path, scores))
        if "calibration" in scores:
            typer.echo(format_calibration(scores["calibration"]))
    for title, headers, rows, note in analysis_tables(path, scores):
        print_table(title, headers, rows, sys.stdout)
        if note:
            typer.echo(note)


def _report_unseen_labels(path: str, unseen: list[str]) -> None:
    if unseen:
        typer.echo(
            f"crftag: warning: {path}: labels never seen in training, counted as errors: "
            f"{', '.join(unseen)}",
            err=True,
        )
