"""Training data whose every tag is unknown (``-`` or ``?``): one line saying there is nothing
to learn from, not an IndexError from the batch builder; and nothing written."""

import json

import pytest

TOKENS = ["John", "lives", "in", "Berlin", "."]


def column_file(path, mark):
    path.write_text("\n\n".join("\n".join(f"{t} {mark}" for t in TOKENS) for _ in range(3)) + "\n")
    return path


@pytest.mark.parametrize("mark", ["-", "?"])
@pytest.mark.parametrize("scheme", ["auto", "none"])
def test_every_tag_unknown_is_nothing_to_learn_from(invoke, tiny_args, tmp_path, mark, scheme):
    train = column_file(tmp_path / "unknown.conll", mark)
    run = tmp_path / "run"
    args = tiny_args(data__train=str(train), data__dev=None, data__test=None)
    result = invoke(
        [
            "train",
            "configs/sample.yaml",
            "-o",
            str(run),
            *args,
            "--set",
            f"data.tag_scheme={scheme}",
        ]
    )
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        f"crftag: error: {train}: every tag is unknown (- or ?), so there is nothing to learn "
        "from; give some tokens their tags (docs/partial-labels.md)\n"
    )
    assert not (run / "model.pt").exists()


def test_span_files_without_spans_read_as_unknown(invoke, tiny_args, tmp_path):
    train = tmp_path / "spans.jsonl"
    train.write_text(json.dumps({"text": "John lives in Berlin .", "spans": []}) + "\n")
    args = tiny_args(data__train=str(train), data__dev=None, data__test=None)
    args += ["--set", "train.unlabeled_as=unknown"]
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *args])
    assert result.status == 2 and "nothing to learn from" in result.stderr


def test_one_known_tag_is_enough_to_train(train_tiny, tmp_path):
    train = tmp_path / "some.conll"
    train.write_text("John B-PER\nlives -\nin -\nBerlin ?\n. -\n")
    tagger, epochs = train_tiny(data__train=str(train), data__dev=None, train__epochs=1)
    assert len(epochs) == 1 and "B-PER" in tagger.vocabularies.tags.symbols
