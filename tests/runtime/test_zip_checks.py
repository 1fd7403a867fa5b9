"""Model files that are not whole: random bytes, a file cut short, a flipped bit anywhere (a
record, a local header, the central directory), through every loader of a model. Each is a
one-line ``MODEL: ...`` error, never a traceback or a model whose weights changed unseen; and
an exported model serves where a checkpoint does (``train.init_from``)."""

import os
import zipfile

import numpy as np
import pytest
import torch

from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.modelfiles.checkpoint import export_arrays, load_model
from crftag.training.init_from import load_base


@pytest.fixture(scope="module")
def model_files(sample_model, tmp_path_factory):
    """(checkpoint, its export) of the sample model."""
    directory = tmp_path_factory.mktemp("models")
    exported = directory / "model.npz"
    export_arrays(str(exported), load_model(str(sample_model)))
    return sample_model / "model.pt", exported


def refusal(load, path) -> str:
    """The one-line message of loading ``path``, or "" if it loaded."""
    try:
        load(str(path))
    except CrftagError as error:
        text = str(error)
        assert text.startswith(f"{path}: ") and "\n" not in text and len(text) < 400, text
        return text
    return ""


def flipped(source, target, position, bit=0):
    data = bytearray(source.read_bytes())
    data[position] ^= 1 << bit
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize("kind", ["checkpoint", "export"])
def test_a_flipped_bit_anywhere_is_refused_or_harmless(model_files, tmp_path, kind):
    source = model_files[0] if kind == "checkpoint" else model_files[1]
    size = os.path.getsize(source)
    original = load_model(str(source)).model.state_dict()
    positions = sorted({*range(0, size, max(1, size // 97)), *range(max(0, size - 400), size, 7)})
    for position in positions:
        path = flipped(source, tmp_path / f"flip.{source.suffix}", position, bit=position % 8)
        for load in (load_model, lambda p: loading.load(p, "cpu")):
            if refusal(load, path) or load is not load_model:
                continue
            # What loads must be the model itself: a flip in a place nothing reads.
            loaded = load_model(str(path)).model.state_dict()
            assert all(torch.equal(loaded[name], original[name]) for name in original), position


def test_a_name_that_is_not_utf8_in_the_central_directory(model_files, tmp_path):
    checkpoint = model_files[0]
    data = bytearray(checkpoint.read_bytes())
    directory = data.rfind(b"PK\x01\x02")  # the last central directory entry; names are UTF-8
    name_start = directory + 46
    data[name_start] = 0xFF
    path = tmp_path / "name.pt"
    path.write_bytes(bytes(data))
    for load in (load_model, lambda p: loading.load(p, "cpu")):
        assert "a damaged model file" in refusal(load, path)


@pytest.mark.parametrize("kind", ["checkpoint", "export"])
def test_random_bytes_and_a_file_cut_short(model_files, tmp_path, kind):
    source = model_files[0] if kind == "checkpoint" else model_files[1]
    noise = tmp_path / "noise.bin"
    noise.write_bytes(np.random.default_rng(0).bytes(4096))
    cut = tmp_path / f"cut{source.suffix}"
    cut.write_bytes(source.read_bytes()[: os.path.getsize(source) // 2])
    for path in (noise, cut):
        for load in (load_model, lambda p: loading.load(p, "cpu")):
            message = refusal(load, path)
            assert "not a crftag model: checkpoints and exported models are zip archives" in (
                message
            )
            assert "weights_only" not in message


def test_a_zip_that_is_no_model_names_no_torch_internals(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    message = refusal(load_model, path)
    assert message == f"{path}: not a loadable crftag checkpoint (RuntimeError)"


def test_an_npz_without_its_metadata_names_what_is_missing(invoke, tmp_path):
    path = tmp_path / "weights.npz"
    np.savez(path, emissions=np.zeros((2, 3), dtype=np.float32))
    expected = (
        f"{path}: not an exported crftag model: a NumPy archive without the __metadata__ entry "
        "that describes the network; export the model again"
    )
    assert refusal(load_model, path) == expected
    result = invoke(["predict", "-m", str(path)], stdin="Berlin\n")
    assert (result.status, result.stdout, result.stderr) == (2, "", f"crftag: error: {expected}\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update({"format_version": 99}), "checkpoint format 99 is newer than"),
        (lambda s: s.update({"format_version": 1.0}), "format_version: expected int, got float"),
        (lambda s: s.pop("format_version"), "no 'format_version' in the checkpoint"),
        (lambda s: s.update({"format_version": "2"}), "format_version: expected int, got str"),
    ],
    ids=["newer", "a float", "missing", "a string"],
)
def test_version_messages_say_what_is_wrong(model_files, tmp_path, change, message):
    state = torch.load(model_files[0], weights_only=True)
    change(state)
    path = tmp_path / "version.pt"
    torch.save(state, path)
    text = refusal(load_model, path)
    assert message in text and "None" not in text


def test_an_export_loads_as_the_checkpoint_it_came_from(model_files):
    checkpoint, exported = (load_model(str(path)) for path in model_files)
    assert exported.vocabularies.to_state() == checkpoint.vocabularies.to_state()
    assert exported.train_scheme == checkpoint.train_scheme
    reference = checkpoint.model.state_dict()
    for name, weight in exported.model.state_dict().items():
        assert torch.equal(weight, reference[name]), name


def test_init_from_takes_an_export_and_names_a_damaged_one(model_files, tiny_config, tmp_path):
    base = load_base(tiny_config(train__init_from=str(model_files[1])))
    assert base.config.model.hidden_size == 32
    cut = tmp_path / "cut.npz"
    cut.write_bytes(model_files[1].read_bytes()[:5000])
    with pytest.raises(CrftagError) as caught:
        load_base(tiny_config(train__init_from=str(cut)))
    assert str(caught.value).startswith(f"train.init_from: {cut}: not a crftag model: ")
