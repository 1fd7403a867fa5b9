import importlib.util
import io
import os
import signal
import sys

import pytest
from hypothesis import HealthCheck, settings

from crftag import cli

# Property tests draw the same examples on every run, from a seed made of each test's name, so a
# failure in CI or in `make test` reproduces and none comes and goes by chance; the cases found
# by chance once are kept as @example lines in the tests. HYPOTHESIS_PROFILE=explore draws
# afresh each run (with Hypothesis's own example database in .hypothesis/), to look for new ones.
settings.register_profile(
    "repeatable",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

# The one tiny model of the tests: configs/sample.yaml with these settings trains in seconds.
TINY_SETTINGS = {"train.epochs": 3, "model.hidden_size": 32, "model.word_dim": 32}
SAMPLE_CONFIG = "configs/sample.yaml"


def _tiny_settings(settings: dict) -> list[str]:
    """The tiny model's ``key=value`` overrides with ``settings`` on top: keyword arguments in
    which a double underscore spells the dot (``train__lr=0`` sets ``train.lr``), and values in
    Python (None, True, lists) or as YAML text ("null", "true", "[a,b]")."""
    chosen = {**TINY_SETTINGS, **{key.replace("__", "."): v for key, v in settings.items()}}
    return [f"{key}={_yaml(value)}" for key, value in chosen.items()]


def _yaml(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_yaml(item) for item in value) + "]"
    return str(value)


def _tiny_args(**settings) -> list[str]:
    """`crftag train` options for the tiny model, with ``settings`` on top."""
    sets = [part for setting in _tiny_settings(settings) for part in ("--set", setting)]
    return [*sets, "--device", "cpu", "--quiet"]


TINY = _tiny_args()


@pytest.fixture(scope="session")
def tiny_args():
    """A factory of `crftag train` options for the tiny model: ``--set`` for each setting, then
    ``--device cpu --quiet``; ``tiny_args(train__lr=0, train__seed=3)`` sets train.lr and
    train.seed on top of the tiny model's settings."""
    return _tiny_args


@pytest.fixture(scope="session")
def tiny_config():
    """A factory of the tiny model's :class:`~crftag.config.Config` (``configs/sample.yaml`` with
    the tiny settings), with settings on top as for ``tiny_args``."""
    from crftag.config.sections import load_config

    def make(**settings):
        return load_config(SAMPLE_CONFIG, _tiny_settings(settings))

    return make


@pytest.fixture(scope="session")
def train_tiny(tiny_config):
    """A function that trains the tiny model in memory and returns ``(tagger, epochs)``.

    It reads the training files of ``data.train`` (one or several) and ``data.dev`` (none when
    ``data__dev=None``) and calls :func:`crftag.training.run.train_in_memory`: nothing is
    written. ``tagger`` holds the best-on-dev weights (the last epoch's without dev), ``epochs``
    the :class:`~crftag.training.loop.EpochResult` of every epoch. Settings are keyword
    arguments, as for ``tiny_config``: ``train_tiny(train__lr=0, train__seed=3)``. Every call
    trains afresh, so two calls with one seed can be compared.
    """
    from crftag.training.corpus import read_training_files
    from crftag.training.run import train_in_memory

    def train(**settings):
        config = tiny_config(**settings)
        sentences = [s for _, in_file in read_training_files(config) for s in in_file]
        dev = config.data.dev
        dev_sentences = config.data.read(dev) if dev else None
        return train_in_memory(config, sentences, dev_sentences)

    return train


@pytest.fixture(scope="session")
def tiny_run(train_tiny):
    """A function that returns ``train_tiny(**settings)``, ``(tagger, epochs)``, trained once
    for each distinct ``settings`` in the whole run (in each test worker): for the tests that
    only read a run (its epochs' losses and dev scores, its weights). Both are shared and must
    not be changed; a test that compares two runs of one seed trains the second with
    ``train_tiny``, so that the comparison is of two trainings."""
    trained = {}

    def get(**settings):
        key = repr(sorted(settings.items()))
        if key not in trained:
            trained[key] = train_tiny(**settings)
        return trained[key]

    return get


@pytest.fixture(scope="session")
def trained_tiny(tiny_run):
    """A function that returns the tagger of ``train_tiny(**settings)``, trained once for each
    distinct ``settings`` in the whole run (shared with ``tiny_run``): for the tests that only
    read a trained model (export it, compare runtimes on it). Each call gets a
    :class:`~crftag.inference.tagger.Tagger` of its own (its ``max_length`` is the caller's to
    change) over the shared weights, which must not be changed."""
    from crftag.inference.tagger import Tagger

    def get(**settings):
        tagger, _ = tiny_run(**settings)
        return Tagger.from_loaded(tagger.loaded)

    return get


BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")


@pytest.fixture(scope="session")
def load_benchmark():
    """A loader of benchmarks/NAME.py as a module (the scripts are not part of the package)."""

    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(BENCHMARKS, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


class Result:
    def __init__(self, status, out, err):
        self.status, self.stdout, self.stderr = status, out, err


@pytest.fixture
def invoke(capsys, monkeypatch):
    """Run the CLI in-process, as `crftag ARGS < stdin`; stdout and stderr are kept apart."""

    def run(args, stdin=b""):
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        capsys.readouterr()
        status = cli.run(list(args))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def sample_model(tmp_path_factory):
    """A small NER model trained on the bundled sample, shared by the CLI tests."""
    directory = tmp_path_factory.mktemp("run")
    status = cli.run(["train", SAMPLE_CONFIG, "-o", str(directory), *TINY])
    assert status == 0
    return directory


@pytest.fixture
def compiled_loops():
    """Skip a test of the compiled BiLSTM loops where the install could not build them, unless
    CRFTAG_REQUIRE_COMPILED is set (CI sets it), where their absence is a failure."""
    if importlib.util.find_spec("crftag.runtime._lstm") is not None:
        return
    if os.environ.get("CRFTAG_REQUIRE_COMPILED"):
        pytest.fail("CRFTAG_REQUIRE_COMPILED is set but crftag.runtime._lstm was not built")
    pytest.skip("the compiled BiLSTM loops were not built in this install")


ISA_PATHS = ["generic", "avx2", "avx512"]  # crftag/runtime/_lstm.c's, from the baseline up


@pytest.fixture(params=ISA_PATHS)
def isa_path(request, compiled_loops):
    """Runs a test of the compiled BiLSTM loops once on each instruction-set path that this CPU
    runs (the others are skipped), so that one machine with AVX-512 checks all three."""
    from crftag.runtime import _lstm

    if request.param not in _lstm.available():
        pytest.skip(f"this CPU does not run the {request.param} path")
    before = _lstm.use()
    _lstm.use(request.param)
    yield request.param
    _lstm.use(before)


@pytest.fixture
def no_hang():
    """Fail a test that blocks (on a FIFO, say) for more than 60 seconds, instead of hanging."""

    def expire(signum, frame):
        raise TimeoutError("blocked for 60 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def teacher_path(trained_tiny, tmp_path_factory):
    """The tiny model saved as a checkpoint: a teacher's model file for distillation."""
    from crftag.modelfiles.checkpoint import save_model

    path = tmp_path_factory.mktemp("teacher") / "model.pt"
    save_model(str(path), trained_tiny().loaded)
    return str(path)
