"""Labels a format cannot hold: refused by name, file and line wherever they are read for
training or written, so no convert round trip turns a label into other tokens."""

import io
import json
import os

import pytest

from crftag.data.conll import ColumnSpec, read_columns
from crftag.data.labels import check_conllu_form, check_label, label_problem
from crftag.errors import CrftagError

# White space of every kind Python splits on, and control characters.
UNHOLDABLE = ["P E", "P\tE", "P\nE", "P\rE", "P\x0bE", "P\x1cE", "P\x85E", "P\u2028E", "P\u00a0E"]
UNHOLDABLE += ["P\x00E", "P\x1bE", "P\x7fE", ""]


@pytest.mark.parametrize("label", UNHOLDABLE)
def test_white_space_control_characters_and_empty_labels_have_a_problem(label):
    assert label_problem(label) is not None
    with pytest.raises(CrftagError, match=r"^f\.jsonl:3: label "):
        check_label(label, "f.jsonl:3")


@pytest.mark.parametrize("label", ["PER", "B-PER", "I-MISC", "NN$", "-", "?", "Zürich", "人名"])
def test_ordinary_labels_and_tags_pass(label):
    assert label_problem(label) is None


def test_a_conllu_form_may_hold_a_space_but_no_tab_or_line_break():
    check_conllu_form("New York", "x")
    for token in ("a\tb", "a\nb", "a\x00b", "a\u2028b"):
        with pytest.raises(CrftagError, match="CoNLL-U field cannot hold"):
            check_conllu_form(token, "x")


@pytest.mark.parametrize("tag", ["B-P E", "B-PER\x0b", ""])
def test_a_tab_separated_column_file_with_such_a_tag_names_the_line(tag):
    data = f"EU\tB-ORG\nAngela\t{tag}\n\n".encode()
    with pytest.raises(CrftagError, match=r"^in\.conll:2: tag "):
        list(read_columns(io.BytesIO(data), "in.conll", ColumnSpec()))


def test_a_conllu_tag_with_a_space_names_the_line():
    line = "1\tAngela\t_\tPROP N\t_\t_\t_\t_\t_\t_\n"
    with pytest.raises(CrftagError, match=r"^in\.conllu:2: tag 'PROP N'"):
        list(
            read_columns(
                io.BytesIO(b"# c\n" + line.encode()), "in.conllu", ColumnSpec("conllu", 1, 3)
            )
        )


def _spans_file(tmp_path, label, key="spans"):
    path = tmp_path / "in.jsonl"
    good = {"text": "UN praises", "spans": [[0, 2, "ORG"]]}
    bad = {"text": "Angela Merkel", key: [[0, 6, label]]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    return path


@pytest.mark.parametrize("target", ["out.conll", "out.conllu", "brat/"])
@pytest.mark.parametrize("label", ["P E\tR", "PER\n", "P\u2028R"])
def test_convert_refuses_a_label_the_output_cannot_hold_and_writes_nothing(
    invoke, tmp_path, target, label
):
    source = _spans_file(tmp_path, label)
    result = invoke(["convert", str(source), str(tmp_path / target)])
    assert result.status == 2, result.stdout
    assert result.stderr.startswith(f"crftag: error: {source}:2: label ")
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert os.listdir(tmp_path) == ["in.jsonl"]


def test_a_label_with_white_space_still_converts_to_jsonl_unchanged(invoke, tmp_path):
    source = _spans_file(tmp_path, "P E")
    result = invoke(["convert", str(source), "-", "--to", "jsonl"])
    assert result.status == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[1])["spans"][0]["label"] == "P E"


def test_column_input_with_such_a_tag_is_refused_in_every_direction(invoke, tmp_path):
    source = tmp_path / "in.conll"
    source.write_text("Angela\tB-P E\nMerkel\tO\n\n")
    for target in ("-", str(tmp_path / "out.jsonl"), str(tmp_path / "brat") + "/"):
        result = invoke(["convert", str(source), target])
        assert result.status == 2
        assert result.stderr.startswith(f"crftag: error: {source}:1: tag 'B-P E'")
    assert sorted(os.listdir(tmp_path)) == ["in.conll"]


def test_a_tokens_tab_is_refused_when_writing_conllu(invoke, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "a\tb", "tokens": ["a\tb"], "tags": ["X"]}) + "\n")
    result = invoke(["convert", str(source), str(tmp_path / "out.conllu")])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:1: token 'a\\tb' holds a tab")


def test_a_part_of_speech_tag_with_a_space_is_refused_for_columns(invoke, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "a b", "tokens": ["a", "b"], "tags": ["X", "Y Z"]}))
    result = invoke(["convert", str(source), "-", "--to", "conll"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:1: tag 'Y Z'")


def test_a_brat_type_with_a_vertical_tab_is_refused_when_read(invoke, tmp_path):
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "a.txt").write_text("Angela Merkel")
    (folder / "a.ann").write_text("T1\tP\x0bER 0 6\tAngela\n")
    result = invoke(["convert", str(folder), "-"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {folder / 'a.ann'}:1: label 'P\\x0bER'")


@pytest.mark.parametrize("label", ["P E", "P\tE"])
def test_training_refuses_such_a_label_naming_the_record(invoke, tiny_args, tmp_path, label):
    source = _spans_file(tmp_path, label)
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    result = invoke([*args, "--set", f"data.train={source}", "--set", "data.dev=null"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {source}:2: label ")
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "run" / "model.pt").exists()
