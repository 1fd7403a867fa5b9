"""Pretrained vectors with values that are not finite (``nan``, ``inf``, a number beyond
float32's range) are refused when read, naming the file and line, before a model trains on
them; through ``crftag train`` nothing is written."""

import gzip

import pytest

from crftag.data.vectors import read_embeddings
from crftag.errors import CrftagError


@pytest.mark.parametrize(
    ("value", "shown"),
    [("nan", "nan"), ("NaN", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1e39", "inf")],
)
@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_value_that_is_not_finite_names_its_line(tmp_path, value, shown, packed):
    text = f"the 0.1 0.2\nof 0.3 0.4\nberlin 1 {value}\nparis 2 3\n"
    path = tmp_path / "vectors.txt"
    path.write_bytes(gzip.compress(text.encode()) if packed else text.encode())
    with pytest.raises(CrftagError) as caught:
        read_embeddings(str(path), show_progress=False)
    assert str(caught.value).startswith(f"{path}:3: the vector of 'berlin' holds {shown} ")


def test_a_word2vec_header_does_not_shift_the_line(tmp_path):
    path = tmp_path / "w2v.txt"
    path.write_text("2 2\nthe nan 0.2\nof 0.3 0.4\n")
    with pytest.raises(CrftagError, match=r"w2v.txt:2: the vector of 'the' holds nan"):
        read_embeddings(str(path), show_progress=False)


def test_train_refuses_them_and_writes_no_model(invoke, tiny_args, tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("the " + " ".join(["nan"] * 32) + "\nberlin " + " 0.5" * 32 + "\n")
    run = tmp_path / "run"
    args = ["train", "configs/sample.yaml", "-o", str(run), *tiny_args(train__epochs=1)]
    result = invoke([*args, "--set", f"model.embeddings={vectors}"])
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr.startswith(f"crftag: error: {vectors}:1: the vector of 'the' holds nan")
    assert result.stderr.count("\n") == 1
    assert not (run / "model.pt").exists()
