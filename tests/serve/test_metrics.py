"""/metrics adds up every worker process: after N requests each scrape reports N, whichever
worker answers it; one process counts on its own; and the counts start afresh with each
server."""

import contextlib
import http.client
import json
import os
import re

import pytest
from test_serve_http import SENTENCES, Server

pytest.importorskip("prometheus_client")

from crftag.serve.metrics import Metrics  # noqa: E402


def sample(metrics: str, name: str) -> float:
    """The value of the series ``name`` (with its labels, as written) in a scrape."""
    found = re.search(rf"^{re.escape(name)} (\S+)$", metrics, re.MULTILINE)
    assert found, f"{name} not in:\n{metrics}"
    return float(found.group(1))


PREDICT_200 = 'crftag_requests_total{path="/predict",status="200"}'
PREDICT_400 = 'crftag_requests_total{path="/predict",status="400"}'


def worker_of(server, connection: http.client.HTTPConnection) -> int:
    """The pid of the worker process that accepted ``connection`` (Linux's /proc: the server
    side of the connection is a socket inode, held open by one of the server's children)."""
    client_port = connection.sock.getsockname()[1]
    inode = None
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(name) as table:
            for row in list(table)[1:]:
                fields = row.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                if (int(local, 16), int(remote, 16)) == (server.port, client_port):
                    inode = fields[9]
    assert inode is not None
    parent = server.process.pid
    with open(f"/proc/{parent}/task/{parent}/children") as listed:
        children = [int(pid) for pid in listed.read().split()]
    for child in children:
        folder = f"/proc/{child}/fd"
        for descriptor in os.listdir(folder):
            with contextlib.suppress(OSError):
                if os.readlink(os.path.join(folder, descriptor)) == f"socket:[{inode}]":
                    return child
    raise AssertionError(f"no worker holds the connection from port {client_port}")


def connections(server, count: int) -> list[http.client.HTTPConnection]:
    """``count`` keep-alive connections, both workers accepting some: connections are opened
    until each of the two holds ``count // 2``, the others closed."""
    held: dict[int, list] = {}
    for _ in range(20 * count):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        connection.connect()
        assert ask(connection, "GET", "/health")[0] == 200  # accepted by now
        mine = held.setdefault(worker_of(server, connection), [])
        if len(mine) < count // 2:
            mine.append(connection)
        else:
            connection.close()
        if len(held) == 2 and all(len(kept) == count // 2 for kept in held.values()):
            return [connection for kept in held.values() for connection in kept]
    raise AssertionError(f"the connections went to {len(held)} worker(s) only")


def ask(connection, method: str, path: str, body: bytes | None = None) -> tuple[int, str]:
    connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    return answer.status, answer.read().decode()


def test_two_workers_report_the_totals_on_every_scrape():
    running = Server("--workers", "2")
    body = json.dumps({"text": SENTENCES[0]}).encode()
    try:
        opened = connections(running, 8)
        for sent in range(1, 6):
            for connection in opened:
                assert ask(connection, "POST", "/predict", body)[0] == 200
            # every connection's worker answers a scrape: each reports all requests so far
            # (the case: each worker reported its own share, 23 and 17 of 40)
            scrapes = [ask(connection, "GET", "/metrics")[1] for connection in opened]
            assert {sample(m, PREDICT_200) for m in scrapes} == {8.0 * sent}
            assert {sample(m, "crftag_sentences_tagged_total") for m in scrapes} == {8.0 * sent}
        assert ask(opened[0], "POST", "/predict", b'{"txet": "x"}')[0] == 400
        metrics = ask(opened[-1], "GET", "/metrics")[1]
        assert sample(metrics, PREDICT_400) == 1
        assert sample(metrics, "crftag_request_errors_total") == 1
        assert sample(metrics, "crftag_request_duration_seconds_count") >= 41
        assert sample(metrics, "crftag_tokens_tagged_total") == 40 * len(SENTENCES[0].split())
        assert sample(metrics, "crftag_requests_in_flight") == 1  # the scrape itself
        for connection in opened:
            connection.close()
    finally:
        status, errors = running.stop()
    assert status == 0, errors


def test_a_new_server_starts_from_zero():
    running = Server("--workers", "2")
    try:
        metrics = running.get("/metrics")[1]
        assert PREDICT_200 not in metrics
        assert sample(metrics, "crftag_request_errors_total") == 0
    finally:
        running.stop()


def test_one_process_counts_its_own_requests(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    first, second = Metrics(), Metrics()
    first.started()
    first.answered("/predict", 200, 0.003)
    first.started()
    first.answered("/predict", 404, 0.02)
    first.tagged(3, 17)
    rendered = first.render()
    assert sample(rendered, PREDICT_200) == 1
    assert sample(rendered, 'crftag_requests_total{path="/predict",status="404"}') == 1
    assert sample(rendered, "crftag_request_errors_total") == 1
    assert sample(rendered, 'crftag_request_duration_seconds_bucket{le="0.005"}') == 1
    assert sample(rendered, 'crftag_request_duration_seconds_bucket{le="+Inf"}') == 2
    assert sample(rendered, "crftag_tokens_tagged_total") == 17
    assert sample(rendered, "crftag_requests_in_flight") == 0
    assert PREDICT_200 not in second.render()  # each application its own counts
