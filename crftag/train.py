"""Training: read the corpus, build vocabularies, fit the BiLSTM-CRF, keep the best model on dev.

:func:`fit` is the loop and yields one :class:`EpochResult` per epoch; :func:`train` runs it,
reports each epoch on stderr and writes the checkpoint and ``metrics.json`` into the run directory.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from tqdm import tqdm

from crftag.batching import Vocabularies, bucketed_batches, collate, encode
from crftag.checkpoint import FILE_NAME, LoadedModel, build_model, save_model
from crftag.config import Config
from crftag.conll import ColumnSpec, Sentence, detect_format, open_binary, read_columns
from crftag.errors import CrftagError
from crftag.evaluate import score
from crftag.schemes import convert, detect_scheme, is_span_tagset
from crftag.tagger import Tagger
from crftag.vocab import Vocabulary

__all__ = ["EpochResult", "column_spec", "fit", "read_corpus", "train"]


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    loss: float  # mean NLL per training sentence
    dev_score: float | None  # entity micro F1 (spans) or token accuracy, in [0, 1]
    best: bool  # this epoch's model is the best so far and was saved
    seconds: float
    tokens_per_second: float
    learning_rate: float


def column_spec(config: Config, path: str) -> ColumnSpec:
    """How to read ``path`` under the config's column settings."""
    file_format = config.data.format if config.data.format != "auto" else detect_format(path)
    return ColumnSpec.for_format(file_format, config.data.word_column, config.data.tag_column)


def read_corpus(path: str, spec: ColumnSpec) -> list[Sentence]:
    """All labelled sentences of a file; an empty file is an error."""
    with open_binary(path) as stream:
        sentences = list(read_columns(stream, path, spec))
    if not sentences:
        raise CrftagError(f"{path}: no sentences found (empty file, or only -DOCSTART- lines?)")
    return sentences


def _resolve_schemes(config: Config, sentences: list[Sentence], path: str) -> tuple[str, str]:
    """(the files' tag scheme, the scheme the model trains in)."""
    declared = config.data.tag_scheme
    data_scheme = detect_scheme(s.tags for s in sentences) if declared == "auto" else declared
    if data_scheme != "none" and not is_span_tagset(t for s in sentences for t in s.tags):
        bad = next(t for s in sentences for t in s.tags if t != "O" and "-" not in t)
        raise CrftagError(
            f"{path}: tag {bad!r} is not a span tag (B-X, I-X, E-X, S-X or O) but data.tag_scheme "
            f"is {declared}; set data.tag_scheme: none for tags such as part of speech"
        )
    train_scheme = "none" if data_scheme == "none" else config.data.train_scheme
    return data_scheme, train_scheme


def build_vocabularies(
    config: Config, sentences: list[Sentence], train_scheme: str
) -> Vocabularies:
    words: Counter[str] = Counter()
    chars: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    vocabularies = Vocabularies(
        words=Vocabulary([]),
        chars=Vocabulary([]),
        tags=Vocabulary([], has_unknown=False),
        lowercase=config.vocab.lowercase,
        normalize_digits=config.vocab.normalize_digits,
    )
    for sentence in sentences:
        words.update(vocabularies.word_key(token) for token in sentence.tokens)
        for token in sentence.tokens:
            chars.update(token)
        tags.update(sentence.tags)
    vocabularies.words = Vocabulary.build(words, min_freq=config.vocab.min_freq)
    vocabularies.chars = Vocabulary.build(chars)
    vocabularies.tags = Vocabulary(sorted(tags), has_unknown=False)
    return vocabularies


def fit(
    config: Config,
    output_dir: str,
    *,
    device: torch.device,
    progress: bool = True,
) -> Iterator[EpochResult]:
    """Train, saving the best-on-dev model to ``output_dir/model.pt``; yield each epoch."""
    settings = config.train
    random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)

    train_sentences = read_corpus(config.data.train, column_spec(config, config.data.train))
    dev_sentences = (
        read_corpus(config.data.dev, column_spec(config, config.data.dev))
        if config.data.dev
        else []
    )
    data_scheme, train_scheme = _resolve_schemes(config, train_sentences, config.data.train)
    train_tags = [
        s.tags if train_scheme == "none" else tuple(convert(s.tags, train_scheme))
        for s in train_sentences
    ]
    train_sentences = [
        Sentence(s.tokens, tags, s.line)
        for s, tags in zip(train_sentences, train_tags, strict=True)
    ]
    vocabularies = build_vocabularies(config, train_sentences, train_scheme)
    encoded = [encode(s.tokens, vocabularies, s.tags) for s in train_sentences]
    lengths = [len(s.tokens) for s in train_sentences]
    total_tokens = sum(lengths)

    model = build_model(config, vocabularies, train_scheme).to(device)
    optimizer = _optimizer(config, model)
    loaded = LoadedModel(model, vocabularies, config, data_scheme, train_scheme, metrics={})
    tagger = Tagger(loaded, device)
    checkpoint = os.path.join(output_dir, FILE_NAME)
    best_score = -math.inf
    epochs_without_gain = 0

    for epoch in range(1, settings.epochs + 1):
        started = time.perf_counter()
        learning_rate = _learning_rate(config, epoch)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        model.train()
        total_loss = torch.zeros((), device=device)
        batches = bucketed_batches(lengths, settings.batch_size, rng)
        for rows in tqdm(
            batches,
            desc=f"epoch {epoch}",
            unit="batch",
            leave=False,
            file=sys.stderr,
            disable=None if progress else True,  # None: a bar on terminals, none in logs
        ):
            batch = collate([encoded[i] for i in rows]).to(device)
            loss = model.loss(batch, reduction=settings.loss_reduction)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if settings.clip_grad_norm:
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip_grad_norm)
            optimizer.step()
            total_loss += loss.detach() * (len(rows) if settings.loss_reduction == "mean" else 1)
        train_seconds = time.perf_counter() - started

        dev_score = None
        if dev_sentences:
            predicted = tagger.tag([s.tokens for s in dev_sentences])
            scores = score([s.tags for s in dev_sentences], predicted, spans=tagger.spans)
            dev_score = _headline(scores)
        improved = dev_score is None or dev_score > best_score
        if improved:
            best_score = dev_score if dev_score is not None else best_score
            epochs_without_gain = 0
            loaded.metrics = {"epoch": epoch, "dev": dev_score}
            save_model(checkpoint, loaded)
        else:
            epochs_without_gain += 1
        yield EpochResult(
            epoch=epoch,
            loss=float(total_loss) / len(train_sentences),
            dev_score=dev_score,
            best=improved,
            seconds=time.perf_counter() - started,
            tokens_per_second=total_tokens / train_seconds,
            learning_rate=learning_rate,
        )
        if settings.patience and epochs_without_gain >= settings.patience:
            break


def _headline(scores: dict) -> float:
    """The one number models are selected by: entity micro F1, or token accuracy."""
    entities = scores.get("entities")
    return entities["micro"]["f1"] if entities else scores["accuracy"]


def _optimizer(config: Config, model: torch.nn.Module) -> torch.optim.Optimizer:
    settings = config.train
    if settings.optimizer == "adam":
        return torch.optim.Adam(
            model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
        )
    return torch.optim.SGD(
        model.parameters(),
        lr=settings.lr,
        momentum=settings.momentum,
        weight_decay=settings.weight_decay,
    )


def _learning_rate(config: Config, epoch: int) -> float:
    settings = config.train
    if settings.optimizer == "sgd":
        return settings.lr / (1.0 + settings.lr_decay * (epoch - 1))
    return settings.lr


def check_output_dir(output_dir: str) -> None:
    """Fail before any work if the run directory cannot be written."""
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as error:
        raise CrftagError(
            f"{output_dir}: cannot create the output directory ({error.strerror})"
        ) from None
    if not os.access(output_dir, os.W_OK):
        raise CrftagError(f"{output_dir}: output directory is not writable")


def check_data_files(config: Config) -> None:
    for name in ("train", "dev", "test"):
        path = getattr(config.data, name)
        if path is not None and not os.path.isfile(path):
            what = "is a directory" if os.path.isdir(path) else "no such file"
            raise CrftagError(f"data.{name}: {path}: {what}")


def train(config: Config, output_dir: str, *, device: torch.device, progress: bool = True) -> dict:
    """Train and write ``output_dir/model.pt`` and ``output_dir/metrics.json``; return metrics."""
    check_data_files(config)
    check_output_dir(output_dir)
    history = []
    for result in fit(config, output_dir, device=device, progress=progress):
        history.append(result)
        dev = f"  dev {100 * result.dev_score:6.2f}" if result.dev_score is not None else ""
        mark = "  *" if result.best and result.dev_score is not None else ""
        print(
            f"epoch {result.epoch:3d}  loss {result.loss:9.4f}{dev}  lr {result.learning_rate:.4g}"
            f"  {result.seconds:6.1f}s  {result.tokens_per_second:8.0f} tok/s{mark}",
            file=sys.stderr,
            flush=True,
        )
    metrics: dict = {
        "epochs": len(history),
        "best_epoch": max((r for r in history if r.best), key=lambda r: r.epoch).epoch,
        "dev": max((r.dev_score for r in history if r.dev_score is not None), default=None),
        "train_seconds": sum(r.seconds for r in history),
        "device": str(device),
    }
    if config.data.test:
        tagger = Tagger.load(output_dir, device)
        test = read_corpus(config.data.test, column_spec(config, config.data.test))
        predicted = tagger.tag([s.tokens for s in test])
        test_scores = score([s.tags for s in test], predicted, spans=tagger.spans)
        metrics["test"] = _headline(test_scores)
        metrics["test_scores"] = test_scores
        print(f"test {100 * metrics['test']:6.2f}", file=sys.stderr)
    with open(os.path.join(output_dir, "metrics.json"), "w", encoding="utf-8") as handle:
        json.dump(metrics, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return metrics
