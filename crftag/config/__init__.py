"""Configuration: the config file's sections as frozen dataclasses (``sections``), strict YAML
and the checks of values against the fields (``loading``), the ``tune`` section
(``tune``) and the reference page generated from the fields (``reference``).

    from crftag.config import Config, load_config
    config = load_config("configs/sample.yaml", ["train.epochs=3"])

Imports no torch.
"""

from crftag.config.sections import (
    Config,
    DataConfig,
    ModelConfig,
    TrainConfig,
    VocabConfig,
    load_config,
)
from crftag.config.tune import TuneConfig

__all__ = [
    "Config",
    "DataConfig",
    "ModelConfig",
    "TrainConfig",
    "TuneConfig",
    "VocabConfig",
    "load_config",
]
