"""``crftag distill``: a student trained on its config's labelled data and on a teacher's
labels of unlabelled text, in a run directory as ``crftag train`` writes one.

The teacher labels the text once, into ``DIR/teacher/`` (:mod:`crftag.inference.teacher_store`:
resumable, reused by a resumed run or a new run in the same directory); then the loop trains the
student by :class:`crftag.training.distill_task.DistillTask` with every guarantee of
:func:`crftag.training.run.train`: the run lock, a resumable stop on SIGINT or SIGTERM, the
divergence check, the epoch table, the best model on dev, the test score and ``metrics.json``.
The student's model file records its teacher (path and digest), the text's digest and the
objective.
"""

from __future__ import annotations

import os
import random
import shutil

import torch

from crftag.config.sections import Config
from crftag.data.conll import Sentence
from crftag.data.partial import known
from crftag.errors import CrftagError
from crftag.inference.teacher import load_teacher
from crftag.inference.teacher_files import read_manifest
from crftag.inference.teacher_store import (
    TeacherStore,
    label_text,
    open_store,
    teacher_digest,
    text_digest,
)
from crftag.training.corpus import read_training_files, resolve_schemes
from crftag.training.distill_task import DistillTask
from crftag.training.label_map import label_of
from crftag.training.run import check_before_work, read_optional, run_on_disk
from crftag.training.rundir import clear_run, hold_run_directory
from crftag.training.setup import Run, start_run
from crftag.training.signals import StopSignals
from crftag.training.state import data_fingerprint, load_resume, resume_file
from crftag.training.teacher_tags import map_teacher_tags

__all__ = ["STORE_FOLDER", "distill"]

STORE_FOLDER = "teacher"  # the teacher's labels, inside the run directory


def distill(
    teacher: str | None,
    config: Config | None,
    text_files: list[str],
    output_dir: str,
    *,
    device: torch.device,
    show_progress: bool = True,
    resume: bool = False,
    overwrite: bool = False,
) -> dict:
    """Label ``text_files`` with ``teacher`` (any crftag model) into ``output_dir/teacher``,
    train the student of ``config`` on them and its labelled data, and write the run to
    ``output_dir`` as :func:`crftag.training.run.train` does; return the metrics.

    With ``resume``, continue the stopped run in ``output_dir`` (its config, teacher and text
    are those it began with). A run directory holding an earlier run is refused unless
    ``overwrite``; a store of another teacher, text or temperature in it too (``overwrite``
    labels again)."""
    if resume and overwrite:
        raise CrftagError("--overwrite starts a new run and --resume continues one: give one")
    with StopSignals(_stopped_early(output_dir, resume)) as stop_requested:
        if resume:
            resume_file(output_dir)
        else:
            config = check_before_work(config, device, output_dir, distilling=True)
            _check_teacher_apart(teacher, output_dir)
        with hold_run_directory(output_dir, resume=resume, overwrite=overwrite):
            if resume:
                state, config = load_resume(output_dir, "distill")
                config = check_before_work(config, device, output_dir, distilling=True)
                return _resumed(state, config, output_dir, device, stop_requested, show_progress)
            return _fresh(
                teacher,
                config,
                text_files,
                output_dir,
                device=device,
                overwrite=overwrite,
                stop_requested=stop_requested,
                show_progress=show_progress,
            )


def _fresh(
    teacher_path: str,
    config: Config,
    text_files: list[str],
    output_dir: str,
    *,
    device: torch.device,
    overwrite: bool,
    stop_requested: StopSignals,
    show_progress: bool,
) -> dict:
    """A new run: the teacher's tags checked against the student's data, the text labelled
    (or its finished labels reused), then the student trained."""
    files = read_training_files(config)
    dev, test = read_optional(config, config.data.dev), read_optional(config, config.data.test)
    teacher = load_teacher(teacher_path, device)
    data_scheme, train_scheme = resolve_schemes(config, files)
    mapped = map_teacher_tags(
        teacher.tag_symbols,
        teacher_scheme=teacher.train_scheme,
        student_scheme=train_scheme if data_scheme != "none" else "none",
        label_map=config.train.label_map,
        student_labels={label_of(t) for _, read in files for s in read for t in known(s.tags)},
        teacher_name=teacher_path,
    )
    run = start_run(
        config,
        files,
        device=device,
        show_progress=show_progress,
        output_dir=output_dir,
        extra_tags=mapped,
    )
    store_dir = os.path.join(output_dir, STORE_FOLDER)
    if overwrite:
        _remove_other_store(store_dir, teacher.source, text_files, config)
    exclude = {tuple(s.tokens) for s in dev + test}
    store = label_text(
        teacher,
        text_files,
        store_dir,
        exclude=exclude,
        temperature=config.distill.temperature,
        show_progress=show_progress,
    )
    del teacher  # its memory (an encoder's) is the student's now
    if overwrite:  # the text read and labelled: the earlier run's files can go
        clear_run(output_dir)
    run.distillation = {
        # A bundled model's name as given; a path made absolute.
        "teacher": os.path.abspath(teacher_path) if os.path.exists(teacher_path) else teacher_path,
        "teacher_digest": store.teacher_digest,
        "teacher_scheme": store.scheme,
        "text": [os.path.abspath(path) for path in text_files],
        "text_digest": store.text_digest,
        "objective": config.distill.objective,
        "temperature": store.temperature,
        "sentences": len(store),
        "removed": store.removed,
    }
    fingerprint = data_fingerprint(config)
    return _train(
        run, store, mapped, output_dir, dev, test, fingerprint, stop_requested, show_progress
    )


def _resumed(
    state: dict,
    config: Config,
    output_dir: str,
    device: torch.device,
    stop_requested: StopSignals,
    show_progress: bool,
) -> dict:
    """A stopped run continued: its store, checked to be the one it began with, and the
    student's state."""
    record = state.get("distillation")
    if not isinstance(record, dict):
        raise CrftagError(f"{output_dir}: the resume file records no teacher")
    store = open_store(
        os.path.join(output_dir, STORE_FOLDER),
        teacher_digest=record["teacher_digest"],
        text_digest=record["text_digest"],
    )
    files = read_training_files(config)
    dev, test = read_optional(config, config.data.dev), read_optional(config, config.data.test)
    mapped = map_teacher_tags(
        store.labels,
        teacher_scheme=store.scheme,
        student_scheme=state["train_scheme"],
        label_map=config.train.label_map,
        student_labels=None,
        teacher_name=record["teacher"],
    )

    def task_batches(run: Run, epoch: int, order: random.Random) -> list[list[int]]:
        return DistillTask(run, store, mapped).epoch_batches(epoch, order)

    run = start_run(
        config,
        files,
        device=device,
        resume=state,
        show_progress=show_progress,
        output_dir=output_dir,
        task_batches=task_batches,
    )
    run.distillation = record
    fingerprint = state["fingerprint"]
    return _train(
        run, store, mapped, output_dir, dev, test, fingerprint, stop_requested, show_progress
    )


def _train(
    run: Run,
    store: TeacherStore,
    mapped: list[str],
    output_dir: str,
    dev: list[Sentence],
    test: list[Sentence],
    fingerprint: dict,
    stop_requested: StopSignals,
    show_progress: bool,
) -> dict:
    return run_on_disk(
        run,
        DistillTask(run, store, mapped),
        output_dir,
        dev=dev,
        test=test,
        fingerprint={**fingerprint, "teacher": store.teacher_digest, "text": store.text_digest},
        stop_requested=stop_requested,
        show_progress=show_progress,
    )


def _check_teacher_apart(teacher: str, output_dir: str) -> None:
    """The teacher is not the run directory the student is written to, nor in it: the
    student's files would replace it."""
    folder = os.path.realpath(output_dir)
    found = os.path.realpath(teacher)
    if found == folder or found.startswith(folder.rstrip(os.sep) + os.sep):
        raise CrftagError(
            f"{teacher}: the teacher is the student's run directory {output_dir} (or in it), "
            "which the student's model would replace; give the student another -o"
        )


def _remove_other_store(
    store_dir: str, teacher: str, text_files: list[str], config: Config
) -> None:
    """With --overwrite, labels of another teacher, text or temperature, or a folder that is
    no store, go; a store of this teacher and text, finished or not, is kept and reused."""
    if not os.path.isdir(store_dir) or not os.listdir(store_dir):
        return
    expected = {
        "teacher_digest": teacher_digest(teacher),
        "text_digest": text_digest(text_files),
        "temperature": config.distill.temperature,
    }
    try:
        manifest = read_manifest(store_dir)
    except CrftagError:
        manifest = {}
    if any(manifest.get(key) != value for key, value in expected.items()):
        shutil.rmtree(store_dir)


def _stopped_early(output_dir: str, resume: bool) -> str:
    """What a signal before the first batch means: the teacher's labels written so far are
    kept, and the same command goes on from them."""
    if resume:
        return (
            "interrupted before training went on; continue with: "
            f"crftag distill --resume {output_dir}"
        )
    return (
        "interrupted before the first batch; the teacher's labels written so far are kept in "
        f"{os.path.join(output_dir, STORE_FOLDER)}: run the same command again to go on"
    )
