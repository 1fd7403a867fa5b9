"""``crftag.load`` takes each kind of model ``-m`` takes (a bundled name, a run directory, a
checkpoint, an ``.npz`` export, an ``.onnx`` graph) and gives a tagger of one interface that tags
as the others do; a path that is missing or no model is a one-line error naming it."""

import pathlib
import subprocess
import sys

import pytest

import crftag
from crftag.data.conll import ColumnSpec, read_corpus
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import export_arrays, exported_arrays, load_model
from crftag.modelfiles.registry import resolve_model_path

SENTENCES = [
    list(sentence.tokens) for sentence in read_corpus("data/ner_sample.dev.conll", ColumnSpec())
][:60]


@pytest.fixture(scope="module")
def model_kinds(sample_model, tmp_path_factory):
    """Each kind of MODEL for the one sample model: (kind, path, the backend that runs it)."""
    directory = tmp_path_factory.mktemp("kinds")
    loaded = load_model(str(sample_model))
    exported = str(directory / "model.npz")
    export_arrays(exported, loaded)
    paths = [
        ("run directory", str(sample_model), "torch"),
        ("checkpoint", str(sample_model / "model.pt"), "torch"),
        ("export", exported, "numpy"),
    ]
    try:
        import onnxruntime  # noqa: F401

        from crftag.modelfiles.onnx_export import write_onnx
    except ImportError:
        return paths
    graph = str(directory / "model.onnx")
    write_onnx(graph, *exported_arrays(graph, loaded))
    return [*paths, ("onnx", graph, "onnx")]


def test_every_kind_of_model_tags_the_same(model_kinds):
    kinds = [kind for kind, _, _ in model_kinds]
    assert kinds[:3] == ["run directory", "checkpoint", "export"]
    expected = crftag.load(model_kinds[0][1], "cpu").tag(SENTENCES)
    assert any(any(tag != "O" for tag in tags) for tags in expected)
    for kind, path, backend in model_kinds:
        tagger = crftag.load(path, "cpu")
        assert tagger.backend == backend, kind
        assert tagger.tag(SENTENCES) == expected, kind


def test_a_bundled_name_its_file_and_its_checkpoint_tag_the_same(invoke, tmp_path):
    checkpoint = tmp_path / "en-ner.pt"
    assert invoke(["export", "en-ner", str(checkpoint)]).status == 0
    taggers = [crftag.load(m, "cpu") for m in ("en-ner", resolve_model_path("en-ner"), checkpoint)]
    assert [tagger.backend for tagger in taggers] == ["numpy", "numpy", "torch"]
    expected = taggers[0].tag(SENTENCES)
    assert all(tagger.tag(SENTENCES) == expected for tagger in taggers[1:])


def test_every_backend_answers_one_interface(model_kinds):
    """What a caller reads of any tagger: the same values whatever runs the model."""
    described = []
    for kind, path, _ in model_kinds:
        tagger = crftag.load(path, "cpu")
        record = tagger.predict(["John Smith lives in Berlin ."], probs="tag", nbest=2)[0]
        assert 0.0 < record.probability <= 1.0 and len(record.nbest) == 2, kind
        assert all(0.0 < span["confidence"] <= 1.0 for span in record.spans), kind
        assert tagger.source.endswith((".pt", ".npz", ".onnx")), kind
        described.append(
            (
                tagger.labels,
                tagger.output_tags,
                tagger.tags_are_spans,
                tagger.train_scheme,
                tagger.data_scheme,
                tagger.document_context,
                tagger.config.model.hidden_size,
                sorted(tagger.metrics),
            )
        )
    assert described[0][0] == ["LOC", "MISC", "ORG", "PER"]
    assert all(one == described[0] for one in described[1:])


def test_a_pos_model_labels_its_tags():
    tagger = crftag.load("en-pos")
    assert not tagger.tags_are_spans
    assert tagger.labels == tagger.output_tags and "NOUN" in tagger.labels


def test_load_takes_a_path_object(model_kinds):
    import pathlib

    assert crftag.load(pathlib.Path(model_kinds[2][1])).backend == "numpy"


def one_line_refusal(model, device="cpu") -> str:
    with pytest.raises(CrftagError) as raised:
        crftag.load(model, device)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{model}"), message
    return message


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.pt", None, "no such model file or directory"),
        ("train.conll", b"UN B-ORG\npraises O\n", "not a crftag model"),
        ("empty.npz", b"", "not a crftag model"),
        ("text.npz", b"not an archive", "not a crftag model"),
        ("text.onnx", b"not a graph", "cannot load the ONNX model"),
    ],
)
def test_a_path_that_holds_no_model_is_a_one_line_error(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert message in one_line_refusal(str(path))


def test_a_directory_without_a_model_is_a_one_line_error(tmp_path):
    assert "no model.pt in this directory" in one_line_refusal(str(tmp_path))


def test_a_zip_that_is_no_model_is_a_one_line_error(tmp_path):
    import zipfile

    path = tmp_path / "data.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert "not a loadable crftag checkpoint" in one_line_refusal(str(path))


def test_an_export_or_onnx_graph_asked_onto_a_gpu_is_a_one_line_error(model_kinds):
    by_kind = {kind: path for kind, path, _ in model_kinds}
    assert "pass its checkpoint for --device cuda" in one_line_refusal(by_kind["export"], "cuda")
    if "onnx" in by_kind:
        assert "runs on the CPU here" in one_line_refusal(by_kind["onnx"], "cuda")


def test_loading_an_export_imports_no_torch(model_kinds):
    code = (
        "import sys, crftag\n"
        f"tagger = crftag.load({model_kinds[2][1]!r})\n"
        "print(tagger.backend, 'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["numpy", "False"]


def python_block(page: str, after: str) -> str:
    """The first ```python block of a docs page after the text ``after``."""
    text = pathlib.Path(page).read_text(encoding="utf-8").split(after, 1)[1]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_predict_page_example_runs(sample_model, tmp_path, monkeypatch, capsys):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "my-ner").symlink_to(sample_model)
    monkeypatch.chdir(tmp_path)
    code = python_block(str(pathlib.Path(__file__).parents[2] / "docs/predict.md"), "## The model")
    exec(compile(code, "docs/predict.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "torch ['LOC', 'MISC', 'ORG', 'PER']"
    assert all(line.split()[-2] in ("LOC", "MISC", "ORG", "PER") for line in printed[1:])


def test_the_runtime_page_rebuilds_a_bundled_model_in_torch():
    namespace: dict = {}
    code = python_block("docs/runtime.md", "## Which tagger runs a model")
    exec(compile(code, "docs/runtime.md", "exec"), namespace)
    tagger = namespace["tagger"]
    assert tagger.backend == "torch" and hasattr(tagger.model, "crf")
    assert tagger.tag([["John", "lives", "in", "Berlin"]]) == crftag.load("en-ner").tag(
        [["John", "lives", "in", "Berlin"]]
    )
