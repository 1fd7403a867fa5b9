import importlib.util
import io
import os
import sys

import pytest

from crftag import cli

# The one tiny model of the tests: configs/sample.yaml with these settings trains in seconds.
TINY_SETTINGS = {"train.epochs": 3, "model.hidden_size": 32, "model.word_dim": 32}
SAMPLE_CONFIG = "configs/sample.yaml"


def _tiny_args(**settings) -> list[str]:
    """`crftag train` options for the tiny model, with ``settings`` ({"train.lr": 0, ...} as
    keyword arguments spelt train__lr=0) on top."""
    chosen = {**TINY_SETTINGS, **{key.replace("__", "."): v for key, v in settings.items()}}
    sets = [part for key, value in chosen.items() for part in ("--set", f"{key}={value}")]
    return [*sets, "--device", "cpu", "--quiet"]


TINY = _tiny_args()


@pytest.fixture(scope="session")
def tiny_args():
    """A factory of `crftag train` options for the tiny model (train__lr=0 sets train.lr)."""
    return _tiny_args


@pytest.fixture(scope="session")
def tiny_config():
    """A factory of the tiny model's config, with settings on top (train__lr=0 sets train.lr)."""
    from crftag.config import load_config

    def make(**settings):
        chosen = {**TINY_SETTINGS, **{key.replace("__", "."): v for key, v in settings.items()}}
        return load_config(SAMPLE_CONFIG, [f"{key}={value}" for key, value in chosen.items()])

    return make


@pytest.fixture(scope="session")
def train_tiny(tiny_config):
    """Train the tiny model in memory on the bundled NER sample; returns (tagger, epochs)."""
    from crftag.data.conll import read_corpus
    from crftag.training.run import train_in_memory

    def train(**settings):
        config = tiny_config(**settings)
        train_set, dev = (
            read_corpus(path, config.data.column_spec(path))
            for path in (config.data.train, config.data.dev)
        )
        return train_in_memory(config, train_set, dev)

    return train


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
