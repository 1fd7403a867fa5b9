"""Training: setting a run up, one training step, the epoch loop, early stopping, resume
state, optimizers, weight averaging and data-parallel training."""
