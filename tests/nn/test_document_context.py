"""Document context (``model.document_context``): pooling of a word's BiLSTM states over its
document, in training, tagging, ``predict`` and ``eval``. Reading documents and batching them
whole are tested in tests/data/test_conll.py and tests/data/test_batching.py."""

import json
import subprocess
import sys

import pytest
import torch

from crftag.data.batching import encode_batch
from crftag.data.conll import ColumnSpec, document_keys, read_columns
from crftag.features.document import DocumentContext
from crftag.modelfiles.checkpoint import save_model


def _group_means(states, groups):
    """The torch side of the document-context feature, on states (B, T, D)."""
    return DocumentContext().torch_states(states, type("Batch", (), {"groups": groups}))


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
def document_model(train_tiny, tmp_path_factory):
    """A tiny model with document context, as a tagger and saved in a run directory."""
    tagger, _ = train_tiny(model__document_context=True, train__seed=3)
    directory = tmp_path_factory.mktemp("doc")
    save_model(str(directory / "model.pt"), tagger.loaded)
    return tagger, directory


def test_a_sentence_depends_on_its_document_only(document_model):
    tagger, _ = document_model
    model = tagger.model.eval()
    vocabularies = tagger.loaded.vocabularies

    def emissions(sentences, documents):
        batch = encode_batch(sentences, vocabularies, documents)
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
    # --jobs cuts the whole-document batches one process (this one) cuts: the same text.
    args = ["predict", "-m", str(directory), "--input-format", "conll", "--batch-size", "2"]
    one = invoke([*args, str(path)])
    command = [sys.executable, "-m", "crftag", *args, str(path), "--jobs", "2"]
    jobs = subprocess.run(command, capture_output=True, timeout=300)
    assert one.status == jobs.returncode == 0, jobs.stderr
    assert jobs.stdout.decode("utf-8") == one.stdout
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
