"""Options that several commands share; what a ``--device`` choice means is
:func:`crftag.nn.devices.resolve_device`'s."""

from __future__ import annotations

import math
from enum import Enum
from typing import Annotated

import typer

from crftag.config.sections import INPUT_FORMATS, OUTPUT_FORMATS
from crftag.data.align import MISALIGNED_POLICIES
from crftag.data.labelled import ANNOTATION_FORMATS, COLUMN_FORMATS
from crftag.modelfiles.registry import BUNDLED_MODELS, DEFAULT_MODEL

__all__ = [
    "DataFormat",
    "Misaligned",
    "DeviceChoice",
    "TrainDeviceOption",
    "InputFormat",
    "ModelOption",
    "OnError",
    "OverwriteOption",
    "QuietOption",
    "RunDirOption",
    "SeedOption",
    "SetOption",
    "OutputFormat",
    "Probabilities",
    "MinutesOption",
    "finite",
]

# The options of a training run: crftag train's and crftag distill's.
RunDirOption = Annotated[str, typer.Option("-o", "--output", help="Run directory.")]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a config value: section.key=value (repeatable)."),
]
SeedOption = Annotated[int | None, typer.Option(help="Random seed (overrides train.seed).")]
OverwriteOption = Annotated[
    bool,
    typer.Option(
        "--overwrite", help="Replace the earlier run in the run directory (refused without)."
    ),
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]

ModelOption = Annotated[
    str,
    typer.Option(
        "-m",
        "--model",
        help=f"A bundled model ({', '.join(BUNDLED_MODELS)}; default {DEFAULT_MODEL}), a run "
        "directory, a checkpoint, an .npz export or an .onnx file.",
    ),
]


def finite(value: float | None) -> float | None:
    """The callback of every float option: NaN and the infinities pass any ``min``/``max``
    range (NaN compares false both ways), so they are refused here."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"expected a finite number, got {value}")
    return value


# A time limit in minutes: `crftag pretrain --time` and `crftag tune --time`.
MinutesOption = Annotated[
    float | None,
    typer.Option(
        "--time", min=0, callback=finite, help="Stop after this many minutes.", show_default=False
    ),
]


class DeviceChoice(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


TrainDeviceOption = Annotated[DeviceChoice, typer.Option(help="Where to train.")]


InputFormat = Enum("InputFormat", [(name, name) for name in INPUT_FORMATS], type=str)
OutputFormat = Enum("OutputFormat", [(name, name) for name in OUTPUT_FORMATS], type=str)


class OnError(str, Enum):
    stop = "stop"
    skip = "skip"


class Probabilities(str, Enum):
    tag = "tag"
    all = "all"


DataFormat = Enum(
    "DataFormat",
    [(name, name) for name in ("auto", *COLUMN_FORMATS, *ANNOTATION_FORMATS)],
    type=str,
)
Misaligned = Enum("Misaligned", [(name, name) for name in MISALIGNED_POLICIES], type=str)
