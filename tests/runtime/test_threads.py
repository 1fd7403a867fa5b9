"""The compiled loops on two threads: NumPy's BLAS is held to one thread meanwhile and restored
after, and the scores are the same bits as on one thread."""

import os
import select
import signal

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from crftag.data.batching import build_batch
from crftag.runtime import threads
from crftag.runtime.threads import loop_threads
from tests.runtime.test_network_speed_paths import DOCUMENTS, SENTENCES, arrays, make_network


def blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


@pytest.mark.skipif(threads._usable_cores() < 2, reason="needs two cores")
def test_loop_threads_holds_blas_to_one_thread_and_restores_it(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = blas_threads()
    with loop_threads() as count:
        assert count == 2
        assert all(number == 1 for number in blas_threads())
    assert blas_threads() == before


def test_one_omp_thread_keeps_the_loops_on_one(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with loop_threads() as count:
        assert count == 1


def test_blas_is_held_to_one_thread_even_where_the_loops_take_one(monkeypatch):
    # The BLAS products are then the same calls on one thread, whatever the loops take.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with loop_threads() as count:
        assert count == 1
        assert all(number == 1 for number in blas_threads())


@pytest.mark.parametrize("encoder", ["cnn", "lstm"])
def test_two_threads_score_the_same_bits_as_one(isa_path, trained_tiny, encoder):
    tagger = trained_tiny(
        train__epochs=1, model__char_encoder=encoder, model__document_context=True
    )
    batch = arrays(build_batch(SENTENCES, tagger.vocabularies, documents=DOCUMENTS))
    with loop_threads():
        one = make_network(tagger).emissions(*batch, threads=1)
        two = make_network(tagger).emissions(*batch, threads=2)
    np.testing.assert_array_equal(one, two)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_after_tagging_tags_too(compiled_loops, trained_tiny):
    # OpenMP's pool hangs in a child forked after the parent used it; the runtime's loops
    # start their second thread per call instead.
    tagger = trained_tiny(train__epochs=1, model__char_encoder="lstm")
    batch = arrays(build_batch(SENTENCES, tagger.vocabularies, documents=DOCUMENTS))
    with loop_threads() as count:
        expected = make_network(tagger).emissions(*batch, threads=count)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        with loop_threads() as count:
            got = make_network(tagger).emissions(*batch, threads=count)
        os.write(write, b"same" if np.array_equal(got, expected) else b"different")
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 60)
    answer = os.read(read, 16) if ready else b"hung"
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    assert answer == b"same"


@pytest.mark.parametrize("asked", [None, "1", "2", "64", "", "x"])
def test_a_runtimes_pool_takes_a_thread_a_core_at_most_omp_num_threads(monkeypatch, asked):
    monkeypatch.setattr(threads, "_usable_cores", lambda: 4)
    if asked is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", asked)
    expected = {None: 4, "1": 1, "2": 2, "64": 4, "": 4, "x": 4}[asked]
    assert threads.usable_threads() == expected
