"""Pictures from plain values: learning curves of training runs and the reliability diagram of
span confidence, written as PNG files with matplotlib (the optional extra ``crftag[plot]``).

matplotlib is imported when a picture is drawn, never on import, and drawn through its Agg
canvas on a :class:`~matplotlib.figure.Figure` of its own, so no display is needed and pyplot's
global state (and a notebook's backend) is left alone.
"""

from __future__ import annotations

import json
import math
import os

from crftag.errors import CrftagError

__all__ = [
    "learning_curves",
    "optimisation_history",
    "read_history",
    "reliability_diagram",
    "run_names",
    "text_curves",
]

MISSING_MATPLOTLIB = "drawing needs matplotlib, which is not installed: pip install 'crftag[plot]'"
HISTORY_FIELDS = ("epoch", "loss", "dev_score", "best", "learning_rate", "seconds")
TEXT_MARKS = "*+ox%@&$"  # one per run in a text plot, then again from the start
OVERLAP_MARK = "#"  # two runs' points in one place of a text plot


def reliability_diagram(result: dict, path: str) -> None:
    """Draw :func:`crftag.scoring.evaluate.calibration`'s ``result`` to the PNG file ``path``.

    One bar per confidence bin, as high as the precision of the spans in it, with the bin's span
    count written at its foot; the mean confidence of each bin as a dot and the diagonal that a
    calibrated tagger's bars would reach; the expected calibration error in the title.
    """
    figure = _figure(width=6.4, height=5.2)
    axes = figure.add_subplot()
    filled = [row for row in result["bins"] if row["spans"]]
    axes.plot(
        [0, 1], [0, 1], color="0.45", linestyle="--", linewidth=1, label="calibrated", zorder=3
    )
    axes.bar(
        [row["lower"] for row in filled],
        [row["precision"] for row in filled],
        width=[row["upper"] - row["lower"] for row in filled],
        align="edge",
        color="tab:blue",
        alpha=0.75,
        edgecolor="white",
        label="precision of the bin's spans",
    )
    axes.plot(
        [row["mean_confidence"] for row in filled],
        [row["mean_confidence"] for row in filled],
        "o",
        color="tab:orange",
        markersize=4,
        label="mean confidence of the bin",
        zorder=4,
    )
    for row in filled:
        axes.annotate(
            f"{row['spans']:,}",
            ((row["lower"] + row["upper"]) / 2, 0),  # at the foot, clear of the diagonal
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=8,
        )
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.08)
    axes.set_xlabel("span confidence")
    axes.set_ylabel("precision")
    axes.set_title(
        f"Span confidence reliability: {result['spans']:,} spans, "
        f"ECE {100 * result['ece']:.2f}%\n(the number at a bar's foot: spans in the bin)",
        fontsize=10,
    )
    axes.legend(loc="upper left", fontsize=8)
    axes.grid(alpha=0.3)
    _save(figure, path)


def learning_curves(runs: list[tuple[str, list[dict]]], path: str) -> None:
    """Draw the dev score and the training loss per epoch of each run to the PNG file ``path``.

    runs: (name, history) per run, a history being ``metrics.json``'s list of epochs. One line
    per run in each panel, a star on the run's best epoch; a run without dev scores has no line
    in the dev panel.
    """
    if not runs:
        raise ValueError("expected at least one run, got none")
    figure = _figure(width=11, height=4.3)
    dev_axes, loss_axes = figure.subplots(1, 2)
    colors = [f"C{index % 10}" for index in range(len(runs))]
    for (name, history), color in zip(runs, colors, strict=True):
        epochs = [row["epoch"] for row in history]
        scored = [row for row in history if row["dev_score"] is not None]
        if scored:
            dev_axes.plot(
                [row["epoch"] for row in scored],
                [100 * row["dev_score"] for row in scored],
                marker="o",
                markersize=3,
                color=color,
                label=name,
            )
            best = _best_epoch(history)
            if best is not None:
                dev_axes.plot(
                    best["epoch"], 100 * best["dev_score"], "*", color=color, markersize=14
                )
        loss_axes.plot(
            epochs,
            [row["loss"] for row in history],
            marker="o",
            markersize=3,
            color=color,
            label=name,
        )
    if not dev_axes.lines:
        dev_axes.text(0.5, 0.5, "no dev scores", ha="center", va="center")
    dev_axes.set_title("dev score per epoch (star: best epoch)", fontsize=10)
    dev_axes.set_ylabel("dev score (%)")
    loss_axes.set_ylabel("loss (mean NLL per sentence)")
    if all(row["loss"] > 0 for _, history in runs for row in history):
        loss_axes.set_yscale("log")  # the loss falls by orders of magnitude in a few epochs
        loss_axes.set_ylabel("loss (mean NLL per sentence, log scale)")
    loss_axes.set_title("training loss per epoch", fontsize=10)
    for axes in (dev_axes, loss_axes):
        axes.set_xlabel("epoch")
        axes.grid(alpha=0.3)
        axes.xaxis.get_major_locator().set_params(integer=True)
        if axes.lines and axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize=8)
    _save(figure, path)


def read_history(path: str) -> list[dict]:
    """A run's per-epoch history from its directory or its ``metrics.json``.

    A missing or unreadable file, or a ``metrics.json`` without a history (written before
    histories were kept), is a :class:`CrftagError` naming it.
    """
    file = path if os.path.basename(path) == "metrics.json" else os.path.join(path, "metrics.json")
    try:
        with open(file, encoding="utf-8") as handle:
            metrics = json.load(handle)
    except FileNotFoundError:
        raise CrftagError(
            f"{file}: no such file; expected a run directory or its metrics.json"
        ) from None
    except OSError as error:
        raise CrftagError(f"{file}: cannot read it: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise CrftagError(f"{file}: not UTF-8 text; expected a run's metrics.json") from None
    except json.JSONDecodeError as error:
        raise CrftagError(f"{file}:{error.lineno}: not JSON: {error.msg}") from None
    history = metrics.get("history") if isinstance(metrics, dict) else None
    if not isinstance(history, list) or not history:
        raise CrftagError(
            f"{file}: no per-epoch history (a run trained before crftag kept one); "
            "train it again to plot it"
        )
    for number, row in enumerate(history, 1):
        missing = [
            field for field in HISTORY_FIELDS if not isinstance(row, dict) or field not in row
        ]
        if missing:
            raise CrftagError(f"{file}: history entry {number} lacks {', '.join(missing)}")
    return history


def run_names(paths: list[str]) -> list[str]:
    """A legend name per run path: the run directory's base name, or the path as given where two
    runs share a base name."""
    directories = [
        os.path.dirname(path) if os.path.basename(path) == "metrics.json" else path
        for path in paths
    ]
    names = [os.path.basename(os.path.abspath(directory)) for directory in directories]
    return [
        name if names.count(name) == 1 else (directory or ".")
        for name, directory in zip(names, directories, strict=True)
    ]


def text_curves(runs: list[tuple[str, list[dict]]], *, height: int = 10) -> str:
    """:func:`learning_curves` as text for a terminal: the dev score and the training loss per
    epoch, one mark per run (``TEXT_MARKS``), and each run's best epoch. The loss is on a log
    scale when every loss is positive, as in the picture."""
    log_loss = all(row["loss"] > 0 for _, history in runs for row in history)
    panels = []
    for title, value, log in (
        (
            "dev score (%)",
            lambda row: None if row["dev_score"] is None else 100 * row["dev_score"],
            False,
        ),
        ("training loss" + (" (log scale)" if log_loss else ""), lambda row: row["loss"], log_loss),
    ):
        series = [[(row["epoch"], value(row)) for row in history] for _, history in runs]
        panels.append(_text_panel(title, series, height, log=log))
    legend = []
    for index, (name, history) in enumerate(runs):
        best = _best_epoch(history)
        found = f"best dev {100 * best['dev_score']:.2f} at epoch {best['epoch']}" if best else ""
        legend.append(f"  {TEXT_MARKS[index % len(TEXT_MARKS)]} {name}  {found}".rstrip())
    if len(runs) > 1:
        legend.append(f"  {OVERLAP_MARK} two or more runs")
    return "\n\n".join(panels) + "\n\n" + "\n".join(legend)


def _text_panel(
    title: str, series: list[list[tuple[int, float | None]]], height: int, *, log: bool
) -> str:
    """One text chart: a row per value step (highest on top), a column run per epoch; with
    ``log``, the steps are equal ratios."""
    points = [(epoch, value) for run in series for epoch, value in run if value is not None]
    if not points:
        return f"{title}: none recorded"
    low, high = min(value for _, value in points), max(value for _, value in points)
    scale = math.log10 if log else float
    span = scale(high) - scale(low) or 1.0
    last_epoch = max(epoch for epoch, _ in points)
    step = max(1, min(4, 60 // last_epoch))
    grid = [[" "] * ((last_epoch - 1) * step + 1) for _ in range(height)]
    for index, run in enumerate(series):
        for epoch, value in run:
            if value is not None:
                row = height - 1 - round((scale(value) - scale(low)) / span * (height - 1))
                mark, cell = TEXT_MARKS[index % len(TEXT_MARKS)], grid[row][(epoch - 1) * step]
                grid[row][(epoch - 1) * step] = mark if cell in (" ", mark) else OVERLAP_MARK
    lines = [title]
    for row, cells in enumerate(grid):
        label = f"{high:9.3g}" if row == 0 else f"{low:9.3g}" if row == height - 1 else ""
        lines.append(f"{label:>9} |{''.join(cells).rstrip()}")
    width = len(grid[0])
    lines.append(" " * 10 + "+" + "-" * width)
    axis = "1".ljust(width - len(str(last_epoch))) + str(last_epoch) if last_epoch > 1 else "1"
    lines.append(" " * 11 + axis + "  epoch")
    return "\n".join(lines)


def optimisation_history(trials: list[dict], path: str) -> None:
    """Draw a ``crftag tune`` study (``trials.json``'s list) to the PNG file ``path``: each
    finished trial's dev score by trial number, the best so far as a step line, and each
    trial's dev score per epoch beside (pruned trials' curves stop early, dashed)."""
    figure = _figure(width=11, height=4.3)
    history_axes, epoch_axes = figure.subplots(1, 2)
    complete = [t for t in trials if t["state"] == "complete" and t["dev"] is not None]
    if complete:
        numbers = [t["number"] for t in complete]
        scores = [100 * t["dev"] for t in complete]
        best = [max(scores[: i + 1]) for i in range(len(scores))]
        history_axes.plot(numbers, scores, "o", color="C0", label="trial's best dev score")
        history_axes.step(numbers, best, where="post", color="C3", label="best so far")
        pruned = [t for t in trials if t["state"] == "pruned" and t["dev"] is not None]
        if pruned:
            history_axes.plot(
                [t["number"] for t in pruned],
                [100 * t["dev"] for t in pruned],
                "x",
                color="0.5",
                label="pruned (last dev score)",
            )
        history_axes.legend(fontsize=8)
    else:
        history_axes.text(0.5, 0.5, "no finished trial", ha="center", va="center")
    for trial in trials:
        epochs = sorted(trial["dev_per_epoch"].items(), key=lambda item: int(item[0]))
        if epochs:
            style = "-" if trial["state"] == "complete" else "--"
            epoch_axes.plot(
                [int(epoch) for epoch, _ in epochs],
                [100 * score for _, score in epochs],
                style,
                marker="o",
                markersize=3,
                alpha=0.7,
            )
    history_axes.set_title("optimisation history", fontsize=10)
    history_axes.set_xlabel("trial")
    epoch_axes.set_title("dev score per epoch of each trial (dashed: pruned)", fontsize=10)
    epoch_axes.set_xlabel("epoch")
    for axes in (history_axes, epoch_axes):
        axes.set_ylabel("dev score (%)")
        axes.grid(alpha=0.3)
        axes.xaxis.get_major_locator().set_params(integer=True)
    _save(figure, path)


def _best_epoch(history: list[dict]) -> dict | None:
    """The last epoch the tracker called best (the saved model), if it had a dev score."""
    best = [row for row in history if row["best"] and row["dev_score"] is not None]
    return best[-1] if best else None


def _figure(*, width: float, height: float):
    """A matplotlib Figure (inches) drawn on the Agg canvas, or a CrftagError without matplotlib."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CrftagError(MISSING_MATPLOTLIB) from None
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: str) -> None:
    try:
        figure.savefig(path, format="png", dpi=120)
    except OSError as error:
        raise CrftagError(f"{path}: cannot write it: {error.strerror or error}") from None
