import pytest


@pytest.fixture(params=["compiled", "torch"])
def loops(request, monkeypatch):
    """Runs a test of the fused BiLSTM layer once through each implementation of its time
    loops: the compiled kernel (crftag/runtime/_lstm.c) and the torch loops it falls back to."""
    from crftag.nn import fused_lstm

    if request.param == "torch":
        monkeypatch.setattr(fused_lstm, "_lstm", None)
    else:
        request.getfixturevalue("compiled_loops")
    return request.param
