"""Tagging without torch: the network in NumPy."""
