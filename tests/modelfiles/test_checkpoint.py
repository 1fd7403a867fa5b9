"""Checkpoint files: atomic writes, and files that are hostile, truncated, random or newer."""

import json
import os
import pickle

import pytest
import torch

from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import (
    FORMAT_VERSION,
    load_model,
    read_checkpoint,
    write_checkpoint,
)


def test_atomic_write_keeps_the_old_file_when_a_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    write_checkpoint(str(path), {"format": "old"})

    def failing_save(payload, stream):
        stream.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError):
        write_checkpoint(str(path), {"format": "new"})
    monkeypatch.undo()
    assert torch.load(path, weights_only=True) == {"format": "old"}
    assert os.listdir(tmp_path) == ["model.pt"]  # no temporary file left behind


class Payload:
    """Unpickling this runs a shell command, as a malicious model file would."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_model_file_that_runs_code_when_unpickled_is_refused(tmp_path, invoke):
    marker = tmp_path / "pwned"
    hostile = tmp_path / "model.pt"
    torch.save({"format": "crftag", "payload": Payload(str(marker))}, hostile)
    with pytest.raises(CrftagError, match="refused"):
        load_model(str(hostile))
    result = invoke(["predict", "-m", str(hostile)], stdin="a b\n")
    assert result.status == 2 and "refused" in result.stderr
    assert not marker.exists()
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps(Payload(str(marker))))
    assert invoke(["eval", "data/ner_sample.dev.conll", "-m", str(plain)]).status == 2
    assert not marker.exists()


def test_truncated_random_and_newer_checkpoints_give_clear_errors(tmp_path, sample_model, invoke):
    data = (sample_model / "model.pt").read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    noise = tmp_path / "noise.pt"
    noise.write_bytes(os.urandom(4096))
    newer = tmp_path / "newer.pt"
    state = torch.load(sample_model / "model.pt", weights_only=True)
    state["format_version"] = 99
    torch.save(state, newer)
    for path, message in (
        (truncated, "not a crftag model: checkpoints and exported models are zip archives"),
        (noise, "not a crftag model: checkpoints and exported models are zip archives"),
        (newer, "checkpoint format 99 is newer"),
    ):
        result = invoke(["predict", "-m", str(path)], stdin="a\n")
        assert result.status == 2, result.stderr
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_vocabularies_are_one_json_string_and_format_1_files_still_load(tmp_path, sample_model):
    stored = torch.load(sample_model / "model.pt", weights_only=True)
    assert stored["format_version"] == FORMAT_VERSION == 2
    assert isinstance(stored["vocabularies"], str)
    vocabularies = json.loads(stored["vocabularies"])
    # Format 1 held the vocabularies as Python values; such a file tags as before.
    older = tmp_path / "format1.pt"
    torch.save({**stored, "format_version": 1, "vocabularies": vocabularies}, older)
    assert read_checkpoint(str(older))["vocabularies"] == vocabularies
    assert load_model(str(older)).vocabularies.to_state() == vocabularies
    assert load_model(str(sample_model)).vocabularies.to_state() == vocabularies


@pytest.mark.parametrize("text", ["{not json", "[" * 100_000 + "]" * 100_000])
def test_vocabularies_that_are_not_json_are_one_clear_error(tmp_path, sample_model, invoke, text):
    stored = torch.load(sample_model / "model.pt", weights_only=True)
    broken = tmp_path / "model.pt"
    torch.save({**stored, "vocabularies": text}, broken)
    result = invoke(["predict", "-m", str(broken)], stdin="a\n")
    assert result.status == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"crftag: error: {broken}: vocabularies: not valid JSON\n"
