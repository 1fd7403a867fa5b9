"""Checked model descriptions remembered by digest: a description that passed is not checked
again, one that failed or changed is, and a cache that cannot be written changes nothing."""

import os

import pytest

from crftag.errors import CrftagError
from crftag.inference.array_tagger import ArrayTagger
from crftag.modelfiles import checkpoint_schema
from crftag.modelfiles.registry import resolve_model_path
from crftag.runtime import checked
from crftag.runtime.archive import read_archive_digest


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_digest_covers_every_byte_and_the_version(monkeypatch):
    first = checked.digest(b'{"words": ["a", "b"]}')
    assert first == checked.digest(b'{"words": ["a", "b"]}')
    assert first != checked.digest(b'{"words": ["a", "c"]}')
    monkeypatch.setattr(checked, "__version__", "99.0")
    assert first != checked.digest(b'{"words": ["a", "b"]}')


def test_remembered_digests_are_found_and_the_latest_kept(cache_home):
    assert not checked.was_checked("0" * 64)
    for number in range(checked.KEPT + 3):
        checked.remember(f"{number:064x}")
    assert checked.was_checked(f"{checked.KEPT + 2:064x}")
    assert not checked.was_checked(f"{0:064x}")  # the oldest went
    lines = (cache_home / "crftag" / "checked").read_text().split()
    assert len(lines) == checked.KEPT


def test_a_cache_that_cannot_be_written_changes_nothing(cache_home):
    cache_home.mkdir()
    (cache_home / "crftag").write_text("a file where the folder would be")
    checked.remember("1" * 64)  # no error
    assert not checked.was_checked("1" * 64)


def test_a_model_loaded_twice_checks_its_description_once(monkeypatch):
    calls = []
    payload = checkpoint_schema.check_payload
    monkeypatch.setattr(
        checkpoint_schema, "check_payload", lambda *args: calls.append(1) or payload(*args)
    )
    path = resolve_model_path("en-ner")
    first = ArrayTagger.load(path)
    cache = os.path.join(os.environ["XDG_CACHE_HOME"], "crftag", "checked")
    written = os.stat(cache).st_ino
    second = ArrayTagger.load(path)
    assert len(calls) == 1
    assert os.stat(cache).st_ino == written  # found, not written again
    sentence = [["UN", "praises", "Danish", "plan"]]
    assert first.tag(sentence) == second.tag(sentence) == [["B-ORG", "O", "B-MISC", "O"]]


def test_a_description_that_fails_is_checked_every_time(monkeypatch):
    def refuse(state, source):
        raise CrftagError(f"{source}: refused")

    monkeypatch.setattr(checkpoint_schema, "check_payload", refuse)
    path = resolve_model_path("en-ner")
    for _ in range(2):
        with pytest.raises(CrftagError, match="refused"):
            ArrayTagger.load(path)
    _, _, digest = read_archive_digest(path)
    assert not checked.was_checked(digest)
    assert not os.path.exists(os.path.join(os.environ["XDG_CACHE_HOME"], "crftag", "checked"))
