"""The checks on a ``crftag tune`` study directory made before Optuna opens it: its
``study.db`` is an Optuna study that can be written (:func:`check_study_file`), begun from the
config the command runs now (:func:`check_study_config`). Each refusal is one line naming the
file, and comes before anything of the study is changed.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse

from crftag.errors import CrftagError

__all__ = ["CONFIG_ATTR", "check_study_config", "check_study_file", "config_differences"]

SQLITE_HEADER = b"SQLite format 3\x00"
OPTUNA_TABLES = ("studies", "trials", "version_info")
CONFIG_ATTR = "crftag_config"  # the study's user attribute that holds the config it began with
MOVE_IT = "move it away, or choose another -o"


def check_study_file(output_dir: str, study_file: str, study_name: str) -> None:
    """``output_dir`` and its ``study_file`` (if there is one yet) can hold the study: the
    directory and the file writable, the file an SQLite database with Optuna's tables and no
    study but ``study_name``'s. Nothing is written to it here."""
    path = os.path.join(output_dir, study_file)
    if os.path.isdir(output_dir) and not os.access(output_dir, os.W_OK | os.X_OK):
        raise CrftagError(f"{output_dir}: read-only; crftag tune writes its trials here")
    if not os.path.lexists(path):
        return
    if not os.path.isfile(path):
        raise CrftagError(f"{path}: not a file; expected the study of crftag tune; {MOVE_IT}")
    if not os.access(path, os.R_OK | os.W_OK):
        raise CrftagError(f"{path}: read-only; crftag tune records every trial in it")
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if not header:
        return  # an empty file is an empty SQLite database: the study starts in it
    if header != SQLITE_HEADER:
        raise CrftagError(f"{path}: not an SQLite file, so not a crftag tune study; {MOVE_IT}")
    _check_tables(path, study_name)


def _check_tables(path: str, study_name: str) -> None:
    # Read-write, not read-only: a run killed mid-write leaves a journal that SQLite rolls back
    # on opening (as Optuna would), where a read-only connection would take it for damage.
    # Without one, the checks below read and write nothing.
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=rw"
    try:
        connection = sqlite3.connect(uri, uri=True)
        try:
            integrity = connection.execute("PRAGMA quick_check").fetchone()[0]
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            missing = [table for table in OPTUNA_TABLES if table not in tables]
            names = [] if missing else [row[0] for row in connection.execute(_STUDY_NAMES)]
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise CrftagError(f"{path}: a damaged SQLite file ({error}); {MOVE_IT}") from None
    if integrity != "ok":
        raise CrftagError(f"{path}: a damaged SQLite file ({integrity}); {MOVE_IT}")
    if missing:
        raise CrftagError(
            f"{path}: an SQLite file, but not an Optuna study (no table {missing[0]!r}); {MOVE_IT}"
        )
    others = [name for name in names if name != study_name]
    if others:
        raise CrftagError(
            f"{path}: holds Optuna studies other than crftag tune's ({', '.join(others)}); "
            f"{MOVE_IT}"
        )


_STUDY_NAMES = "SELECT study_name FROM studies"


def check_study_config(path: str, stored: dict, current: dict) -> None:
    """``current`` (a config as :meth:`Config.to_dict` gives it) is the config the study in
    ``path`` began with, ``stored``; else one line naming the first keys that differ."""
    differences = config_differences(stored, current)
    if not differences:
        return
    shown = "; ".join(differences[:3]) + ("; ..." if len(differences) > 3 else "")
    raise CrftagError(
        f"{path}: the study began with another config ({shown}); rerun with that config, or "
        "give --overwrite to begin a new study in its place, or choose another -o"
    )


def config_differences(stored: dict, current: dict, prefix: str = "") -> list[str]:
    """``key: A in the study, B now`` for each dotted key whose value differs."""
    differences = []
    for key in sorted(set(stored) | set(current), key=str):
        before, now = stored.get(key), current.get(key)
        name = f"{prefix}{key}"
        if isinstance(before, dict) and isinstance(now, dict):
            differences.extend(config_differences(before, now, f"{name}."))
        elif before != now:
            differences.append(f"{name}: {_shown(before)} in the study, {_shown(now)} now")
    return differences


def _shown(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
