"""Vectors -> the index: the Chroma store and the in-memory snapshot searched from it."""
