"""``crftag eval``: a model scored on labelled files, and its errors analysed."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from enum import Enum
from typing import Annotated, TextIO

import typer

from crftag.cli.options import DataFormat, DeviceChoice, Misaligned, ModelOption
from crftag.errors import CrftagError
from crftag.modelfiles.registry import DEFAULT_MODEL
from crftag.scoring.analysis import MATCH_MODES

__all__ = ["evaluate"]

MatchMode = Enum("MatchMode", [(name, name) for name in MATCH_MODES], type=str)
TOP_TAG_CONFUSIONS = 20  # rows of a part-of-speech model's confusion table; --json has all


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
            help="With --perturb typos: the share of the words of 4 letters or more given one "
            "edit. [default: 0.2]",
        ),
    ] = None,
) -> None:
    """Score a model on labelled files: entity P/R/F1 (seqeval) and token accuracy."""
    from crftag.inference.loading import load_tagger
    from crftag.scoring.evaluate import score_tagged, tag_sentences, unseen_labels

    if plot is not None and not with_calibration:
        raise typer.BadParameter(
            "it draws what --calibration measures; add --calibration", param_hint="'--plot'"
        )
    if plot is not None and len(files) != 1:
        raise typer.BadParameter(
            f"it draws one file's diagram, got {len(files)} files", param_hint="'--plot'"
        )
    changes = _perturbations(perturb, seed, typo_rate)
    tagger = load_tagger(model, device.value)
    spans = tagger.tags_are_spans
    if plot is not None and not spans:
        raise CrftagError(f"--plot: {model} tags no spans, so it has no span confidence to draw")
    # The model's column settings, the format and alignment policy asked for here.
    reading = replace(tagger.config.data, format=data_format.value, misaligned=misaligned.value)
    with _errors_file(errors) as sink:
        for path in files:
            gold = _for_file(reading, path).read(path)
            tagged = tag_sentences(
                tagger,
                gold,
                batch_size=batch_size,
                with_spans=spans and (with_calibration or sink is not None),
            )
            scores = score_tagged(
                gold, tagged, tags_are_spans=spans, with_calibration=with_calibration
            )
            scores |= _analyse(gold, tagged, spans, with_confusion, match and match.value)
            if changes:
                scores |= _perturbed(tagger, gold, changes, seed, typo_rate, batch_size)
            _report_unseen_labels(path, unseen_labels(tagger, gold))
            _print_scores(path, scores, as_json=as_json)
            if sink is not None:
                _write_errors(path, gold, tagged, spans, sink, errors)
            if not spans and (with_calibration or match):
                asked = "span calibration" if with_calibration else "span matching"
                typer.echo(f"crftag: warning: {path}: no spans, so no {asked}", err=True)
    if plot is not None:
        from crftag.scoring.plots import reliability_diagram

        reliability_diagram(scores["calibration"], plot)
        typer.echo(f"crftag: drew the reliability diagram to {plot}", err=True)


def _perturbations(perturb: str | None, seed: int | None, typo_rate: float | None) -> list[str]:
    """The names ``--perturb`` gives, checked with the options that only it uses."""
    from crftag.scoring.robustness import parse_perturbations

    if perturb is None:
        for name, value in (("--seed", seed), ("--typo-rate", typo_rate)):
            if value is not None:
                raise typer.BadParameter(
                    "it sets --perturb's copies; add --perturb", param_hint=name
                )
        return []
    try:
        return parse_perturbations(perturb)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="'--perturb'") from None


def _perturbed(tagger, gold, changes, seed: int | None, typo_rate: float | None, batch_size):
    """The file's ``perturbed`` scores, one per change, and the ``perturbation`` settings."""
    from crftag.scoring.robustness import DEFAULT_SEED, DEFAULT_TYPO_RATE, score_perturbed

    settings = {
        "seed": DEFAULT_SEED if seed is None else seed,
        "typo_rate": DEFAULT_TYPO_RATE if typo_rate is None else typo_rate,
    }
    copies = score_perturbed(tagger, gold, changes, batch_size=batch_size, **settings)
    return {"perturbed": copies, "perturbation": settings}


def _analyse(gold, tagged, spans: bool, with_confusion: bool, match: str | None) -> dict:
    """The analyses asked for, as keys of the file's scores: ``confusion``, ``match``."""
    from crftag.scoring.analysis import confusion, semeval, tag_confusions

    gold_tags = [sentence.tags for sentence in gold]
    result = {}
    if with_confusion:
        analyse = confusion if spans else tag_confusions
        result["confusion"] = analyse(gold_tags, tagged.tags)
    if match and spans:
        result["match"] = semeval(gold_tags, tagged.tags, match)
    return result


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


def _write_errors(path: str, gold, tagged, spans: bool, sink: TextIO, name: str) -> None:
    """Append the file's error records to ``sink``, each naming the file, and count them."""
    from crftag.inference.records import json_line
    from crftag.scoring.analysis import error_records

    counts: dict[str, int] = {}
    for record in error_records(gold, tagged, tags_are_spans=spans):
        sink.write(json_line({"file": path, **record}))
        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    told = ", ".join(f"{n} {kind.replace('_', ' ')}s" for kind, n in sorted(counts.items()))
    typer.echo(f"crftag: {path}: wrote {told or 'no errors'} to {name}", err=True)


def _print_scores(path: str, scores: dict, *, as_json: bool) -> None:
    """One JSON line; else tables drawn for a terminal, or fixed-width text for a pipe."""
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
    for title, headers, rows, note in _analysis_tables(path, scores):
        print_table(title, headers, rows, sys.stdout)
        if note:
            typer.echo(note)


def _analysis_tables(path: str, scores: dict) -> list[tuple[str, list[str], list[list], str]]:
    """The tables of ``confusion`` and ``match`` in ``scores``: (title, headers, rows, note)."""
    tables = []
    result = scores.get("confusion")
    if result and "pairs" in result:
        tables.append(_span_confusion_table(path, result))
    elif result:
        shown = result["confusions"][:TOP_TAG_CONFUSIONS]
        title = (
            f"{path}: the {len(shown)} most frequent tag confusions "
            f"({result['mistagged']} of {result['tokens']} tokens mistagged)"
        )
        rows = [
            [row["gold"], row["predicted"], str(row["count"]), _share(row["count"], result)]
            for row in shown
        ]
        tables.append((title, ["gold", "predicted", "count", "% of errors"], rows, ""))
    if "perturbed" in scores:
        from crftag.scoring.robustness import perturbed_table

        tables.append((*perturbed_table(path, scores), ""))
    result = scores.get("match")
    if result:
        title = f"{path}: SemEval-2013 {result['mode']} match"
        rows = [
            _match_row(label, counts)
            for label, counts in [*result["types"].items(), ("overall", result["overall"])]
        ]
        tables.append((title, MATCH_HEADERS, rows, ""))
    return tables


MATCH_COUNTS = ("correct", "incorrect", "partial", "missed", "spurious")
MATCH_HEADERS = ["type", *MATCH_COUNTS, "precision", "recall", "f1"]


def _match_row(label: str, counts: dict) -> list[str]:
    figures = [f"{100 * counts[key]:.2f}" for key in ("precision", "recall", "f1")]
    return [label, *(str(counts[key]) for key in MATCH_COUNTS), *figures]


def _share(count: int, result: dict) -> str:
    return f"{100 * count / result['mistagged']:.2f}"


def _span_confusion_table(path: str, result: dict) -> tuple[str, list[str], list[list], str]:
    """Gold types in rows, predicted types in columns (the diagonal: exactly right), then the
    gold spans missed, those found with the right type but another extent (boundary), and the
    row's total; a last row of spurious spans per predicted type."""
    labels = result["labels"]
    headers = ["gold \\ predicted", *labels, "missed", "boundary", "total"]
    rows = []
    for gold in labels:
        cells = [result["pairs"].get(gold, {}).get(predicted, 0) for predicted in labels]
        cells += [result["missed"].get(gold, 0), result["boundary"].get(gold, 0)]
        rows.append([gold, *map(str, [*cells, sum(cells)])])
    spurious = [result["spurious"].get(predicted, 0) for predicted in labels]
    rows.append(["spurious", *map(str, spurious), "", "", str(sum(spurious))])
    note = (
        f"correct {result['correct']}; false positives {result['false_positives']} "
        f"(= {result['predicted']} predicted - {result['correct']} correct: spurious, boundary "
        f"and off the diagonal); false negatives {result['false_negatives']} "
        f"(= {result['gold']} gold - {result['correct']} correct: missed, boundary and off "
        "the diagonal)"
    )
    title = f"{path}: entity type confusion, gold spans (rows) by predicted spans (columns)"
    return title, headers, rows, note


def _report_unseen_labels(path: str, unseen: list[str]) -> None:
    if unseen:
        typer.echo(
            f"crftag: warning: {path}: labels never seen in training, counted as errors: "
            f"{', '.join(unseen)}",
            err=True,
        )


def _for_file(reading, path: str):
    """The reading settings for one file: a CoNLL-U file's word is always FORM, whatever word
    column the model was trained with (a word-first two-column file says nothing of CoNLL-U,
    whose first column is the ID)."""
    from crftag.data.labelled import detect_labelled_format

    chosen = reading.format if reading.format != "auto" else detect_labelled_format(path)
    return replace(reading, word_column=None) if chosen == "conllu" else reading
