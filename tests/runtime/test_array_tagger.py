"""The exported model tags as the torch model does: same tags for every encoder option, document
context and sentences longer than the piece length; and exporting refuses what it cannot run."""

import subprocess
import sys

import numpy as np
import pytest

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.errors import CrftagError
from crftag.inference.array_tagger import ArrayTagger
from crftag.inference.loading import load
from crftag.modelfiles.checkpoint import export_arrays, load_model
from crftag.runtime.archive import read_archive

LEXICONS = {
    "LOC": "tests/fixtures/lexicons/locations.txt",
    "ORG": "tests/fixtures/lexicons/organisations.txt",
}


def sentences_and_documents():
    gold = read_corpus("data/ner_sample.dev.conll", ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in gold] + [[]]
    return sentences, [index // 7 for index in range(len(sentences))]


def exported(tagger, tmp_path):
    path = tmp_path / "model.npz"
    export_arrays(str(path), tagger.loaded)
    return ArrayTagger.load(str(path))


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"model__char_encoder": "lstm", "model__casing_dim": 4},
        {"model__document_context": True},
        {"model__lexicons": LEXICONS},
    ],
    ids=["cnn", "char-lstm-casing", "document-context", "lexicons"],
)
def test_the_exported_model_gives_the_torch_tags(trained_tiny, tmp_path, settings):
    tagger = trained_tiny(train__epochs=2, **settings)
    runtime = exported(tagger, tmp_path)
    sentences, documents = sentences_and_documents()
    assert runtime.tag(sentences, 16, documents) == tagger.tag(sentences, 16, documents)


_PRETRAINED: dict[str, str] = {}  # objective -> directory, pretrained once per test process


def pretrained_dir(tmp_path_factory, objective):
    """A tiny pretrained model (``objective`` char_lm), one epoch on the sample's training
    sentences; pretrained once in a test process and shared (tests/features/ reads it too), as
    a model that is only read."""
    if objective not in _PRETRAINED:
        _PRETRAINED[objective] = _pretrain(tmp_path_factory, objective)
    return _PRETRAINED[objective]


def _pretrain(tmp_path_factory, objective):
    import torch

    from crftag.training.pretrain import PretrainSettings, pretrain

    gold = read_corpus("data/ner_sample.train.conll", ColumnSpec())
    text = tmp_path_factory.mktemp("text") / "text.txt"
    text.write_text("\n".join(" ".join(s.tokens) for s in gold[:300]) + "\n", encoding="utf-8")
    directory = tmp_path_factory.mktemp(objective) / objective
    settings = PretrainSettings(hidden_size=8, char_dim=4, epochs=1, objective=objective)
    pretrain(
        [str(text)],
        str(directory),
        settings,
        minutes=None,
        device=torch.device("cpu"),
        stop_requested=lambda: None,
        show_progress=False,
    )
    return str(directory)


@pytest.fixture(scope="module")
def char_lm_dir(tmp_path_factory):
    return pretrained_dir(tmp_path_factory, "char_lm")


def char_lm_tagger(trained_tiny, char_lm_dir, finetune):
    """The tiny model on the pretrained character model, one epoch (trained once per setting in
    a test process: the tests only read it)."""
    return trained_tiny(
        train__epochs=1, model__char_lm=char_lm_dir, model__char_lm_finetune=finetune
    )


@pytest.mark.parametrize("finetune", [False, True])
def test_the_exported_model_with_a_char_lm_gives_the_torch_tags(
    trained_tiny, tmp_path, char_lm_dir, finetune
):
    tagger = char_lm_tagger(trained_tiny, char_lm_dir, finetune)
    runtime = exported(tagger, tmp_path)
    codes = runtime.vocabularies.resources["char_lm"]
    assert codes.symbols == tagger.vocabularies.resources["char_lm"].symbols
    sentences, documents = sentences_and_documents()
    expected = tagger.tag(sentences, 16)
    assert runtime.tag(sentences, 16) == expected
    assert len({tag for row in expected for tag in row}) > 1  # a trained model, not a constant


def test_onnx_export_refuses_pretrained_character_models_in_one_line(
    trained_tiny, tmp_path, char_lm_dir
):
    from crftag.modelfiles.onnx_export import onnx_model

    tagger = char_lm_tagger(trained_tiny, char_lm_dir, finetune=False)
    path = tmp_path / "model.npz"
    export_arrays(str(path), tagger.loaded)
    with pytest.raises(CrftagError, match=r"^model.char_lm: ONNX export takes no character lan"):
        onnx_model(*read_archive(str(path)))


def test_an_export_carries_its_dictionaries(trained_tiny, tmp_path):
    tagger = trained_tiny(train__epochs=2, model__lexicons=LEXICONS)
    runtime = exported(tagger, tmp_path)
    assert runtime.vocabularies.resources["lexicons"].types == ["LOC", "ORG"]
    sentence = ["Siemens", "AG", "in", "New", "York"]
    expected = [[0, 1], [0, 3], [0, 0], [1, 0], [3, 0]]
    assert runtime.vocabularies.resources["lexicons"].features(sentence) == expected
    # the dictionaries' own files are not read again when tagging
    assert tagger.vocabularies.resources["lexicons"].features(sentence) == expected


def test_long_sentences_are_tagged_in_the_same_pieces(trained_tiny, tmp_path):
    tagger = trained_tiny(train__epochs=2)
    runtime = exported(tagger, tmp_path)
    runtime.max_length = tagger.max_length = 7
    sentences, _ = sentences_and_documents()
    long = [token for sentence in sentences[:5] for token in sentence]
    assert runtime.tag([long]) == tagger.tag([long])


def test_the_archive_holds_float32_weights_and_the_checkpoint_description(sample_model, tmp_path):
    path = tmp_path / "m.npz"
    export_arrays(str(path), load_model(str(sample_model)))
    metadata, weights = read_archive(str(path))
    assert metadata["format"] == "crftag-numpy" and metadata["train_scheme"] == "bioes"
    assert weights["encoder.lstm.weight_ih_l0"].dtype == np.float32
    assert weights["crf.allowed"].dtype == np.bool_


def test_loading_an_export_imports_no_torch(sample_model, tmp_path):
    path = tmp_path / "m.npz"
    export_arrays(str(path), load_model(str(sample_model)))
    code = (
        "import sys\nfrom crftag.inference.array_tagger import ArrayTagger\n"
        f"tags = ArrayTagger.load({str(path)!r}).tag([['John', 'Smith', 'lives', 'in']])\n"
        "print('torch' in sys.modules, tags)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("False [['")


def test_a_feature_crf_is_refused_with_a_reason(train_tiny, tmp_path):
    tagger, _ = train_tiny(
        train__epochs=1,
        model__encoder="features",
        train__optimizer="sgd",
        train__momentum=0,
        train__clip_grad_norm=None,
    )
    with pytest.raises(CrftagError, match="runs the BiLSTM-CRF; this model's encoder is features"):
        export_arrays(str(tmp_path / "f.npz"), tagger.loaded)


def test_a_file_that_is_no_export_is_a_one_line_error(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, a=np.zeros(2))
    with pytest.raises(CrftagError, match="not an exported crftag model"):
        read_archive(str(path))


def test_export_command_writes_the_archive(invoke, sample_model, tmp_path):
    path = tmp_path / "cli.npz"
    result = invoke(["export", str(sample_model), str(path), "--format", "numpy"])
    assert result.status == 0, result.stderr
    assert ArrayTagger.load(str(path)).tag([["Berlin"]]) == load(str(sample_model), "cpu").tag(
        [["Berlin"]]
    )
