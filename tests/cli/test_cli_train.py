"""The end of `crftag train` on stderr: a table on a terminal, two plain lines in a log."""

import io
import os
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
    cli.report_training(METRICS, "runs/x/model.pt")
    assert log.getvalue() == "test  84.53\nsaved runs/x/model.pt (best dev 85.42 at epoch 7)\n"


def test_a_terminal_gets_a_table_of_the_run(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    cli.report_training(METRICS, "runs/x/model.pt")
    drawn = terminal.getvalue()
    assert "saved runs/x/model.pt" in drawn and "┃" in drawn  # rich's box drawing
    for cell in ("85.42 (epoch 7)", "84.53", "7.1 s", "17,978 (mean of epochs)"):
        assert cell in drawn


def test_without_dev_or_test_only_the_saved_model_is_reported(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    cli.report_training({**METRICS, "dev": None, "test": None}, "m.pt")
    assert log.getvalue() == "saved m.pt\n"


def test_dictionaries_named_in_a_config_train_export_and_tag_alike(invoke, tmp_path, tiny_args):
    """Paths of model.lexicons are relative to the config file; the trained model and its
    export carry the entries, and tag the same without the files."""
    import shutil

    folder = tmp_path / "config"
    folder.mkdir()
    shutil.copy("tests/fixtures/lexicons/locations.txt", folder / "places.txt")
    root = os.path.abspath(".")
    (folder / "mine.yaml").write_text(
        f"data:\n  train: {root}/data/ner_sample.train.conll\n"
        f"  dev: {root}/data/ner_sample.dev.conll\n"
        "model:\n  lexicons: {LOC: places.txt}\n",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    result = invoke(
        ["train", str(folder / "mine.yaml"), "-o", str(run), *tiny_args(train__epochs=1)]
    )
    assert result.status == 0, result.stderr
    (folder / "places.txt").unlink()  # the model holds its entries
    export = tmp_path / "model.npz"
    assert invoke(["export", str(run), str(export)]).status == 0
    onnx = invoke(["export", str(run), str(tmp_path / "model.onnx"), "--format", "onnx"])
    assert onnx.status == 2 and "model.lexicons" in onnx.stderr, onnx.stderr
    assert len(onnx.stderr.strip().splitlines()) == 1 and not (tmp_path / "model.onnx").exists()
    text = "Reuters reported from Berlin and Frankfurt on Monday .\n"
    from_torch = invoke(["predict", "-m", str(run)], stdin=text)
    from_numpy = invoke(["predict", "-m", str(export)], stdin=text)
    assert from_torch.status == from_numpy.status == 0, from_numpy.stderr
    assert from_torch.stdout == from_numpy.stdout and from_torch.stdout.strip()
