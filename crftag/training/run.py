"""Training: read the corpus, build vocabularies, fit the BiLSTM-CRF, keep the best model on dev.

:func:`fit` is the loop and yields one :class:`EpochResult` per epoch; :func:`train` runs it,
reports each epoch on stderr and writes the checkpoint and ``metrics.json`` into the run directory.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from crftag.checkpoint import (
    FILE_NAME,
    FORMAT_VERSION,
    LoadedModel,
    build_model,
    read_checkpoint,
    save_model,
    write_atomically,
)
from crftag.config import Config
from crftag.data.batching import (
    Vocabularies,
    bucketed_batches,
    build_batch,
    document_batches,
    encode,
)
from crftag.data.conll import (
    Sentence,
    document_keys,
    open_binary,
    read_columns,
    read_corpus,
)
from crftag.data.schemes import convert, detect_scheme, is_span_tagset
from crftag.data.vectors import Embeddings, check_embeddings, read_embeddings
from crftag.data.vocab import Vocabulary
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.evaluate import score
from crftag.inference.tagger import Tagger
from crftag.nn.taggers import BiLSTMCRF
from crftag.training.averaging import WeightAverage
from crftag.training.distributed import Group, join, leave
from crftag.training.optimizers import SparseSGD

__all__ = ["EpochResult", "TrainingInterrupted", "fit", "train"]

RESUME_FILE = "resume.pt"


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    loss: float  # mean NLL per training sentence
    dev_score: float | None  # entity micro F1 (spans) or token accuracy, in [0, 1]
    best: bool  # this epoch's model is the best so far and was saved
    seconds: float
    tokens_per_second: float
    learning_rate: float
    averaged: bool = False  # dev score and saved model are the weight average (train.average_from)


def training_files(config: Config) -> list[str]:
    """``data.train`` as a list: one file, or several read one after the other."""
    train = config.data.train
    return list(train) if isinstance(train, list) else [train]


def read_training_files(config: Config) -> list[tuple[str, list[Sentence]]]:
    """(path, its sentences) for each training file, in order."""
    return [
        (path, read_corpus(path, config.data.column_spec(path))) for path in training_files(config)
    ]


def _resolve_schemes(config: Config, files: list[tuple[str, list[Sentence]]]) -> tuple[str, str]:
    """(the files' tag scheme, the scheme the model trains in)."""
    declared = config.data.tag_scheme
    sentences = [s for _, file_sentences in files for s in file_sentences]
    data_scheme = detect_scheme(s.tags for s in sentences) if declared == "auto" else declared
    if data_scheme != "none" and not is_span_tagset(t for s in sentences for t in s.tags):
        path, bad = next(
            (path, t)
            for path, file_sentences in files
            for s in file_sentences
            for t in s.tags
            if t != "O" and "-" not in t
        )
        line = _line_of_tag(config, path, bad)
        raise CrftagError(
            f"{path}:{line}: tag {bad!r} is not a span tag (B-X, I-X, E-X, S-X or O) but "
            f"data.tag_scheme is {declared}; set data.tag_scheme: none for tags such as part of "
            "speech"
        )
    train_scheme = "none" if data_scheme == "none" else config.data.train_scheme
    return data_scheme, train_scheme


def _line_of_tag(config: Config, path: str, tag: str) -> int:
    """The line of ``tag``'s first occurrence in ``path`` (read again, keeping the lines: only
    an error message needs it)."""
    with open_binary(path) as stream:
        for sentence in read_columns(stream, path, config.data.column_spec(path), keep_raw=True):
            if tag in sentence.tags:
                return sentence.line + sentence.token_rows[sentence.tags.index(tag)]
    raise AssertionError(f"{tag!r} not found again in {path}")


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
        feature_buckets=config.model.feature_buckets if config.model.encoder == "features" else 0,
    )
    for sentence in sentences:
        words.update(vocabularies.word_key(token) for token in sentence.tokens)
        for token in sentence.tokens:
            chars.update(token)
        tags.update(sentence.tags)
    vocabularies.words = Vocabulary.build(words, min_freq=config.vocab.min_freq)
    if len(vocabularies.words) > config.vocab.max_size:
        raise CrftagError(
            f"{', '.join(training_files(config))}: the training vocabulary has "
            f"{len(vocabularies.words)} words, "
            f"more than vocab.max_size={config.vocab.max_size}; raise vocab.max_size or "
            "vocab.min_freq"
        )
    vocabularies.chars = Vocabulary.build(chars)
    vocabularies.tags = Vocabulary(sorted(tags), has_unknown=False)
    return vocabularies


@dataclass
class Progress:
    """Where a training run stands: with the weights and optimizer state, all that resuming needs.

    The learning-rate schedule is a function of ``epoch`` alone, so it needs no state of its own.
    """

    epoch: int = 1  # the epoch under way, 1-based
    step: int = 0  # batches of it already done
    batch_order_state: tuple | None = None  # the batch-order generator at the epoch's start
    epoch_loss: float = 0.0  # summed loss of the batches done
    epoch_seconds: float = 0.0  # time spent on the epoch before an interruption
    best_score: float = -math.inf
    epochs_without_gain: int = 0
    history: list = field(default_factory=list)  # one EpochResult dict per finished epoch


def fit(
    config: Config,
    output_dir: str,
    *,
    device: torch.device,
    progress: bool = True,
    resume: dict | None = None,
    stop_requested: Callable[[], int | None] = lambda: None,
    group: Group = Group(),
) -> Iterator[EpochResult]:
    """Train, keeping the best-on-dev model in ``output_dir/model.pt``; yield each epoch.

    ``resume`` is the content of a ``resume.pt`` to continue from. ``stop_requested`` is polled
    after every batch; when it returns a signal number, the run writes ``resume.pt`` and raises
    :class:`TrainingInterrupted`. ``resume.pt`` is also written after every epoch, so a run killed
    outright can resume from its last finished epoch.

    In a ``group`` of several processes (``torchrun``), rank 0 builds the vocabularies and sends
    them to the others, each rank trains on its own share of every epoch's batches with
    gradients averaged by DistributedDataParallel, and rank 0 alone evaluates and writes files
    while the others wait for its verdict.
    """
    settings = config.train
    if config.model.encoder == "features" and group.world_size > 1:
        # DistributedDataParallel all-reduces dense gradients; the feature CRF's are sparse.
        raise CrftagError(
            "model.encoder features trains in one process (minutes on a CPU); run it without "
            "torchrun"
        )
    train_files = read_training_files(config)
    train_sentences = [s for _, file_sentences in train_files for s in file_sentences]
    # (file, document) of each sentence: document context pools over one document of one file.
    documents = [
        key
        for number, (_, file_sentences) in enumerate(train_files)
        for key in document_keys(file_sentences, number)
    ]
    dev_sentences = (
        read_corpus(config.data.dev, config.data.column_spec(config.data.dev))
        if config.data.dev
        else []
    )
    dev_documents = document_keys(dev_sentences)
    if resume is None:
        data_scheme, train_scheme = _resolve_schemes(config, train_files)
    else:
        data_scheme, train_scheme = resume["data_scheme"], resume["train_scheme"]
    train_sentences = [
        Sentence(
            s.tokens,
            s.tags if train_scheme == "none" else tuple(convert(s.tags, train_scheme)),
            s.line,
        )
        for s in train_sentences
    ]
    embeddings = None
    if resume is not None:
        vocabularies = Vocabularies.from_state(resume["vocabularies"])
    elif group.main:
        vocabularies = build_vocabularies(config, train_sentences, train_scheme)
        if config.model.embeddings is not None:
            embeddings = read_embeddings(
                config.model.embeddings, progress=progress, max_words=config.vocab.max_size
            )
            _extend_with_embeddings(vocabularies, embeddings, config.vocab.embedding_words)
    if resume is None and group.world_size > 1:
        # Built once, on rank 0, so every rank indexes words and tags identically.
        shared = group.broadcast(vocabularies.to_state() if group.main else None)
        vocabularies = Vocabularies.from_state(shared)
    encoded = [encode(s.tokens, vocabularies, s.tags) for s in train_sentences]
    lengths = [len(s.tokens) for s in train_sentences]
    total_tokens = sum(lengths)

    torch.manual_seed(settings.seed)
    batch_order = random.Random(settings.seed)
    model = build_model(config, vocabularies, train_scheme)
    if embeddings is not None:
        _initialise_embeddings(model, vocabularies, embeddings)
    train_words = torch.cat([e.words for e in encoded])
    prepare_embeddings(model, config, train_words)
    model.to(device)
    # Words seen once in training: the ones word dropout turns into the unknown word.
    word_counts = torch.bincount(train_words, minlength=len(vocabularies.words))
    singletons = word_counts == 1
    optimizer = _optimizer(config, model)
    average = WeightAverage(model)
    state = Progress(batch_order_state=batch_order.getstate())
    if resume is not None:
        model.load_state_dict(resume["model"])
        optimizer.load_state_dict(resume["optimizer"])
        if "average" in resume:  # absent from resume files of older versions
            average.load_state_dict(resume["average"])
        state = Progress(**resume["progress"])
        torch.set_rng_state(resume["torch_rng"])
    # Every rank steps through the same module; DDP averages gradients in backward() and, at
    # construction, gives every rank rank 0's initial weights (its embeddings included).
    # Buffers (the fixed embedding rows) never change in training: sent once here, rather than
    # by DistributedDataParallel before every forward.
    group.broadcast_tensors(list(model.buffers()))
    network = (
        model if group.world_size == 1 else DistributedDataParallel(model, broadcast_buffers=False)
    )
    loaded = LoadedModel(model, vocabularies, config, data_scheme, train_scheme, metrics={})
    tagger = Tagger(loaded, device)
    checkpoint = os.path.join(output_dir, FILE_NAME)
    resume_path = os.path.join(output_dir, RESUME_FILE)

    def save_progress() -> None:
        if group.main:
            _save_resume(resume_path, loaded, optimizer, average, state)

    while state.epoch <= settings.epochs:
        if settings.patience and state.epochs_without_gain >= settings.patience:
            break
        epoch = state.epoch
        started = time.perf_counter()
        learning_rate = _learning_rate(config, epoch)
        for parameters in optimizer.param_groups:
            parameters["lr"] = learning_rate * parameters.get("lr_scale", 1.0)
        model.train()
        batch_order.setstate(state.batch_order_state)
        if config.model.document_context:
            order = document_batches(documents, settings.batch_size, batch_order)
        else:
            order = bucketed_batches(lengths, settings.batch_size, batch_order)
        batches = group.shard(order)
        epoch_loss = torch.tensor(state.epoch_loss, device=device)
        bar = tqdm(
            total=len(batches),
            initial=state.step,
            desc=f"epoch {epoch}",
            unit="batch",
            leave=False,
            file=sys.stderr,
            # None: a bar on terminals, none in logs; and one bar per run, rank 0's.
            disable=None if progress and group.main else True,
        )
        with bar:
            for rows in batches[state.step :]:
                batch = build_batch(
                    [train_sentences[i].tokens for i in rows],
                    vocabularies,
                    encoded=[encoded[i] for i in rows],
                    documents=[documents[i] for i in rows]
                    if config.model.document_context
                    else None,
                )
                if settings.word_dropout > 0:
                    dropped = singletons[batch.words] & (
                        torch.rand(batch.words.shape) < settings.word_dropout
                    )
                    batch.words = batch.words.masked_fill(dropped, 1)  # 1 = unknown word
                batch = batch.to(device)
                loss = network(batch, reduction=settings.loss_reduction, amp=settings.amp)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if settings.clip_grad_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip_grad_norm)
                optimizer.step()
                scale = len(rows) if settings.loss_reduction == "mean" else 1
                epoch_loss += loss.detach() * scale
                state.step += 1
                bar.update()
                signal_number = group.any_signal(stop_requested())
                if signal_number is not None:
                    state.epoch_loss = float(epoch_loss)
                    state.epoch_seconds += time.perf_counter() - started
                    save_progress()
                    raise TrainingInterrupted(
                        signal_number,
                        f"interrupted at epoch {epoch}, batch {state.step} of {len(batches)}; "
                        f"continue with: crftag train --resume {output_dir}",
                    )
        train_seconds = state.epoch_seconds + time.perf_counter() - started

        if settings.average_from and epoch >= settings.average_from:
            average.add()  # every rank holds the same weights, so the same mean
        with average.applied():
            dev_score = None
            if dev_sentences and group.main:
                predicted = tagger.tag(
                    [s.tokens for s in dev_sentences],
                    documents=dev_documents,
                )
                scores = score([s.tags for s in dev_sentences], predicted, spans=tagger.spans)
                dev_score = _headline(scores)
            dev_score = group.broadcast(dev_score)  # the others wait here for rank 0's verdict
            improved = dev_score is None or dev_score > state.best_score
            if improved:
                state.best_score = dev_score if dev_score is not None else state.best_score
                state.epochs_without_gain = 0
                loaded.metrics = {"epoch": epoch, "dev": dev_score}
                if group.main:
                    save_model(checkpoint, loaded)
            else:
                state.epochs_without_gain += 1
        result = EpochResult(
            epoch=epoch,
            loss=float(epoch_loss) * group.world_size / len(train_sentences),  # rank 0's share
            dev_score=dev_score,
            best=improved,
            seconds=state.epoch_seconds + time.perf_counter() - started,
            tokens_per_second=total_tokens / train_seconds,
            learning_rate=learning_rate,
            averaged=average.count > 0,
        )
        state.history.append(dataclasses.asdict(result))
        state.epoch, state.step = epoch + 1, 0
        state.epoch_loss, state.epoch_seconds = 0.0, 0.0
        state.batch_order_state = batch_order.getstate()
        save_progress()
        yield result
        signal_number = group.any_signal(stop_requested())
        if signal_number is not None:
            raise TrainingInterrupted(
                signal_number,
                f"interrupted after epoch {epoch}; "
                f"continue with: crftag train --resume {output_dir}",
            )


def _save_resume(
    path: str, loaded: LoadedModel, optimizer, average: WeightAverage, state: Progress
) -> None:
    """Write everything a resumed run needs, atomically (see :func:`write_atomically`)."""
    payload = {
        "format": "crftag-resume",
        "format_version": FORMAT_VERSION,
        "config": loaded.config.to_dict(),
        "vocabularies": loaded.vocabularies.to_state(),
        "data_scheme": loaded.data_scheme,
        "train_scheme": loaded.train_scheme,
        "model": {k: v.detach().cpu() for k, v in loaded.model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "average": average.state_dict(),
        "progress": dataclasses.asdict(state),
        "torch_rng": torch.get_rng_state(),
    }
    write_atomically(path, payload)


def load_resume(output_dir: str) -> dict:
    """The resumable state of a run directory, loaded without executing anything."""
    path = os.path.join(output_dir, RESUME_FILE)
    if not os.path.exists(path):
        raise CrftagError(
            f"{output_dir}: no {RESUME_FILE} here; nothing to resume (finished, or not a run)"
        )
    state = read_checkpoint(path)
    if state.get("format") != "crftag-resume":
        raise CrftagError(f"{path}: not a crftag resume file")
    return state


def _extend_with_embeddings(vocabularies: Vocabularies, embeddings: Embeddings, limit: int) -> None:
    """Add up to ``limit`` embedding words (file order) that training did not have."""
    if limit <= 0:
        return
    added: list[str] = []
    for word in embeddings.words:
        key = vocabularies.word_key(word)
        if key not in vocabularies.words and key.lower() not in vocabularies.words:
            added.append(key)
            vocabularies.words.extend([key])
            if len(added) == limit:
                break
    print(f"embeddings: added {len(added)} words that training never saw", file=sys.stderr)


def _initialise_embeddings(model, vocabularies: Vocabularies, embeddings: Embeddings) -> None:
    """Copy pretrained vectors into the word embedding rows of the words that have one. Both
    sides are compared in normalised form (digits as 0), exact first, then lower-cased."""
    by_key: dict[str, int] = {}
    for row, word in enumerate(embeddings.words):
        by_key.setdefault(vocabularies.word_key(word), row)
    for row, word in enumerate(embeddings.words):
        by_key.setdefault(vocabularies.word_key(word).lower(), row)
    targets, sources = [], []
    for index, key in enumerate(vocabularies.words.symbols[2:], start=2):
        row = by_key.get(key, by_key.get(key.lower()))
        if row is not None:
            targets.append(index)
            sources.append(row)
    with torch.no_grad():
        model.word_embedding.weight[torch.tensor(targets, dtype=torch.long)] = embeddings.vectors[
            torch.tensor(sources, dtype=torch.long)
        ]
    total = len(vocabularies.words) - 2
    print(f"embeddings: {len(targets)} of {total} words have a pretrained vector", file=sys.stderr)


def prepare_embeddings(model, config: Config, train_words: torch.Tensor) -> None:
    """Freeze the word embeddings, or train only the rows of words in ``train_words`` (every
    word index of the training data, (N,) long) when that changes nothing.

    The rows past the last training word (the pretrained words added to the vocabulary) get
    no gradient; without weight decay, no optimizer moves them, so they are left out of the
    trained parameter and its per-step dense work (see :class:`WordEmbedding`)."""
    if not isinstance(model, BiLSTMCRF):
        return
    model.word_embedding.weight.requires_grad_(not config.model.freeze_embeddings)
    if not config.model.freeze_embeddings and not config.train.weight_decay:
        model.word_embedding.fix_rows_from(max(2, int(train_words.max()) + 1))


def _headline(scores: dict) -> float:
    """The one number models are selected by: entity micro F1, or token accuracy."""
    entities = scores.get("entities")
    return entities["micro"]["f1"] if entities else scores["accuracy"]


def _optimizer(config: Config, model: torch.nn.Module) -> torch.optim.Optimizer:
    settings = config.train
    parameters = [p for p in model.parameters() if p.requires_grad]
    if config.model.encoder == "features":
        return SparseSGD(parameters, lr=settings.lr, weight_decay=settings.weight_decay)
    embedding = model.word_embedding.weight
    if settings.embedding_lr_scale != 1.0 and embedding.requires_grad:
        # The training loop sets each group's lr to the epoch's lr times its lr_scale.
        parameters = [
            {"params": [p for p in parameters if p is not embedding], "lr_scale": 1.0},
            {"params": [embedding], "lr_scale": settings.embedding_lr_scale},
        ]
    if settings.optimizer == "adam":
        kind, options = torch.optim.Adam, {"lr": settings.lr, "weight_decay": settings.weight_decay}
    else:
        kind, options = (
            torch.optim.SGD,
            {
                "lr": settings.lr,
                "momentum": settings.momentum,
                "weight_decay": settings.weight_decay,
            },
        )
    # The fused update makes one pass over each parameter instead of several: it halves the
    # cost of stepping the large word-embedding matrix. Older torch builds lack it.
    try:
        return kind(parameters, fused=True, **options)
    except (RuntimeError, TypeError, ValueError):
        return kind(parameters, **options)


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
    named = [("train", path) for path in training_files(config)]
    named += [("dev", config.data.dev), ("test", config.data.test)]
    for name, path in named:
        if path is not None and not os.path.isfile(path):
            what = "is a directory" if os.path.isdir(path) else "no such file"
            raise CrftagError(f"data.{name}: {path}: {what}")
    if config.model.encoder == "features":
        _check_feature_training(config)
        # Settings that work on the BiLSTM's inputs and states, which the features encoder does
        # not have.
        for name in ("document_context", "hidden_layer", "locked_dropout"):
            if getattr(config.model, name):
                raise CrftagError(
                    f"model.{name} needs the BiLSTM encoder: remove it or set model.encoder: bilstm"
                )
    if config.model.embeddings is not None:
        if config.model.encoder == "features":
            raise CrftagError(
                "model.embeddings: the features encoder uses no word vectors; "
                "remove model.embeddings or set model.encoder: bilstm"
            )
        check_embeddings(config.model.embeddings, config.model.word_dim)
    if config.train.embedding_lr_scale != 1.0:
        if config.model.encoder == "features":
            raise CrftagError(
                "train.embedding_lr_scale: the features encoder has no word embeddings; "
                "remove it or set model.encoder: bilstm"
            )
        if config.model.freeze_embeddings:
            raise CrftagError(
                "train.embedding_lr_scale: the word embeddings are frozen "
                "(model.freeze_embeddings: true); set one or the other"
            )


def check_schedule(config: Config) -> None:
    """Settings that only make sense together with the epoch limit."""
    settings = config.train
    if settings.average_from > settings.epochs:
        raise CrftagError(
            f"train.average_from: {settings.average_from} is after the last epoch "
            f"(train.epochs: {settings.epochs}), so nothing would be averaged"
        )


def _check_feature_training(config: Config) -> None:
    """The feature CRF's sparse gradients take plain SGD with exact L2 (see
    crftag.training.optimizers.SparseSGD)."""
    settings = config.train
    if settings.optimizer != "sgd" or settings.momentum:
        raise CrftagError(
            "model.encoder features trains with plain SGD on sparse gradients: "
            f"set train.optimizer: sgd and train.momentum: 0 (got {settings.optimizer}, "
            f"momentum {settings.momentum})"
        )
    if settings.clip_grad_norm:
        raise CrftagError(
            "model.encoder features: set train.clip_grad_norm: null (gradient clipping needs "
            "dense gradients; L2 regularisation is train.weight_decay)"
        )
    decay = settings.lr * settings.weight_decay
    if not 0 <= decay < 1:
        raise CrftagError(f"train.lr * train.weight_decay must be in [0, 1), got {decay}")


class StopSignals:
    """While active, SIGINT and SIGTERM ask the training loop to stop at the next batch (so it
    can write a resumable checkpoint) instead of killing it; a second signal stops at once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict = {}

    def __call__(self) -> int | None:
        return self.received

    def _handle(self, number, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


def train(
    config: Config | None,
    output_dir: str,
    *,
    device: torch.device,
    progress: bool = True,
    resume: bool = False,
) -> dict:
    """Train and write ``output_dir/model.pt`` and ``output_dir/metrics.json``; return metrics.

    With ``resume``, continue the interrupted run in ``output_dir`` (its config is used).
    """
    resume_state = load_resume(output_dir) if resume else None
    if resume_state is not None:
        config = Config.from_dict(resume_state["config"], source=output_dir)
    check_data_files(config)
    check_schedule(config)
    check_output_dir(output_dir)
    group, device = join(device)
    try:
        return _train_and_report(config, output_dir, device, progress, resume_state, group)
    finally:
        leave(group)


def _train_and_report(
    config: Config,
    output_dir: str,
    device: torch.device,
    progress: bool,
    resume_state: dict | None,
    group: Group,
) -> dict:
    history = (
        [EpochResult(**r) for r in resume_state["progress"]["history"]] if resume_state else []
    )
    with StopSignals() as stop_requested:
        for result in fit(
            config,
            output_dir,
            device=device,
            progress=progress,
            resume=resume_state,
            stop_requested=stop_requested,
            group=group,
        ):
            history.append(result)
            if not group.main:
                continue
            dev = f"  dev {100 * result.dev_score:6.2f}" if result.dev_score is not None else ""
            mark = "  *" if result.best and result.dev_score is not None else ""
            mark = ("  avg" if result.averaged else "") + mark
            print(
                f"epoch {result.epoch:3d}  loss {result.loss:9.4f}{dev}  "
                f"lr {result.learning_rate:.4g}  {result.seconds:6.1f}s  "
                f"{result.tokens_per_second:8.0f} tok/s{mark}",
                file=sys.stderr,
                flush=True,
            )
    best = [r for r in history if r.best]
    metrics: dict = {
        "epochs": len(history),
        "best_epoch": best[-1].epoch if best else None,
        "dev": max((r.dev_score for r in history if r.dev_score is not None), default=None),
        "train_seconds": sum(r.seconds for r in history),
        "tokens_per_second": (
            sum(r.tokens_per_second for r in history) / len(history) if history else None
        ),
        "device": str(device),
        "processes": group.world_size,
    }
    if not group.main:
        return metrics
    if config.data.test:
        tagger = Tagger.load(output_dir, device)
        test = read_corpus(config.data.test, config.data.column_spec(config.data.test))
        predicted = tagger.tag([s.tokens for s in test], documents=document_keys(test))
        test_scores = score([s.tags for s in test], predicted, spans=tagger.spans)
        metrics["test"] = _headline(test_scores)
        metrics["test_scores"] = test_scores
        print(f"test {100 * metrics['test']:6.2f}", file=sys.stderr)
    with open(os.path.join(output_dir, "metrics.json"), "w", encoding="utf-8") as handle:
        json.dump(metrics, handle, indent=2, sort_keys=True)
        handle.write("\n")
    # Finished: there is nothing left to resume.
    os.unlink(os.path.join(output_dir, RESUME_FILE))
    return metrics
