"""Progress written to a log file: plain lines, each tenth of the work and every few seconds,
with the count, the rate and the time left; a bar redrawn in place only on a terminal."""

import contextlib
import re
import time

import pytest

from crftag.data import progress
from crftag.data.progress import progress_bar

LINE = re.compile(
    r"^epoch 1: (\d+)% (\d+)/57 \[\d\d:\d\d<(\d\d:\d\d|\?), +([\d.]+|\?)"
    r"(batch/s|s/batch)(, loss=\d+)?\]$"
)


@pytest.fixture
def log_file(tmp_path):
    """stderr as a file on disk, as in `crftag ... 2> log`: ``with log_file() as read:`` sends
    stderr there and gives the reader of what it holds (set in the test itself, for pytest's
    capture sets stderr anew when the test starts)."""

    @contextlib.contextmanager
    def redirected():
        path = tmp_path / "log"
        with open(path, "w", encoding="utf-8") as stream, contextlib.redirect_stderr(stream):

            def read() -> str:
                stream.flush()
                return path.read_text(encoding="utf-8")

            yield read

    return redirected


def test_in_a_log_file_progress_is_a_line_each_tenth_with_rate_and_time_left(log_file, monkeypatch):
    monkeypatch.setattr(progress, "LOG_SECONDS", 1e9)  # the tenths' lines alone
    with log_file() as read:
        with progress_bar(total=57, show=True, desc="epoch 1", unit="batch", leave=False) as bar:
            for step in range(57):
                bar.update()
                bar.set_postfix(loss=step)
        text = read()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    found = [LINE.match(line) for line in lines]
    assert all(found), lines
    counts = [int(match[2]) for match in found]
    # a line as each tenth is passed, and none between (nor at the start: a short job, or one
    # that fails at once, leaves its log as it would be without progress)
    assert [count * 10 // 57 for count in counts] == list(range(1, 11))
    assert counts[-1] == 57 and all(match[4] != "?" for match in found)


def test_in_a_log_file_a_slow_job_writes_a_line_every_log_seconds(log_file, monkeypatch):
    monkeypatch.setattr(progress, "LOG_SECONDS", 0.05)
    with log_file() as read:
        with progress_bar(total=10_000, show=True, desc="epoch 1", unit="batch") as bar:
            for _ in range(40):
                time.sleep(0.01)
                bar.update()  # 0.4% of the total: no tenth is passed
        lines = read().splitlines()
    assert len(lines) >= 4, lines
    assert all(re.match(r"^epoch 1: 0% \d+/10000 \[", line) for line in lines), lines


def test_an_unsized_iteration_gives_counts_and_rates(log_file, monkeypatch):
    monkeypatch.setattr(progress, "LOG_SECONDS", 0)
    with log_file() as read:
        units = progress_bar(iter(range(3)), show=True, desc="select", unit=" sentences")
        assert list(units) == [0, 1, 2]
        lines = read().splitlines()
    assert lines[-1].startswith("select: 3 [00:00, ") and lines[-1].endswith(" sentences/s]")


def test_nothing_is_written_unless_shown(log_file):
    with log_file() as read:
        with progress_bar(total=5, show=False, desc="epoch 1") as bar:
            bar.update(5)
            bar.set_postfix(loss=1)
        assert read() == ""


def test_train_into_a_log_writes_each_epoch_s_progress(invoke, tiny_args, tmp_path):
    args = [a for a in tiny_args(train__epochs=2) if a != "--quiet"]
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *args])
    assert result.status == 0, result.stderr
    for epoch in (1, 2):
        assert re.search(rf"^epoch {epoch}: 100% (\d+)/\1 \[.*batch", result.stderr, re.M)


def test_reading_text_vectors_into_a_log_writes_their_progress(log_file, tmp_path):
    from crftag.data.vectors import read_embeddings

    path = tmp_path / "glove.txt"
    path.write_text("".join(f"word{i} 0.5 0.25\n" for i in range(10_000)))
    with log_file() as read:
        assert len(read_embeddings(str(path), show_progress=True).words) == 10_000
        lines = read().splitlines()
    assert lines and all(re.match(r"embeddings: \d+% .*B/s\]$", line) for line in lines), lines
