"""A teacher's tags on a student's: the same labels, renamed by train.label_map, BIOES into
IOB2, and every other difference refused in one line naming the labels."""

import itertools

import pytest
import torch

from crftag.errors import CrftagError
from crftag.training.teacher_tags import map_teacher_tags, tag_matrix

BIOES = ["O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC"]


def mapped(
    teacher_tags, teacher_scheme="bioes", student_scheme="bioes", label_map=None, labels=None
):
    return map_teacher_tags(
        teacher_tags,
        teacher_scheme=teacher_scheme,
        student_scheme=student_scheme,
        label_map=label_map,
        student_labels=labels,
        teacher_name="teacher.pt",
    )


def test_the_same_labels_map_to_themselves():
    assert mapped(BIOES, labels={"PER", "LOC", None}) == BIOES


def test_a_label_map_renames_the_teachers_labels_in_every_prefix():
    got = mapped(BIOES, label_map={"person": "PER"}, labels={"person", "LOC"})
    assert got == [tag.replace("PER", "person") for tag in BIOES]


def test_bioes_maps_into_iob2_token_by_token():
    got = mapped(BIOES, student_scheme="iob2", labels={"PER", "LOC"})
    assert got == ["O", "B-PER", "I-PER", "I-PER", "B-PER", "B-LOC", "I-LOC", "I-LOC", "B-LOC"]


def test_iob2_into_bioes_is_refused_with_the_fix():
    with pytest.raises(CrftagError, match="teacher.pt: .*IOB2.*data.train_scheme=iob2"):
        mapped(["O", "B-PER", "I-PER"], teacher_scheme="iob2", labels={"PER"})


def test_spans_and_tags_that_are_not_spans_do_not_mix():
    with pytest.raises(CrftagError, match="teacher.pt: .*not spans"):
        mapped(["NOUN", "VERB"], teacher_scheme="none", labels={"PER"})


@pytest.mark.parametrize(
    ("labels", "label_map", "expected"),
    [
        ({"PER"}, None, "only the teacher has LOC"),
        ({"PER", "LOC", "ORG"}, None, "only the student's data has ORG"),
        ({"person", "LOC"}, None, "only the teacher has PER; only the student's data has person"),
    ],
)
def test_labels_that_differ_are_named_in_one_line(labels, label_map, expected):
    with pytest.raises(CrftagError) as error:
        mapped(BIOES, label_map=label_map, labels=labels)
    message = str(error.value)
    assert "\n" not in message and message.startswith("teacher.pt: ")
    assert expected in message and "train.label_map" in message


def test_a_label_map_naming_no_teacher_label_or_one_twice_is_refused():
    with pytest.raises(CrftagError, match="'person' to 'PERS'.*PER"):
        mapped(BIOES, label_map={"person": "PERS"}, labels={"person", "LOC"})
    with pytest.raises(CrftagError, match="'PER' is mapped twice"):
        mapped(BIOES, label_map={"a": "PER", "b": "PER"}, labels={"a", "b", "LOC"})


def test_mapped_marginals_are_those_of_the_mapped_sequences():
    """Brute force: the marginals of the teacher's distribution pushed through the tag map,
    sequence by sequence, equal its own marginals summed through :func:`tag_matrix`."""
    teacher = ["O", "B-X", "I-X", "E-X", "S-X"]
    student = ["B-X", "I-X", "O"]  # the student's own order
    to_student = mapped(teacher, student_scheme="iob2", labels={"X"})
    matrix = tag_matrix(to_student, student)
    generator = torch.Generator().manual_seed(0)
    length, k = 4, len(teacher)
    emissions = torch.randn(length, k, generator=generator, dtype=torch.float64)
    transitions = torch.randn(k, k, generator=generator, dtype=torch.float64)
    token = torch.zeros(length, k, dtype=torch.float64)
    pairs = torch.zeros(k, k, dtype=torch.float64)
    pushed_token = torch.zeros(length, len(student), dtype=torch.float64)
    pushed_pairs = torch.zeros(len(student), len(student), dtype=torch.float64)
    scores = {}
    for path in itertools.product(range(k), repeat=length):
        score = sum(emissions[t, y] for t, y in enumerate(path))
        scores[path] = score + sum(transitions[a, b] for a, b in itertools.pairwise(path))
    log_z = torch.logsumexp(torch.stack(list(scores.values())), 0)
    index = {tag: i for i, tag in enumerate(student)}
    for path, score in scores.items():
        p = torch.exp(score - log_z)
        image = [index[to_student[y]] for y in path]
        for t in range(length):
            token[t, path[t]] += p
            pushed_token[t, image[t]] += p
        for t in range(1, length):
            pairs[path[t - 1], path[t]] += p
            pushed_pairs[image[t - 1], image[t]] += p
    matrix = matrix.double()
    assert torch.allclose(token @ matrix, pushed_token)
    assert torch.allclose(matrix.T @ pairs @ matrix, pushed_pairs)
