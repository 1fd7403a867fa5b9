"""The bundled models ship exported, and each export is its checkpoint: the same weights to the
bit, the same description. The command line runs a bundled name on the export; the Python API
(``Tagger.load``) keeps the torch model."""

import subprocess
import sys

import numpy as np
import pytest

from crftag.data.vocab import Vocabularies
from crftag.inference.array_tagger import ArrayTagger
from crftag.inference.loading import load_tagger
from crftag.inference.model_paths import exported_model_path
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import load_model
from crftag.modelfiles.registry import BUNDLED_MODELS, resolve_model_path, shipped_export
from crftag.runtime.archive import read_archive

SHIPPED = [name for name in BUNDLED_MODELS if shipped_export(name)]


def test_every_bundled_model_ships_an_export():
    assert list(BUNDLED_MODELS) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_the_shipped_export_is_its_checkpoint(name):
    loaded = load_model(resolve_model_path(name))
    metadata, weights = read_archive(shipped_export(name))
    state = loaded.model.state_dict()
    assert sorted(weights) == sorted(state)
    for key, tensor in state.items():
        np.testing.assert_array_equal(weights[key], tensor.numpy(), err_msg=key)
    # Read as the runtime reads it (settings added since the export take their defaults).
    described = Vocabularies.from_state(metadata["vocabularies"])
    assert described.to_state() == loaded.vocabularies.to_state()
    assert (metadata["train_scheme"], metadata["data_scheme"]) == (
        loaded.train_scheme,
        loaded.data_scheme,
    )


def test_a_bundled_name_runs_on_its_export_from_the_command_line():
    assert isinstance(load_tagger("en-ner", "auto"), ArrayTagger)
    assert isinstance(load_tagger(resolve_model_path("en-ner"), "auto"), Tagger)
    assert type(Tagger.load("en-ner")) is Tagger


def test_cuda_takes_the_checkpoint_of_a_bundled_name():
    assert exported_model_path("en-ner", "cuda", bundled=True) is None


def test_the_package_loads_a_bundled_model_without_torch():
    code = (
        "import sys, crftag\ntagger = crftag.load_tagger('en-ner')\n"
        "print(type(tagger).__name__, 'torch' in sys.modules, tagger.tag([['Berlin']]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split(" ", 2)[:2] == ["ArrayTagger", "False"]
