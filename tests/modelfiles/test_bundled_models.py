"""The bundled models ship as one exported file each (``crftag/models/NAME.npz``, int8 weights),
within the size budget. ``crftag.load`` (and so the command line) runs a bundled name on the
NumPy runtime; ``--device cuda``, ``load_model``, ``crftag export`` and ``train.init_from``
rebuild the torch model from the same file, and it tags as the NumPy runtime does."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crftag.errors import CrftagError
from crftag.inference.array_tagger import ArrayTagger
from crftag.inference.loading import load
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import load_model
from crftag.modelfiles.kinds import model_file
from crftag.modelfiles.registry import BUNDLED_MODELS, MODELS_DIR, resolve_model_path
from crftag.runtime.archive import read_archive

# crftag/models/ at most 26 MB: the wheel a quarter of what two files per model made it (49 MB).
SIZE_BUDGET = 26 * 10**6
SENTENCES = Path("data/sentences.txt").read_text(encoding="utf-8")


def shipped_files() -> list[str]:
    return sorted(name for name in os.listdir(MODELS_DIR) if not name.startswith("."))


def test_every_bundled_model_ships_one_file():
    assert shipped_files() == sorted(f"{name}.npz" for name in BUNDLED_MODELS)
    for name in BUNDLED_MODELS:
        assert resolve_model_path(name) == os.path.join(MODELS_DIR, f"{name}.npz")


def test_the_bundled_models_fit_the_size_budget():
    sizes = [os.path.getsize(os.path.join(MODELS_DIR, name)) for name in shipped_files()]
    assert sum(sizes) <= SIZE_BUDGET


@pytest.mark.parametrize("name", BUNDLED_MODELS)
def test_a_bundled_model_holds_int8_weights(name):
    metadata, _ = read_archive(resolve_model_path(name))
    assert "word_embedding.weight" in metadata["quantized"]
    assert "encoder.lstm.weight_ih_l0" in metadata["quantized"]


def test_a_bundled_name_runs_on_the_numpy_runtime():
    assert model_file("en-ner").kind == model_file(resolve_model_path("en-ner")).kind == "bundled"
    assert isinstance(load("en-ner", "auto"), ArrayTagger)
    assert isinstance(load(resolve_model_path("en-ner"), "cpu"), ArrayTagger)


def test_cuda_runs_a_bundled_model_in_torch(monkeypatch):
    """Asked onto a GPU, a bundled model goes to torch (here, without one, torch's device check
    refuses it), where an export of one's own is refused as CPU-only."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("en-ner", resolve_model_path("en-ner")):
        with pytest.raises(CrftagError, match="no CUDA device is available"):
            load(name, "cuda")


@pytest.mark.parametrize("name", BUNDLED_MODELS)
def test_torch_rebuilt_from_the_bundled_file_tags_as_the_numpy_runtime(name):
    sentences = [line.split() for line in SENTENCES.splitlines() if line.strip()]
    rebuilt = Tagger.from_loaded(load_model(name))
    assert rebuilt.tag(sentences) == load(name, "cpu").tag(sentences)


def test_export_of_a_bundled_name_writes_a_checkpoint_that_tags_the_same(invoke, tmp_path):
    target = tmp_path / "en-ner.pt"
    assert invoke(["export", "en-ner", str(target)]).status == 0
    bundled = invoke(["predict", "-m", "en-ner"], stdin=SENTENCES)
    exported = invoke(["predict", "-m", str(target), "--device", "cpu"], stdin=SENTENCES)
    assert bundled.status == exported.status == 0
    assert exported.stdout == bundled.stdout != ""


def test_the_package_loads_a_bundled_model_without_torch():
    code = (
        "import sys, crftag\ntagger = crftag.load('en-ner')\n"
        "print(type(tagger).__name__, 'torch' in sys.modules, tagger.tag([['Berlin']]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split(" ", 2)[:2] == ["ArrayTagger", "False"]
