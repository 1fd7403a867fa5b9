"""The ``crftag`` command: thin Typer commands over the library's functions.

Nothing here imports torch at module level, so ``crftag --help`` starts fast; each command imports
what it needs when it runs. stdout carries data only; messages and progress go to stderr. A user
mistake is one line ``crftag: error: ...`` and exit status 2.
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Annotated

import typer

try:  # recent Typer ships its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as click_exceptions
except ImportError:  # older Typer runs on click itself
    from click import exceptions as click_exceptions

from crftag import __version__
from crftag.config import INPUT_FORMATS, OUTPUT_FORMATS
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.registry import BUNDLED_MODELS, DEFAULT_MODEL

app = typer.Typer(
    name="crftag",
    help="Sequence labelling (NER, POS) with a BiLSTM-CRF: train, eval, predict.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


ModelOption = Annotated[
    str,
    typer.Option(
        "-m",
        "--model",
        help="Checkpoint file, run directory, or a bundled model: "
        f"{', '.join(BUNDLED_MODELS)} (default {DEFAULT_MODEL}).",
    ),
]


class DeviceChoice(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


InputFormat = Enum("InputFormat", [(name, name) for name in INPUT_FORMATS], type=str)
OutputFormat = Enum("OutputFormat", [(name, name) for name in OUTPUT_FORMATS], type=str)


class OnError(str, Enum):
    stop = "stop"
    skip = "skip"


class Probabilities(str, Enum):
    tag = "tag"
    all = "all"


def resolve_device(choice: str):
    """The one place a device is chosen; everything below receives it explicitly."""
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        raise CrftagError("--device cuda: no CUDA device is available; use --device cpu")
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crftag {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """Sequence labelling (NER, POS) with a BiLSTM-CRF: train, eval, predict."""


@app.command()
def train(
    config: Annotated[
        str | None, typer.Argument(help="YAML config file.", show_default=False)
    ] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="Run directory.")] = "runs/latest",
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a config value: section.key=value (repeatable)."),
    ] = None,
    device: Annotated[DeviceChoice, typer.Option(help="Where to train.")] = DeviceChoice.auto,
    seed: Annotated[int | None, typer.Option(help="Random seed (overrides train.seed).")] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Continue the interrupted run in this directory, with its own config.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")] = False,
) -> None:
    """Train a BiLSTM-CRF from CONFIG and save it in the run directory.

    SIGINT (Ctrl-C) or SIGTERM writes a resumable checkpoint and exits with 130 or 143;
    `crftag train --resume DIR` continues the run where it stopped.
    """
    from crftag.config import load_config
    from crftag.training.run import train as run_training

    if resume is not None:
        if config is not None or overrides or seed is not None:
            raise CrftagError(
                "--resume continues a run with its own config: give no CONFIG, --set or --seed"
            )
        metrics = run_training(
            None, resume, device=resolve_device(device.value), show_progress=not quiet, resume=True
        )
        output = resume
    else:
        if config is None:
            raise CrftagError("train needs a CONFIG file (or --resume RUN_DIR)")
        settings = list(overrides or [])
        if seed is not None:
            settings.append(f"train.seed={seed}")
        loaded_config = load_config(config, settings)
        resolved = resolve_device(device.value)
        metrics = run_training(loaded_config, output, device=resolved, show_progress=not quiet)
    if os.environ.get("RANK", "0") != "0":
        return  # under torchrun, rank 0 reports
    _report_training(metrics, os.path.join(output, "model.pt"))


def _report_training(metrics: dict, model_path: str) -> None:
    """The end of a run, on stderr: a table on a terminal, two plain lines in a log."""
    from crftag.tables import is_terminal, print_table

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


@app.command("eval")
def evaluate(
    files: Annotated[list[str], typer.Argument(help="Labelled CoNLL or CoNLL-U files.")],
    model: ModelOption = DEFAULT_MODEL,
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
    from crftag.data.conll import read_corpus
    from crftag.evaluate import score_sentences, unseen_labels
    from crftag.inference.tagger import Tagger

    tagger = Tagger.load(model, resolve_device(device.value))
    for path in files:
        gold = read_corpus(path, tagger.config.data.column_spec(path))
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


@app.command()
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
    batch_size: Annotated[int, typer.Option(min=1, help="Sentences per batch.")] = 64,
    device: Annotated[DeviceChoice, typer.Option(help="Where to run.")] = DeviceChoice.auto,
    probs: Annotated[
        Probabilities | None,
        typer.Option(
            help="jsonl: each token's probability of its tag (--probs or --probs tag), "
            "or of every tag (--probs all)."
        ),
    ] = None,
    nbest: Annotated[
        int, typer.Option(min=1, help="jsonl: also list the K best tag sequences.")
    ] = 1,
    min_confidence: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Drop spans less likely than this (tokens become O)."),
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
            "before it), or skip it with a warning (an empty record for text input)."
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
        int, typer.Option(min=1, help="Tag with this many processes on this machine.")
    ] = 1,
) -> None:
    """Tag sentences from files or stdin; one record per input sentence, in order, on stdout."""
    from crftag.inference.streaming import PredictOptions, tag_files

    shard_of = _parse_shard(shard) if shard else (0, 1)
    if jobs > 1 and shard is not None:
        raise CrftagError("--jobs and --shard do not combine; run one or the other")
    options = PredictOptions(
        model=model,
        device=str(resolve_device(device.value)),
        input_format=input_format.value,
        output_format=(output_format or OutputFormat.conll).value,
        batch_size=batch_size,
        probs=probs.value if probs else None,
        nbest=nbest,
        min_confidence=min_confidence,
        on_error=on_error.value,
        token_offsets=token_offsets,
    )
    try:
        if jobs > 1:
            from crftag.inference.parallel import predict_in_processes

            predict_in_processes(jobs, files or ["-"], options, sys.stdout)
        else:
            tag_files(options, files or ["-"], sys.stdout, shard=shard_of)
    except BrokenPipeError:
        # The reader went away (`crftag predict | head`): stop quietly, and point stdout at
        # /dev/null so Python's flush at exit does not complain a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(0) from None


def run(args: list[str] | None = None) -> int:
    """Run the CLI and return its exit status, turning user mistakes into one-line errors."""
    command = typer.main.get_command(app)
    args = _optional_values(list(sys.argv[1:] if args is None else args))
    try:
        status = command.main(args=args, prog_name="crftag", standalone_mode=False)
    except TrainingInterrupted as interruption:
        print(f"crftag: {interruption}", file=sys.stderr)
        return interruption.exit_code
    except CrftagError as error:
        sys.stdout.flush()
        print(f"crftag: error: {error}", file=sys.stderr)
        return error.exit_code
    except click_exceptions.NoArgsIsHelpError:
        return 2  # the help text is already printed
    except click_exceptions.UsageError as error:
        print(f"crftag: error: {error.format_message()}", file=sys.stderr)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        print("crftag: interrupted", file=sys.stderr)
        return 130
    # click hands back the status of `typer.Exit` (and None for a normal return).
    return status if isinstance(status, int) else 0


def _parse_shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if not (slash and index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise CrftagError(f"--shard {text}: expected I/N with 0 <= I < N, e.g. --shard 0/4")
    return int(index), int(count)


@app.command()
def merge(
    files: Annotated[
        list[str], typer.Argument(help="Outputs of predict --shard 0/N ... N-1/N, in that order.")
    ],
    output_format: Annotated[
        OutputFormat, typer.Option("--format", help="The format the shards were written in.")
    ] = OutputFormat.conll,
    batch_size: Annotated[
        int, typer.Option(min=1, help="The --batch-size the shards were tagged with.")
    ] = 64,
) -> None:
    """Merge the outputs of `crftag predict --shard I/N` back into input order."""
    from crftag.inference.shards import merge_shards

    for path in files:
        if not os.path.isfile(path):
            raise CrftagError(f"{path}: no such file")
    merge_shards(files, output_format.value, sys.stdout, batch_size)


@app.command()
def export(
    model: Annotated[str, typer.Argument(help="Checkpoint file or run directory.")],
    output: Annotated[str, typer.Argument(help="Checkpoint file to write.")],
    half: Annotated[
        bool, typer.Option("--half", help="Store weights in float16: half the size.")
    ] = False,
) -> None:
    """Copy a trained model into one checkpoint file, optionally in half precision."""
    from crftag.checkpoint import load_model, save_model

    loaded = load_model(model)
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        raise CrftagError(f"{output}: no such directory: {directory}")
    save_model(output, loaded, half=half)
    typer.echo(f"wrote {output} ({os.path.getsize(output) / 2**20:.1f} MB)", err=True)


def _optional_values(args: list[str]) -> list[str]:
    """Let ``--probs`` stand alone as well as take a value: alone it means ``--probs tag``."""
    expanded = []
    for position, arg in enumerate(args):
        expanded.append(arg)
        following = args[position + 1] if position + 1 < len(args) else None
        if arg == "--probs" and following not in [choice.value for choice in Probabilities]:
            expanded.append(Probabilities.tag.value)
    return expanded


def main() -> None:
    sys.exit(run())
