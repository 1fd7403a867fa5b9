"""The pretrained encoder and distillation on a device: benchmarks/gpu.py's ``encoder`` section.

With a time limit of its own, each part stopping cleanly at its share of it and saying how far
it got (``complete``):

1. frozen extraction: ``TransformerWords.extract`` on the config's training sentences, as
   training reads them before its first epoch (the teachers' settings: the mean of the last 4
   layers and of each word's subwords), words/s;
2. fine-tuning: ``train_step`` of the config with ``model.transformer_finetune: true`` for a
   few hundred steps, tokens/s, and what that projects for one epoch of a corpus of the BTC's
   size (6,338 sentences, 99,933 tokens) at the same rate;
3. tagging: the tagger those steps trained, on the config's test sentences at batch 1 and 1024;
4. labelling: the rate at which that tagger, read back from its model file as a distillation
   teacher, labels text into its store (``label_text``: its posteriors, Viterbi paths and
   transition marginals, written as shards on disk).

On a CUDA device the encoder is all-MiniLM-L6-v2; a folder holding only an encoder's config and
tokenizer (what benchmarks/gpu_carry.sh carries: the weights are too large to travel) is given
random weights of that architecture, whose speed is the pretrained one's. With ``--device cpu``
the encoder is the tiny random BERT of the tests: a smoke run of the path, not a result.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.gpu_profile import step_batches  # noqa: E402
from crftag.config import load_config  # noqa: E402
from crftag.inference.loading import load  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.inference.teacher_store import SHARD_SENTENCES, label_text  # noqa: E402
from crftag.modelfiles.checkpoint import save_model  # noqa: E402
from crftag.nn.transformer import (  # noqa: E402
    TransformerWords,
    load_encoder_files,
    load_encoder_weights,
)
from crftag.training.checks import check_config  # noqa: E402
from crftag.training.corpus import read_training_files  # noqa: E402
from crftag.training.step import train_step  # noqa: E402

MINILM = os.path.join(ROOT, "runs", "models", "all-MiniLM-L6-v2")
FINETUNE_CONFIG = os.path.join(ROOT, "configs", "conll03.yaml")  # the BTC rows' recipe
BTC_TRAINING = {"sentences": 6338, "tokens": 99933}  # docs/results.md, "Your own data"
FINETUNE_STEPS = 300
TAG_BATCHES = (1, 1024)
LABEL_BATCH = 64  # label_text's default
# Each part's share of the section's time, in order; a part done early leaves its rest to the
# parts after it.
SHARES = {"extraction": 0.2, "finetune": 0.4, "tagging": 0.2, "labelling": 0.2}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _tokens(sentences) -> list[list[str]]:
    return [list(sentence.tokens) for sentence in sentences]


def in_chunks(
    work, sentences: list, chunk: int, device: torch.device, stop: float, unit: str = "words"
) -> dict:
    """``work(part)`` over ``sentences`` a chunk at a time, in order, until done or past ``stop``
    (perf_counter seconds; one chunk at least), timed on the device's clock; ``work`` returns
    the words (``unit``) it counted. The row of sentences and words done and the seconds."""
    done, words, seconds = 0, 0, 0.0
    while done < len(sentences) and (not done or time.perf_counter() < stop):
        part = sentences[done : done + chunk]
        _synchronize(device)
        begin = time.perf_counter()
        words += work(part)
        _synchronize(device)
        seconds += time.perf_counter() - begin
        done += len(part)
    return {
        "device": str(device),
        "sentences": done,
        "of_sentences": len(sentences),
        "complete": done == len(sentences),
        unit: words,
        "seconds": seconds,
        f"{unit}_per_s": words / seconds if seconds else None,
    }


# The encoder's folder.


def encoder_folder(folder: str | None, device: torch.device, scratch: str) -> tuple[str, str]:
    """(a folder with weights, what they are): ``folder`` as saved if it holds weights; random
    weights of its architecture if it holds only a config and tokenizer; without ``folder``,
    all-MiniLM-L6-v2 on a CUDA device and the tests' tiny random BERT on the CPU."""
    if folder is None and device.type != "cuda":
        import pathlib

        from tests.nn.tiny_bert import save_tiny_bert  # the tests' tiny encoder, not a copy

        return str(save_tiny_bert(pathlib.Path(scratch) / "tiny-bert")), "tiny random BERT"
    folder = folder or MINILM
    name = os.path.basename(os.path.normpath(folder))
    if any(os.path.exists(os.path.join(folder, weights)) for weights in WEIGHT_FILES):
        return folder, f"{name}, as saved"
    return random_weights(folder, os.path.join(scratch, f"{name}-random")), (
        f"{name}'s architecture and tokenizer, random weights"
    )


def random_weights(folder: str, destination: str) -> str:
    """``destination``: the encoder that ``folder``'s config describes, with random weights
    (seed 0), beside ``folder``'s tokenizer."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(destination)
    for name in os.listdir(folder):
        if name != "config.json" and os.path.isfile(os.path.join(folder, name)):
            shutil.copy(os.path.join(folder, name), destination)
    return destination


def encoder_settings(folder: str) -> dict[str, object]:
    """The teachers' settings (the Makefile's ENCODER_SETTINGS), the layers capped at what the
    encoder has (its embeddings and each layer)."""
    import json

    with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
        layers = json.load(handle)["num_hidden_layers"] + 1
    return {
        "model.transformer": os.path.abspath(folder),
        "model.transformer_layers": min(4, layers),
        "model.transformer_pooling": "mean",
    }


# 1. Frozen extraction.


def extraction(
    folder: str, settings: dict, sentences: list, device: torch.device, deadline: float
) -> dict:
    """Words/s of ``TransformerWords.extract`` over ``sentences``, read in chunks in file order
    until done or ``deadline`` (perf_counter seconds); a warm-up chunk first, untimed."""
    module = TransformerWords(
        load_encoder_files(folder),
        layers=settings["model.transformer_layers"],
        pooling=settings["model.transformer_pooling"],
    )
    module.encoder.load_state_dict(load_encoder_weights(folder))
    module.to(device).eval()
    module.extract(sentences[:64], show_progress=False)  # warm-up: kernels, allocator
    module.cache = None

    def extract(part) -> int:  # the words of the sentences not read before, as training counts
        fresh = {tuple(tokens) for tokens in part} - set(module.cache or {})
        module.extract(part, show_progress=False)
        return sum(map(len, fresh))

    return in_chunks(extract, sentences, 2048, device, deadline)


# 2. Fine-tuning.


def finetune(config, device: torch.device, deadline: float, steps: int) -> tuple[dict, Tagger]:
    """Tokens/s of ``steps`` training steps of ``config`` (its encoder fine-tuned), the first
    batches of its first epoch (fewer where an epoch has fewer), built beforehand; one step
    untimed first. Stops at ``deadline``. Returns the row and the tagger those steps trained."""
    started = time.perf_counter()
    run, batches, build_seconds = step_batches(config, device, steps + 1)
    steps = len(batches) - 1
    setup = time.perf_counter() - started
    run.model.train()
    train_step(run.network, run.optimizer, batches[0].to(device), config.train)
    _synchronize(device)
    done, tokens, sentences = 0, 0, 0
    begin = time.perf_counter()
    for batch in batches[1:]:
        if done and time.perf_counter() >= deadline:
            break
        train_step(run.network, run.optimizer, batch.to(device), config.train)
        done, tokens = done + 1, tokens + int(batch.lengths.sum())
        sentences += len(batch.lengths)
    _synchronize(device)
    seconds = time.perf_counter() - begin
    tokens_per_s = tokens / seconds if done else None
    row = {
        "device": str(device),
        "steps": done,
        "of_steps": steps,
        "complete": done == steps,
        "sentences_per_step": sentences / done if done else None,
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens_per_s,
        "setup_s": setup,
        "seconds_to_build_a_batch": build_seconds,
        "projected_btc_epoch_s": BTC_TRAINING["tokens"] / tokens_per_s if done else None,
    }
    return row, Tagger.from_loaded(run.loaded({}), device)


# 3. Tagging.


def tagging(tagger: Tagger, sentences: list, device: torch.device, deadline: float) -> list[dict]:
    """Tokens/s of ``Tagger.tag`` at each of TAG_BATCHES, each given an equal share of the time
    to ``deadline``: sentences tagged in chunks until done or out of time; a warm-up first."""
    rows = []
    for number, batch_size in enumerate(TAG_BATCHES):
        share = (deadline - time.perf_counter()) / (len(TAG_BATCHES) - number)
        stop = time.perf_counter() + share
        warm_up = sentences[: min(64, 8 * batch_size)]
        tagger.tag(warm_up, batch_size=batch_size)  # kernels, caches, allocator

        def tag(part, batch_size=batch_size) -> int:
            tagger.tag(part, batch_size=batch_size)
            return sum(map(len, part))

        row = in_chunks(tag, sentences, max(batch_size, 32), device, stop, "tokens")
        rows.append({"batch_size": batch_size, **row})
    return rows


# 4. Labelling.


def labelling(teacher, sentences: list, device: torch.device, scratch: str, stop: float) -> dict:
    """Words/s of ``label_text``, the distillation store of ``teacher``'s posteriors, on
    ``sentences`` written out as text (a sentence a line), a store of SHARD_SENTENCES of them
    at a time until done or past ``stop``; a warm-up store first. The words are those the
    stores hold (the text read as distillation reads it: split into sentences and tokens)."""
    stores = os.path.join(scratch, "stores")
    shutil.rmtree(stores, ignore_errors=True)  # a finished store would be reused, not labelled
    os.makedirs(stores)
    count = 0

    def label(part) -> int:
        nonlocal count
        count += 1
        text = os.path.join(stores, f"text-{count}.txt")
        with open(text, "w", encoding="utf-8") as handle:
            handle.writelines(" ".join(tokens) + "\n" for tokens in part)
        store = label_text(
            teacher,
            [text],
            os.path.join(stores, f"store-{count}"),
            exclude=set(),
            batch_size=LABEL_BATCH,
            show_progress=False,
        )
        return sum(len(store.sentence(i)) for i in range(len(store)))

    label(sentences[:64])  # warm-up: kernels, allocator
    return {
        "what": "label_text (crftag/inference/teacher_store.py)",
        "batch_size": LABEL_BATCH,
        **in_chunks(label, sentences, SHARD_SENTENCES, device, stop),
    }


# The section.


def encoder_section(
    config_path: str,
    overrides: list[str],
    device: torch.device,
    scratch: str,
    seconds: float,
    *,
    folder: str | None = None,
    steps: int = FINETUNE_STEPS,
    limit: int | None = None,
) -> dict:
    """Every part in order within ``seconds``, each to its share (SHARES) of the time left;
    ``config_path`` and ``overrides`` give the corpus (its training, dev and test files; the
    first ``limit`` sentences of each) and the tagger under the encoder. Returns the section's
    report."""
    started = time.perf_counter()
    end = started + seconds
    os.makedirs(scratch, exist_ok=True)
    given = folder
    folder, weights = encoder_folder(folder, device, scratch)
    settings = encoder_settings(folder)
    tuned = [*overrides, *(f"{key}={value}" for key, value in settings.items())]
    config = check_config(load_config(config_path, [*tuned, "model.transformer_finetune=true"]))
    report = {
        "encoder": os.path.basename(os.path.normpath(given or folder)),
        "weights": weights,
        "layers": settings["model.transformer_layers"],
        "pooling": settings["model.transformer_pooling"],
        "config": os.path.relpath(config_path, ROOT) if os.path.isabs(config_path) else config_path,
        "device": str(device),
        "seconds": seconds,
    }
    parts = list(SHARES)

    def deadline(part: str) -> float:
        left = end - time.perf_counter()
        later = sum(SHARES[name] for name in parts[parts.index(part) :])
        return time.perf_counter() + max(0.0, left) * SHARES[part] / later

    train = [tokens for _, read in read_training_files(config) for tokens in _tokens(read)]
    train = train[:limit]
    report["extraction"] = extraction(folder, settings, train, device, deadline("extraction"))
    _say(report["extraction"])
    report["finetune"], tagger = finetune(config, device, deadline("finetune"), steps)
    _say(report["finetune"])
    test = _tokens(config.data.read(config.data.test))[:limit]
    report["tagging"] = tagging(tagger, test, device, deadline("tagging"))
    _say(report["tagging"])
    model_path = os.path.join(scratch, "teacher.pt")
    save_model(model_path, tagger.loaded)  # a teacher is read from its model file
    text = _tokens(config.data.read(config.data.dev))[:limit]
    teacher = load(model_path, device)
    report["labelling"] = labelling(teacher, text, device, scratch, deadline("labelling"))
    _say(report["labelling"])
    report["wall_s"] = time.perf_counter() - started
    return report


def _say(row) -> None:
    import json

    print(json.dumps(row), file=sys.stderr, flush=True)


def summary(section: dict) -> list[str]:
    """The figures the targets are about, a line each."""
    if "extraction" not in section:
        return [f"encoder: {section.get('error') or section.get('skipped')}"]

    def rate(value) -> str:
        return "nothing measured" if value is None else f"{value:,.0f}"

    finetune = section["finetune"]
    projected = finetune["projected_btc_epoch_s"]
    lines = [
        f"encoder: {section['encoder']} ({section['weights']})",
        f"frozen extraction: {rate(section['extraction']['words_per_s'])} words/s",
        f"fine-tuning: {rate(finetune['tokens_per_s'])} tokens/s over {finetune['steps']} steps,"
        f" a BTC-sized epoch projected at {rate(projected)} s",
    ]
    lines += [
        f"encoder tagging batch {row['batch_size']}: {rate(row['tokens_per_s'])} tokens/s"
        for row in section["tagging"]
    ]
    lines.append(f"teacher labelling: {rate(section['labelling']['words_per_s'])} words/s")
    return lines
