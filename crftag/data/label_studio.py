"""Label Studio's JSON export: one array of tasks, each with its ``data`` and its
``annotations``, read task by task with the line each task starts on, and every part of the
structure checked, so a malformed export is a one-line error naming the file and line.

:mod:`crftag.data.annotations` makes documents of the records read here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from crftag.errors import json_mistake, located

__all__ = ["label_studio_records"]

_WHITESPACE = " \t\n\r"


def label_studio_records(text: str, source: str) -> Iterator[tuple[dict, object, int]]:
    """(span JSONL record, the task's id, the line it starts on) for each task of an export:
    the record's ``text``, and its ``spans`` from the ``labels`` results of the task's first
    annotation that was not cancelled."""
    for line, number, task in _array_items(text, source):
        where = (source, line)
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise located(*where, f'task {number}: expected an object with "data" an object')
        identifier = task.get("id", number)
        data = task["data"]
        strings = [value for value in data.values() if isinstance(value, str)]
        text_value = data.get("text", strings[0] if len(strings) == 1 else None)
        results = _results(task, where, number)
        spans = [_span(result, where, number) for result in results if _is_labels(result)]
        yield {"text": text_value, "spans": spans}, identifier, line


def _array_items(text: str, source: str) -> Iterator[tuple[int, int, object]]:
    """(line, 1-based number, value) for each item of the JSON array that is ``text``."""
    decoder = json.JSONDecoder()
    position = _skip(text, 0)
    if text[position : position + 1] != "[":
        raise located(source, _line(text, position), "expected a JSON array of tasks")
    position = _skip(text, position + 1)
    number = 0
    while text[position : position + 1] != "]":
        if number:
            if text[position : position + 1] != ",":
                raise located(source, _line(text, position), "expected ',' or ']' between tasks")
            position = _skip(text, position + 1)
        number += 1
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError as error:  # a JSONDecodeError, or an integer too long to convert
            line = getattr(error, "lineno", None) or _line(text, position)
            raise located(source, line, f"not valid JSON ({json_mistake(error)})") from None
        yield _line(text, position), number, value
        position = _skip(text, end)
    if _skip(text, position + 1) != len(text):
        raise located(source, _line(text, position + 1), "more after the array of tasks")


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def _results(task: dict, where: tuple, number: int) -> list:
    """The results of the task's first annotation that was not cancelled ([] if none)."""
    annotations = task.get("annotations", [])
    if not isinstance(annotations, list) or not all(isinstance(a, dict) for a in annotations):
        raise located(*where, f'task {number}: expected "annotations" to be a list of objects')
    kept = [annotation for annotation in annotations if not annotation.get("was_cancelled")]
    results = kept[0].get("result", []) if kept else []
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise located(*where, f'task {number}: expected "result" to be a list of objects')
    return results


def _is_labels(result: dict) -> bool:
    return result.get("type") == "labels"


def _span(result: dict, where: tuple, number: int) -> dict:
    """A ``labels`` result as a span: its value's ``start``, ``end``, one label and ``text``."""
    value = result.get("value")
    if not isinstance(value, dict):
        raise located(*where, f'task {number}: a "labels" result without a "value" object')
    labels = value.get("labels")
    if not isinstance(labels, list) or len(labels) != 1 or not isinstance(labels[0], str):
        shown = repr(labels)
        shown = shown if len(shown) <= 60 else shown[:60] + "..."
        raise located(
            *where, f'task {number}: expected a "labels" result with one label, got {shown}'
        )
    span = {"start": value.get("start"), "end": value.get("end"), "label": labels[0]}
    if "text" in value:
        span["text"] = value["text"]
    return span
