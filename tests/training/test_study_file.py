"""crftag tune on a study directory it cannot use: a damaged or foreign study.db, a read-only
one, or a study begun with another config, each one line before anything of it changes."""

import json
import os
import pathlib
import shutil
import sqlite3

import pytest

from crftag.training import study_file
from crftag.training.study_file import config_differences
from tests.training.test_tuning import _trials, _tune_args


@pytest.fixture(scope="module")
def begun_study(tmp_path_factory):
    """A study of one finished trial, made by the command; copied by each test that uses it."""
    from crftag import cli

    study = tmp_path_factory.mktemp("begun") / "study"
    assert cli.run(_tune_args(study, "--trials", "1")) == 0
    return study


def _snapshot(directory):
    """Every file under ``directory`` with its bytes, to show that nothing changed."""
    found = {}
    for root, folders, files in os.walk(directory):
        for name in folders + files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, directory)] = (
                pathlib.Path(path).read_bytes() if os.path.isfile(path) else None
            )
    return found


def _copy(begun, tmp_path):
    study = tmp_path / "study"
    shutil.copytree(begun, study)
    return study


def _random_bytes(path):
    path.write_bytes(os.urandom(5000))


def _directory(path):
    path.mkdir()


def _other_schema(path):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text)")
    connection.commit()
    connection.close()


def _other_study(path):
    import optuna

    optuna.create_study(study_name="mine", storage=f"sqlite:///{path}")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_random_bytes, "not an SQLite file, so not a crftag tune study"),
        (_directory, "not a file; expected the study of crftag tune"),
        (_other_schema, "an SQLite file, but not an Optuna study (no table 'studies')"),
        (_other_study, "holds Optuna studies other than crftag tune's (mine)"),
    ],
)
def test_a_study_file_that_is_no_study_is_one_line_and_left_alone(
    invoke, tmp_path, damage, message
):
    study = tmp_path / "study"
    study.mkdir()
    damage(study / "study.db")
    before = _snapshot(study)
    result = invoke(_tune_args(study, "--trials", "1"))
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {study / 'study.db'}: {message}")
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert _snapshot(study) == before


@pytest.mark.parametrize("kept", [4096, 50000])
def test_a_truncated_study_is_one_line_and_left_alone(invoke, tmp_path, begun_study, kept):
    study = _copy(begun_study, tmp_path)
    whole = (study / "study.db").read_bytes()
    (study / "study.db").write_bytes(whole[:kept])
    before = _snapshot(study)
    result = invoke(_tune_args(study, "--trials", "2"))
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {study / 'study.db'}: a damaged SQLite file")
    assert len(result.stderr.splitlines()) == 1
    assert _snapshot(study) == before


@pytest.mark.parametrize("where", ["study.db", "."])
def test_a_read_only_study_says_so(invoke, tmp_path, begun_study, monkeypatch, where):
    study = _copy(begun_study, tmp_path)
    read_only = os.path.normpath(study / where)
    real_access = os.access
    # The permission bits alone would not stop root, who runs some test machines.
    monkeypatch.setattr(
        study_file.os,
        "access",
        lambda path, mode: (
            real_access(path, mode) and not (os.path.normpath(path) == read_only and mode & os.W_OK)
        ),
    )
    before = _snapshot(study)
    result = invoke(_tune_args(study, "--trials", "2"))
    assert result.status == 2
    assert result.stderr == f"crftag: error: {read_only}: " + (
        "read-only; crftag tune records every trial in it\n"
        if where == "study.db"
        else "read-only; crftag tune writes its trials here\n"
    )
    assert _snapshot(study) == before


def test_another_config_is_refused_and_overwrite_begins_a_new_study(invoke, tmp_path, begun_study):
    study = _copy(begun_study, tmp_path)
    before = _snapshot(study)
    changed = ("--set", "train.epochs=2", "--set", "tune.lr=[0.001,0.1]")
    result = invoke(_tune_args(study, "--trials", "2", *changed))
    assert result.status == 2
    assert result.stderr == (
        f"crftag: error: {study / 'study.db'}: the study began with another config "
        "(train.epochs: 1 in the study, 2 now; tune.lr: [0.0005, 0.05] in the study, "
        "[0.001, 0.1] now); rerun with that config, or give --overwrite to begin a new study "
        "in its place, or choose another -o\n"
    )
    assert _snapshot(study) == before

    same = invoke(_tune_args(study, "--trials", "2"))  # the config it began with continues it
    assert same.status == 0, same.stderr
    assert [t["number"] for t in _trials(study)] == [0, 1]

    fresh = invoke(_tune_args(study, "--trials", "1", *changed, "--overwrite"))
    assert fresh.status == 0, fresh.stderr
    (trial,) = _trials(study)
    assert trial["number"] == 0 and trial["epochs"] == 2
    assert sorted(os.listdir(study / "trials")) == ["000"]
    assert json.loads((study / "best.json").read_text())["trials"] == 1


def test_config_differences_name_each_dotted_key():
    stored = {"train": {"epochs": 1, "lr": 0.1}, "tune": {"search": ["lr"]}}
    current = {"train": {"epochs": 2, "lr": 0.1}, "tune": {"search": ["lr", "dropout"]}}
    assert config_differences(stored, current) == [
        "train.epochs: 1 in the study, 2 now",
        "tune.search: ['lr'] in the study, ['lr', 'dropout'] now",
    ]
    assert config_differences(stored, stored) == []


def test_a_study_killed_mid_write_continues(invoke, tmp_path, begun_study):
    """A kill mid-transaction leaves study.db with a hot journal: SQLite rolls it back on
    opening, and the study goes on with its committed trials."""
    writing = _copy(begun_study, tmp_path)
    killed = tmp_path / "killed"
    killed.mkdir()
    connection = sqlite3.connect(writing / "study.db", isolation_level=None)
    connection.execute("PRAGMA cache_size=1")  # changed pages reach the file before commit
    connection.execute("BEGIN")
    for number in range(2000):
        connection.execute(
            "INSERT INTO study_user_attributes (study_id, key, value_json) VALUES (1, ?, ?)",
            (f"unfinished-{number}", '"' + "x" * 500 + '"'),
        )
    for name in ("study.db", "study.db-journal"):  # as a kill at this moment leaves them
        shutil.copy(writing / name, killed / name)
    connection.close()
    shutil.copytree(writing / "trials", killed / "trials")
    result = invoke(_tune_args(killed, "--trials", "2"))
    assert result.status == 0, result.stderr
    assert [t["state"] for t in _trials(killed)] == ["complete", "complete"]
