import importlib.util
import io
import os
import sys

import pytest

from crftag import cli

TINY = [
    "--set",
    "train.epochs=3",
    "--set",
    "model.hidden_size=32",
    "--set",
    "model.word_dim=32",
    "--device",
    "cpu",
    "--quiet",
]


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
    status = cli.run(["train", "configs/sample.yaml", "-o", str(directory), *TINY])
    assert status == 0
    return directory
