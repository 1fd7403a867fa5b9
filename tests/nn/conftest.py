import os

import pytest


@pytest.fixture
def compiled_loops():
    """Skip a test of the compiled BiLSTM loops where the install could not build them, unless
    CRFTAG_REQUIRE_COMPILED is set (CI sets it), where their absence is a failure."""
    from crftag.nn import fused_lstm

    if fused_lstm.compiled_loops_available():
        return
    if os.environ.get("CRFTAG_REQUIRE_COMPILED"):
        pytest.fail("CRFTAG_REQUIRE_COMPILED is set but crftag.nn._lstm was not built")
    pytest.skip("the compiled BiLSTM loops were not built in this install")


@pytest.fixture(params=["compiled", "torch"])
def loops(request, monkeypatch):
    """Runs a test of the fused BiLSTM layer once through each implementation of its time
    loops: the compiled kernel (crftag/nn/_lstm.c) and the torch loops it falls back to."""
    from crftag.nn import fused_lstm

    if request.param == "torch":
        monkeypatch.setattr(fused_lstm, "_lstm", None)
    else:
        request.getfixturevalue("compiled_loops")
    return request.param
