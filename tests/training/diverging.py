"""A training loop whose epoch ``epoch`` ends with a loss that is not a number, for the tests of
what a diverging run says and keeps."""

from crftag.training import loop


def diverge_in_epoch(monkeypatch, epoch: int) -> None:
    """Until the test ends, the loop's epoch ``epoch`` trains as usual, then reports NaN."""
    real_epoch = loop._run_epoch

    def diverging(run, *args):
        loss = real_epoch(run, *args)
        return loss * float("nan") if run.state.epoch == epoch else loss

    monkeypatch.setattr(loop, "_run_epoch", diverging)
