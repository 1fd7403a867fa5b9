"""Document context (``model.document_context``): documents from markers, batches of whole
documents, and pooling of a word's BiLSTM states over its document."""

import io
import json
import random

import pytest
import torch

from crftag import cli
from crftag.data.batching import (
    MAX_DOCUMENT_SENTENCES,
    document_batches,
    document_groups,
)
from crftag.data.conll import ColumnSpec, document_keys, read_columns
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.inference.tagger import Tagger
from crftag.nn.taggers import _group_means

TINY = ["--set", "train.epochs=3", "--set", "model.hidden_size=32", "--set", "model.word_dim=32"]
TINY += ["--device", "cpu", "--quiet"]

CONLL = """-DOCSTART- -X- O O

Japan NNP B-NP B-LOC
won VBD B-VP O

Japan NNP B-NP B-LOC
lost VBD B-VP O

-DOCSTART- -X- O O

JAPAN NNP B-NP B-LOC
. . O O
"""


def _read(text, spec=ColumnSpec()):
    return list(read_columns(io.BytesIO(text.encode()), "x", spec))


def test_documents_follow_the_markers():
    sentences = _read(CONLL)
    assert [s.document for s in sentences] == [1, 1, 2]
    keys = document_keys(sentences, "f")
    assert keys[0] == keys[1] != keys[2]


def test_sentences_before_any_marker_are_documents_of_their_own():
    sentences = _read("a O\n\nb O\n\n-DOCSTART- O\n\nc O\n\nd O\n")
    keys = document_keys(sentences)
    assert len(set(keys[:2])) == 2 and keys[2] == keys[3]
    assert keys[0] not in keys[2:] and keys[1] not in keys[2:]


def test_conllu_newdoc_comments_start_documents():
    row = "1\t{}\t_\tNOUN\t_\t_\t0\troot\t_\t_\n"
    text = (
        "# newdoc id = a\n# sent_id = 1\n" + row.format("x") + "\n"
        "# sent_id = 2\n" + row.format("y") + "\n"
        "# newdoc id = b\n# sent_id = 3\n" + row.format("z") + "\n"
    )
    sentences = _read(text, ColumnSpec.for_format("conllu"))
    assert [s.document for s in sentences] == [1, 1, 2]


def test_document_batches_keep_documents_whole():
    documents = ["a"] * 3 + ["b"] * 1 + ["c"] * 5 + ["d"] * 2
    batches = document_batches(documents, batch_size=4)
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7, 8], [9, 10]]
    shuffled = document_batches(documents, batch_size=4, rng=random.Random(3))
    assert sorted(i for batch in shuffled for i in batch) == list(range(len(documents)))
    for batch in shuffled:  # every document lies in one batch, in its own order
        for name in {documents[i] for i in batch}:
            rows = [i for i, d in enumerate(documents) if d == name]
            assert [i for i in batch if documents[i] == name] == rows


def test_a_very_long_document_is_cut():
    batches = document_batches(["a"] * (2 * MAX_DOCUMENT_SENTENCES + 1), batch_size=10)
    assert [len(b) for b in batches] == [MAX_DOCUMENT_SENTENCES, MAX_DOCUMENT_SENTENCES, 1]


def _vocabularies(words=("japan",)):
    words = Vocabulary(["<pad>", "<unk>", *words])
    chars = Vocabulary(["<pad>", "<unk>"])
    return Vocabularies(words=words, chars=chars, tags=Vocabulary(["O"]))


def test_groups_join_one_word_in_one_document():
    vocabularies = _vocabularies()
    sentences = [["Japan", "won"], ["JAPAN", "Zorbl", "zorbl"], ["Japan"]]
    groups = document_groups(sentences, ["d1", "d1", "d2"], vocabularies)
    assert groups.shape == (3, 3)
    japan, won = groups[0, 0], groups[0, 1]
    assert groups[1, 0] == japan  # case does not matter
    assert groups[1, 1] == groups[1, 2] != japan  # unknown words are grouped by their form
    assert groups[2, 0] not in (japan, won)  # another document
    padding = groups.max()
    assert groups[0, 2] == padding and groups[2, 1] == padding and padding == 4  # 4 words


def test_group_means_against_a_loop():
    torch.manual_seed(0)
    states = torch.randn(3, 4, 5, dtype=torch.float64)
    groups = torch.tensor([[0, 1, 2, 6], [1, 3, 0, 6], [4, 5, 1, 1]])
    pooled = _group_means(states, groups)
    for b in range(3):
        for t in range(4):
            same = [
                states[i, j] for i in range(3) for j in range(4) if groups[i, j] == groups[b, t]
            ]
            torch.testing.assert_close(pooled[b, t], torch.stack(same).mean(0))
    torch.autograd.gradcheck(
        lambda x: _group_means(x, groups), states.clone().requires_grad_(), fast_mode=True
    )


@pytest.fixture(scope="module")
def document_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("doc")
    args = ["train", "configs/sample.yaml", "-o", str(directory), *TINY]
    assert cli.run([*args, "--set", "model.document_context=true", "--seed", "3"]) == 0
    return Tagger.load(str(directory)), directory


def test_a_sentence_depends_on_its_document_only(document_model):
    tagger, _ = document_model
    model = tagger.model.eval()
    vocabularies = tagger.loaded.vocabularies
    from crftag.data.batching import encode_batch

    def emissions(sentences, documents):
        batch = encode_batch(sentences, vocabularies)
        batch.groups = document_groups(sentences, documents, vocabularies)
        with torch.no_grad():
            return model.emissions(batch)

    doc_a = [["Nokia", "said", "Tuesday", "."], ["Nokia", "shares", "rose"]]
    other = [["Shares", "in", "Nokia", "fell", "sharply", "today"]]
    alone = emissions(doc_a, ["a", "a"])
    mixed = emissions(doc_a + other, ["a", "a", "b"])
    torch.testing.assert_close(mixed[:2, :4], alone[:, :4], rtol=1e-5, atol=1e-5)
    split = emissions(doc_a, ["a", "c"])  # the same words, now in two documents
    assert not torch.allclose(split[0, 0], alone[0, 0])


def test_eval_and_predict_use_the_documents(document_model, invoke, tmp_path):
    tagger, directory = document_model
    with open("data/ner_sample.test.conll", encoding="utf-8") as handle:
        lines = handle.read().strip().split("\n\n")
    # Three documents of the sample's test sentences.
    blocks = ["-DOCSTART- O"] + lines[:5] + ["-DOCSTART- O"] + lines[5:9] + ["-DOCSTART- O"]
    blocks += lines[9:14]
    path = tmp_path / "docs.conll"
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    with open(path, "rb") as handle:
        gold = list(read_columns(handle, str(path), ColumnSpec()))
    expected = tagger.tag([s.tokens for s in gold], documents=document_keys(gold))
    # predict, one sentence or many a batch: whole documents go together either way.
    for size in ("1", "64"):
        result = invoke(
            ["predict", "-m", str(directory), "--input-format", "conll", "--batch-size", size],
            stdin=path.read_text(),
        )
        assert result.status == 0, result.stderr
        blocks_out = [b for b in result.stdout.strip().split("\n\n") if "DOCSTART" not in b]
        predicted = [[line.split()[-1] for line in b.split("\n")] for b in blocks_out]
        assert predicted == expected
    sharded = invoke(
        ["predict", "-m", str(directory), "--input-format", "conll", "--shard", "0/2"],
        stdin=path.read_text(),
    )
    assert sharded.status != 0 and "--shard" in sharded.stderr
    assert "Traceback" not in sharded.stderr
    scored = invoke(["eval", str(path), "-m", str(directory), "--json"])
    assert scored.status == 0, scored.stderr
    assert json.loads(scored.stdout)["accuracy"] == pytest.approx(
        sum(
            p == g
            for s, tags in zip(gold, expected, strict=True)
            for p, g in zip(tags, s.tags, strict=True)
        )
        / sum(len(s.tokens) for s in gold)
    )
