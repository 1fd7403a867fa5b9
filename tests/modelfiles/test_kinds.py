"""Which kind a model file is: decided by its bytes wherever they tell (a file's name never
makes a checkpoint an export, nor an export a checkpoint), by the ``.onnx`` suffix otherwise."""

import shutil

import pytest

from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import export_arrays, load_model
from crftag.modelfiles.kinds import KINDS, model_file
from crftag.modelfiles.registry import resolve_model_path


@pytest.fixture(scope="module")
def files(sample_model, tmp_path_factory):
    """(checkpoint, its export) of the sample model."""
    directory = tmp_path_factory.mktemp("kinds")
    exported = directory / "model.npz"
    export_arrays(str(exported), load_model(str(sample_model)))
    return sample_model / "model.pt", exported


def test_each_kind_by_what_names_it(files, sample_model):
    checkpoint, exported = files
    assert model_file("en-ner").kind == "bundled"
    assert model_file("en-ner").path == resolve_model_path("en-ner")
    assert model_file(str(sample_model)) == model_file(str(checkpoint))
    assert model_file(str(checkpoint)).kind == "checkpoint"
    assert model_file(str(exported)).kind == "export"
    assert {model_file(m).kind for m in ("en-pos", str(checkpoint), str(exported))} < set(KINDS)


def test_the_bytes_decide_over_the_name(files, tmp_path):
    checkpoint, exported = files
    export_as_pt = tmp_path / "model.pt"
    shutil.copy(exported, export_as_pt)
    checkpoint_as_onnx = tmp_path / "model.onnx"
    shutil.copy(checkpoint, checkpoint_as_onnx)
    assert model_file(str(export_as_pt)).kind == "export"
    assert model_file(str(checkpoint_as_onnx)).kind == "checkpoint"


def test_a_file_that_is_no_zip_is_onnx_by_its_suffix_only(tmp_path):
    for name in ("m.onnx", "M.ONNX", "m.pt"):
        (tmp_path / name).write_bytes(b"\x08\x07")  # how an ONNX protobuf begins
    assert model_file(str(tmp_path / "m.onnx")).kind == "onnx"
    assert model_file(str(tmp_path / "M.ONNX")).kind == "onnx"
    assert model_file(str(tmp_path / "m.pt")).kind == "checkpoint"


def test_only_the_exports_are_exported(files):
    checkpoint, exported = files
    assert model_file("en-ner").exported and model_file(str(exported)).exported
    assert not model_file(str(checkpoint)).exported


def test_a_missing_model_is_a_one_line_error(tmp_path):
    with pytest.raises(CrftagError, match=r"missing\.onnx: no such model file or directory$"):
        model_file(str(tmp_path / "missing.onnx"))
