"""Config files read strictly, and plain values checked against the frozen dataclasses of
:mod:`crftag.config.sections`, every mistake reported at once.

A config file is YAML of at most :data:`MAX_FILE_BYTES`, nested at most :data:`MAX_DEPTH` deep,
without aliases (``*name``: a few lines of them expand to billions of values) and without a key
given twice in one mapping (the later would win unseen). Each key's metadata says what it
accepts: ``choices``, ``minimum`` (0 unless set), ``maximum`` (every number has one) and
``probability`` (the range reads as an interval); a float must be finite. :func:`build` checks
every key of every section and raises one :class:`~crftag.errors.CrftagError` whose message has
one line per mistake, each naming the file and the key; a value shown in a message is cut to
:data:`SHOWN_CHARS` characters.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import os
import reprlib
import types
import typing
from typing import TYPE_CHECKING, Any

from crftag.errors import CrftagError

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "SHOWN_CHARS",
    "apply_override",
    "build",
    "describe",
    "maximum_of",
    "minimum_of",
    "parse_value",
    "read_yaml_file",
    "relative_to",
]

MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 16  # of nested mappings and lists; a config needs 3 (section, key, list of files)
MAX_INTEGER_CHARS = 40  # an integer literal longer than this is no size, rate or seed
SHOWN_CHARS = 80  # of a value quoted in an error message

_SHORT = reprlib.Repr()  # bounded in depth and breadth, so a huge or deep value costs nothing
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 2, SHOWN_CHARS, SHOWN_CHARS
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 4


@functools.cache
def _strict_loader() -> type:
    """PyYAML's safe loader without aliases, with a bound on nesting and on integer literals
    (Python refuses to convert one of more than 4300 digits, with a ValueError). Built on first
    use: importing PyYAML costs every command's start-up, and most commands read no config."""
    import yaml

    class _StrictLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in a config file", event.start_mark
                )
            if self._depth >= MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_DEPTH} deep", event.start_mark
                )
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_bounded_int(self, node: yaml.ScalarNode) -> int:
            if len(node.value) > MAX_INTEGER_CHARS:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"an integer of {len(node.value)} characters; at most {MAX_INTEGER_CHARS}",
                    node.start_mark,
                )
            return self.construct_yaml_int(node)

    _StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_bounded_int)
    return _StrictLoader


def read_yaml_file(path: str) -> tuple[Any, list[str]]:
    """The value of the YAML file ``path`` and an error line for each key given twice (the
    later value is kept, so the rest of the file can still be checked).

    Raises CrftagError for a file that cannot be read or parsed, naming the line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise CrftagError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CrftagError(f"{path}: is a directory, expected a YAML config file") from None
    except OSError as error:
        raise CrftagError(f"{path}: cannot read the config ({error.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise CrftagError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, too large for a config")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CrftagError(f"{path}: not valid UTF-8") from None
    import yaml

    loader = _strict_loader()(text)
    try:
        root = loader.get_single_node()
        duplicates = _duplicate_keys(root, path) if root is not None else []
        value = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise CrftagError(f"{where}: {problem}") from None
    finally:
        loader.dispose()
    return value, duplicates


def parse_value(text: str) -> Any:
    """A ``--set`` value: YAML under the rules of a config file, else the text as it is."""
    import yaml

    loader = _strict_loader()(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError:
        return text
    finally:
        loader.dispose()


def relative_to(base: str, value: Any) -> Any:
    """``value`` with every relative path string in it joined to the folder ``base``."""
    if isinstance(value, dict):
        return {key: relative_to(base, item) for key, item in value.items()}
    if isinstance(value, list):
        return [relative_to(base, item) for item in value]
    if isinstance(value, str) and value != "-" and not os.path.isabs(value):
        return os.path.normpath(os.path.join(base, value))
    return value


def apply_override(raw: dict, override: str) -> str | None:
    """Set the key ``override`` names in ``raw``; None, or what is wrong with it."""
    key, equals, text = override.partition("=")
    parts = key.strip().split(".")
    if not equals or len(parts) != 2 or not all(parts):
        return "expected section.key=value, e.g. train.lr=0.01"
    section, name = parts
    if section not in raw or raw[section] is None:
        raw[section] = {}
    if not isinstance(raw[section], dict):
        return f"section {section[:SHOWN_CHARS]!r} is not a mapping"
    raw[section][name] = parse_value(text)
    return None


def _duplicate_keys(root: yaml.Node, path: str) -> list[str]:
    """An error line for every key that a mapping of ``root`` holds twice."""
    import yaml

    found, stack = [], [(root, "")]  # (line, error) pairs
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, prefix) for item in node.value)
        if not isinstance(node, yaml.MappingNode):
            continue
        first_lines: dict[str, int] = {}
        for key, value in node.value:
            name = f"{prefix}{key.value}" if isinstance(key, yaml.ScalarNode) else None
            if name is not None and name in first_lines:
                what = "section" if not prefix else "key"
                line = key.start_mark.line + 1
                found.append(
                    (
                        line,
                        f"{path}:{line}: duplicate {what} {_shown(name)}, first on line "
                        f"{first_lines[name]}",
                    )
                )
            elif name is not None:
                first_lines[name] = key.start_mark.line + 1
            stack.append((value, f"{name}." if name is not None else prefix))
    return [error for _, error in sorted(found)]


def minimum_of(spec: dataclasses.Field) -> int | float:
    """The least value a numeric key accepts: 0 unless the key sets its own, for every number
    is a size, rate or count (column indices count from the end below 0)."""
    return spec.metadata.get("minimum", 0)


def maximum_of(spec: dataclasses.Field) -> int | float | None:
    """The greatest value a numeric key accepts (None for a key that is not a number)."""
    return spec.metadata.get("maximum")


def build(cls: type, raw: Any, source: str, errors: list[str] | None = None) -> Any:
    """An instance of the dataclass ``cls`` (whose fields may be dataclasses: sections) from the
    plain value ``raw`` read from ``source``.

    Raises CrftagError naming every mistake, one a line, after the ``errors`` already found."""
    errors = list(errors or [])
    built = _build(cls, raw, source, "", errors)
    if errors:
        raise CrftagError("\n".join(errors))
    return built


def _build(cls: type, raw: Any, source: str, prefix: str, errors: list[str]) -> Any:
    if not isinstance(raw, dict):
        where = prefix.rstrip(".") or "top level"
        errors.append(f"{source}: {where}: expected a mapping, got {describe(raw)}")
        return None
    fields = {spec.name: spec for spec in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in raw:
        if key not in fields:
            errors.append(f"{source}: {_unknown_key(str(key)[:SHOWN_CHARS], fields, prefix)}")
    values = {}
    for name, spec in fields.items():
        if name not in raw:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                errors.append(f"{source}: missing required key '{prefix}{name}'")
            continue
        value, hint = raw[name], hints[name]
        if dataclasses.is_dataclass(hint):
            section = value if value is not None else {}
            values[name] = _build(hint, section, source, f"{name}.", errors)
            continue
        values[name], problem = _checked(value, hint, spec)
        if problem is not None:
            errors.append(f"{source}: {prefix}{name}: {problem}")
    return None if errors else cls(**values)


def _unknown_key(key: str, fields: dict, prefix: str) -> str:
    close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.5)
    hint = f"; did you mean '{prefix}{close[0]}'?" if close else ""
    return f"unknown key '{prefix}{key}'{hint} (valid: {', '.join(fields)})"


def _checked(value: Any, hint: Any, spec: dataclasses.Field) -> tuple[Any, str | None]:
    """(the value as the key holds it, None) or (None, what is wrong with it)."""
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if any(typing.get_origin(kind) is dict for kind in allowed) and value is not None:
        if not isinstance(value, dict):
            return None, f"expected a mapping, got {describe(value)}"
        return _checked_mapping(value)
    lists = [kind for kind in allowed if typing.get_origin(kind) is list]
    if lists and isinstance(value, list):
        item = typing.get_args(lists[0])[0]
        if item is float:  # an integer is a float too, as for a float key
            value = [float(x) if type(x) is int and x.bit_length() <= 1000 else x for x in value]
        wrong = [inner for inner in value if not isinstance(inner, item) or type(inner) is bool]
        if not value or wrong:
            got = f"got {describe(wrong[0])} in the list" if wrong else "got an empty list"
            return None, f"expected a list of {item.__name__}, {got}"
        return value, None
    base = next(kind for kind in allowed if kind is not type(None))
    if typing.get_origin(base) is list and value is not None:  # a key that holds only a list
        return (
            None,
            f"expected a list of {typing.get_args(base)[0].__name__}, got {describe(value)}",
        )
    if value is None:
        return None, None if type(None) in allowed else f"expected {base.__name__}, got null"
    number = base in (int, float)
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        # An integer is a float key's value too; one too large for a float is not finite.
        value = float(value) if value.bit_length() <= 1000 else math.copysign(math.inf, value)
    if not isinstance(value, base) or (number and isinstance(value, bool)):
        return None, f"expected {base.__name__}, got {describe(value)}"
    choices = spec.metadata.get("choices")
    if choices and value not in choices:
        return None, f"expected one of {'|'.join(choices)}, got {_shown(value)}"
    if number:
        problem = _out_of_range(value, spec)
        if problem is not None:
            return None, problem
    return value, None


def _checked_mapping(value: dict) -> tuple[Any, str | None]:
    """A ``{str: str}`` key's value (label names), every name non-empty text."""
    for name, mapped in value.items():
        for item in (name, mapped):
            if not isinstance(item, str) or not item:
                return None, f"expected a mapping of names to names, got {describe(item)} in it"
    return dict(value), None


def _out_of_range(value: int | float, spec: dataclasses.Field) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value}"
    minimum, maximum = minimum_of(spec), maximum_of(spec)
    if value < minimum:
        return f"expected a value >= {minimum}, got {_shown(value)}"
    if maximum is not None and value > maximum:
        if spec.metadata.get("probability"):
            return f"expected a probability in [{minimum}, {maximum}], got {_shown(value)}"
        return f"expected a value <= {maximum}, got {_shown(value)}"
    return None


def describe(value: Any) -> str:
    """A value's type and a bounded rendering of it, for an error message: ``str 'fast'``."""
    return f"{type(value).__name__} {_shown(value)}"


def _shown(value: Any) -> str:
    """``repr(value)`` cut to about :data:`SHOWN_CHARS` characters, looking at no more of a
    container than it shows (and never converting an integer of thousands of digits)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * math.log10(2))} digits"
    text = _SHORT.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
