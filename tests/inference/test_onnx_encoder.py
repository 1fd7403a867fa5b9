"""A model with a pretrained encoder (``model.transformer``, the tiny random BERT) exported to
ONNX: the float32 graph tags as the torch model does (long sentences windowed, words the
tokenizer makes nothing of tagged), without importing torch or transformers; ``--int8``
quantises the encoder's matrix products and mostly agrees; ``predict`` and ``eval`` run it."""

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("transformers")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.loading import load  # noqa: E402
from crftag.inference.onnx_tagger import OnnxTagger  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import load_model  # noqa: E402
from tests.inference.encoder_exports import encoder_model  # noqa: E402

TEST_FILE = "data/ner_sample.test.conll"
EMPTY_WORDS = ["\u200b", "\ufeff", "\x07", "\u200d"]  # the tokenizer makes nothing of these


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tiny_args):
    """Mean pooling over a mix of the last two layers, beside a character encoder."""
    folder = tmp_path_factory.mktemp("encoder")
    settings = {"model__transformer_pooling": "mean", "model__transformer_layers": 2}
    return encoder_model(folder, tiny_args, **settings)


@pytest.fixture(scope="module")
def first_last(tmp_path_factory, tiny_args):
    """The first subword of the last layer, the encoder alone under the BiLSTM."""
    folder = tmp_path_factory.mktemp("encoder-first")
    settings = {"model__transformer_pooling": "first", "model__char_encoder": "none"}
    return encoder_model(folder, tiny_args, int8=False, **settings)


def sentences():
    gold = read_corpus(TEST_FILE, ColumnSpec())
    found = [list(sentence.tokens) for sentence in gold][:60]
    long = "UN backs Dutch plan to ban Danishness cheese .".split() * 8
    return [*found, long, ["Peter", *EMPTY_WORDS, "Berlin", "\x00", "."], ["\u200b"]]


@pytest.mark.parametrize("model", ["exported", "first_last"])
def test_the_float32_export_tags_as_the_torch_model(model, request):
    checkpoint, path, _ = request.getfixturevalue(model)
    torch_tagger = Tagger.from_loaded(load_model(str(checkpoint)))
    runtime = load(str(path))
    assert isinstance(runtime, OnnxTagger)
    texts = sentences()
    expected = [p.to_dict() for p in torch_tagger.predict(texts, probs="all")]
    actual = [p.to_dict() for p in runtime.predict(texts, probs="all")]
    assert [p["tags"] for p in actual] == [p["tags"] for p in expected]
    assert [len(p["tags"]) for p in actual] == list(map(len, texts))  # no word dropped
    assert len({tag for p in actual for tag in p["tags"]}) > 2  # the comparison sees spans
    for want, got in zip(expected, actual, strict=True):
        np.testing.assert_allclose(got["probs"], want["probs"], atol=1e-4)


def test_the_graph_reads_windows_and_the_windows_match_the_torch_encoder(exported):
    checkpoint, path, _ = exported
    graph = onnx.load(str(path)).graph
    names = [node.name for node in graph.input]
    assert {"subword_ids", "subword_mask", "subword_rows", "lengths"} <= set(names)
    dims = {
        node.name: [d.dim_param for d in node.type.tensor_type.shape.dim] for node in graph.input
    }
    assert dims["subword_ids"] == ["windows", "window_length"]
    runtime = load(str(path))
    module = load_model(str(checkpoint)).model.transformer
    settings = runtime._encodings["transformer"].settings
    assert (settings.width, settings.frame) == (module.width, tuple(map(tuple, module.frame)))


def test_tagging_imports_neither_torch_nor_transformers(exported):
    _, path, _ = exported
    script = (
        "import sys, crftag\n"
        f"tagger = crftag.load({str(path)!r})\n"
        "tags = tagger.predict([['John', '\\u200b', 'lives', 'in', 'Berlin'] * 9])[0].tags\n"
        "assert len(tags) == 45, tags\n"
        "print(sorted(name for name in ('torch', 'transformers') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_int8_quantises_the_encoder_and_mostly_agrees(exported):
    _, path, int8_path = exported
    kinds = {node.op_type for node in onnx.load(str(int8_path)).graph.node}
    assert "MatMulInteger" in kinds and "MatMulInteger" not in {
        node.op_type for node in onnx.load(str(path)).graph.node
    }
    texts = sentences()
    full = [p.tags for p in load(str(path)).predict(texts)]
    quantised = [p.tags for p in load(str(int8_path)).predict(texts)]
    pairs = [
        (a, b) for x, y in zip(full, quantised, strict=True) for a, b in zip(x, y, strict=True)
    ]
    agreement = sum(a == b for a, b in pairs) / len(pairs)
    assert agreement >= 0.9, f"int8 agrees with float32 on {agreement:.1%} of the tokens"


def test_predict_and_eval_run_the_export_from_the_command_line(exported, invoke):
    _, path, _ = exported
    text = "John Smith lives in Berlin .\nMary went to Paris \u200b with Peter .\n"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "crftag", "predict", "-m", str(path)]
        + ["--format", "jsonl"],
        input=text,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [len(r["tags"]) for r in records] == [6, 8]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "tokenizers" in imported and not {"torch", "transformers"} & imported
    # Which modules eval imports is not the question here: it runs in this process.
    result = invoke(["eval", "-m", str(path), TEST_FILE])
    assert result.status == 0, result.stderr
    assert "F1" in result.stdout or "f1" in result.stdout.lower()


def test_int8_for_a_model_without_an_encoder_is_refused_in_one_line(invoke, sample_model, tmp_path):
    path = tmp_path / "m.onnx"
    result = invoke(["export", str(sample_model), str(path), "--format", "onnx", "--int8"])
    assert result.status == 2 and result.stdout == ""
    assert result.stderr.startswith("crftag: error: --int8 with --format onnx quantises")
    assert result.stderr.count("\n") == 1 and not path.exists()


def test_serve_loads_and_describes_the_export(exported):
    from crftag.serve.models import load_models, model_specs

    (served,) = load_models(model_specs([str(exported[1])]), "cpu")
    assert served.description()["backend"] == "onnx"
    assert served.tagger.tag([["Mary", "\u200b", "Berlin"]])[0][1] in served.tagger.output_tags


def test_the_export_batches_sentences_of_similar_subword_counts(exported):
    runtime = load(str(exported[1]))
    texts = [*sentences(), [], ["a"]]
    batches = list(runtime._batch_rows(texts, 8, None))
    order = [index for rows, _ in batches for index in rows]
    assert sorted(order) == [index for index, tokens in enumerate(texts) if tokens]
    assert all(len(rows) <= 8 for rows, _ in batches)
    counts = runtime._encodings["transformer"].sizes([texts[index] for index in order])
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
