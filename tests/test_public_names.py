"""The public names where users look for them: `from crftag.crf import CRF` as pytorch-crf's
users write `from torchcrf import CRF`, the tagger at the top, the config types in
`crftag.config`; and the lazy exports keep the torch-free paths free of torch."""

import subprocess
import sys

import pytest


def test_the_crf_is_crftag_crf_CRF():
    from crftag.crf import CRF
    from crftag.crf.crf import CRF as defined

    assert CRF is defined
    assert CRF(num_tags=3).transitions.shape == (3, 3)


def test_the_tagger_and_the_config_types_at_the_top_of_their_packages():
    import crftag
    import crftag.config
    from crftag.config import sections, tune
    from crftag.inference.loading import load
    from crftag.inference.tagger import Tagger

    assert crftag.Tagger is Tagger and crftag.load is load
    for name in ("Config", "DataConfig", "VocabConfig", "ModelConfig", "TrainConfig"):
        assert getattr(crftag.config, name) is getattr(sections, name)
    assert crftag.config.TuneConfig is tune.TuneConfig
    assert crftag.config.load_config is sections.load_config


@pytest.mark.parametrize("package", ["crftag.crf", "crftag.modelfiles", "crftag.scoring"])
def test_every_lazy_name_resolves_and_a_wrong_one_is_an_attribute_error(package):
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        module.Nope  # noqa: B018


def _imports_torch(code: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()[-1] == "True"


@pytest.mark.parametrize(
    "code",
    [
        "import crftag.runtime",
        "import crftag.crf, crftag.crf.arrays",
        "import crftag.config; crftag.config.load_config('configs/sample.yaml')",
        "from crftag.modelfiles import BUNDLED_MODELS, resolve_model_path",
        "import crftag; crftag.load('en-ner').tag([['John', 'lives', 'in', 'Berlin']])",
        "import crftag.scoring",
    ],
)
def test_torch_free_imports_stay_free_of_torch(code):
    assert not _imports_torch(code)


def test_the_lazy_crf_loads_torch_when_asked():
    assert _imports_torch("from crftag.crf import CRF")


def test_predict_with_a_bundled_model_never_imports_torch():
    block_torch = (
        "import sys\nsys.modules['torch'] = None  # any import of torch fails\n"
        "from crftag import cli\nsys.exit(cli.run(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", block_torch, "predict", "-m", "en-ner"],
        input="John lives in Berlin .\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[3] == "Berlin\tB-LOC"
