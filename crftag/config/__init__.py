"""Configuration: the config file's sections as frozen dataclasses (``sections``), strict YAML
and the checks of values against the fields (``loading``), the ``tune`` section
(``tune``), the ``augment`` section (``augment``), the ``distill`` section (``distill``) and
the reference page generated from the fields (``reference``).

    from crftag.config import Config, load_config
    config = load_config("configs/sample.yaml", ["train.epochs=3"])

Imports no torch.
"""

from crftag.config.augment import AugmentConfig
from crftag.config.distill import DistillConfig
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
    "AugmentConfig",
    "Config",
    "DataConfig",
    "DistillConfig",
    "ModelConfig",
    "TrainConfig",
    "TuneConfig",
    "VocabConfig",
    "load_config",
]
