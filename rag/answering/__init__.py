"""Ranked papers -> a cited answer: abstention, extractive and LLM answers, checks."""
