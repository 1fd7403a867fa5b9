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
    "data": 1,
    "features": 1,  # each input feature in one module; its runtimes' parts import lazily (below)
    "crf": 1,
    "runtime": 2,  # tagging in NumPy: imports data and crf's torch-free modules, never torch
    "config": 2,  # the config file's sections, their loading and checks, the tune section
    "nn": 3,
    "modelfiles": 4,  # checkpoints, what they must hold, the bundled models
    "inference": 5,
    "scoring": 6,  # scores, error analysis, tables and plots of a tagger's output
    "serve": 6,  # the HTTP service: imports inference, never training
    "training": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 9,  # the package's lazy `from crftag import Tagger`
}
ISOLATED = {"crf"}  # pure tensor math: imports nothing of crftag outside itself
# A feature module sits with the data layer, so the batch builder and the NumPy runtime can loop
# over the features; the part of a feature that a runtime runs (its torch module, its NumPy
# forward pass, its ONNX graph) imports that runtime's layer inside the method that builds it,
# up to this layer, and never torch at the module's top.
LAZY_REACH = {"features": 4}

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


def crftag_imports(path: pathlib.Path, *, top_only: bool = False) -> list[tuple[int, str]]:
    """(line, module) for every import of crftag in the file, lazy ones inside functions too
    unless ``top_only``."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body if top_only else ast.walk(tree):
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
    top = set(crftag_imports(path, top_only=True))
    for line, imported in crftag_imports(path):
        target = target_key(imported)
        if target == "__init__" and imported.endswith("__version__"):
            continue  # the version string, which every layer may quote
        assert target in LAYERS, f"{path}:{line}: crftag.{target} has no layer"
        if own in ISOLATED:
            assert target == own, f"{path}:{line}: crftag.{own} imports {imported}"
        reach = LAYERS[own] if (line, imported) in top else LAZY_REACH.get(own, LAYERS[own])
        assert LAYERS[target] <= reach, (
            f"{path}:{line}: {module_name(path)} (layer {LAYERS[own]}) imports {imported} "
            f"(layer {LAYERS[target]}), a higher layer"
        )


@pytest.mark.parametrize("path", sorted((PACKAGE / "features").glob("*.py")), ids=lambda p: p.name)
def test_a_feature_module_imports_no_torch_at_its_top(path):
    """The NumPy runtime imports every feature module: torch only inside a method."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        assert not any(name.split(".")[0] == "torch" for name in names), f"{path}:{node.lineno}"


def test_a_feature_module_may_import_upward_only_inside_a_function(tmp_path):
    """The lazy reach is for imports inside functions: one at the top is refused."""
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def build():\n    from crftag.nn.encoders import CharCNN\n")
    eager = tmp_path / "eager.py"
    eager.write_text("from crftag.nn.encoders import CharCNN\n")
    assert crftag_imports(lazy, top_only=True) == [] and crftag_imports(lazy)
    assert crftag_imports(eager, top_only=True) == crftag_imports(eager)
    assert LAYERS["nn"] > LAYERS["features"] and LAYERS["nn"] <= LAZY_REACH["features"]


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


def test_the_top_of_the_package_holds_packages_and_the_shared_errors_only():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "errors.py"], (
        f"modules at the top of crftag/: {loose}; put each in the package of its job"
    )


def import_graph() -> dict[str, set[str]]:
    """Module -> the crftag modules it imports (lazy imports too), as dotted names that exist."""
    names = {module_name(path) for path in modules()}
    graph = {}
    for path in modules():
        targets = set()
        for _, imported in crftag_imports(path):
            # `from crftag.crf import kernels` names a module; `... import CRF` names its package
            while imported not in names and "." in imported:
                imported = imported.rsplit(".", 1)[0]
            targets.add(imported)
        graph[module_name(path)] = targets - {module_name(path), "crftag"}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle, found by depth-first search (each cycle once per entry point)."""
    found, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target in path:
                found.append(path[path.index(target) :] + [target])
            elif target not in done:
                visit(target, path + [target])
        done.add(node)

    for start in sorted(graph):
        if start not in done:
            visit(start, [start])
    return found


def test_no_module_imports_itself_round_a_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
