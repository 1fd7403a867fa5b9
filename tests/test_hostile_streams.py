"""Hostile streams and numbers on the command line: a closed stdin or stdout, a full disk, an
ASCII-only output encoding, stdin named twice, and numeric options past their bounds or in
other scripts' digits. Each is a one-line error with its exit status (or, for the encoding,
UTF-8 output), never a traceback, and nothing on stdout is altered."""

import subprocess
import sys

import pytest

CRFTAG = [sys.executable, "-m", "crftag"]


def run(args, *, stdin="Berlin is nice .\n", **options):
    return subprocess.run([*CRFTAG, *args], input=stdin, capture_output=True, text=True, **options)


@pytest.fixture
def crftag(invoke):
    """`crftag ARGS < stdin` in this process, answered as :func:`run` answers: for the tests of
    what the command writes, where a process of its own would only add its start-up."""

    def call(args, *, stdin="Berlin is nice .\n"):
        result = invoke(args, stdin=stdin)
        return subprocess.CompletedProcess(args, result.status, result.stdout, result.stderr)

    return call


def assert_one_line_error(done, status, text):
    assert done.returncode == status, done.stderr
    assert done.stderr.startswith("crftag: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert text in done.stderr
    assert "Traceback" not in done.stderr


def test_a_closed_stdin_is_a_one_line_error():
    done = subprocess.run(
        [*CRFTAG, "predict"], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == ""  # an empty stdin: zero records
    shell = subprocess.run(
        f"{sys.executable} -m crftag predict <&-", shell=True, capture_output=True, text=True
    )
    assert_one_line_error(shell, 2, "standard input is closed")


def test_a_closed_stdout_is_a_one_line_error():
    done = subprocess.run(
        f"echo Berlin | {sys.executable} -m crftag predict >&-",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert_one_line_error(done, 2, "standard output is closed")


def test_a_full_disk_is_a_one_line_error():
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*CRFTAG, "predict"], input="Berlin\n", stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert_one_line_error(done, 1, "writing the output: No space left on device")


def test_an_ascii_output_encoding_still_writes_utf8():
    done = subprocess.run(
        [*CRFTAG, "predict"],
        input="Zürich is nice .\n".encode(),
        capture_output=True,
        env={"PYTHONIOENCODING": "ascii", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8").startswith("Zürich\t")


def test_stdin_named_twice_is_refused_before_any_work(crftag):
    for jobs in ("1", "2"):
        done = crftag(["predict", "--jobs", jobs, "-", "-"])
        assert_one_line_error(done, 2, "- (standard input) is named 2 times")
        assert done.stdout == ""


def test_parallel_jobs_with_stdin_give_the_records_of_one_process(crftag, tmp_path):
    lines = "".join(f"Sentence number {i} in Berlin .\n" for i in range(300))
    other = tmp_path / "b.txt"
    other.write_text("Paris is far .\n" * 70)
    for inputs in (["-"], [str(other), "-"], ["-", str(other)]):
        single = crftag(["predict", *inputs], stdin=lines)
        jobs = run(["predict", "--jobs", "2", *inputs], stdin=lines)
        assert single.returncode == jobs.returncode == 0
        expected = 300 + (70 if str(other) in inputs else 0)
        assert jobs.stdout == single.stdout and single.stdout.count("\n\n") == expected


@pytest.mark.parametrize(
    ("option", "text"),
    [
        (["--nbest", str(10**7)], "--nbest"),
        (["--jobs", "100000"], "--jobs"),
        (["--batch-size", str(10**30)], "--batch-size"),
        (["--shard", "0/99999999999999999999"], "--shard"),
        (["--shard", "١/3"], "--shard"),
        (["--shard", "²/3"], "--shard"),
        (["--shard", "3/3"], "--shard"),
    ],
)
def test_numeric_options_are_bounded_and_ascii(crftag, option, text):
    assert_one_line_error(crftag(["predict", *option]), 2, text)


def test_merge_batch_size_is_bounded(crftag, tmp_path):
    shard = tmp_path / "s"
    shard.write_text("")
    assert_one_line_error(
        crftag(["merge", "--batch-size", str(10**30), str(shard)]), 2, "--batch-size"
    )


def test_empty_input_gives_zero_records(crftag):
    for output in ("conll", "jsonl"):
        done = crftag(["predict", "--format", output], stdin="")
        assert done.returncode == 0 and done.stdout == ""


def test_eval_json_writes_null_for_an_undefined_score_and_reads_stdin(crftag, tmp_path):
    import json

    only_o = tmp_path / "o.conll"
    only_o.write_text("a O\nb O\n")
    for args, stdin in (([str(only_o)], ""), (["-"], "a O\n")):
        done = crftag(["eval", *args, "--json"], stdin=stdin)
        assert done.returncode == 0 and done.stderr == ""
        scores = json.loads(done.stdout, parse_constant=lambda name: pytest.fail(name))
        assert scores["entities"]["macro"]["f1"] is None
    table = crftag(["eval", str(only_o)])
    assert "n/a" in table.stdout and "undefined" in table.stdout and "nan" not in table.stdout


def test_parallel_jobs_stop_at_a_bad_line_as_one_process_does():
    good = "".join(f"Sentence {i} in Rome .\n" for i in range(150))
    data = (good + "\udcff broken\n" + good).encode("utf-8", "surrogateescape")
    outputs = []
    for jobs in ("1", "2"):
        done = subprocess.run(
            [*CRFTAG, "predict", "--batch-size", "16", "--jobs", jobs, "-"],
            input=data,
            capture_output=True,
        )
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1]
    status, stdout, stderr = outputs[0]
    assert status == 2 and stdout.count(b"\n\n") == 150
    assert stderr == b"crftag: error: <stdin>:151: not valid UTF-8 (byte 1 of the line)\n"


def test_entity_types_named_like_averages_are_kept(crftag, tmp_path):
    import json

    gold = tmp_path / "g.conll"
    gold.write_text("a B-micro\nb O\nc B-weighted\n")
    scores = json.loads(crftag(["eval", str(gold), "--json"], stdin="").stdout)
    assert scores["entities"]["type:micro"]["support"] == 1
    assert scores["entities"]["type:weighted"]["support"] == 1
    assert scores["entities"]["micro"]["support"] == 2


@pytest.mark.parametrize("target", ["", " ", "DIR"])
def test_export_to_a_directory_or_an_empty_name_is_a_one_line_error(crftag, tmp_path, target):
    output = str(tmp_path) if target == "DIR" else target
    assert_one_line_error(crftag(["export", "en-ner", output]), 2, "give the file to write")


def test_a_truncated_or_corrupt_gzip_embeddings_file_is_a_located_error(tmp_path):
    import gzip

    from crftag.data.vectors import read_embeddings
    from crftag.errors import CrftagError

    whole = gzip.compress("".join(f"w{i} {i}.5 1.0\n" for i in range(20000)).encode())
    truncated, corrupt = tmp_path / "t.gz", tmp_path / "c.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupt.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 20)
    for path, text in ((truncated, "ends early"), (corrupt, "corrupt gzip data")):
        with pytest.raises(CrftagError, match=text) as caught:
            read_embeddings(str(path), show_progress=False)
        assert str(caught.value).startswith(f"{path}:")
