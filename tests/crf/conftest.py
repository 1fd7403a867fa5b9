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
