"""A question's language, by a maintained detector (lingua), biased to English.

Short keyword queries are where detectors fail: lingua reads 'kv cache compression' as
French (0.30) and 'robust offline rl' as German (0.27). A question is taken as another
language only when lingua is clearly sure of it (`CLEAR`): on the 350 English questions of
eval/questions/ none is (the most sure wrong call was 0.65 for 'RLHF'), while a real
sentence in Chinese, Japanese, German or French comes out at >= 0.99.

Short questions in a neighbouring language are where lingua is not sure ("qu'est-ce que
DeMo ?", 'privacidad diferencial signsgd'): a question whose words are on average clearly
more frequent (wordfreq, by `WORD_MARGIN` zipf) in German, French, Spanish, Italian,
Portuguese or Dutch than in English is taken as that language first. Measured: 0 of 6,000
paper titles (4,000 as written, 2,000 lower-cased; paperlists) and 0 of the 509 English eval
questions read as another language; of the 26 German, French and Spanish eval questions
(eu.jsonl, test.jsonl), 23 are read right (lingua alone: 13).

The detector is built once, on first use, for the languages in `LANGUAGES` (a smaller set
is faster and less often wrong); its models load lazily, per language met, which costs
about 1.6 s the first time a Latin-script text is read. So plain ASCII whose words English
knows (at least `ENGLISH_SHARE` of them, by wordfreq) is English without asking it: the
question stage of `rag ask` stays fast, and German or Spanish sentences, whose words
English mostly does not know, still go to the detector.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

from rag.frequency import is_everyday, zipf_frequency
from rag.text import is_english_word

CLEAR = 0.9  # lingua confidence above which a non-English language is believed
ENGLISH_SHARE = 0.75  # share of known English words that makes plain ASCII English
WORD_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl")  # told apart by word frequency
WORD_MARGIN = 1.0  # mean zipf over English that makes a question another language's
# ... and at least one of its words that language writes every day (rag.frequency
# `is_everyday`): 'csam' (zipf 1.07 in Dutch, 0 in English) is a name, not Dutch ('ti-dpo'
# is still read as Italian: 'ti' is everyday Italian)

# ISO 639-1 code -> English name, for the languages the detector tells apart.
LANGUAGES = {
    "en": "English",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
    "ru": "Russian",
    "uk": "Ukrainian",
    "pl": "Polish",
    "tr": "Turkish",
    "vi": "Vietnamese",
    "id": "Indonesian",
    "ar": "Arabic",
    "fa": "Persian",
    "hi": "Hindi",
}

_lock = threading.Lock()


def name(code: str) -> str:
    """'zh' -> 'Chinese' (the code itself when unknown)."""
    return LANGUAGES.get(code, code)


def detect(text: str) -> str:
    """The ISO 639-1 code of the text's language: 'GTO 是什么方法？' -> 'zh',
    'kv cache compression' -> 'en' (English unless the detector is clearly sure, or the
    words are clearly more common in another Latin-script language)."""
    if not any(ch.isalpha() for ch in text):
        return "en"
    by_words = _by_word_frequency(text)
    if by_words:
        return by_words
    if _plain_english(text):
        return "en"
    detector = _detector()
    with _lock:  # the Rust detector is not documented as thread-safe
        values = detector.compute_language_confidence_values(text)
    if not values:
        return "en"
    best = values[0]
    code = best.language.iso_code_639_1.name.lower()
    if code == "en" or best.value < CLEAR:
        return "en"
    return code


def _by_word_frequency(text: str) -> str | None:
    """The Latin-script language whose words these are, when their mean wordfreq frequency
    there beats English by `WORD_MARGIN` and one of them is an everyday word there
    (`rag.frequency.is_everyday`): 'privacidad diferencial signsgd' -> 'es', "qu'est-ce
    que DeMo ?" -> 'fr'; None otherwise ('csam'). Names and numbers are not words."""
    words = [
        w.casefold()
        for w in re.findall(r"[^\W\d_]+", text)
        if len(w) > 1 and w[1:] == w[1:].lower()
    ]
    if not words:
        return None
    means = {c: sum(zipf_frequency(w, c) for w in words) / len(words) for c in WORD_LANGUAGES}
    best = max(means, key=means.__getitem__)
    if best == "en" or means[best] < means["en"] + WORD_MARGIN:
        return None
    return best if any(is_everyday(w, best) for w in words) else None


def _plain_english(text: str) -> bool:
    if not text.isascii():
        return False
    words = re.findall(r"[A-Za-z]+", text)
    known = sum(1 for w in words if is_english_word(w.lower()))
    return bool(words) and known >= ENGLISH_SHARE * len(words)


@lru_cache(maxsize=1)
def _detector() -> Any:
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    languages = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in LANGUAGES]
    return LanguageDetectorBuilder.from_languages(*languages).build()
