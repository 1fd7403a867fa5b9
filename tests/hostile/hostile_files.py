"""What the hostile tests share: damaged copies of a good file, and the one check of a refusal
(one line `crftag: error: ...` naming the file, a non-zero exit, nothing on stdout)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))  # a file of another kind


def truncated(data: bytes) -> bytes:
    """The first half of ``data``."""
    return data[: len(data) // 2]


def flipped(data: bytes, count: int = 16) -> bytes:
    """``data`` with ``count`` bytes in its middle inverted."""
    middle = len(data) // 2
    inverted = bytes(byte ^ 0xFF for byte in data[middle : middle + count])
    return data[:middle] + inverted + data[middle + count :]


# Each way a file of any kind arrives damaged: its bytes -> the damaged bytes.
DAMAGES = {
    "empty": lambda data: b"",
    "truncated": truncated,
    "flipped": flipped,
    "png": lambda data: PNG,
    "latin-1 text": lambda data: "Modèle\n".encode("latin-1"),
}


def word2vec_binary(vectors: dict[str, list[float]], header: bytes | None = None) -> bytes:
    """A word2vec binary file as the C tool writes it; ``header`` replaces its first line."""
    dim = len(next(iter(vectors.values())))
    data = header if header is not None else f"{len(vectors)} {dim}\n".encode()
    for word, vector in vectors.items():
        data += word.encode() + b" " + struct.pack(f"<{dim}f", *vector) + b"\n"
    return data


def assert_refused(result, path, *texts: str) -> None:
    """``result`` (of the ``invoke`` fixture) is one line ``crftag: error: ...`` naming
    ``path`` and holding each of ``texts``, with a non-zero exit and nothing on stdout."""
    assert result.status not in (0, None), result.stderr
    assert result.stdout == "", result.stdout[:300]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crftag: error: "), result.stderr[-2000:]
    assert str(path) in lines[0], lines[0]
    for text in texts:
        assert text in lines[0], lines[0]


def assert_training_refuses(invoke, options, tmp_path, data, setting, message) -> None:
    """``crftag train`` with ``data`` in a file and ``--set setting(its path)`` (and the tiny
    model's ``options``) is refused naming the file with ``message``, writes no model, and
    leaves the file as it was."""
    path = tmp_path / "input.data"
    path.write_bytes(data)
    before = snapshot(path)
    run = tmp_path / "run"
    settings = [part for value in setting(path) for part in ("--set", value)]
    result = invoke(["train", "configs/sample.yaml", "-o", str(run), *options, *settings])
    assert_refused(result, path, message)
    assert snapshot(path) == before
    assert not (run / "model.pt").exists()


def stopped_pretraining(folder: Path, text: bytes) -> tuple[Path, Path]:
    """A pretraining of ``text`` (written to folder/text.txt) on tiny models, two epochs of
    batches of 4 lines, stopped by SIGTERM after its first batch: (the text file, folder/lm,
    which holds resume.pt)."""
    import signal

    import torch

    from crftag.errors import TrainingInterrupted
    from crftag.training.pretrain import PretrainSettings, pretrain

    path = folder / "text.txt"
    path.write_bytes(text)
    settings = PretrainSettings(hidden_size=8, char_dim=4, batch_size=4, epochs=2)
    with pytest.raises(TrainingInterrupted):
        pretrain(
            [str(path)],
            str(folder / "lm"),
            settings,
            minutes=None,
            device=torch.device("cpu"),
            stop_requested=lambda: signal.SIGTERM,  # polled after each batch
            show_progress=False,
        )
    assert (folder / "lm" / "resume.pt").exists()
    return path, folder / "lm"


def read_only_folder(tmp_path):
    """A folder this process cannot write in: a folder of mode 0555, or where permissions do
    not bind (root), one of the kernel's own (sysfs refuses new files even to root)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        folder = "/sys/kernel"
        if not os.path.isdir(folder):
            pytest.skip("no folder here refuses this process's writes")
    return folder


def snapshot(*paths: Path) -> dict:
    """Each file under ``paths`` (files or folders) with its bytes and mode: compare two
    snapshots to see that nothing was altered, added or lost."""
    found = {}
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            found[str(file)] = (file.read_bytes(), os.stat(file).st_mode)
    return found
