"""The end of `crftag train` on stderr: a table on a terminal, two plain lines in a log."""

import io
import sys

from crftag.cli import training as cli

METRICS = {
    "epochs": 8,
    "best_epoch": 7,
    "dev": 0.8542,
    "test": 0.8453,
    "train_seconds": 7.1,
    "tokens_per_second": 17977.5,
}


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_the_test_score_and_the_saved_model(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    cli._report_training(METRICS, "runs/x/model.pt")
    assert log.getvalue() == "test  84.53\nsaved runs/x/model.pt (best dev 85.42 at epoch 7)\n"


def test_a_terminal_gets_a_table_of_the_run(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    cli._report_training(METRICS, "runs/x/model.pt")
    drawn = terminal.getvalue()
    assert "saved runs/x/model.pt" in drawn and "┃" in drawn  # rich's box drawing
    for cell in ("85.42 (epoch 7)", "84.53", "7.1 s", "17,978 (mean of epochs)"):
        assert cell in drawn


def test_without_dev_or_test_only_the_saved_model_is_reported(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    cli._report_training({**METRICS, "dev": None, "test": None}, "m.pt")
    assert log.getvalue() == "saved m.pt\n"
