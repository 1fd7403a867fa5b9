"""Training on partially labelled data: unknown tags (`-`, `?`) stay out of the vocabulary, their
sentences get allowed-tag sets, the loss is the partial one, and a fully labelled batch's loss is
what it was."""

import json
from pathlib import Path

import pytest
import torch

from crftag.errors import CrftagError
from crftag.training.corpus import (
    build_vocabularies,
    encode_training_set,
    in_train_scheme,
    read_training_files,
    resolve_schemes,
)
from crftag.training.step import training_batch

PARTIAL = """\
-DOCSTART- O

John B-PER
Smith -
lives O
in ?
Berlin B-LOC
. O

Anna B-PER
left O
. O
"""


def training_set(config):
    files = read_training_files(config)
    data_scheme, train_scheme = resolve_schemes(config, files)
    sentences = in_train_scheme([s for _, in_file in files for s in in_file], train_scheme)
    vocabularies = build_vocabularies(config, sentences, train_scheme)
    return encode_training_set(files, vocabularies, data_scheme, train_scheme)


def batch_of(training, rows):
    singletons = torch.zeros(len(training.vocabularies.words), dtype=torch.bool)
    return training_batch(
        training, rows, document_context=False, singletons=singletons, word_dropout=0.0
    )


def test_unknown_tags_stay_out_of_the_vocabulary_and_constrain_nothing(tiny_config, tmp_path):
    path = tmp_path / "partial.conll"
    path.write_text(PARTIAL)
    training = training_set(tiny_config(data__train=str(path), data__tag_scheme="iob2"))
    tags = training.vocabularies.tags
    assert "-" not in tags.symbols and "?" not in tags.symbols
    assert training.sentences[0].tags == ("S-PER", "?", "O", "?", "S-LOC", "O")
    batch = batch_of(training, [0, 1])
    allowed = batch.allowed_tags  # (2, 6, K)
    assert allowed.shape == (2, 6, len(tags))
    assert bool(allowed[0, 1].all()) and bool(allowed[0, 3].all())
    # A known B-PER before an unknown token: B-PER or S-PER in BIOES.
    assert {tags.symbols[k] for k in allowed[0, 0].nonzero().flatten()} == {"B-PER", "S-PER"}
    # The fully labelled sentence allows its gold tags only.
    gold = torch.nn.functional.one_hot(batch.tags[1, :3], len(tags)).bool()
    assert torch.equal(allowed[1, :3], gold)
    assert batch_of(training, [1]).allowed_tags is None


def test_a_model_trains_on_partially_labelled_data(train_tiny, tmp_path):
    lines = Path("data/ner_sample.train.conll").read_text().splitlines()
    # Every third entity token's tag unknown, half of them as `-`, half as `?`.
    marked, count = [], 0
    for line in lines:
        fields = line.split(" ")
        if len(fields) == 2 and fields[1] != "O":
            count += 1
            if count % 3 == 0:
                fields[1] = "-" if count % 2 else "?"
        marked.append(" ".join(fields))
    path = tmp_path / "train.conll"
    path.write_text("\n".join(marked) + "\n")
    _, epochs = train_tiny(data__train=str(path), train__epochs=2, train__seed=3)
    assert all(torch.isfinite(torch.tensor(e.loss)) and e.loss >= 0 for e in epochs)
    assert epochs[-1].dev_score > 0


def test_unlabeled_as_unknown_reads_tokens_outside_spans_as_unknown(tiny_config, tmp_path):
    path = tmp_path / "train.jsonl"
    record = {"text": "John Smith left .", "spans": [{"start": 0, "end": 10, "label": "PER"}]}
    path.write_text(json.dumps(record) + "\n")
    as_o = read_training_files(tiny_config(data__train=str(path)))
    assert as_o[0][1][0].tags == ("B-PER", "I-PER", "O", "O")
    config = tiny_config(data__train=str(path), train__unlabeled_as="unknown")
    assert read_training_files(config)[0][1][0].tags == ("B-PER", "I-PER", "?", "?")


def test_scoring_refuses_a_file_with_unknown_tags(invoke, sample_model, tmp_path):
    path = tmp_path / "dev.conll"
    path.write_text("Nokia B-ORG\nrose ?\n. O\n")
    result = invoke(["eval", str(path), "-m", str(sample_model)])
    assert result.status == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"crftag: error: {path}:2: tag '?' of 'rose' is unknown;")
    assert len(result.stderr.splitlines()) == 1


def test_reading_a_file_for_scoring_refuses_unknown_tags(tiny_config, tmp_path):
    path = tmp_path / "dev.conll"
    path.write_text("Nokia B-ORG\nrose O\n\nPoland -\n")
    with pytest.raises(CrftagError, match=r"dev\.conll:4: tag '-' of 'Poland' is unknown"):
        tiny_config().data.read(str(path))
    assert tiny_config().data.read(str(path), unknown_tags=True)[1].tags == ("-",)
