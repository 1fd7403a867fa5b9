"""crftag serve over real HTTP on a loopback port: every endpoint, answers equal to crftag
predict, batched answers equal one-at-a-time ones, a 4xx for each bad request with the server
answering afterwards, a client that walks away, and SIGTERM draining what is in flight."""

import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("uvicorn")

SENTENCES = [
    "John Smith lives in Berlin .",
    "Angela Merkel met Emmanuel Macron in Paris on Tuesday .",
    "",
    "The Scottish Parliament voted at dawn against Danish advice on herring .",
    "Peter",
    " ".join(["Rome"] * 40),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "crftag", "serve", "--port", str(self.port), *args],
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"the server did not start: {self.stop()}")

    def request(self, path: str, body: bytes | None = None, headers=None):
        """``path``'s answer; a body is sent as ``application/json`` unless ``headers`` say."""
        sent = {"Content-Type": "application/json"} if body is not None else {}
        request = urllib.request.Request(self.url + path, data=body, headers=sent | (headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read().decode(), answer.headers
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), error.headers

    def get(self, path: str):
        return self.request(path)

    def predict(self, value: dict, **headers):
        return self.request("/predict", json.dumps(value).encode(), headers)

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        _, errors = self.process.communicate(timeout=60)
        return self.process.returncode, errors


@pytest.fixture(scope="module")
def server():
    running = Server("-m", "en-ner", "-m", "en-pos", "--max-wait-ms", "20")
    yield running
    status, errors = running.stop()
    assert status == 0, errors


@pytest.fixture
def predict_cli(invoke):
    """``crftag predict -m MODEL --format jsonl OPTIONS`` on ``lines``, run in this process."""

    def run(lines: list[str], *options: str, model: str = "en-ner") -> str:
        args = ["predict", "-m", model, "--format", "jsonl", *options]
        result = invoke(args, stdin="".join(line + "\n" for line in lines))
        assert result.status == 0, result.stderr
        return result.stdout

    return run


def predict_process(lines: list[str], *options: str, model: str = "en-ner", env=None) -> str:
    """As :func:`predict_cli`, in a process of its own with the environment ``env``."""
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "predict", "-m", model, "--format", "jsonl", *options],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout


def test_each_text_answers_as_crftag_predict_writes_its_line(server, predict_cli):
    for sentence in SENTENCES:
        status, body, headers = server.predict({"texts": [sentence]})
        assert status == 200 and headers["content-type"] == "application/x-ndjson"
        assert body == predict_cli([sentence])


def test_options_tokens_and_the_second_model(server, predict_cli):
    status, body, _ = server.predict(
        {"texts": [SENTENCES[1]], "probs": "all", "nbest": 3, "token_offsets": True}
    )
    assert status == 200
    assert body == predict_cli([SENTENCES[1]], "--probs", "all", "--nbest", "3", "--token-offsets")
    status, body, _ = server.predict({"tokens": [SENTENCES[0].split()], "model": "en-pos"})
    assert body == predict_cli([SENTENCES[0]], "--input-format", "tokens", model="en-pos")
    status, body, _ = server.predict({"text": SENTENCES[0]}, Accept="application/json")
    answer = json.loads(body)
    assert answer["model"] == "en-ner"
    assert answer["predictions"] == [json.loads(predict_cli([SENTENCES[0]]))]


def test_documents_answer_as_predict_input_format_doc(server, invoke):
    text = "Angela Merkel visited Paris. She met Emmanuel Macron there."
    status, body, _ = server.predict({"documents": [text]})
    expected = invoke(["predict", "--input-format", "doc", "--format", "jsonl"], stdin=text)
    assert expected.status == 0, expected.stderr
    assert status == 200 and body == expected.stdout


def test_health_models_and_metrics(server):
    status, body, _ = server.get("/health")
    assert status == 200 and json.loads(body) == {"status": "ok", "models": ["en-ner", "en-pos"]}
    models = json.loads(server.get("/models")[1])["models"]
    assert [m["name"] for m in models] == ["en-ner", "en-pos"]
    assert models[0]["labels"] == ["LOC", "MISC", "ORG", "PER"] and models[0]["scheme"] == "iob2"
    assert len(models[0]["sha256"]) == 64 and models[0]["crftag_version"]
    server.predict({"text": "Berlin"})
    status, metrics, headers = server.get("/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert 'crftag_requests_total{path="/predict",status="200"}' in metrics
    assert 'crftag_request_duration_seconds_bucket{le="+Inf"}' in metrics
    tokens = [line for line in metrics.splitlines() if line.startswith("crftag_tokens_tagged")]
    assert tokens and float(tokens[0].split()[1]) >= 1


def same_answer(batched: str, alone: str) -> None:
    """Equal records: tags, spans and tokens exactly; the floats up to their last bits (which
    depend on the batch, as between batches of crftag predict)."""
    for left, right in zip(batched.splitlines(), alone.splitlines(), strict=True):
        a, b = json.loads(left), json.loads(right)
        assert (a["tokens"], a["tags"]) == (b["tokens"], b["tags"])
        assert [(s["start"], s["end"], s["label"]) for s in a["spans"]] == [
            (s["start"], s["end"], s["label"]) for s in b["spans"]
        ]
        assert a["probability"] == pytest.approx(b["probability"], abs=1e-5)
        for x, y in zip(a["spans"], b["spans"], strict=True):
            assert x["confidence"] == pytest.approx(y["confidence"], abs=1e-5)


def test_200_concurrent_requests_each_get_their_own_answer(server):
    from crftag.data.conll import ColumnSpec, read_corpus

    sentences = [" ".join(s.tokens) for s in read_corpus("data/ner_sample.dev.conll", ColumnSpec())]
    requests = [
        {"texts": sentences[i % len(sentences) : i % len(sentences) + 1 + i % 4]}
        for i in range(200)
    ]
    alone = [server.predict(request)[1] for request in requests]
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        batched = list(pool.map(server.predict, requests))
    for (status, body, _), expected in zip(batched, alone, strict=True):
        assert status == 200
        same_answer(body, expected)
    assert "crftag_batches_total" in server.get("/metrics")[1]


BAD_BODIES = [
    (b"", 400),
    (b"{not json", 400),
    (b'{"texts": 5}', 400),
    (b'{"text": "a", "nbest": 100000000}', 400),
    (b'{"text": "a", "model": "nope"}', 404),
    (b'{"text": "a", "colour": "red"}', 400),
    (b"\xff", 400),
    (b'{"text": "a", "nbest": 1' + b"0" * 5000 + b"}", 400),
]


def test_bad_requests_get_a_json_4xx_and_the_server_keeps_answering(server):
    for body, status in BAD_BODIES:
        got, answer, headers = server.request("/predict", body)
        assert got == status, answer
        assert headers["content-type"] == "application/json"
        assert set(json.loads(answer)) == {"error", "status"}
        assert "Traceback" not in answer
    assert server.get("/nope")[0] == 404
    assert server.get("/predict")[0] == 405
    with socket.create_connection(("127.0.0.1", server.port)) as connection:
        # A declared body over the limit is refused before it is sent (or read).
        connection.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2097152\r\n\r\n")
        assert connection.recv(65536).startswith(b"HTTP/1.1 413 ")
    assert server.predict({"text": "Berlin"})[0] == 200


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
    ],
)
def test_predict_takes_application_json_only(server, content_type):
    """The types a web page can make a browser post without the server's consent are refused
    unread, so a page cannot put a server on localhost to work."""
    body = json.dumps({"text": "Berlin"}).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    head = f"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection(("127.0.0.1", server.port)) as connection:
        connection.sendall(head.encode() + b"\r\n" + body)
        answer = _read_answer(connection)
    assert answer.startswith(b"HTTP/1.1 415 ")
    assert b"content-type: application/json" in answer.lower()
    shown = f"got {content_type!r}" if content_type else "got none"
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {
        "error": f"Content-Type: expected application/json, {shown}",
        "status": 415,
    }
    json_with_charset = {"Content-Type": "Application/JSON; charset=utf-8"}
    assert server.request("/predict", body, json_with_charset)[0] == 200


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1, 2", b"99999999999999999999999"])
def test_a_malformed_content_length_gets_the_json_error_object(server, length):
    with socket.create_connection(("127.0.0.1", server.port)) as connection:
        connection.sendall(
            b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + length + b"\r\n\r\n{}"
        )
        answer = _read_answer(connection)
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    assert json.loads(body) == {
        "error": "request: not valid HTTP/1.1 (the request line or a header, such as "
        "Content-Length, does not parse)",
        "status": 400,
    }
    assert server.predict({"text": "Berlin"})[0] == 200


def _read_answer(connection) -> bytes:
    """One whole answer, read until its declared length has come (or the server closes)."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _length(answer):
        chunk = connection.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


def _length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_a_client_that_walks_away_disturbs_nobody(server):
    for partial in (b'{"texts": ["Berlin', b""):
        with socket.create_connection(("127.0.0.1", server.port)) as connection:
            connection.sendall(
                b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n" + partial
            )
    with socket.create_connection(("127.0.0.1", server.port)) as connection:  # gone mid-tagging
        body = json.dumps({"texts": SENTENCES * 50, "nbest": 5}).encode()
        head = (
            "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        connection.sendall(head.encode() + body)
    assert server.predict({"text": "Berlin"})[0] == 200


def test_sigterm_answers_the_requests_in_flight_and_exits_0():
    running = Server("--max-wait-ms", "200")
    body = {"texts": SENTENCES * 100, "probs": "all", "nbest": 5}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(running.predict, body) for _ in range(4)]
        time.sleep(0.1)  # the requests are in, waiting to be batched or being tagged
        status, errors = running.stop()
        results = [answer.result() for answer in answers]
    assert status == 0, errors
    assert all(result[0] == 200 for result in results)
    assert all(len(result[1].splitlines()) == len(SENTENCES) * 100 for result in results)


def test_a_bad_model_is_a_one_line_error_before_serving():
    done = subprocess.run(
        [sys.executable, "-m", "crftag", "serve", "-m", "no-such-model", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("crftag: error: no-such-model") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("package", ["uvicorn", "prometheus_client"])
def test_without_a_serve_package_serve_says_what_to_install(package):
    code = (
        f"import sys\nsys.modules['{package}'] = None\nfrom crftag import cli\n"
        "sys.exit(cli.run(['serve', '--port', '0']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        f"crftag: error: crftag serve needs {package}, which is not installed: "
        "pip install 'crftag[serve]'\n"
    )


def test_several_worker_processes_serve_one_port():
    running = Server("--workers", "2")
    try:
        answers = [running.predict({"text": SENTENCES[0]}) for _ in range(4)]
        assert all(status == 200 for status, _, _ in answers)
        # Each worker runs BLAS on one thread, as predict does with these variables set.
        one_thread = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        assert answers[0][1] == predict_process([SENTENCES[0]], env=one_thread)
    finally:
        status, errors = running.stop()
    assert status == 0, errors
