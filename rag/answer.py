"""Question + retrieved papers -> an Answer with checked citations (LLM or extractive).

Both paths share the sources (numbered in retrieval order: `[n]` is `sources[n-1]`) and
the abstention rule. The LLM path streams tokens, then checks every citation; any
endpoint fault ends in the extractive answer with a notice. The extractive path picks,
from the best sources, the sentences closest to the question (embedding similarity plus
shared content words) and cites each one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rag import extractive, prompts
from rag.chunk import count_tokens
from rag.citations import check
from rag.config import Settings
from rag.embed import Embedder
from rag.llm import ChatClient, LLMError, OnReset, OnToken
from rag.text import overlap
from rag.types import Answer, Hit, Source

Coverage = Callable[[str, str], float]
NOT_FOUND = f"The answer is {prompts.ABSTAIN_PHRASE}."
_ASKS_AUTHORS = re.compile(
    r"\b(who (wrote|authored|are the authors)|authors?|affiliat\w+|written by|which "
    r"(university|universities|company|companies|lab|labs|institution|institutions|group))\b",
    re.I,
)
_ASKS_CODE = re.compile(r"\b(github|code (link|repository|url)|source code|repo(sitory)?)\b", re.I)
_URL = re.compile(r"https?://\S+")
_ASKS_COUNT = re.compile(r"\bhow many\b", re.I)


def make_sources(hits: list[Hit]) -> list[Source]:
    """Number the retrieved papers as sources; the evidence text is the whole abstract."""
    return [
        Source(
            n=i,
            paper_id=h.paper.paper_id,
            title=h.paper.label,
            title_is_derived=h.paper.label_is_derived,
            source=_short_source(h.paper.sources[0]) if h.paper.sources else "",
            score=round(h.score, 6),
            text=h.paper.abstract,
            venue=h.paper.venue,
            year=h.paper.year,
            site=h.paper.site,
            all_sources=[_short_source(s) for s in h.paper.sources],
        )
        for i, h in enumerate(hits, start=1)
    ]


def _short_source(source: str) -> str:
    file, _, position = source.rpartition(":")
    return f"{Path(file).name}:{position}"


def weak_evidence(
    question: str, hits: list[Hit], settings: Settings, coverage: Coverage = overlap
) -> str | None:
    """Say why the retrieved abstracts cannot answer, or None when they may.

    Abstain when the best paper is neither close in meaning nor holds the key terms
    (`coverage(question, text)` is IDF-weighted by the retriever, so rare terms like
    'cryo-EM' decide), or when a detail is asked for that its record does not hold.
    """
    if not hits:
        return "the index holds no matching paper"
    best = hits[0]
    text = f"{best.paper.label} {best.paper.abstract}"
    similarity = best.dense_similarity if best.dense_similarity is not None else 0.0
    if similarity < settings.abstain_min_similarity:
        return f"the closest abstract is too far from the question (cosine {similarity:.2f})"
    covered = coverage(question, text)
    if covered < settings.abstain_min_coverage and (
        similarity < settings.abstain_confident_similarity
    ):
        return (
            f"the closest abstract holds too little of what is asked (coverage "
            f"{covered:.2f}, cosine {similarity:.2f})"
        )
    return _missing_detail(question, best, text)


def _missing_detail(question: str, hit: Hit, text: str) -> str | None:
    """Authors, affiliations, code links, named things or figures asked for but not in
    the record ("What ImageNet accuracy does X reach?" of an abstract with no numbers)."""
    if _ASKS_AUTHORS.search(question) and not hit.paper.authors:
        return "the records hold no author or affiliation information"
    if _ASKS_CODE.search(question) and not _URL.search(hit.paper.abstract):
        return "the abstract gives no code link"
    intent = extractive.Intent.of(question)
    if intent.wants and not intent.plural:
        missing = extractive.missing_names(question, text)
        if missing:
            return "the closest abstract does not mention " + ", ".join(missing)
        counts = bool(_ASKS_COUNT.search(question))
        if intent.wants == "number" and not extractive.reports_figure(hit.paper.abstract, counts):
            return "the closest abstract reports no figures"
    return None


def abstention(question: str, sources: list[Source], mode: str, why: str = "") -> Answer:
    """The plain 'not found' answer, listing the closest papers."""
    closest = "\n".join(f"- {s.title} ({s.source})" for s in sources[:3])
    text = NOT_FOUND + (f"\n\nClosest papers:\n{closest}" if closest else "")
    return Answer(question, text, True, [], sources, mode, [f"abstained: {why}"] if why else [])


class Answerer:
    """Turns retrieved papers into an Answer, by LLM when configured, else extractively."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        client: ChatClient | None = None,
        coverage: Coverage = overlap,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.client = client
        self.coverage = coverage
        self._vectors: dict[str, np.ndarray] = {}

    def answer(
        self,
        question: str,
        hits: list[Hit],
        mode: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
    ) -> Answer:
        """Answer from the hits; `mode` overrides the settings (llm | extractive)."""
        mode = mode or self.settings.answer_mode
        sources = make_sources(hits)
        why = weak_evidence(question, hits, self.settings, self.coverage)
        if why:
            return abstention(question, sources, mode if self.client else "extractive", why)
        if mode == "llm" and self.client is not None:
            return self._llm(question, hits, on_token, on_reset)
        notices = ["no LLM endpoint configured; answered extractively"] if mode == "llm" else []
        answer = self.extractive(question, hits)
        answer.notices.extend(notices)
        return answer

    # -- extractive --------------------------------------------------------------

    def extractive(self, question: str, hits: list[Hit]) -> Answer:
        """Compose an answer from the best sentences of the best sources, each cited."""
        sources = make_sources(hits)
        chosen = [sources[i] for i in extractive.candidates(hits, extractive.Intent.of(question))]
        picked = extractive.pick_sentences(
            question, self.embedder.embed_query(question), chosen, self._sentence_vectors
        )
        if not picked:
            return abstention(question, sources, "extractive")
        for source, sentences in picked:
            source.cited = True
            source.highlights = sentences
        text = extractive.compose(picked)
        return Answer(question, text, False, [s.n for s, _ in picked], sources, "extractive")

    def _sentence_vectors(self, sentences: list[str]) -> np.ndarray:
        """Embed sentences, reusing vectors of sentences seen before (same abstracts recur)."""
        missing = [s for s in dict.fromkeys(sentences) if s not in self._vectors]
        if missing:
            if len(self._vectors) > 20_000:
                self._vectors.clear()
            self._vectors.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.stack([self._vectors[s] for s in sentences])

    # -- LLM -------------------------------------------------------------------------

    def _llm(
        self,
        question: str,
        hits: list[Hit],
        on_token: OnToken | None,
        on_reset: OnReset | None = None,
    ) -> Answer:
        assert self.client is not None
        sources = make_sources(hits)
        messages, shown, notices = self.build_messages(question, sources)
        t0 = time.perf_counter()
        try:
            reply = self.client.complete(messages, on_token=on_token, on_reset=on_reset)
            if not reply.text.strip():
                raise LLMError("endpoint returned an empty answer")
        except LLMError as exc:
            fallback = self.extractive(question, hits)
            fallback.notices = [
                *notices,
                f"LLM endpoint failed: {exc}; showing the offline extractive answer instead",
            ]
            return fallback
        llm_ms = round((time.perf_counter() - t0) * 1000, 1)
        if prompts.ABSTAIN_PHRASE in reply.text.casefold():
            answer = abstention(question, shown, "llm")
            answer.notices = notices
            return answer
        checked = check(reply.text, {s.n: s.text for s in shown})
        if checked.invalid:
            notices.append(
                "removed citations to sources that do not exist: "
                + ", ".join(f"[{n}]" for n in checked.invalid)
            )
        if checked.unsupported:
            notices.append(
                f"{len(checked.unsupported)} sentence(s) lack support in the sources "
                "they cite; they are listed as flagged"
            )
        for source in shown:
            source.cited = source.n in checked.citations
        answer = Answer(question, checked.text, False, checked.citations, shown, "llm", notices)
        answer.flagged = checked.unsupported
        answer.timings_ms["llm"] = llm_ms
        if not checked.citations:
            answer.notices.append("the model cited no source")
        return answer

    def build_messages(
        self, question: str, sources: list[Source]
    ) -> tuple[list[dict[str, str]], list[Source], list[str]]:
        """Fit as many sources as the context window allows, counted with tiktoken."""
        s = self.settings
        budget = s.context_window - s.max_answer_tokens - 64  # 64: chat-format overhead
        budget -= count_tokens(prompts.SYSTEM) + count_tokens(
            prompts.USER.format(sources="", question=question)
        )
        shown: list[Source] = []
        blocks: list[str] = []
        for source in sources:
            block = _source_block(source)
            cost = count_tokens(block)
            if cost > budget and budget > 120:  # trim the abstract to the space left
                source.text = _trim_to_tokens(source.text, budget - 40)
                block, cost = _source_block(source), count_tokens(_source_block(source))
            if cost > budget:
                break
            budget -= cost
            shown.append(source)
            blocks.append(block)
        notices = []
        if len(shown) < len(sources):
            notices.append(
                f"{len(sources) - len(shown)} source(s) left out to fit the "
                f"{s.context_window}-token context window"
            )
        user = prompts.USER.format(sources="\n\n".join(blocks), question=question)
        messages = [
            {"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": user},
        ]
        return messages, shown, notices


def _source_block(source: Source) -> str:
    """Format one source; text inside can never open or close a <source> tag."""
    label = _defuse(source.title).replace('"', "'")
    return prompts.SOURCE.format(n=source.n, label=label, text=_defuse(source.text))


_SOURCE_TAG = re.compile(r"<(\s*/?\s*source\b)", re.I)


def _defuse(text: str) -> str:
    """'</SOURCE >' -> '&lt;/SOURCE >' (abstracts are data, never delimiters)."""
    return _SOURCE_TAG.sub(r"&lt;\1", text)


def _trim_to_tokens(text: str, tokens: int) -> str:
    words = text.split()
    while words and count_tokens(" ".join(words)) > tokens:
        words = words[: int(len(words) * 0.9)]
    return " ".join(words) + " …"
