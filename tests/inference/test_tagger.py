"""The Tagger: what it says about the model it holds, and what ``predict`` computes."""

import json

import torch

from crftag.inference.loading import load
from crftag.inference.tagger import Tagger
from crftag.modelfiles.checkpoint import read_checkpoint


def test_tagger_exposes_what_callers_need_of_its_model(sample_model):
    tagger = load(str(sample_model), "cpu")
    state = read_checkpoint(str(sample_model / "model.pt"))
    assert tagger.tag_symbols == state["vocabularies"]["tags"]["symbols"]
    assert tagger.vocabularies.tags.symbols == tagger.tag_symbols
    assert tagger.train_scheme == state["train_scheme"] == "bioes"
    assert tagger.data_scheme == state["data_scheme"] == "iob2"
    assert tagger.tags_are_spans is True
    assert tagger.config.model.hidden_size == 32
    assert tagger.metrics == state["metrics"] and "dev" in tagger.metrics
    # Output tags are IOB2: BIOES's S- and E- tags are folded into B- and I-.
    assert all(not tag.startswith(("S-", "E-")) for tag in tagger.output_tags)


def test_a_tagger_of_one_label_a_token_has_no_spans(sample_model):
    loaded = load(str(sample_model), "cpu").loaded
    loaded.train_scheme = "none"
    tagger = Tagger.from_loaded(loaded, "cpu")
    assert tagger.tags_are_spans is False
    assert tagger.output_tags == sorted(tagger.tag_symbols)  # tags are written as they are
    prediction = tagger.predict(["Anna lives in Oslo ."])[0]
    assert prediction.spans == [] and set(prediction.tags) <= set(tagger.tag_symbols)


def test_a_tagger_of_a_network_in_memory_tags_with_its_weights_as_they_stand(sample_model):
    loaded = load(str(sample_model), "cpu").loaded
    tagger = Tagger(
        loaded.model,
        loaded.vocabularies,
        config=loaded.config,
        data_scheme=loaded.data_scheme,
        train_scheme=loaded.train_scheme,
    )
    words = [["Anna", "Schulz", "lives", "in", "Oslo", "."]]
    assert tagger.tag(words) == load(str(sample_model), "cpu").tag(words)
    assert tagger.metrics == {}  # a network in training has no stored scores
    assert tagger.loaded.model is loaded.model
    with torch.no_grad():  # the network changes, and the tagger follows
        loaded.model.projection.bias[tagger.tag_symbols.index("O")] = 1e4
    assert tagger.tag(words) == [["O"] * 6]


def test_jsonl_carries_confidence_probability_and_nbest(invoke, sample_model):
    text = "John Smith lives in Berlin.\nShares in Siemens rose in Tokyo.\n\nAnna\n"
    result = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--nbest", "3", "--probs"],
        stdin=text,
    )
    assert result.status == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4
    for record in records:
        assert 0.0 <= record["probability"] <= 1.0
        for span in record["spans"]:
            assert 0.0 <= span["confidence"] <= 1.0
        assert len(record["probs"]) == len(record["tokens"])
        if record["tokens"]:
            paths = record["nbest"]
            assert len(paths) == 3
            assert len({tuple(p["tags"]) for p in paths}) == 3
            assert paths[0]["score"] >= paths[1]["score"] >= paths[2]["score"]
            assert paths[0]["tags"] == record["tags"]
            assert abs(paths[0]["probability"] - record["probability"]) < 1e-6


def test_probs_all_are_distributions_and_min_confidence_drops_spans(invoke, sample_model):
    text = "Greta Holloway met Boris in Tbilisi.\n"
    full = invoke(
        ["predict", "-m", str(sample_model), "--format", "jsonl", "--probs", "all"], stdin=text
    )
    record = json.loads(full.stdout)
    for distribution, tag, p in zip(
        record["marginals"], record["tags"], record["probs"], strict=True
    ):
        assert abs(sum(distribution.values()) - 1.0) < 1e-4
        assert distribution[tag] == p
    threshold = 1.0 - 1e-12
    strict = invoke(
        [
            "predict",
            "-m",
            str(sample_model),
            "--format",
            "jsonl",
            "--min-confidence",
            str(threshold),
        ],
        stdin=text,
    )
    kept = json.loads(strict.stdout)
    assert all(span["confidence"] >= threshold for span in kept["spans"])
    covered = {i for span in kept["spans"] for i in range(span["start"], span["end"])}
    assert all(tag == "O" for i, tag in enumerate(kept["tags"]) if i not in covered)


def test_constrained_decoding_never_outputs_a_malformed_span(sample_model):
    from crftag.data.conll import ColumnSpec, read_columns
    from crftag.data.schemes import convert

    tagger = load(str(sample_model), "cpu")
    with open("data/ner_sample.test.conll", "rb") as stream:
        sentences = [s.tokens for s in read_columns(stream, "test", ColumnSpec())]
    symbols = tagger.tag_symbols
    for indices, batch in tagger._batches(sentences, 64):
        tags, _ = tagger.model.decode(batch)
        for index, row in zip(indices, tags.tolist(), strict=True):
            internal = [symbols[t] for t in row[: len(sentences[index])]]
            assert convert(internal, "bioes") == internal  # well-formed BIOES


def test_output_tags_of_any_id_sequence_are_its_tags_in_iob2(sample_model):
    # Ids are looked up one by one where the CRF decodes only well-formed sequences, and the
    # whole sequence is converted where it does not: both as to_iob2 gives them.
    import random

    from crftag.data.schemes import to_iob2

    tagger = load(str(sample_model), "cpu")
    symbols, rng = tagger.tag_symbols, random.Random(0)
    rows = [[rng.randrange(len(symbols)) for _ in range(rng.randint(1, 9))] for _ in range(200)]
    for well_formed in (True, False):
        tagger._well_formed = well_formed
        for row in rows:
            want = to_iob2([symbols[t] for t in row], well_formed)
            assert tagger._output_tags(row) == want
