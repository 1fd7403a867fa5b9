"""Setting up a training run: the training set, the model with its pretrained vectors, the
optimizer, and the state a resumed run continues from."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.nn.parallel import DistributedDataParallel

from crftag.config.sections import Config
from crftag.data.conll import Sentence
from crftag.data.vectors import read_embeddings
from crftag.errors import CrftagError
from crftag.features.registry import feature_modules, vocabularies_from_state
from crftag.modelfiles.checkpoint import LoadedModel
from crftag.nn.encoders import use_fast_training
from crftag.nn.taggers import CRFTagger, build_model
from crftag.training.averaging import WeightAverage
from crftag.training.checks import check_model_size
from crftag.training.corpus import (
    TrainingSet,
    build_vocabularies,
    encode_training_set,
    in_train_scheme,
    resolve_schemes,
)
from crftag.training.distributed import Group
from crftag.training.embeddings import (
    extend_with_embeddings,
    initialise_embeddings,
    set_trained_rows,
    vector_files,
)
from crftag.training.init_from import (
    check_architecture,
    copy_weights,
    load_base,
    merge_vocabularies,
    rehearsal_file,
)
from crftag.training.label_map import tag_sources
from crftag.training.optimizers import make_optimizer
from crftag.training.state import (
    RESUME_FILE,
    BestScoreTracker,
    RunState,
    check_resume_fits,
    restore_run,
)
from crftag.training.step import epoch_batches

__all__ = ["Run", "start_run"]


@dataclass
class Run:
    """The moving parts of one training run, as :func:`crftag.training.loop.fit` uses them."""

    config: Config
    training: TrainingSet
    model: CRFTagger
    network: torch.nn.Module  # the model, or its DistributedDataParallel wrapper
    optimizer: torch.optim.Optimizer
    average: WeightAverage
    state: RunState
    tracker: BestScoreTracker
    batch_order: random.Random  # draws each epoch's batch order
    singletons: torch.Tensor  # (V,) bool: words seen once in training (word dropout)
    group: Group
    device: torch.device
    output_dir: str | None = None  # where a resumable run writes; None for one in memory
    distillation: dict | None = None  # crftag distill's teacher, text and objective

    def loaded(self, metrics: dict) -> LoadedModel:
        """The model as a checkpoint describes it."""
        training = self.training
        return LoadedModel(
            self.model,
            training.vocabularies,
            self.config,
            training.data_scheme,
            training.train_scheme,
            metrics,
            distillation=self.distillation,
        )


def start_run(
    config: Config,
    files: list[tuple[str, list[Sentence]]],
    *,
    device: torch.device,
    group: Group = Group(),
    resume: dict | None = None,
    show_progress: bool = True,
    output_dir: str | None = None,
    base: LoadedModel | None = None,
    extra_tags: list[str] | None = None,
    task_batches: Callable[[Run, int, random.Random], list[list[int]]] | None = None,
) -> Run:
    """A run over the training ``files`` (path, sentences as read), fresh or continued from
    ``resume`` (the content of a resume file). A fresh run with ``train.init_from`` starts from
    ``base``, that model as :func:`crftag.training.init_from.load_training_config` loaded it
    (loaded here if not given).

    ``extra_tags`` join the tags of a fresh run's vocabulary after the data's (a teacher's, in
    ``crftag distill``). ``task_batches(run, epoch, order)`` gives the batches of an epoch of
    the task that will train the run, against which a resume file's step is checked (default:
    the tagging task's, :func:`crftag.training.step.epoch_batches`).

    In a ``group`` of several processes (``torchrun``), rank 0 builds the vocabularies and sends
    them to the others; DistributedDataParallel gives every rank rank 0's initial weights.
    """
    if config.model.encoder == "features" and group.world_size > 1:
        # DistributedDataParallel all-reduces dense gradients; the feature CRF's are sparse.
        raise CrftagError(
            "model.encoder features trains in one process (minutes on a CPU); run it without "
            "torchrun"
        )
    if config.train.rehearsal is not None:
        files = [*files, rehearsal_file(config, sum(len(in_file) for _, in_file in files))]
    if resume is None:
        data_scheme, train_scheme = resolve_schemes(config, files)
    else:
        data_scheme, train_scheme = resume["data_scheme"], resume["train_scheme"]
    vocabularies, embeddings, base = _vocabularies(
        config, files, train_scheme, group, resume, show_progress, base
    )
    if resume is None and extra_tags:
        vocabularies.tags.extend(extra_tags)
    training = encode_training_set(files, vocabularies, data_scheme, train_scheme)

    check_model_size(config, vocabularies, device)
    torch.manual_seed(config.train.seed)
    model = build_model(config, vocabularies, train_scheme)
    features = feature_modules(dataclasses.asdict(config.model), model)
    for feature, module in features:
        feature.load_pretrained(module, config, resumed=resume is not None, base=base)
    if embeddings is not None:
        initialise_embeddings(model, vocabularies, embeddings)
    if base is not None:
        sources = tag_sources(
            vocabularies.tags.symbols, base.vocabularies.tags.symbols, config.train.label_map
        )
        copy_weights(model, base.model, sources)
    train_words = training.words
    set_trained_rows(model, config, train_words)
    use_fast_training(model, config.train.fast_encoder)
    model.to(device)
    run = Run(
        config=config,
        training=training,
        model=model,
        network=model,
        optimizer=make_optimizer(config, model),
        average=WeightAverage(model),
        state=RunState(),
        tracker=BestScoreTracker(patience=config.train.patience),
        batch_order=random.Random(config.train.seed),
        singletons=torch.bincount(train_words, minlength=len(vocabularies.words)) == 1,
        group=group,
        device=device,
        output_dir=output_dir,
    )
    run.state.batch_order_state = run.batch_order.getstate()
    if resume is not None:
        _restore(run, resume, task_batches or _tagging_batches)
    sentences = [sentence.tokens for sentence in training.sentences]
    for feature, module in features:
        feature.prepare(module, sentences, show_progress=show_progress and group.main)
    # Buffers (the fixed embedding rows) never change in training: sent once here, rather than
    # by DistributedDataParallel before every forward.
    group.broadcast_tensors(list(model.buffers()))
    if group.world_size > 1:
        run.network = DistributedDataParallel(model, broadcast_buffers=False)
    return run


def _vocabularies(
    config: Config,
    files: list[tuple[str, list[Sentence]]],
    train_scheme: str,
    group: Group,
    resume: dict | None,
    show_progress: bool,
    base: LoadedModel | None,
):
    """(vocabularies, pretrained vectors or None, the ``train.init_from`` model or None): a
    resumed run's own; else built on rank 0 (after the old model's, with ``init_from``),
    extended with vector words, and sent to every rank so all index words and tags alike."""
    if resume is not None:
        return vocabularies_from_state(resume["vocabularies"]), None, None
    embeddings = vocabularies = None
    if not group.main:
        base = None  # rank 0's weights reach the others through DistributedDataParallel
    if group.main:
        sentences = in_train_scheme([s for _, in_file in files for s in in_file], train_scheme)
        vocabularies = build_vocabularies(config, sentences, train_scheme)
        if config.train.init_from is not None:
            if base is None:
                base = load_base(config)
            check_architecture(config, base, train_scheme)
            vocabularies = merge_vocabularies(base.vocabularies, vocabularies, config)
        if config.model.embeddings is not None:
            embeddings = read_embeddings(
                vector_files(config),
                show_progress=show_progress,
                max_words=config.vocab.max_size,
            )
            extend_with_embeddings(vocabularies, embeddings, config.vocab.embedding_words)
    if group.world_size > 1:
        shared = group.broadcast(vocabularies.to_state() if group.main else None)
        vocabularies = vocabularies_from_state(shared)
    return vocabularies, embeddings, base


def _restore(
    run: Run, resume: dict, task_batches: Callable[[Run, int, random.Random], list[list[int]]]
) -> None:
    """Continue from a resume file: weights, optimizer, average, run state, random state, once
    each is checked against the network and the batches of the epoch under way."""
    state = RunState.from_state(resume["run_state"])
    order = random.Random()
    order.setstate(state.batch_order_state)
    batches = task_batches(run, state.epoch, order)
    path = os.path.join(run.output_dir or "", RESUME_FILE)
    check_resume_fits(resume, run.model, run.optimizer, len(run.group.shard(batches)), path)
    restore_run(run, resume)


def _tagging_batches(run: Run, epoch: int, order: random.Random) -> list[list[int]]:
    """The batches of an epoch of tagging (:class:`crftag.training.tagging_task.TaggingTask`)."""
    return epoch_batches(
        run.training,
        run.config.train.batch_size,
        order,
        whole_documents=run.config.model.document_context,
        sort_documents=run.config.train.sort_documents,
    )
