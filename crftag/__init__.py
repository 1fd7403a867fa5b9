"""crftag: sequence labelling with a BiLSTM-CRF.

Importing the package is cheap: nothing here imports torch, so `crftag --help` starts fast.
"""

__version__ = "0.1.0"
