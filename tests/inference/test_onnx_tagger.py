"""A model exported to ONNX is a valid ONNX graph and tags as the NumPy runtime does: the same
tags, spans and n-best lists, probabilities and span confidences within 1e-5, for every shape
of network the export takes; ``crftag predict -m x.onnx`` runs it, and bad files are one-line
errors."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from crftag import cli  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.errors import CrftagError  # noqa: E402
from crftag.inference.array_tagger import ArrayBatch, ArrayTagger  # noqa: E402
from crftag.inference.loading import load  # noqa: E402
from crftag.inference.onnx_tagger import OnnxTagger  # noqa: E402
from crftag.modelfiles.checkpoint import export_arrays, exported_arrays, load_model  # noqa: E402
from crftag.modelfiles.onnx_export import write_onnx  # noqa: E402
from tests.runtime.test_array_predict import assert_close as assert_structures_close  # noqa: E402

TOLERANCE = 1e-5


def sample_sentences():
    gold = read_corpus("data/ner_sample.dev.conll", ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in gold][:40]
    return sentences + [["x" * 70, "Berlin"], "John Smith met Mary Jones in Berlin .".split()]


def both_runtimes(loaded, tmp_path) -> tuple[ArrayTagger, OnnxTagger]:
    numpy_path, onnx_path = str(tmp_path / "m.npz"), str(tmp_path / "m.onnx")
    export_arrays(numpy_path, loaded)
    write_onnx(onnx_path, *exported_arrays(onnx_path, loaded))
    onnx.checker.check_model(onnx.load(onnx_path), full_check=True)
    return ArrayTagger.load(numpy_path), OnnxTagger.load(onnx_path)


def assert_close(expected, actual, where):
    """Equal structures; floats within TOLERANCE."""
    assert_structures_close(expected, actual, where, TOLERANCE)


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"model__document_context": True, "model__char_encoder": "lstm"},
        {
            "model__casing_dim": 4,
            "model__hidden_layer": 16,
            "model__num_layers": 2,
            "model__char_kernel": 4,
            "model__max_word_chars": 6,
        },
        {"model__char_encoder": "none", "data__train_scheme": "iob2"},
    ],
    ids=["bioes-cnn", "document-context-char-lstm", "casing-hidden-two-layers", "words-only"],
)
def test_every_field_of_predict_matches_the_numpy_runtime(trained_tiny, tmp_path, settings):
    tagger = trained_tiny(train__epochs=2, **settings)
    reference, runtime = both_runtimes(tagger.loaded, tmp_path)
    sentences = sample_sentences()
    documents = [index // 6 for index in range(len(sentences))]
    options = {"probs": "all", "nbest": 3, "documents": documents, "token_offsets": True}
    expected = [p.to_dict() for p in reference.predict(sentences, batch_size=8, **options)]
    actual = [p.to_dict() for p in runtime.predict(sentences, batch_size=8, **options)]
    assert [p["tags"] for p in actual] == [p["tags"] for p in expected]
    assert any(p["spans"] for p in expected)  # the comparison covers span confidences
    assert_close(expected, actual, "predictions")


def test_the_graph_declares_its_inputs_outputs_and_dynamic_sizes(trained_tiny, tmp_path):
    # The model of the document-context case above: only its graph is read here.
    tagger = trained_tiny(train__epochs=2, model__document_context=True, model__char_encoder="lstm")
    _, runtime = both_runtimes(tagger.loaded, tmp_path)
    graph = onnx.load(str(tmp_path / "m.onnx")).graph
    assert [node.name for node in graph.input] == ["words", "chars", "lengths", "groups"]
    outputs = ["emissions", "transitions", "start_transitions", "end_transitions"]
    assert [node.name for node in graph.output] == outputs
    dims = [d.dim_param for d in graph.input[1].type.tensor_type.shape.dim]
    assert dims == ["batch", "length", "characters"]
    # The CRF's forbidden moves are -inf (BIOES: O cannot go to E-X).
    tags = runtime.tag_symbols
    assert np.isneginf(runtime.transitions[tags.index("O"), tags.index("E-PER")])
    assert np.isfinite(runtime.transitions[tags.index("B-PER"), tags.index("E-PER")])


def test_predict_and_export_from_the_command_line(sample_model, tmp_path, capsys):
    path = str(tmp_path / "m.onnx")
    assert cli.run(["export", str(sample_model), path, "--format", "onnx"]) == 0
    assert "wrote" in capsys.readouterr().err
    text = "John Smith lives in Berlin .\nMary went to Paris with Peter .\n"
    results = []
    for model in (path, str(tmp_path / "m.npz")):
        if model.endswith(".npz"):
            export_arrays(model, load_model(str(sample_model)))
        done = subprocess.run(
            [sys.executable, "-m", "crftag", "predict", "-m", model, "--format", "jsonl"],
            input=text,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        results.append([json.loads(line) for line in done.stdout.splitlines()])
    assert len(results[0]) == 2
    assert_close(results[1], results[0], "jsonl")


def test_load_takes_an_onnx_file(sample_model, tmp_path):
    path = str(tmp_path / "m.onnx")
    write_onnx(path, *exported_arrays(path, load_model(str(sample_model))))
    assert isinstance(load(path, "auto"), OnnxTagger)


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such ONNX model file"), (b"not a graph", "cannot load the ONNX model")],
)
def test_a_bad_onnx_file_is_a_one_line_error(tmp_path, content, message):
    path = tmp_path / "bad.onnx"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CrftagError, match=message) as raised:
        OnnxTagger.load(str(path))
    assert "\n" not in str(raised.value)


def test_an_onnx_graph_without_crftag_metadata_is_refused(tmp_path):
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [value],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(CrftagError, match="not an ONNX model of crftag"):
        OnnxTagger.load(str(path))


def test_without_onnxruntime_predict_says_what_to_install(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"")
    script = (
        "import sys\nsys.modules['onnxruntime'] = None\n"
        "from crftag import cli\nsys.exit(cli.run(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "predict", "-m", str(path)],
        input="Berlin\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "pip install 'crftag[onnx]'" in done.stderr


def documented_viterbi():
    """The ten-line Viterbi of docs/runtime.md's ONNX section, as the page gives it."""
    page = pathlib.Path("docs/runtime.md").read_text(encoding="utf-8")
    code = page[page.index("def viterbi(") :]
    namespace = {}
    exec(code[: code.index("```")], namespace)
    return namespace["viterbi"]


def test_the_documented_viterbi_on_the_graphs_outputs_gives_the_tags(sample_model, tmp_path):
    import onnxruntime

    from crftag.data.indices import index_arrays

    path = str(tmp_path / "m.onnx")
    write_onnx(path, *exported_arrays(path, load_model(str(sample_model))))
    runtime = OnnxTagger.load(path)
    sentences = sample_sentences()[:20]
    words, chars, lengths = index_arrays(sentences, runtime.vocabularies)
    session = onnxruntime.InferenceSession(path)
    inputs = {"words": words, "chars": chars, "lengths": lengths}
    emissions, transitions, start, end = session.run(None, inputs)
    viterbi = documented_viterbi()
    expected = runtime._decode(ArrayBatch({"words": words, "chars": chars}, lengths))
    actual = [viterbi(emissions[row, :n], transitions, start, end) for row, n in enumerate(lengths)]
    assert actual == expected
    assert any(np.isneginf(transitions).ravel())  # the constraints are in the scores decoded


@pytest.mark.parametrize(
    ("blocked", "options", "message"),
    [
        ("onnx", [], "--format onnx needs the onnx package: pip install 'crftag[onnx]'"),
        ("", ["--half"], "--half applies to --format checkpoint; ONNX weights are float32"),
    ],
    ids=["without-onnx", "half"],
)
def test_export_errors_are_one_line(
    invoke, monkeypatch, sample_model, tmp_path, blocked, options, message
):
    if blocked:  # the package as if not installed: importing it raises ImportError
        monkeypatch.setitem(sys.modules, blocked, None)
    output = tmp_path / "m.onnx"
    result = invoke(["export", str(sample_model), str(output), "--format", "onnx", *options])
    assert result.status == 2, result.stderr
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not output.exists()
