"""Files the commands write get a plain file's mode: 0666 less the umask, as `open()` gives."""

import os
import stat

import pytest

from tests.conftest import SAMPLE_CONFIG, TINY

CONLL = "data/ner_sample.dev.conll"


@pytest.fixture(params=[0o022, 0o027])
def umask(request):
    previous = os.umask(request.param)
    yield request.param
    os.umask(previous)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_select_and_convert_outputs_have_a_plain_files_mode(invoke, tmp_path, umask):
    selected, converted = tmp_path / "sel.jsonl", tmp_path / "out.jsonl"
    assert invoke(["select", CONLL, "-n", "2", "-o", str(selected), "-m", "en-ner"]).status == 0
    assert invoke(["convert", CONLL, str(converted)]).status == 0
    assert mode_of(selected) == mode_of(converted) == 0o666 & ~umask


def test_export_outputs_have_a_plain_files_mode(invoke, sample_model, tmp_path, umask):
    checkpoint, arrays = tmp_path / "m.pt", tmp_path / "m.npz"
    assert invoke(["export", str(sample_model), str(checkpoint)]).status == 0
    assert invoke(["export", str(sample_model), str(arrays), "--format", "numpy"]).status == 0
    assert mode_of(checkpoint) == mode_of(arrays) == 0o666 & ~umask


def test_train_outputs_have_a_plain_files_mode(invoke, tmp_path, umask):
    run = tmp_path / "run"
    # One epoch: the modes of the files written do not depend on how long it trains.
    args = ["train", SAMPLE_CONFIG, "-o", str(run), *TINY, "--set", "train.epochs=1"]
    assert invoke(args).status == 0
    written = sorted(os.listdir(run))
    assert "model.pt" in written and "metrics.json" in written
    assert {name: mode_of(run / name) for name in written} == {
        name: 0o666 & ~umask for name in written
    }
