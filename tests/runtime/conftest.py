import pytest


@pytest.fixture(params=["compiled", "numpy"])
def runtime_loops(request, monkeypatch):
    """Runs a test of the NumPy runtime's network once through each implementation of its LSTM
    time loops: the compiled kernel (crftag/runtime/_lstm.c) and the NumPy loops it falls back
    to. Networks choose when they are built, so the test must build its own."""
    from crftag.runtime import recurrent

    if request.param == "numpy":
        monkeypatch.setattr(recurrent, "_lstm", None)
    else:
        request.getfixturevalue("compiled_loops")
    return request.param
