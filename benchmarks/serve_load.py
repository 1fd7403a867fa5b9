"""Load test of `crftag serve` on loopback: throughput, latency and memory under closed-loop load.

    python benchmarks/serve_load.py            (make bench-serve)

Starts one server (`python -m crftag serve`, default `-m en-ner`) on a free port, then sends
the sentences of CoNLL-2003 `eng.testb`, cycled, one `{"text": ...}` per `POST /predict`, from
1, 8 and 32 concurrent clients (`--levels`). Each client keeps one HTTP/1.1 keep-alive
connection and sends its next request when the previous answer arrived (a closed loop), so
the offered load follows the server's speed. Each level runs a fixed number of requests after a
warm-up and reports requests/s, tokens/s, latency percentiles and errors (non-200 answers and
broken connections). Then 32 clients send `--rss-requests` more while the server's resident
memory (VmRSS, with any worker processes) is sampled; its last/first ratio should stay <= 1.2.

The reference, timed before the server starts: `crftag predict --input-format tokens` on the
same sentences, excluding start-up (the median time on the file minus the median on an empty
input, 3 runs each). The server's tokens/s at the most concurrent level should be >= 0.70 of it,
and its p99 latency there < 250 ms. The client is plain asyncio streams (uvloop when installed,
as the server uses it), kept cheap since it shares the machine's cores with the server. The
server is stopped with SIGTERM and must exit 0. Everything has a deadline (`--timeout`).
Progress goes to stderr, a table to stdout; writes runs/bench/serve.json
(--record: benchmarks/results/serve.json, benchmarks/output.py).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.scoring.tables import fixed_width  # noqa: E402

TEST_FILE = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.testb")
HOST = "127.0.0.1"
DEFAULT_LEVELS = ["1:2000", "8:5000", "32:10000"]
RSS_CLIENTS = 32
RSS_FIRST_SAMPLE = 10_000  # requests before the baseline sample, past start-up's allocations
RSS_SAMPLES = 5
TARGET_RSS_RATIO = 1.2
TARGET_RATIO_TO_PREDICT = 0.70
TARGET_P99_MS = 250
REFERENCE_RUNS = 3
COUNTING_CHUNK = 256  # texts per request when asking the server how it tokenizes the file
STOP_GRACE_S = 45  # the server drains for up to 30 s on SIGTERM


class ProtocolError(Exception):
    """An answer this client cannot read (no Content-Length, a malformed status line)."""


# ---- the workload ----------------------------------------------------------------------------


@dataclass
class Workload:
    """The prebuilt ``POST /predict`` requests, one per sentence, and each one's token count."""

    requests: list[bytes]
    tokens: list[int]


def read_sentences(path: str) -> list[list[str]]:
    """The non-empty sentences of a CoNLL file, as token lists."""
    return [list(s.tokens) for s in read_corpus(path, ColumnSpec()) if s.tokens]


def build_workload(sentences: list[list[str]], port: int) -> Workload:
    requests = []
    for tokens in sentences:
        body = json.dumps({"text": " ".join(tokens)}).encode("utf-8")
        head = (
            f"POST /predict HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        requests.append(head.encode("ascii") + body)
    return Workload(requests, [len(tokens) for tokens in sentences])


# ---- the client ------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection; reads only the status, Content-Length and body."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection(HOST, port))

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send a prebuilt request; the answer's status and body."""
        self.writer.write(request)
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 "):
            raise ProtocolError(f"expected an HTTP/1.1 status line, got {head[:40]!r}")
        body = await self.reader.readexactly(content_length(head))
        return int(head[9:12]), body

    def close(self) -> None:
        self.writer.close()


def content_length(head: bytes) -> int:
    """The Content-Length of a response head (chunked answers are not expected)."""
    start = head.lower().find(b"\r\ncontent-length:")
    if start < 0:
        raise ProtocolError(f"no Content-Length in {head[:200]!r}")
    start += len(b"\r\ncontent-length:")
    return int(head[start : head.index(b"\r\n", start)])


@dataclass
class Tally:
    """What the clients of one run saw; ``sample`` is called when ``answered`` reaches one of
    ``sample_at`` (the RSS run's checkpoints)."""

    workload: Workload
    latencies: list[float] = field(default_factory=list)  # seconds, 200 answers only
    tokens: int = 0
    answered: int = 0  # every finished request, errors included
    errors: Counter = field(default_factory=Counter)
    sample_at: frozenset[int] = frozenset()
    sample: Callable[[], int] | None = None
    samples: list[tuple[int, int]] = field(default_factory=list)

    def record(self, index: int, status: int, seconds: float) -> None:
        if status == 200:
            self.latencies.append(seconds)
            self.tokens += self.workload.tokens[index]
        else:
            self.errors[f"HTTP {status}"] += 1
        self._count()

    def record_failure(self, error: Exception) -> None:
        self.errors[type(error).__name__] += 1
        self._count()

    def _count(self) -> None:
        self.answered += 1
        if self.answered in self.sample_at:
            self.samples.append((self.answered, self.sample()))


async def client(port: int, tickets, tally: Tally) -> None:
    """Send requests one after another until the shared ``tickets`` run out; a connection that
    breaks is counted as an error and opened again."""
    workload = tally.workload
    connection = await Connection.open(port)
    try:
        for ticket in tickets:
            index = ticket % len(workload.requests)
            started = time.perf_counter()
            try:
                status, _ = await connection.exchange(workload.requests[index])
            except (
                OSError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ProtocolError,
            ) as error:
                tally.record_failure(error)
                connection.close()
                connection = await Connection.open(port)
                continue
            tally.record(index, status, time.perf_counter() - started)
    finally:
        connection.close()


async def run_clients(port: int, tally: Tally, clients: int, requests: int, first: int) -> float:
    """``requests`` requests from ``clients`` closed-loop clients, starting at sentence
    ``first``; the seconds from the first request to the last answer."""
    tickets = iter(range(first, first + requests))  # shared: each request is taken once
    started = time.perf_counter()
    await asyncio.gather(*(client(port, tickets, tally) for _ in range(clients)))
    return time.perf_counter() - started


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = math.ceil(round(fraction * len(ordered), 6))  # round: 0.99 * 2000 is 1980.0000000002
    return ordered[max(rank, 1) - 1]


async def timed_run(port: int, tally: Tally, clients: int, requests: int, first: int, pid: int):
    """``run_clients`` and what it measured, with the CPU seconds the client and the server
    spent (the two share the machine's cores)."""
    client_cpu, server_cpu = time.process_time(), cpu_seconds(pid)
    seconds = await run_clients(port, tally, clients, requests, first)
    spent = {"client": time.process_time() - client_cpu, "server": cpu_seconds(pid) - server_cpu}
    return figures(tally, seconds, spent)


def figures(tally: Tally, seconds: float, cpu_spent: dict[str, float]) -> dict:
    ordered = sorted(tally.latencies)
    latency = {
        name: 1000 * percentile(ordered, fraction) if ordered else None
        for name, fraction in (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
    }
    return {
        "requests": tally.answered,
        "seconds": seconds,
        "requests_per_s": tally.answered / seconds,
        "tokens_per_s": tally.tokens / seconds,
        "latency_ms": latency,
        "errors": sum(tally.errors.values()),
        "errors_by_kind": dict(tally.errors),
        "cpu_s": cpu_spent,
    }


async def measure_level(
    port: int, workload: Workload, pid: int, clients: int, requests: int, warmup: int
):
    """One concurrency level: a warm-up, then ``requests`` timed requests."""
    await run_clients(port, Tally(workload), clients, warmup, 0)
    measured = await timed_run(port, Tally(workload), clients, requests, warmup, pid)
    return {"clients": clients, **measured}


def rss_checkpoints(requests: int) -> list[int]:
    """After the first 10,000 requests (a tenth of a shorter run), then evenly to the end."""
    first = min(RSS_FIRST_SAMPLE, max(1, requests // 10))
    step = (requests - first) / (RSS_SAMPLES - 1)
    return sorted({first + round(step * i) for i in range(RSS_SAMPLES)})


async def measure_rss(port: int, workload: Workload, pid: int, requests: int) -> dict:
    """``requests`` requests from 32 clients, the server's RSS sampled at the checkpoints."""
    checkpoints = rss_checkpoints(requests)

    def sample() -> int:
        kb = rss_kb(pid)
        print(f"  {tally.answered:,} requests: RSS {kb / 1024:.0f} MB", file=sys.stderr)
        return kb

    tally = Tally(workload, sample_at=frozenset(checkpoints), sample=sample)
    at_start = rss_kb(pid)
    measured = await timed_run(port, tally, RSS_CLIENTS, requests, 0, pid)
    samples = [{"requests": done, "rss_kb": kb} for done, kb in tally.samples]
    return {
        "clients": RSS_CLIENTS,
        **measured,
        "rss_before_kb": at_start,
        "samples": samples,
        "ratio": samples[-1]["rss_kb"] / samples[0]["rss_kb"],
        "target_ratio": TARGET_RSS_RATIO,
    }


# ---- the server process ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def rss_kb(pid: int) -> int:
    """VmRSS of a process and its descendants (the workers of ``--workers N``), in kB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        own = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return own + sum(rss_kb(child) for child in children(pid))


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and its descendants so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = (
            stat.read().rsplit(")", 1)[1].split()
        )  # after the command name, which may hold spaces
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return own + sum(cpu_seconds(child) for child in children(pid))


def children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as listed:
            found.extend(int(child) for child in listed.read().split())
    return found


def start_server(command: list[str], port: int, log, deadline: float) -> subprocess.Popen:
    """Start the server and wait for ``GET /health`` to answer 200."""
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode} at start-up")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=5) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            pass  # not listening yet, or 503 while the model loads
        time.sleep(0.2)
    server.kill()
    raise TimeoutError("the server did not become ready before the deadline")


def stop_server(server: subprocess.Popen) -> int | str:
    """SIGTERM, then the exit status; a server still running after the grace period is killed."""
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
        return f"killed: still running {STOP_GRACE_S} s after SIGTERM"


def server_token_counts(port: int, sentences: list[list[str]]) -> list[int]:
    """How many tokens the server finds in each sentence (its tokenizer re-splits the text)."""
    counts = []
    for first in range(0, len(sentences), COUNTING_CHUNK):
        texts = [" ".join(tokens) for tokens in sentences[first : first + COUNTING_CHUNK]]
        request = urllib.request.Request(
            f"http://{HOST}:{port}/predict",
            data=json.dumps({"texts": texts}).encode("utf-8"),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            counts.extend(len(json.loads(line)["tokens"]) for line in answer.read().splitlines())
    return counts


def token_totals(sentences: list[list[str]], counts: list[int]) -> dict:
    """The file's tokens against the server's. Tokens/s counts the file's tokens on both sides,
    so that the ratio to predict compares the same sentences; the server's tokenizer splits
    some of them further (``Bitar 's`` into ``' s``)."""
    return {
        "file": sum(len(tokens) for tokens in sentences),
        "as_the_server_splits": sum(counts),
        "sentences_split_differently": sum(
            count != len(tokens) for count, tokens in zip(counts, sentences, strict=True)
        ),
    }


# ---- the reference ---------------------------------------------------------------------------


def predict_reference(
    model: str, sentences: list[list[str]], directory: str, deadline: float, output_format: str
):
    """`crftag predict --format output_format`'s tokens/s on the same sentences, excluding
    start-up. jsonl writes the records the server answers with (the fair reference); conll
    takes predict's tags-only fast path."""
    full = os.path.join(directory, "sentences.tokens")
    with open(full, "w", encoding="utf-8") as handle:
        handle.writelines(" ".join(tokens) + "\n" for tokens in sentences)
    empty = os.path.join(directory, "empty.tokens")
    open(empty, "w").close()
    command = [sys.executable, "-m", "crftag", "predict", "-m", model, "--input-format", "tokens"]
    command += ["--format", output_format]
    seconds = {}
    for name, path in (("with_input", full), ("empty_input", empty)):
        times = [run_timed([*command, path], deadline) for _ in range(REFERENCE_RUNS)]
        seconds[name] = statistics.median(times)
    tokens = sum(len(tokens) for tokens in sentences)
    return {
        "command": " ".join(["crftag", *command[3:], "FILE"]),
        "tokens": tokens,
        "median_s": seconds["with_input"],
        "median_empty_input_s": seconds["empty_input"],
        "tokens_per_s": tokens / (seconds["with_input"] - seconds["empty_input"]),
    }


def run_timed(command: list[str], deadline: float) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, stdout=subprocess.DEVNULL, check=True, timeout=deadline - time.monotonic()
    )
    return time.perf_counter() - started


# ---- the run ---------------------------------------------------------------------------------


def server_command(args, port: int) -> list[str]:
    command = [sys.executable, "-m", "crftag", "serve", "--port", str(port), "-m", args.model]
    if args.max_batch_tokens is not None:
        command += ["--max-batch-tokens", str(args.max_batch_tokens)]
    if args.max_wait_ms is not None:
        command += ["--max-wait-ms", str(args.max_wait_ms)]
    if args.workers is not None:
        command += ["--workers", str(args.workers)]
    return command


def parse_levels(values: list[str]) -> list[tuple[int, int]]:
    try:
        levels = [tuple(int(part) for part in value.split(":")) for value in values]
    except ValueError:
        levels = []
    if not levels or any(len(level) != 2 or min(level) < 1 for level in levels):
        raise SystemExit(f"--levels {' '.join(values)}: expected CLIENTS:REQUESTS pairs")
    return levels


def event_loop_policy() -> str:
    """uvloop when installed (the server runs on it too), else asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


async def load(args, port: int, workload: Workload, pid: int, deadline: float) -> dict:
    async with asyncio.timeout(deadline - time.monotonic()):
        levels = []
        for clients, requests in parse_levels(args.levels):
            print(f"{clients} clients, {requests} requests ...", file=sys.stderr)
            levels.append(await measure_level(port, workload, pid, clients, requests, args.warmup))
            print(f"  {levels[-1]['requests_per_s']:.0f} requests/s", file=sys.stderr)
        print(f"RSS run: {RSS_CLIENTS} clients, {args.rss_requests} requests ...", file=sys.stderr)
        return {"levels": levels, "rss": await measure_rss(port, workload, pid, args.rss_requests)}


def measure(args, sentences: list[list[str]], directory: str, deadline: float) -> dict:
    """The reference, then the server under load; the server is always stopped."""
    print(f"reference: crftag predict, {REFERENCE_RUNS} runs ...", file=sys.stderr)
    report = {
        "reference": predict_reference(args.model, sentences, directory, deadline, "jsonl"),
        "reference_tags_only": predict_reference(
            args.model, sentences, directory, deadline, "conll"
        ),
    }
    port = free_port()
    log_path = os.path.join(directory, "server.log")
    with open(log_path, "wb") as log:
        print(f"starting the server on port {port} ...", file=sys.stderr)
        server = start_server(server_command(args, port), port, log, deadline)
        try:
            report["tokens"] = token_totals(sentences, server_token_counts(port, sentences))
            workload = build_workload(sentences, port)
            report.update(asyncio.run(load(args, port, workload, server.pid, deadline)))
        finally:
            print("stopping the server (SIGTERM) ...", file=sys.stderr)
            report["server_exit_status"] = stop_server(server)
    with open(log_path, encoding="utf-8", errors="replace") as log:
        report["server_log_lines"] = log.read().splitlines()[-20:]
    return report


def summarize(report: dict) -> None:
    """The ratios against the targets, from the most concurrent level."""
    busiest = max(report["levels"], key=lambda level: level["clients"])
    report["compared_level_clients"] = busiest["clients"]
    report["ratio_to_predict"] = busiest["tokens_per_s"] / report["reference"]["tokens_per_s"]
    report["target_ratio_to_predict"] = TARGET_RATIO_TO_PREDICT
    report["p99_ms"] = busiest["latency_ms"]["p99"]
    report["target_p99_ms"] = TARGET_P99_MS


def git_commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()


TABLE_HEADERS = ["load", "requests", "requests/s", "tokens/s", "p50 ms", "p90 ms", "p99 ms"]
TABLE_HEADERS += ["errors", "server cores", "client cores"]


def table_row(label: str, measured: dict) -> list[str]:
    """One line of the table; cores are CPU seconds per second of the run."""
    latency, cpu, seconds = measured["latency_ms"], measured["cpu_s"], measured["seconds"]
    return [
        label,
        f"{measured['requests']:,}",
        f"{measured['requests_per_s']:,.0f}",
        f"{measured['tokens_per_s']:,.0f}",
        *(f"{latency[name]:.1f}" for name in ("p50", "p90", "p99")),
        str(measured["errors"]),
        f"{cpu['server'] / seconds:.2f}",
        f"{cpu['client'] / seconds:.2f}",
    ]


def print_table(report: dict) -> None:
    rows = [table_row(f"{level['clients']} concurrent", level) for level in report["levels"]]
    rows.append(table_row(f"RSS run, {RSS_CLIENTS} concurrent", report["rss"]))
    print(fixed_width(TABLE_HEADERS, rows))
    rss, reference = report["rss"], report["reference"]
    samples = ", ".join(f"{s['rss_kb'] / 1024:.0f} MB" for s in rss["samples"])
    print(f"\nRSS at {samples}: last/first {rss['ratio']:.2f} (target <= {TARGET_RSS_RATIO})")
    print(
        f"crftag predict --format jsonl {reference['tokens_per_s']:,.0f} tokens/s (tags only: "
        f"{report['reference_tags_only']['tokens_per_s']:,.0f}); server at "
        f"{report['compared_level_clients']} clients {report['ratio_to_predict']:.2f}x of it "
        f"(target >= {TARGET_RATIO_TO_PREDICT}); p99 {report['p99_ms']:.1f} ms "
        f"(target < {TARGET_P99_MS}); server exit status {report['server_exit_status']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default="en-ner", help="the model to serve")
    parser.add_argument("--max-batch-tokens", type=int, help="passed to crftag serve")
    parser.add_argument("--max-wait-ms", type=float, help="passed to crftag serve")
    parser.add_argument(
        "--workers", type=int, default=2, help="passed to crftag serve (one per core here)"
    )
    parser.add_argument("--levels", nargs="+", default=DEFAULT_LEVELS, metavar="CLIENTS:REQUESTS")
    parser.add_argument("--warmup", type=int, default=500, help="untimed requests per level")
    parser.add_argument("--rss-requests", type=int, default=100_000)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds for the whole run")
    parser.add_argument("--data", default=TEST_FILE, help="the CoNLL file of the sentences")
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.json = args.json or output.result_path("serve.json", args.record)
    parse_levels(args.levels)
    deadline = time.monotonic() + args.timeout
    sentences = read_sentences(args.data)
    report = {
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "options": {
            **{
                key: getattr(args, key)
                for key in ("model", "max_batch_tokens", "max_wait_ms", "workers")
            },
            **{key: getattr(args, key) for key in ("levels", "warmup", "rss_requests")},
            "timeout_s": args.timeout,
            "client_loop": event_loop_policy(),
        },
        "sentences": len(sentences),
    }
    with tempfile.TemporaryDirectory() as directory:
        try:
            report.update(measure(args, sentences, directory, deadline))
        except (TimeoutError, subprocess.TimeoutExpired):
            print(f"serve_load: not finished within --timeout {args.timeout:g} s", file=sys.stderr)
            return 1
    summarize(report)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
        handle.write("\n")
    print_table(report)
    return 0 if report["server_exit_status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
