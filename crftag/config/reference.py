"""The config reference, docs/config.md, rendered from the one place the keys are defined: the
fields of :mod:`crftag.config.sections`, with their types, defaults, checks and descriptions.

    python -m crftag.config.reference docs/config.md          # write it (make docs)
    python -m crftag.config.reference --check docs/config.md  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from typing import Any

from crftag.config.loading import MAX_FILE_BYTES, maximum_of, minimum_of
from crftag.config.sections import Config

__all__ = ["main", "render"]

HEADER = """\
# Config reference

<!-- Generated from crftag/config/sections.py by `make docs` (python -m crftag.config.reference);
edit the field descriptions there, not this file. -->

A training config is a YAML file with four sections, `data`, `vocab`, `model` and `train`. Every
key is optional except `data.train`. Paths in the file are relative to the file, never to the
current directory (`model.transformer`, where no folder beside the file has its name, is a name
in the Hugging Face cache; docs/transformer.md); `crftag train CONFIG --set section.key=value`
overrides one key (repeatable), and paths given that way are relative to the current directory.

Every number has the bounds the table gives, and a float must be finite (`.nan` and `.inf` are
refused). An unknown key is an error naming the nearest valid key; a value of the wrong type,
outside its choices or outside its bounds is an error naming the key; a key given twice in one
mapping (or a section given twice) is an error naming both lines. Every mistake of a config and
its `--set` overrides is reported at once, one `crftag: error:` line each. A config file is at
most {max_bytes} bytes, and YAML aliases (`*name`) are refused. Before a network is allocated,
training checks that a model file can hold it and that its weights, with their gradients and
optimizer state, fit the memory free on the device.

Shipped configs: `configs/sample.yaml` (NER sample), `configs/sample_pos.yaml` (UD EWT slice),
`configs/sample_features.yaml` (the feature CRF on the NER sample), `configs/conll03.yaml`,
`configs/conll03_features.yaml` and `configs/ud_ewt_upos.yaml` (the benchmarks), and
`configs/en-ner.yaml` and `configs/en-pos.yaml` (the bundled models).
"""


def render(config_class: type = Config) -> str:
    """The Markdown reference of every section of ``config_class`` and every key in it.

    Raises ValueError when a key has no description: the reference would have a hole."""
    parts = [HEADER.format(max_bytes=f"{MAX_FILE_BYTES:,}")]
    sections = typing.get_type_hints(config_class)
    for section in dataclasses.fields(config_class):
        section_class = sections[section.name]
        parts.append(f"\n## {section.name}\n")
        if section_class.__doc__ and not section_class.__doc__.startswith(section_class.__name__):
            parts.append(f"\n{section_class.__doc__.strip()}\n")
        parts.append("\n| key | type | default | allowed | description |\n|---|---|---|---|---|\n")
        hints = typing.get_type_hints(section_class)
        for spec in dataclasses.fields(section_class):
            key = f"{section.name}.{spec.name}"
            doc = spec.metadata.get("doc", "").strip()
            if not doc:
                raise ValueError(f"expected a description in the metadata of {key}, got none")
            cells = [
                f"`{key}`",
                f"`{spec.type}`",
                _default(spec),
                _allowed(spec, hints[spec.name]),
                doc,
            ]
            parts.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |\n")
    return "".join(parts)


def _default(spec: dataclasses.Field) -> str:
    if spec.default_factory is not dataclasses.MISSING:  # a list (the tune section's)
        return f"`{_yaml(spec.default_factory())}`"
    if spec.default is dataclasses.MISSING:
        return "(required)"
    return f"`{_yaml(spec.default)}`"


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    return str(value)


def _allowed(spec: dataclasses.Field, hint: Any) -> str:
    """The values a key accepts beyond its type, as :func:`crftag.config.load_config`
    checks."""
    choices = spec.metadata.get("choices")
    if choices:
        return ", ".join(f"`{choice}`" for choice in choices)
    if typing.get_origin(hint) is list or not {int, float} & set(typing.get_args(hint) or (hint,)):
        return ""  # a list's values are checked as those of the key it is for
    minimum, maximum = minimum_of(spec), maximum_of(spec)
    if maximum is None:
        return f">= {minimum}"
    if spec.metadata.get("probability"):
        return f"[{minimum}, {maximum}]"
    return f"{minimum} to {maximum}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the config reference (docs/config.md).")
    parser.add_argument("output", help="Markdown file to write, or to compare with --check")
    parser.add_argument("--check", action="store_true", help="exit 1 if OUTPUT is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        try:
            with open(args.output, encoding="utf-8") as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print(f"{args.output} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
