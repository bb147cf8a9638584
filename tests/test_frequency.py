"""The mapped word-frequency tables give wordfreq's own values, and never fail a question."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import wordfreq

from rag import frequency


@pytest.fixture
def tables(tmp_path: Path) -> Iterator[Path]:
    frequency.use_folder(tmp_path / "cache")
    yield tmp_path / "cache"
    frequency.use_folder(None)


WORDS = [
    "decoding", "speculative", "the", "über", "naïve", "l'été", "don't", "gpt-4", "3d",
    "a100", "123456", "ça", "ﬁne", "qu'est-ce", "privacidad", "verlernen", "x", "", "-",
    "unlearing", "Transformer", "KV", "échantillonnage", "diferencial", "modelli",
]  # fmt: skip


def test_the_tables_give_wordfreqs_values(tables: Path) -> None:
    rng = random.Random(7)
    for lang in sorted(frequency.MAPPED):
        listed = [w for bucket in wordfreq.get_frequency_list(lang) for w in bucket]
        for word in [*WORDS, *rng.sample(listed, 400)]:
            assert frequency.zipf_frequency(word, lang) == wordfreq.zipf_frequency(word, lang), (
                word,
                lang,
            )
    assert {p.name for p in frequency.folder().iterdir()} == set(frequency.MAPPED)
    assert frequency.folder().parent == tables


def test_another_language_is_wordfreqs_own(tables: Path) -> None:
    assert frequency.zipf_frequency("模型", "zh") == wordfreq.zipf_frequency("模型", "zh") > 0
    assert not frequency.folder().exists()  # nothing written for it


def test_a_cache_that_cannot_be_written_costs_only_speed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    frequency.use_folder(blocker)
    try:
        assert frequency.zipf_frequency("decoding", "en") == wordfreq.zipf_frequency(
            "decoding", "en"
        )
    finally:
        frequency.use_folder(None)


def test_a_damaged_table_is_written_again(tables: Path) -> None:
    assert frequency.zipf_frequency("decoding", "de") > 0
    damaged = frequency.folder() / "de" / "buckets.npy"
    damaged.write_bytes(b"\x93NUMPY garbage")
    frequency.use_folder(tables)  # a new process
    assert frequency.zipf_frequency("decoding", "de") == wordfreq.zipf_frequency("decoding", "de")
    assert damaged.read_bytes().startswith(b"\x93NUMPY") and damaged.stat().st_size > 1000
