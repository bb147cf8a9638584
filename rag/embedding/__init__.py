"""Chunks -> vectors: the embedding model, its CPU backends and the choice among them."""
