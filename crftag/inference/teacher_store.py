"""The teacher's store: a teacher's posteriors on unlabelled text, computed once, kept on disk,
and read by every student run (docs/distillation.md).

A store is a folder: ``manifest.json`` (what was labelled, by which teacher, and each shard's
SHA-256) and ``shard-NNNNN.npz`` files, each the labels of at least :data:`SHARD_SENTENCES`
consecutive sentences (the last one fewer), cut where a line of the text ends. Every file is
written whole or not at all (:mod:`crftag.data.atomic`), the manifest after each shard, so
labelling that is stopped by Ctrl-C, SIGTERM or a kill continues from the last shard written,
and gives byte for byte the store that an uninterrupted run gives (shards cut in one way, each
computed alone).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence

import numpy as np

from crftag.data.atomic import PARTIAL_PREFIX, atomic_output
from crftag.data.indices import pieces
from crftag.data.progress import progress_bar
from crftag.data.unlabelled_text import (
    Tokens,
    exclusion_digest,
    read_unlabelled_text,
    sentences_digest,
    text_digest,
)
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.inference.base import TaggerBase
from crftag.inference.teacher import label_sentences, teacher_digest, torch_teacher
from crftag.inference.teacher_files import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    TeacherStore,
    check_identity,
    open_store,
    read_manifest,
    shard_bytes,
    shard_name,
)

__all__ = [
    "SHARD_SENTENCES",
    "TeacherStore",
    "label_text",
    "open_store",
    "teacher_digest",
    "text_digest",
]

SHARD_SENTENCES = 1024  # the least a shard holds: a stop loses at most one shard's work


def label_text(
    teacher: TaggerBase,
    text_files: list[str],
    store_dir: str,
    *,
    exclude: set[Tokens],
    temperature: float = 1.0,
    batch_size: int = 64,
    show_progress: bool = True,
) -> TeacherStore:
    """The store of ``teacher``'s posteriors on ``text_files`` in ``store_dir``, without the
    sentences in ``exclude`` (the corpus's dev and test sentences): labelled now, continued
    where an earlier run stopped, or, when finished, reused as it is.

    ``teacher`` is a tagger that ``crftag.load`` gave for a model file (a torch one, or a NumPy
    one whose weights are rebuilt in torch). A store in ``store_dir`` of another teacher, text,
    exclusion or temperature, a folder that holds something else, and a teacher inside the
    store's folder are one-line errors; nothing is overwritten."""
    if not (temperature > 0 and np.isfinite(temperature)):
        raise ValueError(f"expected a positive temperature, got {temperature}")
    teacher = torch_teacher(teacher)
    _check_apart(teacher.source, store_dir)
    identity = {
        "teacher": os.path.abspath(teacher.source),
        "teacher_digest": teacher_digest(teacher.source),
        "text_files": [os.path.abspath(path) for path in text_files],
        "text_digest": text_digest(text_files),
        "exclusion_digest": exclusion_digest(exclude),
        "temperature": float(temperature),
        "labels": list(teacher.tag_symbols),
        "scheme": teacher.train_scheme,
    }
    manifest = _existing_manifest(store_dir)
    if manifest is not None:
        check_identity(store_dir, manifest, identity)
        if manifest["complete"]:
            return open_store(store_dir)
    text = read_unlabelled_text(text_files, exclude)
    print(
        f"crftag: note: removed {text.removed} sentences of the text equal to a dev or test "
        "sentence",
        file=sys.stderr,
    )
    sentences, owners = pieces(text.sentences, teacher.max_length)
    documents = [text.documents[owner] for owner in owners]
    plan = {
        "sentences": len(sentences),
        "sentences_digest": sentences_digest(sentences),
        "removed": text.removed,
        "shard_sizes": _shard_sizes(documents, SHARD_SENTENCES),
    }
    if manifest is None:
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **identity, **plan}
        manifest.update(shard_digests=[], complete=False)
        os.makedirs(store_dir, exist_ok=True)
        _write_manifest(store_dir, manifest)
    elif any(manifest[key] != value for key, value in plan.items() if key != "shard_sizes"):
        raise CrftagError(
            f"{store_dir}: the text reads differently than when its labelling began (another "
            "crftag version?); remove the folder to label the text again"
        )
    _label_shards(teacher, sentences, documents, store_dir, manifest, batch_size, show_progress)
    return open_store(store_dir)


def _label_shards(teacher, sentences, documents, store_dir, manifest, batch_size, show) -> None:
    """Label the shards the manifest has no digest of yet, writing each and then the manifest."""
    sizes = manifest["shard_sizes"]
    done = len(manifest["shard_digests"])
    starts = np.cumsum([0, *sizes]).tolist()
    bar = progress_bar(
        total=len(sentences),
        initial=starts[done],
        show=show,
        desc="labelling",
        unit="sentence",
    )
    try:
        with bar:
            for index in range(done, len(sizes)):
                first, last = starts[index], starts[index + 1]
                labels = label_sentences(
                    teacher,
                    sentences[first:last],
                    documents[first:last],
                    temperature=manifest["temperature"],
                    batch_size=batch_size,
                    on_batch=bar.update,
                )
                data = shard_bytes(sentences[first:last], labels)
                digest = _write_shard(os.path.join(store_dir, shard_name(index)), data)
                manifest["shard_digests"].append(digest)
                manifest["complete"] = index + 1 == len(sizes)
                _write_manifest(store_dir, manifest)
    except (KeyboardInterrupt, TrainingInterrupted):
        written = len(manifest["shard_digests"])
        print(
            f"crftag: note: labelling stopped with {written} of {len(sizes)} shards written to "
            f"{store_dir}; labelling the same text with the same teacher continues from there",
            file=sys.stderr,
        )
        raise


def _write_shard(path: str, data: bytes) -> str:
    """Write one shard's bytes whole; return their SHA-256."""
    with atomic_output(path, binary=True) as stream:
        stream.write(data)
    return hashlib.sha256(data).hexdigest()


def _write_manifest(store_dir: str, manifest: dict) -> None:
    with atomic_output(os.path.join(store_dir, MANIFEST)) as stream:
        stream.write(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


def _shard_sizes(documents: Sequence[int], size: int) -> list[int]:
    """The number of sentences of each shard: consecutive sentences, at least ``size`` a shard
    (the last may hold fewer), cut only where a document (a line of the text) ends, so that a
    model with document context sees each document whole."""
    sizes, count = [], 0
    for index, document in enumerate(documents):
        count += 1
        ends = index + 1 == len(documents) or documents[index + 1] != document
        if ends and count >= size:
            sizes.append(count)
            count = 0
    if count:
        sizes.append(count)
    return sizes


def _existing_manifest(store_dir: str) -> dict | None:
    """The manifest of the store in ``store_dir``; None where there is no folder or an empty
    one (what a kill leaves of a file being written aside). A file there, or a folder that
    holds something else, is a one-line error."""
    if os.path.exists(store_dir) and not os.path.isdir(store_dir):
        raise CrftagError(f"{store_dir}: is a file, expected the teacher store's folder")
    if not os.path.isdir(store_dir):
        return None
    for name in os.listdir(store_dir):
        if name.startswith(PARTIAL_PREFIX) and os.path.isfile(os.path.join(store_dir, name)):
            os.unlink(os.path.join(store_dir, name))
    if not os.listdir(store_dir):
        return None
    if not os.path.exists(os.path.join(store_dir, MANIFEST)):
        raise CrftagError(
            f"{store_dir}: the folder holds files but no teacher store ({MANIFEST}); give an "
            "empty or new folder for the store"
        )
    return read_manifest(store_dir)


def _check_apart(teacher_path: str, store_dir: str) -> None:
    """The teacher's file must not lie in the store's folder, nor be it."""
    teacher = os.path.realpath(teacher_path)
    folder = os.path.realpath(store_dir)
    if teacher == folder or teacher.startswith(folder.rstrip(os.sep) + os.sep):
        raise CrftagError(
            f"{teacher_path}: the teacher is inside the teacher store's folder {store_dir}; "
            "give the store a folder of its own"
        )
