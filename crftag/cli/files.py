"""``crftag export`` (a model copied into one file) and ``crftag convert`` (labelled data from
one format to another)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Annotated

import typer

from crftag.cli.options import DataFormat, Misaligned
from crftag.cli.outputs import refuse_input_as_output
from crftag.config.sections import SPAN_SCHEMES
from crftag.errors import CrftagError

__all__ = ["convert", "export"]

ExportFormat = Enum(
    "ExportFormat", [("checkpoint", "checkpoint"), ("numpy", "numpy"), ("onnx", "onnx")], type=str
)
OutputScheme = Enum("OutputScheme", [(name, name) for name in SPAN_SCHEMES], type=str)


def export(
    model: Annotated[str, typer.Argument(help="Checkpoint file or run directory.")],
    output: Annotated[str, typer.Argument(help="File to write.")],
    half: Annotated[
        bool, typer.Option("--half", help="checkpoint: store weights in float16, half the size.")
    ] = False,
    export_format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            help="checkpoint: a torch checkpoint file; numpy: an .npz of arrays and JSON that "
            "the NumPy runtime tags with, no pickles (float16 weights stay float16); onnx: the "
            "network as an ONNX graph for ONNX Runtime (docs/runtime.md).",
        ),
    ] = ExportFormat.checkpoint,
    int8: Annotated[
        bool,
        typer.Option(
            "--int8",
            help="numpy: store the LSTM and linear weight matrices and the word embeddings as "
            "int8 with one scale per row (a smaller file; see docs/int8.md); onnx: a "
            "pretrained encoder's matrix products in int8, by ONNX Runtime's quantisation "
            "(docs/transformer.md).",
        ),
    ] = False,
) -> None:
    """Copy a trained model into one file: a checkpoint, an array archive for the NumPy
    runtime, or an ONNX model."""
    from crftag.modelfiles.checkpoint import export_arrays, exported_arrays, load_model, save_model
    from crftag.modelfiles.registry import resolve_model_path

    if int8 and export_format == ExportFormat.checkpoint:
        raise CrftagError(
            "--int8 applies to --format numpy or onnx; add one of them or drop --int8"
        )
    _check_output_file(output)
    refuse_input_as_output([output], [model, resolve_model_path(model)])
    loaded = load_model(model)
    if export_format == ExportFormat.onnx:
        from crftag.modelfiles.onnx_export import write_onnx

        if half:
            raise CrftagError("--half applies to --format checkpoint; ONNX weights are float32")
        write_onnx(output, *exported_arrays(output, loaded), int8=int8)
    elif export_format == ExportFormat.numpy:
        if half:
            raise CrftagError(
                "--half applies to --format checkpoint; the archive keeps float16 weights "
                "when the checkpoint has them"
            )
        export_arrays(output, loaded, int8=int8, int8_embeddings=int8)
    else:
        save_model(output, loaded, half=half)
    typer.echo(f"wrote {output} ({os.path.getsize(output) / 2**20:.1f} MB)", err=True)


def _check_output_file(output: str) -> None:
    """``output`` names a file that can be written: not empty, not a directory, in one."""
    if not output.strip():
        raise CrftagError("OUT: an empty name; give the file to write")
    if os.path.isdir(output):
        raise CrftagError(f"{output}: a directory; give the file to write, e.g. {output}/model.pt")
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        raise CrftagError(f"{output}: no such directory: {directory}")


def convert(
    source: Annotated[
        str,
        typer.Argument(help="Input: a file, a brat folder, or - for stdin.", show_default=False),
    ],
    target: Annotated[
        str,
        typer.Argument(help="Output: a file, a brat folder, or - for stdout.", show_default=False),
    ],
    input_format: Annotated[
        DataFormat,
        typer.Option("--from", help="Input format; auto: as data.format auto in training."),
    ] = DataFormat.auto,
    output_format: Annotated[
        DataFormat,
        typer.Option(
            "--to",
            help="Output format; auto: jsonl for .jsonl/.json, conllu for .conllu, brat for a "
            "folder or a path ending in /, else conll.",
        ),
    ] = DataFormat.auto,
    scheme: Annotated[
        OutputScheme, typer.Option(help="Tag scheme of CoNLL and CoNLL-U output.")
    ] = OutputScheme.iob2,
    misaligned: Annotated[
        Misaligned,
        typer.Option(help="Spans off token boundaries, when writing columns (data.misaligned)."),
    ] = Misaligned.error,
    word_column: Annotated[
        int | None, typer.Option(help="Word column of column input [default: the format's].")
    ] = None,
    tag_column: Annotated[
        int | None, typer.Option(help="Tag column of column input [default: the format's].")
    ] = None,
) -> None:
    """Convert labelled data between CoNLL (IOB1, IOB2, BIOES), CoNLL-U, span JSONL and brat.

    Column data becomes one JSONL record (or brat document) per CoNLL document, with its tokens
    listed, so converting back gives the same tokens, sentences and chunks.
    """
    from crftag.data.conll import ColumnSpec
    from crftag.data.convert import output_format_of, read_documents_of, write_brat_folder
    from crftag.data.labelled import COLUMN_FORMATS, detect_labelled_format

    refuse_input_as_output([target], [source])
    reading = input_format.value
    if reading == "auto":
        reading = "conll" if source == "-" else detect_labelled_format(source)
    writing = output_format.value if output_format.value != "auto" else output_format_of(target)
    if writing == "brat" and target == "-":
        raise CrftagError("--to brat writes a folder of files; give a folder, not -")
    spec = ColumnSpec.for_format(
        reading if reading in COLUMN_FORMATS else "conll", word_column, tag_column
    )
    documents = read_documents_of(source, reading, spec)
    if writing == "brat":
        count = write_brat_folder(documents, target)
        typer.echo(f"wrote {count} documents to {target}", err=True)
        return
    _write_text(target, documents, writing, scheme.value, misaligned.value)


def _write_text(target, documents, writing: str, scheme: str, misaligned: str) -> None:
    """To stdout as it goes, or to a file that appears only when complete."""
    from crftag.data.atomic import atomic_output
    from crftag.data.convert import write_documents

    if target == "-":
        write_documents(documents, sys.stdout, writing, scheme, misaligned)
        return
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise CrftagError(f"{target}: no such directory: {directory}")
    with atomic_output(target) as stream:
        write_documents(documents, stream, writing, scheme, misaligned)
