"""What ``GET /models`` says of each model a server holds: its backend as ``crftag.load`` chose it
(NumPy, ONNX Runtime or torch) and its labels, whatever the file."""

import pytest

from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import exported_arrays, load_model
from crftag.modelfiles.registry import resolve_model_path
from crftag.serve.models import load_models, model_specs


def test_a_bundled_name_is_served_on_numpy_with_its_labels():
    specs = model_specs(["en-ner", "en-pos"])
    assert specs == [
        ("en-ner", resolve_model_path("en-ner")),
        ("en-pos", resolve_model_path("en-pos")),
    ]
    ner, pos = (served.description() for served in load_models(specs, "cpu"))
    assert ner["backend"] == pos["backend"] == "numpy"
    assert ner["labels"] == ["LOC", "MISC", "ORG", "PER"] and ner["scheme"] == "iob2"
    assert pos["labels"] == pos["tags"] and "NOUN" in pos["labels"] and pos["scheme"] == "none"


def test_each_backend_is_named(sample_model, tmp_path):
    pytest.importorskip("onnxruntime")
    from crftag.modelfiles.onnx_export import write_onnx

    graph = str(tmp_path / "graph.onnx")
    write_onnx(graph, *exported_arrays(graph, load_model(str(sample_model))))
    served = load_models(model_specs([str(sample_model), graph]), "cpu")
    assert [model.description()["backend"] for model in served] == ["torch", "onnx"]
    assert served[0].description()["labels"] == served[1].description()["labels"]


def test_two_models_of_one_name_are_refused(tmp_path):
    (tmp_path / "en-ner").mkdir()
    (tmp_path / "en-ner" / "model.pt").write_bytes(b"")
    with pytest.raises(CrftagError, match="a second model named 'en-ner'"):
        model_specs(["en-ner", str(tmp_path / "en-ner")])
