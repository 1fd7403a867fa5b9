"""What an archive stores and reads back: float16 weights exactly, int8 weights within half a
scale step, version 1 archives as before; and ``crftag export --int8`` only for the archive."""

import json

import numpy as np
import pytest

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.errors import CrftagError
from crftag.inference.array_tagger import ArrayTagger
from crftag.modelfiles.checkpoint import export_arrays, load_model, save_model
from crftag.runtime.archive import (
    SCALE_SUFFIX,
    dequantize_rows,
    quantize_rows,
    read_archive,
    write_archive,
)

QUANTIZED = {  # the tiny model's LSTM and linear weight matrices (character encoder: CNN)
    "encoder.lstm.weight_ih_l0",
    "encoder.lstm.weight_hh_l0",
    "encoder.lstm.weight_ih_l0_reverse",
    "encoder.lstm.weight_hh_l0_reverse",
    "projection.weight",
}


def stored_arrays(path) -> dict[str, np.ndarray]:
    """The arrays as the file holds them, before read_archive widens anything."""
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def float32_weights(loaded) -> dict[str, np.ndarray]:
    return {
        name: tensor.float().numpy()
        for name, tensor in loaded.model.state_dict().items()
        if tensor.is_floating_point()
    }


@pytest.fixture(scope="module")
def half_model(sample_model, tmp_path_factory):
    """The sample model saved with --half and loaded back: weights exactly float16."""
    path = tmp_path_factory.mktemp("half") / "half.pt"
    save_model(str(path), load_model(str(sample_model)), half=True)
    return load_model(str(path))


def test_float16_weights_are_stored_as_float16_and_read_back_exactly(half_model, tmp_path):
    path = tmp_path / "half.npz"
    export_arrays(str(path), half_model)
    stored = stored_arrays(path)
    _, weights = read_archive(str(path))
    for name, expected in float32_weights(half_model).items():
        assert stored[name].dtype == np.float16, name
        assert weights[name].dtype == np.float32
        np.testing.assert_array_equal(weights[name], expected)


def test_float32_weights_stay_float32(sample_model, tmp_path):
    path = tmp_path / "full.npz"
    loaded = load_model(str(sample_model))
    export_arrays(str(path), loaded)
    assert stored_arrays(path)["encoder.lstm.weight_ih_l0"].dtype == np.float32
    _, weights = read_archive(str(path))
    for name, expected in float32_weights(loaded).items():
        np.testing.assert_array_equal(weights[name], expected)


def test_int8_round_trip_is_within_half_a_scale_step():
    generator = np.random.default_rng(0)
    matrix = (
        generator.normal(size=(40, 30)).astype(np.float32) * np.geomspace(1e-3, 10, 40)[:, None]
    )
    matrix[3] = 0.0
    quantized, scales = quantize_rows(matrix)  # (R, C) int8, (R,) float32
    assert quantized.dtype == np.int8 and scales.shape == (40,)
    assert np.abs(quantized).max(axis=1)[np.arange(40) != 3].min() == 127
    restored = dequantize_rows(quantized, scales)
    error = np.abs(restored.astype(np.float64) - matrix)
    # Half a step, plus float32 rounding of the product (at most 127 * scale * 2**-24).
    assert (error <= scales[:, None].astype(np.float64) * (0.5 + 1e-5)).all()
    assert not restored[3].any()


def test_int8_export_marks_quantizes_and_tags(trained_tiny, tmp_path):
    tagger = trained_tiny(train__epochs=2)
    path = tmp_path / "int8.npz"
    export_arrays(str(path), tagger.loaded, int8=True)
    metadata, weights = read_archive(str(path))
    assert set(metadata["quantized"]) == QUANTIZED
    stored = stored_arrays(path)
    originals = float32_weights(tagger.loaded)
    for name in QUANTIZED:
        assert stored[name].dtype == np.int8
        scales = stored[name + SCALE_SUFFIX][:, None].astype(np.float64)
        assert weights[name].dtype == np.float32 and name + SCALE_SUFFIX not in weights
        assert (np.abs(weights[name] - originals[name]) <= scales * (0.5 + 1e-5)).all()
    np.testing.assert_array_equal(
        weights["word_embedding.weight"], originals["word_embedding.weight"]
    )
    sentences = [list(s.tokens) for s in read_corpus("data/ner_sample.dev.conll", ColumnSpec())]
    tags = ArrayTagger.load(str(path)).tag(sentences, 16)
    assert [len(row) for row in tags] == [len(sentence) for sentence in sentences]
    expected = tagger.tag(sentences, 16)
    agreeing = sum(
        a == b
        for row, torch_row in zip(tags, expected, strict=True)
        for a, b in zip(row, torch_row, strict=True)
    )
    assert agreeing >= 0.95 * sum(map(len, sentences))


def test_int8_embeddings_are_quantized_on_request(sample_model, tmp_path):
    path = tmp_path / "int8-embeddings.npz"
    export_arrays(str(path), load_model(str(sample_model)), int8=True, int8_embeddings=True)
    metadata, _ = read_archive(str(path))
    assert set(metadata["quantized"]) == QUANTIZED | {"word_embedding.weight"}
    assert stored_arrays(path)["word_embedding.weight"].dtype == np.int8


def test_version_1_archives_still_read(tmp_path):
    path = tmp_path / "v1.npz"
    metadata = {"format": "crftag-numpy", "archive_version": 1, "config": {}}
    encoded = np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)
    weights = {"projection.weight": np.full((2, 3), 0.1, dtype=np.float32)}
    np.savez(path, __metadata__=encoded, **weights)
    read_metadata, read_weights = read_archive(str(path))
    assert read_metadata["archive_version"] == 1
    np.testing.assert_array_equal(read_weights["projection.weight"], weights["projection.weight"])


def test_a_newer_archive_version_is_a_one_line_error(tmp_path, monkeypatch):
    import crftag.runtime.archive as archive

    path = tmp_path / "v9.npz"
    monkeypatch.setattr(archive, "ARCHIVE_VERSION", 9)
    write_archive(str(path), {}, {"projection.weight": np.zeros((2, 3), dtype=np.float32)})
    monkeypatch.undo()
    with pytest.raises(
        CrftagError, match=r"archive version 9 is newer than this crftag reads \(1, 2\); upgrade"
    ):
        read_archive(str(path))


def test_export_int8_writes_a_quantized_archive(invoke, sample_model, tmp_path):
    path = tmp_path / "cli-int8.npz"
    result = invoke(["export", str(sample_model), str(path), "--format", "numpy", "--int8"])
    assert result.status == 0, result.stderr
    assert result.stdout == ""
    metadata, _ = read_archive(str(path))
    assert "word_embedding.weight" in metadata["quantized"]


def test_int8_with_a_checkpoint_export_is_refused_in_one_line(invoke, sample_model, tmp_path):
    path = tmp_path / "model.pt"
    result = invoke(["export", str(sample_model), str(path), "--int8"])
    assert result.status == 2
    assert result.stdout == ""
    assert result.stderr == (
        "crftag: error: --int8 applies to --format numpy or onnx; add one of them or drop --int8\n"
    )
    assert not path.exists()
