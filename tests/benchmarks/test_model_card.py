"""benchmarks/model_card.py: a model's card holds every form, type and genre, with the scores
`crftag eval` reports for the same files."""

import json
from pathlib import Path

import pytest

from crftag.errors import CrftagError

FORMS = ["as written", "lower", "upper", "title", "typos"]
GENRES = ["answers", "email", "weblog"]


@pytest.fixture(scope="module")
def model_card(load_benchmark):
    return load_benchmark("model_card")


def first_sentences(source: str, count: int, target: Path) -> str:
    """The first ``count`` sentences of ``source`` written to ``target``; its path."""
    blocks = Path(source).read_text(encoding="utf-8").split("\n\n")
    target.write_text("\n\n".join(blocks[:count]) + "\n", encoding="utf-8")
    return str(target)


def with_genres(source: str, count: int, target: Path) -> str:
    """The first ``count`` sentences of an EWT file, their ``sent_id`` prefixes cycling
    through :data:`GENRES` (the sample holds weblog sentences only)."""
    blocks = Path(source).read_text(encoding="utf-8").split("\n\n")[:count]
    relabelled = []
    for index, block in enumerate(blocks):
        genre = GENRES[index % len(GENRES)]
        relabelled.append(block.replace("# sent_id = weblog-", f"# sent_id = {genre}-"))
    target.write_text("\n\n".join(relabelled) + "\n", encoding="utf-8")
    return str(target)


def eval_json(invoke, path: str, model: str, seed: int | None = None) -> dict:
    """`crftag eval PATH -m MODEL --json`'s object, with `--perturb ... --seed SEED` if given."""
    perturb = [] if seed is None else ["--perturb", ",".join(FORMS[1:]), "--seed", str(seed)]
    shown = invoke(["eval", path, "-m", model, "--device", "cpu", "--json", *perturb])
    assert shown.status == 0, shown.stderr
    return json.loads(shown.stdout)


@pytest.fixture(scope="module")
def pos_model(train_tiny, tmp_path_factory):
    """A tiny UPOS model trained on the first 300 sentences of the EWT sample, as a checkpoint."""
    from crftag.modelfiles.checkpoint import save_model

    folder = tmp_path_factory.mktemp("pos")
    train = first_sentences("data/ewt_sample.train.conllu", 300, folder / "train.conllu")
    tagger, _ = train_tiny(
        data__train=train, data__dev=None, data__test=None, data__format="conllu"
    )
    path = folder / "model.pt"
    save_model(str(path), tagger.loaded)
    return str(path)


def ner_corpus(model_card, monkeypatch, folder: Path, count: int) -> dict:
    """The first ``count`` sentences each of the NER sample's dev and test files, as the NER
    corpus; their paths by split."""
    dev = first_sentences("data/ner_sample.dev.conll", count, folder / "ner_sample.dev.conll")
    test = first_sentences("data/ner_sample.test.conll", count, folder / "ner_sample.test.conll")
    monkeypatch.setitem(
        model_card.CORPORA, "ner", model_card.Corpus("conll", {"dev": dev, "test": test})
    )
    return {"dev": dev, "test": test}


def test_an_ner_card_has_every_form_and_type_as_eval_scores_them(
    model_card, sample_model, monkeypatch, tmp_path, invoke
):
    ner_files = ner_corpus(model_card, monkeypatch, tmp_path, 50)
    card = model_card.measure(str(sample_model), seed=2)
    assert card["task"] == "ner"
    assert card["provenance"]["kind"] == "checkpoint"
    assert card["provenance"]["bytes"] == (sample_model / "model.pt").stat().st_size
    assert card["provenance"]["config"]["data"]["train"] == "ner_sample.train.conll"
    assert card["provenance"]["distillation"] is None
    assert card["splits"]["dev"]["held_out"] == "chosen on"  # the sample's data.dev
    assert card["splits"]["test"]["held_out"] == "held out"
    heading = model_card.split_section(card, "dev").splitlines()[0]
    tokens = card["splits"]["dev"]["tokens"]
    assert heading == (
        f"### dev: `ner_sample.dev.conll`, 50 sentences, {tokens:,} tokens (not held out: the "
        "model was chosen on it)"
    )
    for split, path in ner_files.items():
        scores = card["splits"][split]
        forms = scores["forms"]
        assert list(forms) == FORMS
        reported = eval_json(invoke, path, str(sample_model), seed=2)
        assert scores["sentences"] == reported["sentences"] == 50
        copies = {"as written": reported, **reported["perturbed"]}
        for form, entry in forms.items():
            micro = copies[form]["entities"]["micro"]
            assert [entry[key] for key in ("precision", "recall", "f1")] == [
                micro[key] for key in ("precision", "recall", "f1")
            ]
            assert entry["accuracy"] == copies[form]["accuracy"]
            types = {
                k: v for k, v in copies[form]["entities"].items() if k not in model_card.AVERAGES
            }
            assert entry["types"] == types
            assert all(0.0 <= row[k] <= 1.0 for row in types.values() for k in ("precision", "f1"))
        tags = [line.split()[-1] for line in Path(path).read_text().splitlines() if line.strip()]
        gold_types = {tag.split("-", 1)[1] for tag in tags if tag != "O"}
        assert gold_types == {"PER", "LOC", "ORG", "MISC"}
        assert gold_types <= set(forms["as written"]["types"])
        table = model_card.score_table(card, split)
        assert f"| overall | {forms['as written']['support']:,} | " in table
        for label in sorted(gold_types):
            f1s = " | ".join(f"{100 * forms[f]['types'][label]['f1']:.2f}" for f in FORMS)
            row = next(line for line in table.splitlines() if line.startswith(f"| {label} |"))
            assert row.endswith(f"| {f1s} |")


def test_a_pos_card_scores_each_genre_as_eval_scores_its_sentences_alone(
    model_card, pos_model, monkeypatch, tmp_path, invoke
):
    source = "data/ewt_sample.dev.conllu"
    dev = with_genres(source, 45, tmp_path / "dev.conllu")
    test = with_genres(source, 6, tmp_path / "test.conllu")
    monkeypatch.setitem(
        model_card.CORPORA, "pos", model_card.Corpus("conllu", {"dev": dev, "test": test})
    )
    card = model_card.measure(pos_model, seed=1)
    assert card["task"] == "pos"
    scores = card["splits"]["dev"]
    assert list(scores["forms"]) == FORMS
    reported = eval_json(invoke, dev, pos_model, seed=1)
    copies = {"as written": reported, **reported["perturbed"]}
    for form, entry in scores["forms"].items():
        assert entry["accuracy"] == copies[form]["accuracy"]
        assert list(entry["genres"]) == GENRES
        tokens = sum(row["tokens"] for row in entry["genres"].values())
        assert tokens == scores["tokens"] == reported["tokens"]
        weighted = sum(row["accuracy"] * row["tokens"] for row in entry["genres"].values())
        assert weighted / tokens == pytest.approx(entry["accuracy"], abs=1e-12)
    blocks = Path(dev).read_text(encoding="utf-8").split("\n\n")
    for index, genre in enumerate(GENRES):
        alone = tmp_path / f"{genre}.conllu"
        alone.write_text("\n\n".join(blocks[index :: len(GENRES)]) + "\n", encoding="utf-8")
        by_eval = eval_json(invoke, str(alone), pos_model)
        assert scores["forms"]["as written"]["genres"][genre] == {
            "accuracy": by_eval["accuracy"],
            "tokens": by_eval["tokens"],
        }
    table = model_card.score_table(card, "dev")
    assert [line.split(" | ")[0] for line in table.splitlines()[2:]] == [
        "| overall",
        *(f"| {genre}" for genre in GENRES),
    ]


def test_main_keeps_other_cards_and_stamps_the_run(model_card, sample_model, monkeypatch, tmp_path):
    ner_corpus(model_card, monkeypatch, tmp_path, 5)
    results = tmp_path / "cards.json"
    results.write_text(json.dumps({"en-ner": {"kept": True}}), encoding="utf-8")
    assert (
        model_card.main([f"candidate={sample_model}", "--seed", "3", "--json", str(results)]) == 0
    )
    cards = json.loads(results.read_text(encoding="utf-8"))
    assert cards["en-ner"] == {"kept": True}
    card = cards["candidate"]
    assert card["seed"] == 3 and card["typo_rate"] == 0.2
    assert (
        card["command"]
        == f"python benchmarks/model_card.py candidate={sample_model} --seed 3 --json {results}"
    )
    assert model_card.stamp(card).startswith(f"measured {card['date']} at {card['commit']} with `")


def test_against_lists_the_dev_scores_a_candidate_misses(
    model_card, sample_model, monkeypatch, tmp_path, capsys
):
    ner_corpus(model_card, monkeypatch, tmp_path, 5)
    results = tmp_path / "cards.json"
    assert model_card.main([f"first={sample_model}", "--json", str(results)]) == 0
    first = json.loads(results.read_text(encoding="utf-8"))["first"]
    better = json.loads(json.dumps(first))
    better["splits"]["dev"]["forms"]["lower"]["f1"] = 1.0
    results.write_text(json.dumps({"first": first, "better": better}), encoding="utf-8")
    capsys.readouterr()

    arguments = [f"again={sample_model}", "--json", str(results), "--against"]
    assert model_card.main([*arguments, "first"]) == 0
    assert "again: level with or above first on every dev score\n" in capsys.readouterr().err
    assert model_card.main([*arguments, "better"]) == 1
    lower = 100 * first["splits"]["dev"]["forms"]["lower"]["f1"]
    assert capsys.readouterr().err.endswith(
        f"again: below better on 1 dev scores:\n  overall lower: {lower:.2f} < 100.00\n"
    )
    assert model_card.main([*arguments, "nobody"]) == 2
    assert f"{results}: no card named nobody (it holds first, better, again)" in (
        capsys.readouterr().err
    )


def test_scores_below_compares_as_the_card_shows_and_only_like_with_like(model_card):
    form = {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 4, "accuracy": 0.9}
    form["types"] = {"PER": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 4}}
    split = {"file": "dev.conll", "sentences": 2, "tokens": 9, "held_out": "held out"}
    reference = {"model": "a", "task": "ner", "seed": 1, "typo_rate": 0.2, "splits": {}}
    reference["splits"]["dev"] = split | {"forms": {name: form for name in FORMS}}
    candidate = json.loads(json.dumps(reference)) | {"model": "b"}
    forms = candidate["splits"]["dev"]["forms"]
    forms["upper"]["f1"] = 0.50004  # shown as 50.00: level
    forms["title"]["f1"] = 0.49996  # shown as 50.00: level
    forms["typos"]["types"]["PER"]["f1"] = 0.4
    forms["as written"]["recall"] = 0.6
    assert model_card.scores_below(candidate, reference) == ["PER typos: 40.00 < 50.00"]
    del forms["as written"]["types"]["PER"]
    assert len(model_card.scores_below(candidate, reference)) == 7  # its P, R and five F1s
    candidate["splits"]["dev"]["tokens"] = 10
    with pytest.raises(CrftagError, match="^the cards of b and a are not of the same dev file"):
        model_card.scores_below(candidate, reference)


def test_a_sentence_without_a_sent_id_is_named(model_card, pos_model, monkeypatch, tmp_path):
    dev = with_genres("data/ewt_sample.dev.conllu", 6, tmp_path / "dev.conllu")
    blocks = Path(dev).read_text(encoding="utf-8").split("\n\n")
    blocks[2] = "\n".join(line for line in blocks[2].splitlines() if "sent_id" not in line)
    Path(dev).write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    line = 1 + sum(block.count("\n") + 2 for block in blocks[:2])
    monkeypatch.setitem(model_card.CORPORA, "pos", model_card.Corpus("conllu", {"dev": dev}))
    with pytest.raises(CrftagError, match=rf"^{dev}:{line}: no '# sent_id = GENRE-"):
        model_card.measure(pos_model, seed=1)


def test_a_model_of_other_labels_is_refused(
    model_card, sample_model, monkeypatch, tmp_path, capsys
):
    dev = tmp_path / "dev.conll"
    dev.write_text("Aspirin B-Chemical\nhelps O\n", encoding="utf-8")
    monkeypatch.setitem(model_card.CORPORA, "ner", model_card.Corpus("conll", {"dev": str(dev)}))
    assert model_card.main([f"x={sample_model}", "--json", str(tmp_path / "out.json")]) == 2
    error = capsys.readouterr().err
    assert error == (
        f"model_card.py: error: {dev}: the model never saw the labels Chemical: a model of "
        "another label set cannot be scored on this corpus\n"
    )
    assert not (tmp_path / "out.json").exists()


def test_a_file_is_held_out_unless_trained_or_chosen_on(model_card, tiny_config):
    config = tiny_config()
    assert model_card.held_out(config, "/elsewhere/ner_sample.train.conll") == "trained on"
    assert model_card.held_out(config, "ner_sample.dev.conll") == "chosen on"
    assert model_card.held_out(config, "ner_sample.test.conll") == "held out"
    assert model_card.names_only({"a": ["/x/y.txt", "rel/z"], "b": 3}) == {
        "a": ["y.txt", "rel/z"],
        "b": 3,
    }


def test_an_exports_provenance_is_its_description(model_card, trained_tiny, monkeypatch, tmp_path):
    from crftag.modelfiles.checkpoint import export_arrays

    tagger = trained_tiny()
    exported = str(tmp_path / "tiny.npz")
    export_arrays(exported, tagger.loaded, int8=True)
    ner_corpus(model_card, monkeypatch, tmp_path, 5)
    described = model_card.measure(exported, seed=1)["provenance"]
    assert described["kind"] == "export"
    assert described["file"] == exported
    assert described["bytes"] == Path(exported).stat().st_size
    size = f"{described['bytes']:,}"
    assert model_card.file_line({"provenance": described}) == f"`{exported}` (export, {size} bytes)"
    assert described["metrics"] == tagger.metrics
    assert "encoder.lstm.weight_ih_l0" in described["int8_weights"]
    assert described["config"]["model"]["hidden_size"] == 32
