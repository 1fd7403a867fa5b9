"""crftag.plots: the pictures are PNG files with what they should show, and drawing without
matplotlib is one line saying what to install."""

import subprocess
import sys

import pytest

from crftag.errors import CrftagError
from crftag.evaluate import calibration
from crftag.plots import MISSING_MATPLOTLIB, reliability_diagram

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
    assert [text.get_text() for text in axes.texts] == [str(row["spans"]) for row in filled]
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
        "from crftag.plots import reliability_diagram\n"
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
