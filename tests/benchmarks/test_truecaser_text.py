"""benchmarks/truecaser_text.py: the training file's sentences as text, less those of dev and
test, with the count removed."""

import pytest


@pytest.fixture(scope="module")
def script(load_benchmark):
    return load_benchmark("truecaser_text")


def conll(path, sentences):
    rows = ["-DOCSTART- O", ""]
    for words in sentences:
        rows += [f"{word} O" for word in words.split()] + [""]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def test_sentences_of_the_files_held_apart_are_removed_every_copy(script, tmp_path):
    train = conll(tmp_path / "train", ["Peter met Anna .", "-- Dublin --", "Rain .", "Rain ."])
    dev = conll(tmp_path / "dev", ["Rain ."])
    test = conll(tmp_path / "test", ["-- Dublin --", "Anna met Peter ."])
    kept, removed = script.pretraining_text(train, [dev, test])
    assert kept == ["Peter met Anna ."] and removed == 3


def test_the_command_writes_the_text_and_reports_the_counts(script, tmp_path, monkeypatch, capsys):
    train = conll(tmp_path / "train", ["Peter met Anna .", "Rain ."])
    dev = conll(tmp_path / "dev", ["Rain ."])
    out = tmp_path / "text.txt"
    argv = ["truecaser_text.py", train, "-o", str(out), "--remove", dev]
    monkeypatch.setattr("sys.argv", argv)
    script.main()
    assert out.read_text(encoding="utf-8") == "Peter met Anna .\n"
    assert capsys.readouterr().err == f"{out}: 1 lines kept, 1 removed\n"
