"""benchmarks/your_data.py and your_data_corpora.py without training: the rows' configs, the
dictionary split, and a row recorded from a finished run."""

import json
import os
import subprocess
import sys

import pytest
import torch
import yaml

from crftag.config.sections import Config
from crftag.data.lexicons import read_lexicons
from crftag.errors import CrftagError


@pytest.fixture
def your_data(load_benchmark):
    return load_benchmark("your_data")


@pytest.fixture
def corpus(tmp_path):
    """A BC5CDR-like folder: the dictionary files the dictionaries row reads."""
    folder = tmp_path / "bc5cdr"
    folder.mkdir()
    (folder / "chemicals.txt").write_text("lithium\nsodium valproate\n", encoding="utf-8")
    (folder / "diseases.txt").write_text("toxicity\n", encoding="utf-8")
    return folder


def test_the_dictionaries_row_is_scratch_with_the_corpus_dictionaries(your_data, corpus):
    configs = your_data.row_configs("bc5cdr", str(corpus))
    dictionaries, scratch = configs["dictionaries"], configs["scratch"]
    assert dictionaries["model"].pop("lexicons") == {
        "Chemical": str(corpus / "chemicals.txt"),
        "Disease": str(corpus / "diseases.txt"),
    }
    assert dictionaries == scratch
    assert "lexicons" not in scratch["model"]


def test_the_char_lm_row_is_scratch_with_the_language_models(your_data, corpus, tmp_path):
    configs = your_data.row_configs("bc5cdr", str(corpus), char_lm=str(tmp_path / "lm"))
    char_lm, scratch = configs["char_lm"], configs["scratch"]
    assert char_lm["model"].pop("char_lm") == str(tmp_path / "lm")
    assert char_lm == scratch
    assert "char_lm" not in your_data.row_configs("bc5cdr", str(corpus))


def test_the_vectors_row_puts_the_domain_file_beside_the_recipe_vectors(your_data, corpus):
    configs = your_data.row_configs("bc5cdr", str(corpus), vectors="bio.bin")
    vectors, scratch = configs["vectors"], configs["scratch"]
    glove, domain = vectors["model"].pop("embeddings")
    assert glove == scratch["model"]["embeddings"] and domain == os.path.abspath("bio.bin")
    # Left to crftag: the sum of both files' sizes, where the recipe says GloVe's 50.
    assert vectors["model"].pop("word_dim") is None
    assert scratch["model"]["word_dim"] == 50
    scratch["model"] = {k: v for k, v in scratch["model"].items() if k != "embeddings"}
    scratch["model"].pop("word_dim")
    assert vectors == scratch


def test_the_all_row_has_every_resource_given(your_data, corpus, tmp_path):
    lm = str(tmp_path / "lm")
    configs = your_data.row_configs("bc5cdr", str(corpus), char_lm=lm, vectors="bio.bin")
    assert list(configs)[4:] == ["vectors", "dictionaries", "char_lm", "all"]
    every = configs["all"]["model"]
    scratch = configs["scratch"]["model"]
    for row in ("vectors", "dictionaries", "char_lm"):
        changed = {k: v for k, v in configs[row]["model"].items() if scratch.get(k, 0) != v}
        assert changed and every.items() >= changed.items()
    assert every["char_lm"] == lm and every["word_dim"] is None
    assert set(every["lexicons"]) == {"Chemical", "Disease"}
    Config.from_dict(configs["all"])  # a config crftag train takes
    only_dictionaries = your_data.row_configs("bc5cdr", str(corpus))
    assert "all" not in only_dictionaries  # one resource: its own row is all of them
    btc = your_data.row_configs("btc", str(tmp_path), char_lm=lm, vectors="tweets.bin")
    assert list(btc)[4:] == ["vectors", "char_lm", "all"]
    assert "lexicons" not in btc["all"]["model"]


def test_a_corpus_without_a_dictionary_has_no_dictionaries_row(
    your_data, tmp_path, monkeypatch, capsys
):
    assert list(your_data.row_configs("btc", str(tmp_path))) == [
        "scratch",
        "init_from",
        "label_map",
        "tune",
    ]
    argv = ["benchmarks/your_data.py", "btc", "--data", str(tmp_path)]
    argv += ["--rows", "dictionaries", "--out", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", argv)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:  # the script's main, as `python` runs it
        your_data.main()
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "error: btc has no row dictionaries (its rows: scratch, init_from, label_map, tune)\n"
    )


def test_conll03_has_the_recipe_itself_and_the_resource_rows_only(your_data, tmp_path):
    lm = str(tmp_path / "lm-news10mb")
    configs = your_data.row_configs("conll03", "../shared/data/conll2003", lm, "news.bin")
    assert list(configs) == ["scratch", "vectors", "char_lm", "all"]
    with open(your_data.RECIPE, encoding="utf-8") as handle:
        recipe = yaml.safe_load(handle)
    # The recipe as it is, tag scheme iob1 included; only its paths are made absolute.
    assert your_data.config_differences(configs["scratch"], recipe) == []
    assert configs["scratch"]["data"]["tag_scheme"] == "iob1"
    assert your_data.config_differences(configs["char_lm"], recipe) == ["model.char_lm"]


def test_configs_compare_by_setting_with_paths_by_file_name(your_data, corpus, tmp_path):
    config = your_data.row_configs("bc5cdr", str(corpus))["dictionaries"]
    elsewhere = your_data.row_configs("bc5cdr", str(tmp_path / "elsewhere"))["dictionaries"]
    assert your_data.config_differences(config, elsewhere) == []
    changed = dict(elsewhere, train=dict(elsewhere["train"], lr=0.1))
    assert your_data.config_differences(config, changed) == ["train.lr"]
    scratch = your_data.row_configs("bc5cdr", str(corpus))["scratch"]
    assert your_data.config_differences(config, scratch) == ["model.lexicons"]


def test_a_word_dim_left_to_the_files_matches_the_size_the_run_read(your_data, corpus):
    config = your_data.row_configs("bc5cdr", str(corpus), vectors="bio.bin")["vectors"]
    trained = dict(config, model=dict(config["model"], word_dim=150))  # as model.pt stores it
    assert your_data.config_differences(config, trained) == []
    scratch = your_data.row_configs("bc5cdr", str(corpus))["scratch"]
    differing = your_data.config_differences(scratch, dict(scratch, model=trained["model"]))
    assert sorted(differing) == ["model.embeddings", "model.word_dim"]


def _finished_run(folder, config: dict, lexicons: dict) -> str:
    """A run directory as `crftag train` leaves it, but for the weights: the checkpoint's config
    and dictionaries, and metrics.json with two epochs."""
    folder.mkdir()
    state = {
        "config": Config.from_dict(config).to_dict(),
        "vocabularies": {"lexicons": read_lexicons(lexicons).to_state()},
    }
    torch.save(state, folder / "model.pt")
    history = [{"epoch": 1, "seconds": 90.0}, {"epoch": 2, "seconds": 84.0}]
    scores = {"precision": 0.868, "recall": 0.787, "f1": 0.82554}
    entities = {"Chemical": dict(scores, f1=0.8431), "Disease": dict(scores, f1=0.8041)}
    entities |= {average: scores for average in ("micro", "macro", "weighted")}
    metrics = {"dev": 0.84456, "test": 0.82554, "best_epoch": 2, "history": history}
    metrics["test_scores"] = {"entities": entities}
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return str(folder)


def test_a_finished_run_is_recorded_as_the_row(your_data, corpus, tmp_path):
    config = your_data.row_configs("bc5cdr", str(corpus))["dictionaries"]
    run_dir = _finished_run(tmp_path / "run", config, config["model"]["lexicons"])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    row = your_data.recorded_row("dictionaries", config, run_dir, str(out_dir), "abc1234")
    measured = ("dev_f1", "test_f1", "test_precision", "test_f1_by_type", "minutes", "commit")
    assert {key: row[key] for key in measured} == {
        "dev_f1": 84.46,
        "test_f1": 82.55,
        "test_precision": 86.8,
        "test_f1_by_type": {"Chemical": 84.31, "Disease": 80.41},
        "minutes": 2.9,
        "commit": "abc1234",
    }
    assert row["command"].startswith("crftag train ")
    assert row["command"].endswith(f"dictionaries.yaml -o {out_dir / 'dictionaries'}")
    assert (out_dir / "dictionaries.yaml").exists()


def test_a_run_with_other_dictionary_entries_is_refused(your_data, corpus, tmp_path):
    config = your_data.row_configs("bc5cdr", str(corpus))["dictionaries"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "chemicals.txt").write_text("lithium\n", encoding="utf-8")
    (other / "diseases.txt").write_text("toxicity\n", encoding="utf-8")
    lexicons = {"Chemical": str(other / "chemicals.txt"), "Disease": str(other / "diseases.txt")}
    run_dir = _finished_run(tmp_path / "run", config, lexicons)
    with pytest.raises(CrftagError, match="the entries of model.lexicons differ"):
        your_data.recorded_row("dictionaries", config, run_dir, str(tmp_path), "abc1234")


def test_saving_a_row_keeps_the_other_rows_and_keys(your_data, tmp_path, monkeypatch):
    results = tmp_path / "your_data.json"
    rows = {"scratch": {"test_f1": 83.5}, "tune": {"test_f1": 84.22}}
    before = {"bc5cdr": {"title": "BC5CDR", "tune_minutes": 45.0, "rows": rows}}
    results.write_text(json.dumps(before), encoding="utf-8")
    monkeypatch.setattr(your_data.output, "RESULTS", str(tmp_path))
    entry = {"title": "BC5CDR", "rows": {"dictionaries": {"test_f1": 82.55}}}
    your_data.save("bc5cdr", entry, record=True)
    saved = json.loads(results.read_text(encoding="utf-8"))["bc5cdr"]
    assert saved["tune_minutes"] == 45.0
    assert saved["rows"] == rows | {"dictionaries": {"test_f1": 82.55}}


def test_the_dictionary_is_split_by_type_in_its_order(load_benchmark, tmp_path):
    corpora = load_benchmark("your_data_corpora")
    dictionary = tmp_path / "dict_core.txt"
    lines = "Chemical\tlithium\nDisease\tAbdominal Pain\nChemical\t( R)-alpha - methylhistamine\n"
    dictionary.write_text(lines, encoding="utf-8")
    types = {"Chemical": "chemicals.txt", "Disease": "diseases.txt"}
    assert corpora.split_dictionary(str(dictionary), types) == {
        "chemicals.txt": ["lithium", "( R)-alpha - methylhistamine"],
        "diseases.txt": ["Abdominal Pain"],
    }
    dictionary.write_text("Chemical\tlithium\nGene\tBRCA1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dict_core.txt:2: expected TYPE<tab>entry"):
        corpora.split_dictionary(str(dictionary), types)


def test_a_checkout_writes_out_only_the_folders_asked_for(load_benchmark, tmp_path):
    corpora = load_benchmark("your_data_corpora")
    origin = tmp_path / "origin"
    for path in ("data/a/train.tsv", "data/b/train.tsv"):
        (origin / path).parent.mkdir(parents=True, exist_ok=True)
        (origin / path).write_text("word\tO\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(origin)]
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    source = {"repository": str(origin), "commit": head.stdout.strip()}
    corpora.checkout(source, str(tmp_path / "sparse"), folders=["data/a"])
    assert (tmp_path / "sparse/data/a/train.tsv").exists()
    assert not (tmp_path / "sparse/data/b").exists()
    corpora.checkout(source, str(tmp_path / "whole"))
    assert (tmp_path / "whole/data/b/train.tsv").exists()


def test_a_row_carries_its_training_and_tagging_speeds(your_data, tmp_path, invoke):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    exported = ["export", "en-ner", str(run_dir / "model.pt"), "--format", "checkpoint"]
    assert invoke(exported).status == 0  # in this process: the speed measured is eval's
    (run_dir / "metrics.json").write_text(json.dumps({"tokens_per_second": 1234.6}))
    test_file = os.path.join(your_data.ROOT, "data", "ner_sample.dev.conll")
    measured = your_data.speeds(str(run_dir), test_file, threads=1)
    assert measured["train_tokens_per_second"] == 1235
    assert measured["tag_tokens_per_second"] > 0
    assert measured["tag_measured"].startswith("crftag eval of the test file, load included, 1 ")
