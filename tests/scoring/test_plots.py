"""crftag.scoring.plots: the pictures are PNG files with what they should show, and drawing without
matplotlib is one line saying what to install."""

import json
import subprocess
import sys

import pytest

from crftag.errors import CrftagError
from crftag.scoring.evaluate import calibration
from crftag.scoring.plots import (
    MISSING_MATPLOTLIB,
    learning_curves,
    reliability_diagram,
    run_names,
    text_curves,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def is_png(path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(8) == PNG_SIGNATURE and path.stat().st_size > 1000


def sample_calibration() -> dict:
    """calibration() of 20 sentences: right spans at high confidence, wrong ones at low."""
    gold = [["B-PER", "I-PER", "O", "B-LOC"]] * 20
    predicted = [
        [
            {"start": 0, "end": 2, "label": "PER", "confidence": 0.95 - 0.01 * index},
            {"start": 3, "end": 4, "label": "ORG", "confidence": 0.3},
        ]
        for index in range(20)
    ]
    return calibration(gold, predicted)


def test_reliability_diagram_writes_a_png(tmp_path):
    path = tmp_path / "reliability.png"
    reliability_diagram(sample_calibration(), str(path))
    assert is_png(path)


def test_reliability_diagram_draws_every_filled_bin_and_an_empty_result(tmp_path, monkeypatch):
    import matplotlib.figure

    saved = []
    monkeypatch.setattr(
        matplotlib.figure.Figure, "savefig", lambda figure, *a, **k: saved.append(figure)
    )
    result = sample_calibration()
    reliability_diagram(result, str(tmp_path / "r.png"))
    axes = saved[0].axes[0]
    filled = [row for row in result["bins"] if row["spans"]]
    assert len(axes.patches) == len(filled)
    assert [text.get_text() for text in axes.texts] == [f"{row['spans']:,}" for row in filled]
    assert f"ECE {100 * result['ece']:.2f}%" in axes.get_title()
    reliability_diagram(calibration([["O"]], [[]]), str(tmp_path / "empty.png"))
    assert len(saved[1].axes[0].patches) == 0


def test_an_unwritable_picture_is_a_one_line_error(tmp_path):
    with pytest.raises(CrftagError, match=r"missing/r\.png: cannot write it"):
        reliability_diagram(sample_calibration(), str(tmp_path / "missing" / "r.png"))


def test_drawing_without_matplotlib_says_what_to_install(tmp_path):
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from crftag.errors import CrftagError\n"
        "from crftag.scoring.plots import reliability_diagram\n"
        "try:\n"
        "    reliability_diagram({'bins': [], 'ece': 0.0, 'spans': 0, 'thresholds': []}, 'r.png')\n"
        "except CrftagError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout == MISSING_MATPLOTLIB + "\n"
    assert "pip install 'crftag[plot]'" in done.stdout
    assert not (tmp_path / "r.png").exists()


def history(scores: list[float | None], losses: list[float]) -> list[dict]:
    """A metrics.json history with these dev scores and losses, best as the tracker marks it."""
    rows, best = [], -1.0
    for epoch, (score, loss) in enumerate(zip(scores, losses, strict=True), 1):
        improved = score is not None and score > best
        best = max(best, score) if score is not None else best
        rows.append(
            {
                "epoch": epoch,
                "loss": loss,
                "dev_score": score,
                "best": improved or score is None,
                "seconds": 0.5,
                "tokens_per_second": 1000.0,
                "learning_rate": 0.01,
                "averaged": False,
            }
        )
    return rows


def write_run(directory, rows) -> str:
    directory.mkdir(parents=True)
    metrics = {"epochs": len(rows), "history": rows} if rows is not None else {"epochs": 2}
    (directory / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return str(directory)


@pytest.fixture
def saved_figures(monkeypatch):
    """The figures drawn, instead of written."""
    import matplotlib.figure

    saved = []
    monkeypatch.setattr(
        matplotlib.figure.Figure, "savefig", lambda figure, *a, **k: saved.append(figure)
    )
    return saved


def test_learning_curves_draw_a_line_per_run_and_star_the_best_epoch(tmp_path, saved_figures):
    runs = [
        ("fast", history([0.5, 0.8, 0.7], [3.0, 0.5, 0.1])),
        ("slow", history([0.2, 0.4, 0.6], [5.0, 2.0, 1.0])),
    ]
    learning_curves(runs, str(tmp_path / "curves.png"))
    dev_axes, loss_axes = saved_figures[0].axes
    for axes in (dev_axes, loss_axes):
        assert [text.get_text() for text in axes.get_legend().get_texts()] == ["fast", "slow"]
    stars = [line for line in dev_axes.lines if line.get_marker() == "*"]
    assert [(list(s.get_xdata()), list(s.get_ydata())) for s in stars] == [([2], [80]), ([3], [60])]
    assert list(loss_axes.lines[1].get_ydata()) == [5.0, 2.0, 1.0]
    assert loss_axes.get_yscale() == "log"


def test_learning_curves_of_a_run_without_dev_scores(tmp_path, saved_figures):
    learning_curves([("no-dev", history([None, None], [2.0, 0.0]))], str(tmp_path / "c.png"))
    dev_axes, loss_axes = saved_figures[0].axes
    assert [text.get_text() for text in dev_axes.texts] == ["no dev scores"]
    assert loss_axes.get_yscale() == "linear"  # a zero loss has no logarithm


def test_text_curves_mark_each_run_and_name_its_best_epoch():
    text = text_curves(
        [("fast", history([0.5, 0.8], [3.0, 0.5])), ("slow", history([0.2, 0.4], [5.0, 2.0]))]
    )
    assert "* fast  best dev 80.00 at epoch 2" in text
    assert "+ slow  best dev 40.00 at epoch 2" in text
    assert "training loss (log scale)" in text
    assert text.splitlines()[1] == "       80 |    *"  # epoch 2, four columns after epoch 1


def test_run_names_are_base_names_unless_two_runs_share_one():
    assert run_names(["runs/a", "b/metrics.json", "c/"]) == ["a", "b", "c"]
    assert run_names(["x/run", "y/run/metrics.json"]) == ["x/run", "y/run"]


def test_plot_writes_a_png_of_two_runs(tmp_path, sample_model, invoke):
    other = write_run(tmp_path / "other", history([0.3, 0.6], [4.0, 1.0]))
    path = tmp_path / "curves.png"
    result = invoke(["plot", str(sample_model), f"{other}/metrics.json", "-o", str(path)])
    assert (result.status, result.stdout) == (0, "")
    assert result.stderr == f"wrote {path} (2 runs)\n"
    assert is_png(path)


def test_plot_text_goes_to_stdout(tmp_path, invoke):
    run = write_run(tmp_path / "only", history([0.3, 0.6], [4.0, 1.0]))
    result = invoke(["plot", run, "--text"])
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout.startswith("dev score (%)\n")
    assert "* only  best dev 60.00 at epoch 2" in result.stdout


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "missing/metrics.json: no such file; expected a run directory or its"),
        ("old", "old/metrics.json: no per-epoch history (a run trained before crftag kept one)"),
        ("broken", "broken/metrics.json:1: not JSON: Expecting value"),
        ("partial", "partial/metrics.json: history entry 1 lacks loss"),
    ],
)
def test_a_bad_run_is_a_one_line_error_naming_it(tmp_path, invoke, case, message):
    good = write_run(tmp_path / "good", history([0.3], [1.0]))
    if case == "old":
        write_run(tmp_path / "old", None)
    elif case == "broken":
        (tmp_path / "broken").mkdir()
        (tmp_path / "broken" / "metrics.json").write_text("oops", encoding="utf-8")
    elif case == "partial":
        write_run(tmp_path / "partial", [{"epoch": 1, "dev_score": None, "best": True}])
    result = invoke(["plot", good, str(tmp_path / case), "-o", str(tmp_path / "c.png")])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("crftag: error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr
    assert not (tmp_path / "c.png").exists()


def test_plot_needs_somewhere_to_draw(tmp_path, invoke):
    result = invoke(["plot", write_run(tmp_path / "run", history([0.3], [1.0]))])
    assert result.status == 2
    assert result.stderr == (
        "crftag: error: nowhere to draw: give -o FILE.png, or --text for the terminal\n"
    )
