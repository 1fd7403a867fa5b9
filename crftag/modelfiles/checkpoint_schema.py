"""What a checkpoint must hold, checked before anything is built from it: the keys and their
types, values of bounded size and depth, tag schemes that fit the tags, sizes a machine can
allocate, and weights whose names, shapes and dtypes are those of the network the file
describes, all finite. A file that loads safely but is wrong in any of these ways is a one-line
``MODEL: ...`` error, never a traceback, a hang or a terabyte allocation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from crftag.config.keys import MAX_BUCKETS, SPAN_SCHEMES, TRAIN_SCHEMES
from crftag.config.keys import MAX_WORD_CHARS_LIMIT as MAX_CHARS
from crftag.config.sections import Config
from crftag.errors import CrftagError
from crftag.features.registry import FEATURES
from crftag.runtime.archive_schema import check_arrays, check_score_range, expected_arrays
from crftag.runtime.checked import remember, was_checked

if TYPE_CHECKING:  # torch is imported where weights are checked: an export is read without it
    import torch

__all__ = ["DISTILLATION_KEYS", "MAX_PARAMETERS", "check_export", "check_payload", "check_weights"]

REQUIRED = {
    "format": str,
    "format_version": int,
    "config": dict,
    "vocabularies": dict,
    "data_scheme": str,
    "train_scheme": str,
    "state_dict": dict,
}
# What a distilled student records of its teacher (crftag distill), each a string but ``text``,
# the unlabelled files read (a list of strings).
DISTILLATION_KEYS = ("teacher", "teacher_digest", "text", "text_digest", "objective")
MAX_DEPTH = 16  # of nested lists and dicts in any plain value
MAX_ITEMS = 2_000_000  # list items, dict entries and characters, in all
MAX_PARAMETERS = 1 << 30  # about 4 GB in float32: far beyond any model crftag trains
# The weights that set the CRF's scores directly (check_score_range).
SCORING_WEIGHTS = (
    "projection.weight",
    "projection.bias",
    "crf.transitions",
    "crf.start_transitions",
    "crf.end_transitions",
)


def _fail(source: str, message: str) -> CrftagError:
    return CrftagError(f"{source}: {message}")


def _check_plain(value, source: str, where: str) -> None:
    """``value`` is plain data (dict, list, str, number, bool, None) of bounded depth and size:
    walked without recursion, so a deep or huge value is refused before anything prints it."""
    stack, budget = [(value, where, 0)], MAX_ITEMS
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _fail(source, f"{path}: nested more than {MAX_DEPTH} deep")
        if isinstance(item, dict):
            budget -= len(item)
            for key, inner in item.items():
                if not isinstance(key, str):
                    raise _fail(source, f"{path}: a key of type {type(key).__name__}")
                stack.append((inner, f"{path}.{key[:40]}", depth + 1))
        elif isinstance(item, list | tuple):
            budget -= len(item)
            if depth < MAX_DEPTH and set(map(type, item)) <= {str}:
                # A vocabulary's strings, counted at once: one by one they were most of the
                # time a bundled model took to load.
                budget -= sum(map(len, item))
            else:
                stack.extend((inner, f"{path}[]", depth + 1) for inner in item)
        elif isinstance(item, str):
            budget -= len(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise _fail(source, f"{path}: {item} is not a finite number")
        elif item is not None and not isinstance(item, bool | int | float):
            raise _fail(source, f"{path}: a value of type {type(item).__name__}")
        if budget < 0:
            raise _fail(source, f"{where}: larger than {MAX_ITEMS:,} items in all")


def _check_vocabulary(state, source: str, name: str) -> list[str]:
    if not isinstance(state, dict) or not isinstance(state.get("symbols"), list):
        raise _fail(source, f"vocabularies.{name}: expected a mapping with a symbols list")
    symbols = state["symbols"]
    # The set of the symbols' types, built in C: a model's load checks 100,000 words.
    if not set(map(type, symbols)) <= {str}:
        raise _fail(source, f"vocabularies.{name}: every symbol must be a string")
    if len(set(symbols)) != len(symbols):
        raise _fail(source, f"vocabularies.{name}: a symbol appears twice")
    if not isinstance(state.get("has_unknown"), bool):
        raise _fail(source, f"vocabularies.{name}.has_unknown: expected true or false")
    return symbols


def _check_schemes(state: dict, tags: list[str], source: str) -> None:
    data, train = state["data_scheme"], state["train_scheme"]
    if data not in (*SPAN_SCHEMES, "none"):
        raise _fail(source, f"data_scheme {data!r}: expected one of {SPAN_SCHEMES} or none")
    if train not in (*TRAIN_SCHEMES, "none"):
        raise _fail(source, f"train_scheme {train!r}: expected one of {TRAIN_SCHEMES} or none")
    if (data == "none") != (train == "none"):
        raise _fail(source, f"data_scheme {data} with train_scheme {train}: both or neither none")
    if train != "none":
        prefixes = {"iob2": "BI", "bioes": "BIES"}[train]
        for tag in tags:
            if tag != "O" and not (len(tag) > 2 and tag[0] in prefixes and tag[1] == "-"):
                raise _fail(source, f"tag {tag[:40]!r} is not a {train} span tag")


def check_payload(state: dict, source: str) -> None:
    """The checkpoint's keys, their types and plain values, and its tag schemes."""
    for key, kind in REQUIRED.items():
        value = state.get(key)
        if key not in state:
            raise _fail(source, f"no {key!r} in the checkpoint")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _fail(source, f"{key}: expected {kind.__name__}, got {type(value).__name__}")
    if state["format_version"] < 1:
        raise _fail(source, f"format_version {state['format_version']}: expected 1 or more")
    if not isinstance(state.get("metrics", {}), dict):
        raise _fail(source, "metrics: expected a mapping")
    if "distillation" in state:
        _check_distillation(state["distillation"], source)
    vocabularies = state["vocabularies"]
    plain = {key: state.get(key) for key in ("config", "metrics", "crftag_version")}
    own = {feature.vocabulary_key for feature in FEATURES}  # each checked by its feature
    plain["vocabularies"] = {k: v for k, v in vocabularies.items() if k not in own}
    for key, value in plain.items():
        _check_plain(value, source, key)
    model = state["config"].get("model")
    for feature in FEATURES:
        if feature.vocabulary_key is not None:
            try:
                feature.check_vocabularies(vocabularies, model if isinstance(model, dict) else {})
            except ValueError as error:
                raise _fail(source, str(error)) from None
    symbols = {
        name: _check_vocabulary(vocabularies.get(name), source, name)
        for name in ("words", "chars", "tags")
    }
    for flag in ("lowercase", "normalize_digits"):
        if not isinstance(vocabularies.get(flag, False), bool):
            raise _fail(source, f"vocabularies.{flag}: expected true or false")
    # Absent from older files: their defaults.
    for key, default, low, high in (
        ("feature_buckets", 0, 0, MAX_BUCKETS),
        ("max_word_chars", 64, 2, MAX_CHARS),
    ):
        value = vocabularies.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise _fail(source, f"vocabularies.{key}: expected {low} to {high}")
    if not symbols["tags"]:
        raise _fail(source, "vocabularies.tags: no tags")
    _check_schemes(state, symbols["tags"], source)


def _check_distillation(record, source: str) -> None:
    """A student's record of its teacher: :data:`DISTILLATION_KEYS`, each a string (``text``:
    a list of them); other keys plain values."""
    if not isinstance(record, dict):
        raise _fail(source, "distillation: expected a mapping")
    _check_plain(record, source, "distillation")
    for key in DISTILLATION_KEYS:
        value = record.get(key)
        fits = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if not (fits if key == "text" else isinstance(value, str)):
            expected = "a list of file names" if key == "text" else "a string"
            raise _fail(source, f"distillation.{key}: expected {expected}")


def check_export(
    metadata: dict, arrays: dict[str, np.ndarray], source: str, *, digest: str | None = None
) -> Config:
    """The metadata and arrays of an exported model (:func:`crftag.runtime.archive.read_archive`)
    hold what its checkpoint would (:func:`check_payload`, the config's bounds) and are the
    arrays of the network described, floats as float32 (:func:`check_arrays`), which replace
    ``arrays``' own; the config is returned. No torch is needed. With the ``digest`` of the
    metadata's bytes (:func:`crftag.runtime.archive.read_archive_digest`), metadata that
    passed before skips :func:`check_payload`, and metadata that passes now is remembered
    (:mod:`crftag.runtime.checked`)."""
    remembered = digest is not None and was_checked(digest)
    if not remembered:
        check_payload({**metadata, "state_dict": {}}, source)
    config = Config.from_dict(metadata["config"], source=source)  # the network's sizes bounded
    if config.model.encoder != "bilstm":
        raise _fail(source, f"model.encoder {config.model.encoder}: an export holds a BiLSTM-CRF")
    try:
        expected = expected_arrays(dataclasses.asdict(config.model), metadata["vocabularies"])
    except ValueError as error:
        raise _fail(source, str(error)) from None
    total = sum(math.prod(shape) for shape, _ in expected.values())
    if total > MAX_PARAMETERS:
        raise _fail(
            source, f"the config describes {total:,} parameters; at most {MAX_PARAMETERS:,}"
        )
    arrays.update(check_arrays(arrays, expected, source))
    check_score_range(arrays, source)
    if digest is not None and not remembered:
        remember(digest)
    return config


def check_weights(weights: Mapping, expected: Mapping[str, torch.Tensor], source: str) -> None:
    """``weights`` are the described network's (``expected``: its state dict, on the meta
    device): the same names, shapes and kinds of dtype, every float finite."""
    import torch

    total = sum(tensor.numel() for tensor in expected.values())
    if total > MAX_PARAMETERS:
        raise _fail(
            source, f"the config describes {total:,} parameters; at most {MAX_PARAMETERS:,}"
        )
    missing = sorted(set(expected) - set(weights))
    extra = sorted(str(name) for name in set(weights) - set(expected))
    if missing or extra:
        parts = [f"missing {', '.join(missing[:5])}"] if missing else []
        parts += [f"unexpected {', '.join(name[:60] for name in extra[:5])}"] if extra else []
        raise _fail(source, f"state_dict: {'; '.join(parts)}")
    for name, reference in expected.items():
        tensor = weights[name]
        if not isinstance(tensor, torch.Tensor):
            raise _fail(source, f"state_dict.{name}: expected a tensor")
        if tuple(tensor.shape) != tuple(reference.shape):
            raise _fail(
                source,
                f"state_dict.{name}: shape {tuple(tensor.shape)}, the config and vocabularies "
                f"make it {tuple(reference.shape)}",
            )
        if reference.is_floating_point() != tensor.is_floating_point() or (
            reference.dtype == torch.bool and tensor.dtype != torch.bool
        ):
            raise _fail(
                source, f"state_dict.{name}: dtype {tensor.dtype}, expected {reference.dtype}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise _fail(source, f"state_dict.{name}: holds NaN or infinite values")
    scoring = {name: weights[name] for name in SCORING_WEIGHTS if name in weights}
    if len(scoring) == len(SCORING_WEIGHTS):  # the feature CRF has no projection
        check_score_range({k: v.detach().float().numpy() for k, v in scoring.items()}, source)
