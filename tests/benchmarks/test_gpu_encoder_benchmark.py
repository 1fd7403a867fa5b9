"""benchmarks/gpu_encoder.py, the encoder section of `make bench-gpu`, on the CPU with the tiny
random BERT: extraction, fine-tuning steps, tagging and the teacher's labelling each measure
what they were given; a folder holding only an encoder's config and tokenizer (what travels to
a GPU machine) is given random weights; a section that fails is recorded, not raised."""

import json
import shutil

import pytest
import torch

pytest.importorskip("transformers")

from crftag.inference.teacher_store import open_store  # noqa: E402
from tests.conftest import SAMPLE_CONFIG, TINY_SETTINGS  # noqa: E402
from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402

OVERRIDES = [f"{key}={value}" for key, value in TINY_SETTINGS.items()]
SENTENCES = 8  # one chunk of each part, as 24 were: the same paths, a third of the calls


@pytest.fixture(scope="module")
def encoder_benchmark(load_benchmark):
    return load_benchmark("gpu_encoder")


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("encoders") / "bert")


@pytest.fixture(scope="module")
def measured(encoder_benchmark, bert, tmp_path_factory):
    """(the section's report, its scratch folder)."""
    scratch = tmp_path_factory.mktemp("scratch")
    section = encoder_benchmark.encoder_section(
        SAMPLE_CONFIG,
        OVERRIDES,
        torch.device("cpu"),
        str(scratch),
        600,
        folder=str(bert),
        steps=3,
        limit=SENTENCES,
    )
    return section, scratch


def test_each_part_measures_what_it_was_given(encoder_benchmark, measured):
    section, scratch = measured
    assert json.loads(json.dumps(section)) == section
    assert section["weights"] == "bert, as saved" and section["layers"] == 3
    extraction = section["extraction"]
    assert extraction["complete"] and extraction["sentences"] == SENTENCES
    assert extraction["words"] > 0 and extraction["words_per_s"] > 0
    finetune = section["finetune"]
    assert finetune["complete"] and finetune["steps"] == 3 and finetune["tokens"] > 0
    assert finetune["tokens_per_s"] == finetune["tokens"] / finetune["seconds"]
    assert finetune["projected_btc_epoch_s"] == 99933 / finetune["tokens_per_s"]
    assert [row["batch_size"] for row in section["tagging"]] == [1, 1024]
    for row in [*section["tagging"], section["labelling"]]:
        assert row["complete"] and row["sentences"] == SENTENCES
    words = section["labelling"]["words"]
    assert section["labelling"]["words_per_s"] == words / section["labelling"]["seconds"]
    lines = encoder_benchmark.summary(section)
    assert lines[0] == "encoder: bert (bert, as saved)"
    assert lines[-1].startswith("teacher labelling: ") and len(lines) == 6
    # The labelled text's last store, as distillation would read it: every sentence labelled.
    store = open_store(str(scratch / "stores" / "store-2"))
    assert words == sum(len(store.sentence(i)) for i in range(len(store)))
    assert all(len(store.viterbi(i)) == len(store.sentence(i)) for i in range(len(store)))


def test_the_results_table_shows_each_part_beside_its_target(load_benchmark, measured):
    section, _ = measured
    table = load_benchmark("gpu_table").gpu_tables({"encoder": section}).splitlines()
    assert table[0].startswith("The encoder on cpu: bert (bert, as saved), the mean of its last 3")
    rows = table[4:]
    assert [row.split(" | ")[0] for row in rows] == [
        "| frozen extraction (training sentences)",
        "| fine-tuning, 3 of 3 steps (16.0 sentences a step)",
        "| tagging, batch 1",
        "| tagging, batch 1024",
        "| labelling: label_text (crftag/inference/teacher_store.py)",
    ]
    assert all(
        f"{SENTENCES} of {SENTENCES} (all)" in row for row in rows if "fine-tuning" not in row
    )
    failed = {"device": "cuda", "error": "OSError: no model"}
    assert load_benchmark("gpu_table").gpu_tables({"encoder": failed}) == (
        "The encoder section on cuda: OSError: no model.\n"
    )


def test_an_encoder_without_weights_is_given_random_ones(encoder_benchmark, bert, tmp_path):
    carried = tmp_path / "carried"
    shutil.copytree(bert, carried, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    folder, weights = encoder_benchmark.encoder_folder(
        str(carried), torch.device("cpu"), str(tmp_path)
    )
    assert weights == "carried's architecture and tokenizer, random weights"
    from crftag.nn.transformer import load_encoder_files, load_encoder_weights

    built, saved = load_encoder_files(folder), load_encoder_files(str(bert))
    assert built.tokenizer == saved.tokenizer
    assert built.config == saved.config | {"_name_or_path": folder}
    random, pretrained = load_encoder_weights(folder), load_encoder_weights(str(bert))
    assert random.keys() == pretrained.keys()
    assert all(random[key].shape == pretrained[key].shape for key in random)


def test_a_failing_section_is_recorded_and_the_run_goes_on(load_benchmark, monkeypatch, tmp_path):
    gpu = load_benchmark("gpu")
    monkeypatch.setattr(gpu, "RUNS", str(tmp_path / "gpu"))
    encoder = {"config": SAMPLE_CONFIG, "seconds": 60, "folder": str(tmp_path / "missing")}
    section = gpu.encoder_report(encoder, OVERRIDES, torch.device("cpu"), 60)
    assert section["device"] == "cpu" and "missing" in section["error"]
    assert gpu.encoder_report(encoder, OVERRIDES, torch.device("cpu"), 5) == {
        "device": "cpu",
        "skipped": "5 s left of the time limit",
    }
