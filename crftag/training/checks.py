"""Checks of a training config that need the file system, the device or several sections at
once, run before any work so a mistake costs seconds, not an epoch (or a machine's memory)."""

from __future__ import annotations

import dataclasses
import os

import torch

from crftag.config.augment import CHANCE_TOLERANCE
from crftag.config.sections import Config
from crftag.data.annotations import brat_names
from crftag.data.paths import is_regular_file, not_regular
from crftag.data.perturb import PERTURBATIONS
from crftag.data.vectors import embeddings_dims
from crftag.data.vocab import PAD, UNK, Vocabularies, Vocabulary
from crftag.errors import CrftagError
from crftag.features.registry import FEATURES, active_features
from crftag.modelfiles.checkpoint_schema import MAX_PARAMETERS
from crftag.nn.taggers import build_model
from crftag.training.corpus import training_files
from crftag.training.embeddings import vector_files

__all__ = ["check_config", "check_device", "check_model_size", "check_output_dir"]

GIB = 1 << 30


DEFAULT_WORD_DIM = 100  # the word embedding size of a model without vectors or model.word_dim


def check_config(config: Config, *, data_files: bool = True, distilling: bool = False) -> Config:
    """Every check of a config that reading it could not make; ``data_files=False`` leaves out
    the data files (training in memory reads none); ``distilling``: a student's config
    (``crftag distill``), whose ``train.label_map`` may name a teacher's labels. Returns the
    config with what it leaves to the files filled in: ``model.word_dim`` from the vectors
    (:func:`check_word_dim`)."""
    if data_files:
        check_data_files(config)
    check_model_settings(config)
    check_schedule(config, distilling=distilling)
    check_augment(config)
    if config.model.word_dim is not None:
        return config
    model = dataclasses.replace(config.model, word_dim=check_word_dim(config))
    return dataclasses.replace(config, model=model)


def check_device(config: Config, device: torch.device) -> None:
    """Settings that need a kind of device."""
    if config.train.amp and device.type != "cuda":
        # oneDNN has no bfloat16 LSTM for every shape a batch takes: CPU runs fail mid-epoch.
        raise CrftagError(
            f"train.amp: bfloat16 autocast needs a CUDA device, and this run is on {device.type}; "
            "remove train.amp or train with --device cuda"
        )
    check_model_size(config, _fewest_symbols(config), device)


def check_model_size(config: Config, vocabularies: Vocabularies, device: torch.device) -> None:
    """The network that ``config`` and ``vocabularies`` describe is one a model file may hold
    and, with its gradients and optimizer state, fits the memory free on ``device``: counted on
    the meta device, before anything is allocated. Activations are not counted, so the figure
    is a floor."""
    with torch.device("meta"):
        skeleton = build_model(config, vocabularies, "none")  # constraints change no shape
    weights = sum(tensor.numel() for tensor in skeleton.state_dict().values())
    trained = sum(p.numel() for p in skeleton.parameters() if p.requires_grad)
    smaller = "make the model's sizes (model.*) or the vocabulary (vocab.*) smaller"
    if weights > MAX_PARAMETERS:
        raise CrftagError(
            f"model: the network would have {weights:,} parameters, and a model holds at most "
            f"{MAX_PARAMETERS:,}; {smaller}"
        )
    parameters = 4 * (weights + trained * _copies_in_training(config))  # float32
    # The CRF's gradient holds each sentence's expected transition counts, (batch, K, K):
    # 6.4 GB for 10,000 tags in a batch of 16, where the weights take 0.4 GB.
    tags = len(vocabularies.tags)
    counts = 4 * config.train.batch_size * tags * tags
    needed = parameters + counts
    free = _free_memory(device)
    if free is not None and needed > free:
        what = "weights, gradients, optimizer state"
        if counts > parameters:
            what = f"{what}; the CRF's transition counts of a batch, {counts / GIB:.1f} GiB"
            smaller = f"use fewer tags ({tags:,}) or a smaller train.batch_size"
        raise CrftagError(
            f"model: training {weights:,} parameters needs at least {needed / GIB:.1f} GiB "
            f"({what}), and {device.type} memory has {free / GIB:.1f} GiB free; {smaller}"
        )


def _copies_in_training(config: Config) -> int:
    """Copies of the trained weights that training keeps beside them: gradients (sparse for
    the feature CRF), optimizer state, the running average."""
    settings = config.train
    if config.model.encoder == "features":
        copies = 0
    else:
        copies = 1 + (2 if settings.optimizer == "adam" else int(settings.momentum > 0))
    return copies + int(settings.average_from > 0)


def _free_memory(device: torch.device) -> int | None:
    """Bytes free on ``device`` (a CUDA device's own, else the host's, within this process's
    address-space limit and its control group's memory limit), None if unknown."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    limits = [_host_available(), _address_space_left(), _cgroup_left()]
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def _host_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _address_space_left() -> int | None:
    """What ``ulimit -v`` leaves this process: its limit less the address space it holds."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as handle:
            held = next(
                int(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:")
            )
        return max(0, limit - held)
    except (ImportError, OSError, ValueError, StopIteration):
        return None


def _cgroup_left() -> int | None:
    """What this process's control group (cgroup v2: a container's memory limit) has left;
    the page cache it could drop (inactive files) counts as free."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as handle:
            limit = handle.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as handle:
            used = int(handle.read().strip())
        with open("/sys/fs/cgroup/memory.stat", encoding="ascii") as handle:
            fields = dict(line.split() for line in handle if line.count(" ") == 1)
        return max(0, int(limit) - used + int(fields.get("inactive_file", 0)))
    except (OSError, ValueError):
        return None


def _fewest_symbols(config: Config) -> Vocabularies:
    """Vocabularies of the fewest symbols a training set can give: the network they make is
    the smallest ``config`` can describe, so it can be checked before any data is read."""
    features = config.model.encoder == "features"
    return Vocabularies(
        words=Vocabulary([PAD, UNK]),
        chars=Vocabulary([PAD, UNK]),
        tags=Vocabulary(["O"], has_unknown=False),
        feature_buckets=config.model.feature_buckets if features else 0,
    )


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
    """The data files exist: regular files (never a FIFO, socket or device, which a run that
    reads its files more than once cannot use), or folders of brat files for ``data.format``
    brat or auto."""
    named = [("data.train", path) for path in training_files(config)]
    named += [("data.dev", config.data.dev), ("data.test", config.data.test)]
    named += [("train.rehearsal", config.train.rehearsal)]
    folders_allowed = config.data.format in ("auto", "brat")
    for name, path in named:
        if path is None or is_regular_file(path):
            continue
        if folders_allowed and os.path.isdir(path):
            try:
                brat_names(path)
            except CrftagError as error:
                raise CrftagError(f"{name}: {error}") from None
            continue
        if os.path.isdir(path):
            what = f"is a directory, and data.format is {config.data.format}"
        elif not os.path.lexists(path):
            what = "no such file" if config.data.format != "brat" else "no such folder"
        else:
            what = f"{not_regular(path)}, expected a regular file"
        raise CrftagError(f"{name}: {path}: {what}")
    named = [("model.embeddings", path) for path in vector_files(config)]
    for feature in active_features(dataclasses.asdict(config.model)):
        named += feature.input_files(config)
    for name, path in named:
        if os.path.lexists(path) and not is_regular_file(path):
            raise CrftagError(f"{name}: {path}: {not_regular(path)}, expected a file")


def check_model_settings(config: Config) -> None:
    """The model settings fit the encoder, and the word vectors the word embedding."""
    model = dataclasses.asdict(config.model)
    if config.model.encoder == "features":
        _check_feature_training(config)
        # Settings that work on the BiLSTM's inputs and states, which the features encoder does
        # not have.
        keys = [f"model.{name}" for name in ("hidden_layer", "locked_dropout") if model[name]]
        keys += [feature.key for feature in active_features(model) if feature.needs_bilstm]
        if keys:
            raise CrftagError(
                f"{keys[0]} needs the BiLSTM encoder: remove it or set model.encoder: bilstm"
            )
    alone = [feature for feature in FEATURES if feature.without_bilstm]
    if config.model.hidden_size == 0 and not any(feature.active(model) for feature in alone):
        raise CrftagError(
            f"model.hidden_size: 0 (no BiLSTM) is for a CRF on "
            f"{' or '.join(feature.key for feature in alone)}; set one, or hidden_size of 1 or more"
        )
    if config.model.hidden_size == 0 and config.model.document_context:
        raise CrftagError(
            "model.document_context: averages the BiLSTM's states over a document, and "
            "model.hidden_size 0 has no BiLSTM: set hidden_size of 1 or more, or remove "
            "document_context"
        )
    if config.model.embeddings is not None:
        if config.model.encoder == "features":
            raise CrftagError(
                "model.embeddings: the features encoder uses no word vectors; "
                "remove model.embeddings or set model.encoder: bilstm"
            )
        check_word_dim(config)  # the vectors' sizes fit model.word_dim
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


def check_word_dim(config: Config) -> int:
    """The word embedding size: ``model.word_dim``, which must then equal the vectors' sizes
    added up; or, where it is not given, those sizes (100 without vectors)."""
    files = vector_files(config)
    dims = embeddings_dims(files)
    if config.model.word_dim is None:
        return sum(dims) if files else DEFAULT_WORD_DIM
    if files and sum(dims) != config.model.word_dim:
        sizes = " + ".join(f"{path}: {dim}" for path, dim in zip(files, dims, strict=True))
        raise CrftagError(
            f"model.embeddings: vectors have {sum(dims)} dimensions but model.word_dim is "
            f"{config.model.word_dim} ({sizes}); set model.word_dim: {sum(dims)} or leave it out"
        )
    return config.model.word_dim


def check_schedule(config: Config, *, distilling: bool = False) -> None:
    """Settings that only make sense together with others."""
    settings = config.train
    label_map = settings.label_map and not distilling  # a student's names a teacher's labels
    if settings.init_from is None and (label_map or settings.drop_old_labels):
        key = "train.label_map" if label_map else "train.drop_old_labels"
        raise CrftagError(
            f"{key}: says which old labels to start from, and needs train.init_from (or a "
            "teacher: crftag distill)"
        )
    if settings.average_from > settings.epochs:
        raise CrftagError(
            f"train.average_from: {settings.average_from} is after the last epoch "
            f"(train.epochs: {settings.epochs}), so nothing would be averaged"
        )


def check_augment(config: Config) -> None:
    """The ``augment`` section: one case change a sentence at most, known perturbations."""
    augment = config.augment
    if augment.case_chance > 1 + CHANCE_TOLERANCE:
        raise CrftagError(
            "augment.lower + augment.upper + augment.title: a sentence gets one case change at "
            f"most, so the chances add up to at most 1, got {augment.case_chance:g}"
        )
    unknown = [name for name in augment.dev or () if name not in PERTURBATIONS]
    if unknown:
        raise CrftagError(
            f"augment.dev: expected names from {', '.join(PERTURBATIONS)}, got {unknown[0]!r}"
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
