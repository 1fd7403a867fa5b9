"""Every field of a prediction is the same on the exported model as on the torch one: tags,
spans and their text, scores, probabilities, confidences, marginals and n-best lists, for a span
model and a tag model, through the Python API and through the command line (predict, eval,
parallel jobs), and the command line never imports torch for an exported model."""

import json
import os
import subprocess
import sys

import pytest

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.inference.array_tagger import ArrayTagger
from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import export_arrays, load_model

TOLERANCE = 1e-4


def sample_sentences():
    gold = read_corpus("data/ner_sample.dev.conll", ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in gold][:40]
    return sentences + [[], "John Smith met Mary Jones in Berlin ."]


def export(tagger, tmp_path) -> str:
    path = str(tmp_path / "model.npz")
    export_arrays(path, tagger.loaded)
    return path


def assert_close(expected, actual, where, tolerance=TOLERANCE):
    """Equal structures; floats within ``tolerance``."""
    if isinstance(expected, float):
        assert actual == pytest.approx(expected, abs=tolerance), where
    elif isinstance(expected, dict):
        assert expected.keys() == actual.keys(), where
        for key in expected:
            assert_close(expected[key], actual[key], f"{where}.{key}", tolerance)
    elif isinstance(expected, list):
        assert len(expected) == len(actual), where
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            assert_close(left, right, f"{where}[{index}]", tolerance)
    else:
        assert expected == actual, where


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"model__document_context": True, "model__char_encoder": "lstm"},
        {"data__train_scheme": "iob2"},
        {"model__max_word_chars": 4, "model__char_encoder": "lstm"},
    ],
    ids=["bioes-cnn", "document-context-char-lstm", "iob2", "four-characters-a-word"],
)
def test_every_field_of_predict_matches_the_torch_tagger(trained_tiny, tmp_path, settings):
    tagger = trained_tiny(train__epochs=2, **settings)
    runtime = ArrayTagger.load(export(tagger, tmp_path))
    cap = settings.get("model__max_word_chars", 64)
    assert tagger.vocabularies.max_word_chars == runtime.vocabularies.max_word_chars == cap
    sentences = sample_sentences()
    documents = [index // 6 for index in range(len(sentences))]
    options = {"probs": "all", "nbest": 4, "documents": documents, "token_offsets": True}
    expected = [p.to_dict() for p in tagger.predict(sentences, batch_size=8, **options)]
    actual = [p.to_dict() for p in runtime.predict(sentences, batch_size=8, **options)]
    assert [p["tags"] for p in actual] == [p["tags"] for p in expected]
    assert any(p["spans"] for p in expected)  # the comparison covers span confidences
    assert_close(expected, actual, "predictions")


def test_pieces_and_min_confidence_match(trained_tiny, tmp_path):
    tagger = trained_tiny(train__epochs=2)
    runtime = ArrayTagger.load(export(tagger, tmp_path))
    runtime.max_length = tagger.max_length = 9
    long = [token for sentence in sample_sentences()[:6] for token in sentence]
    for threshold in (0.0, 0.6):
        expected = tagger.predict([long], probs="tag", min_confidence=threshold)[0].to_dict()
        actual = runtime.predict([long], probs="tag", min_confidence=threshold)[0].to_dict()
        assert_close(expected, actual, f"min_confidence={threshold}")


def test_a_tag_model_matches(train_tiny, tmp_path):
    tagger, _ = train_tiny(
        train__epochs=1,  # enough for tags that vary (checked), which is all a comparison needs
        data__train=os.path.abspath("data/ewt_sample.train.conllu"),
        data__dev=os.path.abspath("data/ewt_sample.dev.conllu"),
        data__tag_scheme="none",
        model__casing_dim=4,
    )
    runtime = ArrayTagger.load(export(tagger, tmp_path))
    sentences = sample_sentences()
    expected = [p.to_dict() for p in tagger.predict(sentences, probs="all", nbest=3)]
    actual = [p.to_dict() for p in runtime.predict(sentences, probs="all", nbest=3)]
    assert_close(expected, actual, "predictions")
    assert len({tag for p in expected for tag in p["tags"]}) > 1  # trained, not a constant


def test_tagger_load_gives_the_numpy_tagger_for_an_export(sample_model, tmp_path):
    path = tmp_path / "m.npz"
    export_arrays(str(path), load_model(str(sample_model)))
    loaded = load(str(path), "cpu")
    assert isinstance(loaded, ArrayTagger)
    assert loaded.config.data.word_column == load(str(sample_model), "cpu").config.data.word_column


def run_cli(*args, stdin=""):
    done = subprocess.run(
        [sys.executable, "-m", "crftag", *args],
        input=stdin,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def run_here(invoke):
    """As :func:`run_cli`, in this process: for the tests of what the command writes."""

    def run(*args, stdin=""):
        result = invoke(list(args), stdin=stdin)
        assert result.status == 0, result.stderr
        return result.stdout

    return run


@pytest.fixture(scope="module")
def both_models(sample_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "m.npz"
    export_arrays(str(path), load_model(str(sample_model)))
    return str(sample_model), str(path)


def test_predict_jsonl_is_the_same_from_the_command_line(both_models, run_here):
    checkpoint, exported = both_models
    text = "John Smith lives in Berlin .\nMary went to Paris with Peter .\n\n"
    options = ["--format", "jsonl", "--probs", "all", "--nbest", "3"]
    expected = run_here("predict", "-m", checkpoint, *options, stdin=text)
    actual = run_here("predict", "-m", exported, *options, stdin=text)
    assert_close(
        [json.loads(line) for line in expected.splitlines()],
        [json.loads(line) for line in actual.splitlines()],
        "jsonl",
    )


def test_conll_output_and_parallel_jobs_are_the_same(both_models, run_here, tmp_path):
    checkpoint, exported = both_models
    source = tmp_path / "in.txt"
    source.write_text("John Smith lives in Berlin .\nMary went to Paris .\n" * 30)
    expected = run_here("predict", "-m", checkpoint, "--format", "conll", str(source))
    assert run_here("predict", "-m", exported, "--format", "conll", str(source)) == expected
    jobs = run_cli("predict", "-m", exported, "--format", "conll", "--jobs", "2", str(source))
    assert jobs == expected


def test_eval_scores_are_the_same(both_models, run_here):
    checkpoint, exported = both_models
    expected = json.loads(run_here("eval", "data/ner_sample.dev.conll", "-m", checkpoint, "--json"))
    actual = json.loads(run_here("eval", "data/ner_sample.dev.conll", "-m", exported, "--json"))
    assert_close(expected, actual, "eval")


def test_predict_on_an_export_never_imports_torch(both_models):
    _, exported = both_models
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "crftag", "predict", "-m", exported],
        input="John Smith lives in Berlin .\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("John\t")
    imported = [line.split("|")[-1].strip() for line in done.stderr.splitlines()]
    assert "crftag.inference.array_tagger" in imported  # the import log is the real one
    assert not [name for name in imported if name.split(".")[0] == "torch"]


def test_an_export_on_cuda_is_a_one_line_error(both_models):
    _, exported = both_models
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", exported, "--device", "cuda"],
        input="Berlin\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1 and "crftag: error:" in done.stderr


BLOCK_TORCH = (
    "import sys\nsys.modules['torch'] = None  # as if it were not installed\n"
    "from crftag import cli\nsys.exit(cli.run(sys.argv[1:]))\n"
)


def test_without_torch_an_export_tags_and_other_commands_say_what_to_install(both_models):
    _, exported = both_models
    tagged = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH, "predict", "-m", exported, "--probs", "all"],
        input="John Smith lives in Berlin .\n",
        capture_output=True,
        text=True,
    )
    assert tagged.returncode == 0 and tagged.stdout.startswith("John\t"), tagged.stderr
    refused = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH, "train", "configs/sample.yaml"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("crftag: error: this needs PyTorch, which is not installed")
    assert refused.stderr.count("\n") == 1
