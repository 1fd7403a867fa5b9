"""The package's shape: layers import one way, and modules and functions stay readable.

A module may import modules of its own layer and of layers below it, never above: the CLI
imports everything, the CRF nothing of crftag but itself. A new module must be given a layer
here, so its place in the architecture is decided, not drifted into.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "crftag"

# Lower number, lower layer. Keys are module names under crftag, or a package name for all of
# its modules.
LAYERS = {
    "errors": 0,
    "registry": 1,
    "tables": 1,
    "archives": 1,  # zip model files' declared sizes, checked before inflating
    "data": 1,
    "crf": 1,
    "runtime": 2,  # tagging in NumPy: imports data and crf's torch-free modules, never torch
    "config": 2,
    "config_tune": 2,  # the tune section: crftag tune's search space
    "config_loading": 2,  # strict YAML and the checks of values against the config's fields
    "config_reference": 3,
    "nn": 3,
    "checkpoint": 4,
    "checkpoint_schema": 4,  # what a checkpoint must hold, checked before building
    "inference": 5,
    "evaluate": 6,
    "serve": 6,  # the HTTP service: imports inference, never training
    "analysis": 6,  # error analysis of a tagger on labelled data, beside evaluate
    "plots": 2,  # pictures from plain values (matplotlib, optional); imports errors only
    "training": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 9,  # the package's lazy `from crftag import Tagger`
}
ISOLATED = {"crf"}  # pure tensor math: imports nothing of crftag outside itself

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 100


def modules():
    return sorted(PACKAGE.rglob("*.py"))


def layer_key(dotted: str) -> str:
    """'crftag.training.loop' -> 'training'; 'crftag' (the package itself) -> '__init__'."""
    parts = dotted.split(".")[1:]
    return parts[0] if parts else "__init__"


def module_name(path: pathlib.Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def crftag_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, module) for every import of crftag in the file, lazy ones inside functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "crftag"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "crftag":
            # `from crftag.crf import kernels` imports crftag.crf.kernels
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def target_key(imported: str) -> str:
    key = layer_key(imported)
    return "__init__" if key == "__version__" else key


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down_the_layers(path):
    own = (
        layer_key(module_name(path))
        if path.name != "__init__.py" or path.parent != PACKAGE
        else "__init__"
    )
    assert own in LAYERS, f"{path}: give crftag.{own} a layer in tests/test_architecture.py"
    for line, imported in crftag_imports(path):
        target = target_key(imported)
        if target == "__init__" and imported.endswith("__version__"):
            continue  # the version string, which every layer may quote
        assert target in LAYERS, f"{path}:{line}: crftag.{target} has no layer"
        if own in ISOLATED:
            assert target == own, f"{path}:{line}: crftag.{own} imports {imported}"
        assert LAYERS[target] <= LAYERS[own], (
            f"{path}:{line}: {module_name(path)} (layer {LAYERS[own]}) imports {imported} "
            f"(layer {LAYERS[target]}), a higher layer"
        )


def test_the_layer_check_catches_an_upward_import(tmp_path):
    """The check itself can fail: a data module importing the tagger is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("from crftag.inference.tagger import Tagger\nimport crftag.cli\n")
    targets = [target_key(imported) for _, imported in crftag_imports(bad)]
    assert targets == ["inference", "cli"]
    assert all(LAYERS[target] > LAYERS["data"] for target in targets)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_modules_and_functions_fit_on_a_screen(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path}: over {MAX_MODULE_LINES} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # From the first statement of the body: a command's option declarations aside.
            length = node.end_lineno - node.body[0].lineno + 1
            assert length <= MAX_FUNCTION_LINES, (
                f"{path}:{node.lineno}: {node.name} has {length} lines of body"
            )
