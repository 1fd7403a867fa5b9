"""Malformed Label Studio exports: every part of a task's structure checked, each error one
line naming the file and the line the task starts on."""

import io
import json

import pytest

from crftag.data.annotations import read_label_studio
from crftag.errors import CrftagError

VALUE = {"start": 0, "end": 3, "text": "Ada", "labels": ["PER"]}


def _task(result=None, **task):
    annotation = {"result": [{"type": "labels", "value": VALUE}] if result is None else result}
    return {"id": 9, "data": {"text": "Ada Lovelace"}, "annotations": [annotation], **task}


def _export(*tasks):
    return ("[\n" + ",\n".join(json.dumps(task) for task in tasks) + "\n]\n").encode()


def _read(data):
    return list(read_label_studio(io.BytesIO(data), "ls.json"))


def test_a_good_export_reads_with_each_task_at_its_line():
    documents = _read(_export(_task(), _task(id=10)))
    assert [(d.line, d.id, d.where()) for d in documents] == [
        (2, "9", "ls.json:2"),
        (3, "10", "ls.json:3"),
    ]
    assert [(s.start, s.end, s.label) for s in documents[0].spans] == [(0, 3, "PER")]


@pytest.mark.parametrize(
    "task, problem",
    [
        (_task([{"type": "labels"}]), 'a "labels" result without a "value" object'),  # issue
        (_task(annotations=[5]), 'expected "annotations" to be a list of objects'),  # issue
        (_task(annotations="x"), 'expected "annotations" to be a list of objects'),
        (_task(annotations={"result": []}), 'expected "annotations" to be a list of objects'),
        (_task(result={"a": 1}), 'expected "result" to be a list of objects'),
        (_task(result=[5]), 'expected "result" to be a list of objects'),
        (_task([{"type": "labels", "value": 5}]), 'without a "value" object'),
        (_task([{"type": "labels", "value": {**VALUE, "labels": "PER"}}]), "with one label"),
        (_task([{"type": "labels", "value": {**VALUE, "labels": []}}]), "with one label"),
        (_task([{"type": "labels", "value": {**VALUE, "labels": ["A", "B"]}}]), "one label"),
        (_task([{"type": "labels", "value": {**VALUE, "labels": [5]}}]), "with one label"),
        (_task([{"type": "labels", "value": {**VALUE, "start": "0"}}]), "is not 0 <= start"),
        (_task([{"type": "labels", "value": {**VALUE, "end": None}}]), "is not 0 <= start"),
        ({"id": 9, "data": "Ada"}, 'expected an object with "data" an object'),
        (5, 'expected an object with "data" an object'),
    ],
)
def test_a_malformed_task_is_one_line_naming_file_and_line(task, problem):
    with pytest.raises(CrftagError) as caught:
        _read(_export(_task(), task))
    message = str(caught.value)
    assert message.startswith("ls.json:3: ") and problem in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "data, expected",
    [
        (b'{"id": 1}', "ls.json:1: expected a JSON array of tasks"),
        (b"[\n" + json.dumps(_task()).encode() + b"\n", "ls.json:3: expected ',' or ']'"),
        (b"[\n{}\n{}]".replace(b"{}", _export(_task())[2:-3]), "ls.json:3: expected ','"),
        (b"[\n" + _export(_task())[2:-3] + b",\n{,}]", "ls.json:3: not valid JSON"),
        pytest.param(
            b"[\n" + _export(_task())[2:-3] + b',\n{"id": 1' + b"0" * 5000 + b"}]",
            "ls.json:3: not valid JSON (an integer of more than 4300 digits)",
            id="5000-digit integer",
        ),
        (b"[] []", "ls.json:1: more after the array of tasks"),
        (b"[\n\xff]", "ls.json:2: not valid UTF-8"),
    ],
)
def test_a_broken_array_names_the_line(data, expected):
    with pytest.raises(CrftagError) as caught:
        _read(data)
    assert str(caught.value).startswith(expected)


def test_the_cli_reports_the_issues_cases_without_a_traceback(invoke, tmp_path):
    source = tmp_path / "ls.json"
    for task in (_task([{"type": "labels"}]), _task(annotations=[5])):
        source.write_bytes(_export(task))
        result = invoke(["convert", str(source), str(tmp_path / "out.conll")])
        assert result.status == 2 and result.stdout == ""
        assert result.stderr.startswith(f"crftag: error: {source}:2: task 1: ")
        assert len(result.stderr.splitlines()) == 1
        assert not (tmp_path / "out.conll").exists()
