"""Data: readers and writers of column files, tag schemes, the tokenizer, vocabularies, word
vectors, hashed features, and batches of index tensors. Imports nothing above it."""
