"""Inference: tagging with a trained model (the tagger, prediction records, span confidence),
streaming predict over files, and sharded and parallel predict."""
