"""Which of the student's tags each of a teacher's tags is, for ``crftag distill``.

The teacher's labels must be the student's training data's, the same names or renamed by
``train.label_map: {student: teacher}``; any other difference is refused in one line naming the
labels on each side. Tags map token by token, so a teacher's distribution over tag sequences
gives the student's exactly by summing: a teacher trained in BIOES teaches a student trained in
IOB2 (``S-X`` is ``B-X``, ``E-X`` is ``I-X``); the other way round needs the next tag, and is
refused with the fix (``data.train_scheme``). The schemes of the files themselves (IOB1, IOB2,
BIOES) do not matter: both models read their files into the scheme they train in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from crftag.errors import CrftagError
from crftag.training.label_map import OUTSIDE, label_of, retag

__all__ = ["map_teacher_tags", "tag_matrix"]

# A teacher's prefix as the student's: BIOES into IOB2 loses only where spans end.
_BIOES_AS_IOB2 = {"B": "B", "I": "I", "E": "I", "S": "B"}


def map_teacher_tags(
    teacher_tags: Sequence[str],
    *,
    teacher_scheme: str,
    student_scheme: str,
    label_map: dict[str, str] | None,
    student_labels: Iterable[str | None] | None,
    teacher_name: str,
) -> list[str]:
    """The student's tag for each of ``teacher_tags`` (the teacher's, in the scheme it trains
    in, ``teacher_scheme``; ``none`` for tags that are not spans). ``student_labels``: the
    labels of the student's training data (:func:`label_of` of its tags), which the teacher's
    must equal once mapped; None skips that check (a resumed run made it when it began)."""
    _check_schemes(teacher_scheme, student_scheme, teacher_name)
    renamed = _teacher_to_student(label_map or {}, teacher_tags, teacher_name)
    mapped = []
    for tag in teacher_tags:
        label = label_of(tag)
        if label is None:
            mapped.append(OUTSIDE)
            continue
        if teacher_scheme == "bioes" and student_scheme == "iob2":
            tag = f"{_BIOES_AS_IOB2[tag[0]]}{tag[1:]}"
        mapped.append(retag(tag, renamed.get(label, label)))
    if student_labels is not None:
        _check_labels({label_of(tag) for tag in mapped}, set(student_labels), teacher_name)
    return mapped


def tag_matrix(mapped: Sequence[str], student_tags: Sequence[str]) -> torch.Tensor:
    """(K_teacher, K_student) float32 with a 1 where a teacher's tag is a student's
    (``mapped`` from :func:`map_teacher_tags`): marginals @ matrix are the student's."""
    index = {tag: position for position, tag in enumerate(student_tags)}
    matrix = torch.zeros(len(mapped), len(student_tags))
    for position, tag in enumerate(mapped):
        matrix[position, index[tag]] = 1.0
    return matrix


def _check_schemes(teacher_scheme: str, student_scheme: str, teacher_name: str) -> None:
    if (teacher_scheme == "none") != (student_scheme == "none"):
        kinds = {True: "tags that are not spans (data.tag_scheme none)", False: "span tags"}
        raise CrftagError(
            f"{teacher_name}: the teacher predicts {kinds[teacher_scheme == 'none']} and the "
            f"student's data has {kinds[student_scheme == 'none']}; distil between models of one "
            "kind"
        )
    if teacher_scheme == "iob2" and student_scheme == "bioes":
        raise CrftagError(
            f"{teacher_name}: the teacher predicts IOB2 tags, which do not give the BIOES tags the "
            "student trains in token by token; train the student in IOB2: --set "
            "data.train_scheme=iob2"
        )


def _teacher_to_student(
    label_map: dict[str, str], teacher_tags: Sequence[str], teacher_name: str
) -> dict[str, str]:
    """``train.label_map`` ({student: teacher}) turned round, each teacher label named once."""
    teacher_labels = {label_of(tag) for tag in teacher_tags} - {None}
    renamed: dict[str, str] = {}
    for student, teacher in label_map.items():
        if teacher not in teacher_labels:
            raise CrftagError(
                f"{teacher_name}: train.label_map maps {student!r} to {teacher!r}, which is not "
                f"one of the teacher's labels ({', '.join(sorted(teacher_labels))})"
            )
        if teacher in renamed:
            raise CrftagError(
                f"train.label_map: the teacher's label {teacher!r} is mapped twice (from "
                f"{renamed[teacher]!r} and {student!r}); each teacher label is one student label"
            )
        renamed[teacher] = student
    return renamed


def _check_labels(teacher: set, student: set, teacher_name: str) -> None:
    """The teacher's labels, mapped, are the student's: one line naming those that differ."""
    teacher, student = teacher - {None}, student - {None}
    if teacher == student:
        return
    parts = []
    if teacher - student:
        parts.append(f"only the teacher has {', '.join(sorted(teacher - student))}")
    if student - teacher:
        parts.append(f"only the student's data has {', '.join(sorted(student - teacher))}")
    raise CrftagError(
        f"{teacher_name}: the teacher's labels are not the student's ({'; '.join(parts)}); "
        "rename them with train.label_map: {student: teacher}, or give a teacher of these labels"
    )
