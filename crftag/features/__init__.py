"""The inputs of a tagger, one module each (docs/architecture.md, "Adding a feature"):
:mod:`crftag.features.base` says what a feature declares, :mod:`crftag.features.registry`
lists them in order.
"""
