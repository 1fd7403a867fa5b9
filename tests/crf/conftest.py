import os

import pytest


@pytest.fixture
def compiled_kernels():
    """Skip a test of the compiled kernels where the install could not build them, unless
    CRFTAG_REQUIRE_COMPILED is set (CI sets it), where their absence is a failure."""
    from crftag.crf import kernels

    if kernels.compiled_kernels_available():
        return
    if os.environ.get("CRFTAG_REQUIRE_COMPILED"):
        pytest.fail("CRFTAG_REQUIRE_COMPILED is set but crftag._compiled was not built")
    pytest.skip("the compiled kernels were not built in this install")


@pytest.fixture
def choose_kernel(request):
    """A function that runs the rest of the test on one CRF kernel, by the public switch
    (:func:`crftag.crf.choice.use_kernel`): ``compiled``, ``numpy``, ``torch``, ``scan``, or
    ``default`` (the install's own choice). ``compiled`` is skipped where it was not built."""
    from crftag.crf.choice import use_kernel

    def choose(name: str) -> str:
        if name == "compiled":
            request.getfixturevalue("compiled_kernels")
        if name != "default":
            switched = use_kernel(name)
            switched.__enter__()
            request.addfinalizer(lambda: switched.__exit__(None, None, None))
        return name

    return choose
