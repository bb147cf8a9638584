"""Word frequencies (wordfreq's lists), looked up in a table mapped from the machine's cache.

wordfreq reads a language's whole list into a dict on first use: 0.2-0.4 s a language,
2.2 s for the seven that `rag.question.language` compares (measured on an Intel Xeon,
2 cores: two thirds of a `rag ask` cold start at 200k papers). Here each language's list
is written once per machine (and wordfreq version) as three arrays: its words sorted, as
one UTF-8 blob with offsets, and each word's centibel bucket. A process maps them and
finds a word by binary search, so a question costs microseconds and no load. The values
are wordfreq's own: `zipf_frequency` here follows `wordfreq.zipf_frequency` (tokenising,
number smashing, combining tokens, rounding) for the space-separated languages, and is
wordfreq itself for the others (and whenever the table cannot be written).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import os
import secrets
import shutil
import threading
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np

MAPPED = frozenset({"en", "de", "fr", "es", "it", "pt", "nl"})  # the rest: wordfreq's dict
_ARRAYS = ("blob", "offsets", "buckets")

_folder: Path | None = None
_tables: dict[str, _Table | None] = {}
_lock = threading.Lock()


def use_folder(cache_dir: Path | None) -> None:
    """Keep the tables under this per-machine cache folder (Settings.cache_dir); None =
    RAG_CACHE_DIR from the environment, else the user cache folder."""
    global _folder
    with _lock:
        _folder = cache_dir
        _tables.clear()


def folder() -> Path:
    """Where the tables live: wordfreq-<version>/ under the cache folder."""
    base = _folder or os.environ.get("RAG_CACHE_DIR")
    if not base:
        import platformdirs

        base = platformdirs.user_cache_dir("abstract-rag")
    return Path(base) / f"wordfreq-{version('wordfreq')}"


class _Words(Sequence[str]):
    """The sorted words of a table, decoded one at a time (for `bisect`)."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self._blob, self._offsets = blob, offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self._blob[self._offsets[i] : self._offsets[i + 1]].tobytes().decode()


class _Table:
    """One language's list: word -> centibel bucket (frequency 10 ** (-bucket / 100))."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self._words = _Words(arrays["blob"], arrays["offsets"])
        self._buckets = arrays["buckets"]

    def bucket(self, word: str) -> int | None:
        at = bisect.bisect_left(self._words, word)
        if at < len(self._words) and self._words[at] == word:
            return int(self._buckets[at])
        return None


def _arrays_of(lang: str) -> dict[str, np.ndarray]:
    """wordfreq's list for `lang` as the three arrays (sorted words, offsets, buckets)."""
    from wordfreq import get_frequency_list

    pairs = sorted(
        (word.encode(), index)
        for index, bucket in enumerate(get_frequency_list(lang, "best"))
        for word in bucket
    )
    offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([len(w) for w, _ in pairs], out=offsets[1:])
    return {
        "blob": np.frombuffer(b"".join(w for w, _ in pairs), dtype=np.uint8),
        "offsets": offsets,
        "buckets": np.array([i for _, i in pairs], dtype=np.uint16),
    }


def _write(lang: str, target: Path) -> None:
    """Write `lang`'s table into `target` (a folder) atomically: a temp folder, renamed."""
    temp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        temp.mkdir(parents=True)
        for name, array in _arrays_of(lang).items():
            np.save(temp / f"{name}.npy", array, allow_pickle=False)
        with contextlib.suppress(OSError):  # another process made it first: theirs stays
            os.replace(temp, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _table(lang: str) -> _Table | None:
    """The mapped table of `lang`, written on first use (and again if it does not load);
    None when it cannot be (a read-only cache: wordfreq's dict then)."""
    if lang not in MAPPED:
        return None
    with _lock:
        if lang not in _tables:
            target = folder() / lang
            table = _load(target)
            if table is None:
                shutil.rmtree(target, ignore_errors=True)
                with contextlib.suppress(OSError):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    _write(lang, target)
                table = _load(target)
            _tables[lang] = table
        return _tables[lang]


def _load(target: Path) -> _Table | None:
    try:
        arrays = {n: np.load(target / f"{n}.npy", mmap_mode="r") for n in _ARRAYS}
    except (OSError, ValueError):  # missing, or not whole
        return None
    if arrays["offsets"].ndim != 1 or len(arrays["offsets"]) != len(arrays["buckets"]) + 1:
        return None
    return _Table(arrays)


EVERYDAY_ZIPF = 3.0  # at or above this a language writes a word every day ('dpo' 2.2 in English)


def is_everyday(word: str, lang: str = "en") -> bool:
    """Tell whether a language writes a word often: English 'clip', 'demo', 'instruments'
    (typed in lower case, a word, not a name like 'dpo' or 'neuclip'); not Dutch 'csam'."""
    return zipf_frequency(word, lang) >= EVERYDAY_ZIPF


def zipf_frequency(word: str, lang: str) -> float:
    """wordfreq.zipf_frequency(word, lang), read from the mapped table."""
    from wordfreq import freq_to_zipf, zipf_to_freq
    from wordfreq import zipf_frequency as by_wordfreq

    table = _table(lang)
    if table is None:
        return by_wordfreq(word, lang)
    return round(freq_to_zipf(_word_frequency(word, lang, table, zipf_to_freq(0.0))), 2)


def _word_frequency(word: str, lang: str, table: _Table, minimum: float) -> float:
    """wordfreq's `_word_frequency` over the table (the languages without jieba)."""
    from wordfreq import cB_to_freq
    from wordfreq.numbers import digit_freq, smash_numbers
    from wordfreq.tokens import lossy_tokenize

    tokens = lossy_tokenize(word, lang)
    if not tokens:
        return minimum
    one_over_result = 0.0
    for token in tokens:
        smashed = smash_numbers(token)
        bucket = table.bucket(smashed)
        if bucket is None:
            return minimum
        freq = cB_to_freq(-bucket)
        if smashed != token:
            freq *= digit_freq(token)
        one_over_result += 1.0 / freq
    unrounded = max(1.0 / one_over_result, minimum)
    if unrounded == 0.0:
        return 0.0
    return round(unrounded, math.floor(-math.log(unrounded, 10)) + 3)
