"""A model with every registered feature of the BiLSTM-CRF on trains, exports and tags: torch, the
NumPy runtime and ONNX Runtime give the same tags (ONNX for the features it takes; it refuses
the others in one line naming the feature)."""

import pytest

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.errors import CrftagError
from crftag.features.base import INPUT, STATES
from crftag.features.registry import FEATURES, active_features
from crftag.inference.array_tagger import ArrayTagger
from crftag.modelfiles.checkpoint import export_arrays, exported_arrays
from tests.runtime.test_array_tagger import LEXICONS, pretrained_dir

EVERY_FEATURE = {
    "model__char_encoder": "lstm",
    "model__casing_dim": 4,
    "model__lexicons": LEXICONS,
    "model__document_context": True,
    "train__epochs": 1,  # enough for tags that vary (checked), which is all a comparison needs
}


def sentences_and_documents():
    gold = read_corpus("data/ner_sample.dev.conll", ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in gold][:60]
    sentences += [["x" * 70, "Berlin"], "Laura Joshi met Acme Corp in New York .".split()]
    return sentences, [index // 5 for index in range(len(sentences))]


@pytest.fixture(scope="module")
def char_lm_dir(tmp_path_factory):
    return pretrained_dir(tmp_path_factory, "char_lm")


@pytest.fixture(scope="module")
def every_feature(train_tiny, char_lm_dir):
    tagger, _ = train_tiny(model__char_lm=char_lm_dir, **EVERY_FEATURE)
    return tagger


def test_the_model_has_every_feature_of_the_bilstm(every_feature):
    """A feature added to the registry must be added to this model too, unless the NumPy export
    refuses it (model.transformer: tests/nn/test_transformer_training.py trains its own)."""
    model = vars(every_feature.config.model)
    bilstm_features = [
        f for f in FEATURES if f.stage in (INPUT, STATES) and f.numpy_refusal is None
    ]
    assert active_features(model, INPUT) + active_features(model, STATES) == bilstm_features
    for feature in bilstm_features:  # each module is where the feature says, with weights
        if feature.module_name is not None:
            module = getattr(every_feature.model, feature.module_name)
            assert sum(p.numel() for p in module.parameters()) > 0, feature.name


def test_torch_and_numpy_give_the_same_tags(every_feature, tmp_path):
    path = tmp_path / "model.npz"
    export_arrays(str(path), every_feature.loaded)
    runtime = ArrayTagger.load(str(path))
    sentences, documents = sentences_and_documents()
    expected = every_feature.tag(sentences, 16, documents)
    assert runtime.tag(sentences, 16, documents) == expected
    assert len({tag for row in expected for tag in row}) > 1  # a trained model, not a constant


def test_a_feature_the_numpy_export_cannot_take_is_refused_in_one_line(
    every_feature, tmp_path, monkeypatch
):
    """No registered feature refuses the NumPy export yet: one made to, here, is named."""
    from crftag.features.registry import feature_named

    lexicon = feature_named("lexicon")
    monkeypatch.setattr(lexicon, "numpy_refusal", "takes no dictionaries")
    with pytest.raises(CrftagError) as raised:
        export_arrays(str(tmp_path / "m.npz"), every_feature.loaded)
    assert str(raised.value) == "model.lexicons: the NumPy export takes no dictionaries"
    assert not (tmp_path / "m.npz").exists()


def test_onnx_refuses_each_feature_it_cannot_take_in_one_line(every_feature, tmp_path):
    pytest.importorskip("onnx")
    from crftag.modelfiles.onnx_export import onnx_model

    model = vars(every_feature.config.model)
    refused = [f for f in active_features(model) if f.onnx_refusal is not None]
    assert refused, "the model has a feature ONNX cannot take"
    with pytest.raises(CrftagError) as raised:
        onnx_model(*exported_arrays(str(tmp_path / "m.onnx"), every_feature.loaded))
    first = refused[0]
    assert str(raised.value) == f"{first.key}: ONNX export {first.onnx_refusal}"


def test_torch_numpy_and_onnx_give_the_same_tags_with_every_feature_onnx_takes(
    train_tiny, tmp_path
):
    pytest.importorskip("onnxruntime")
    from crftag.inference.onnx_tagger import OnnxTagger
    from crftag.modelfiles.onnx_export import write_onnx

    takes = {key: value for key, value in EVERY_FEATURE.items() if key != "model__lexicons"}
    tagger, _ = train_tiny(**takes)
    model = vars(tagger.config.model)
    # The pretrained encoder, which the NumPy runtime refuses, has its own comparison of the
    # ONNX export with torch (tests/inference/test_onnx_encoder.py).
    onnx_features = [
        f
        for f in FEATURES
        if f.stage in (INPUT, STATES) and f.onnx_refusal is None and f.numpy_refusal is None
    ]
    assert active_features(model, INPUT) + active_features(model, STATES) == onnx_features
    numpy_path, onnx_path = tmp_path / "m.npz", tmp_path / "m.onnx"
    export_arrays(str(numpy_path), tagger.loaded)
    write_onnx(str(onnx_path), *exported_arrays(str(onnx_path), tagger.loaded))
    sentences, documents = sentences_and_documents()
    expected = tagger.tag(sentences, 16, documents)
    assert ArrayTagger.load(str(numpy_path)).tag(sentences, 16, documents) == expected
    assert OnnxTagger.load(str(onnx_path)).tag(sentences, 16, documents) == expected
    assert len({tag for row in expected for tag in row}) > 1  # a trained model, not a constant
