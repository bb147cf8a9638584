"""Query + retrieved papers -> an Answer with checked citations (LLM or extractive).

Both paths share the sources (numbered in retrieval order: `[n]` is `sources[n-1]`) and
one answerability decision (rag/answering/answerable.py): the answer abstains when the
evidence is below the fitted threshold, with or without an LLM (the model is not asked
then). The LLM path streams tokens, then checks every citation and judges the reply
against the sources and the offline answer (rag.answering.citations.judge): a reply that
does not hold up, like any endpoint fault, ends in the extractive answer with a notice,
the reply kept as its `draft`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rag import prompts
from rag.answering import answerable, extractive, structured
from rag.answering.citations import CheckedAnswer, Verdict, check, cited_numbers, judge
from rag.config import Settings
from rag.corpus.chunk import count_tokens
from rag.embedding.embed import Embedder
from rag.llm import Chat, LLMError, OnReset, OnToken
from rag.question import language
from rag.question.followup import asks_which_paper
from rag.question.reading import Query
from rag.text import overlap, split_sentences
from rag.types import Answer, Hit, Notice, Paper, Source, SourceRef

Coverage = Callable[[str, str], float]
# What a generation path made: its name, the checked answer, the sources shown, whether
# the model found an answer, and its notices.
Generated = tuple[str, CheckedAnswer, list[Source], bool, list[Notice]]
Lexical = Callable[[str], float]
NOT_FOUND = f"The answer is {prompts.ABSTAIN_PHRASE}."
PLURAL_EVIDENCE = 3  # papers whose evidence is weighed for "which papers ..." questions


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
            versions=[_where(v) for v in h.versions],
            title_generated=not h.paper.title and bool(h.paper.generated_title),
        )
        for i, h in enumerate(hits, start=1)
    ]


def _where(paper: Paper) -> str:
    """'ICML 2017', else where its abstract came from."""
    named = " ".join(str(x) for x in (paper.venue, paper.year) if x)
    return named or (_short_source(paper.sources[0]) if paper.sources else paper.paper_id)


def _short_source(source: str) -> str:
    ref = SourceRef.parse(source)
    return str(SourceRef(Path(ref.file).name, ref.position))


def abstention(question: str, sources: list[Source], mode: str, why: str = "") -> Answer:
    """The plain 'not found' answer, listing the closest papers."""
    closest = "\n".join(f"- {s.title} ({s.source})" for s in sources[:3])
    text = NOT_FOUND + (f"\n\nClosest papers:\n{closest}" if closest else "")
    notices = [Notice("abstained", f"abstained: {why}")] if why else []
    return Answer(
        question, text, abstained=True, citations=[], sources=sources, mode=mode, notices=notices
    )


class Answerer:
    """Turns retrieved papers into an Answer, by LLM when configured, else extractively."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        client: Chat | None = None,
        coverage: Coverage = overlap,
        lexical: Lexical = lambda query: 0.0,
        rarest_missing: Coverage = lambda question, text: 0.0,
        spread: answerable.Spread = lambda vector: (0.0, 1.0),
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.client = client
        self.coverage = coverage
        self.lexical = lexical
        self.rarest_missing = rarest_missing
        self.spread = spread
        self.model = answerable.load_model(settings.answerability_file)
        if settings.abstain_threshold is not None:
            self.model = replace(self.model, threshold=settings.abstain_threshold)
        self._vectors: dict[str, np.ndarray] = {}
        self._structured: bool | None = None  # the endpoint keeps to structured output

    def answer(
        self,
        query: Query,
        hits: list[Hit],
        mode: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
    ) -> Answer:
        """Answer from the hits; `mode` overrides the settings (llm | extractive)."""
        mode = mode or self.settings.answer_mode
        sources = make_sources(hits)
        use_llm = self.mode_of(mode) == "llm"
        if not hits:
            why = "the index holds no matching paper"
            return abstention(query.question, sources, self.mode_of(mode), why)
        evidence = self.evidence(query, hits)
        # One decision for both paths: the model never answers what the offline stage
        # refused (its answer is judged against the offline one, see `_llm`).
        decision = answerable.decide(evidence, self.model)
        if not decision.answer:
            answer = abstention(query.question, sources, self.mode_of(mode), decision.why)
        elif use_llm:
            answer = self._llm(query, hits, on_token, on_reset)
        else:
            answer = self.extractive(query, hits)
            if mode == "llm":
                answer.notices.append(
                    Notice("no_endpoint", "no LLM endpoint configured; answered extractively")
                )
        if query.language != "en" and answer.mode == "extractive" and not answer.abstained:
            answer.notices.append(
                Notice(
                    "quotes_english",
                    f"the offline answer quotes the English abstracts; with an LLM endpoint "
                    f"(OPENAI_BASE_URL) the answer is written in {language.name(query.language)}",
                )
            )
        answer.confidence = decision.confidence
        answer.evidence = {
            **{k: round(v, 4) for k, v in evidence.features.items()},
            "missing_detail": float(evidence.missing_detail is not None),
        }
        return answer

    def mode_of(self, mode: str | None = None) -> str:
        """The mode an answer is made in: llm only with a client."""
        mode = mode or self.settings.answer_mode
        return "llm" if mode == "llm" and self.client is not None else "extractive"

    def evidence(self, query: Query, hits: list[Hit]) -> answerable.Evidence:
        """What speaks for an answer (see rag/answering/answerable.py): in the best hit, or for a
        question after several papers, in the most convincing of the first three."""
        vector = self.embedder.embed_query(query.text)
        held = answerable.unheld(query, hits, self.rarest_missing)
        spread = self.spread(vector)
        found = []
        for at in range(min(len(hits), PLURAL_EVIDENCE if query.plural else 1)):
            paper = hits[at].paper
            sentences = [s for s in (paper.title, *split_sentences(paper.abstract)) if s]
            similarity = float((self._sentence_vectors(sentences) @ vector).max())
            together = max(self.coverage(query.text, s) for s in sentences)
            found.append(
                answerable.gather(
                    query,
                    hits,
                    similarity,
                    self.coverage,
                    self.lexical,
                    self.rarest_missing,
                    at,
                    together,
                    held,
                    spread,
                )
            )
        return max(found, key=lambda e: self.model.confidence(e.features))

    # -- extractive --------------------------------------------------------------

    def _asking_vector(self, query: Query) -> np.ndarray:
        """What the answer's sentences are scored against: the searched text, and for a
        follow-up also its own words ('iclr 2026 paper on knowledge distillation'
        + 'does it work for object detection too?'): the standalone query finds the paper,
        the follow-up names the detail a sentence must answer, and weighs more in English
        (extractive.FOLLOW_UP_DETAIL)."""
        vector = self.embedder.embed_query(query.text)
        if not query.detail:
            return vector
        weight = extractive.FOLLOW_UP_DETAIL if query.language == "en" else 1.0
        both = vector + weight * self.embedder.embed_query(query.detail)
        return both / max(float(np.linalg.norm(both)), 1e-12)

    def extractive(self, query: Query, hits: list[Hit]) -> Answer:
        """Compose an answer from the best sentences of the best sources, each cited."""
        sources = make_sources(hits)
        chosen = [sources[i] for i in extractive.candidates(hits, query)]
        picked = extractive.pick_sentences(
            query, self._asking_vector(query), chosen, self._sentence_vectors
        )
        if not picked:
            return abstention(query.question, sources, "extractive")
        for source, sentences in picked:
            source.cited = True
            source.highlights = sentences
        text = extractive.compose(picked, named=asks_which_paper(query))
        cited = [s.n for s, _ in picked]
        return Answer(
            query.question,
            text,
            abstained=False,
            citations=cited,
            sources=sources,
            mode="extractive",
        )

    def overview(
        self,
        query: Query,
        hits: list[Hit],
        mode: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
    ) -> Answer:
        """The gist of papers a conversation has shown ('summarize them', 'tl;dr', 'tell me
        more about the second one'): what each of `hits` does and finds (extractive.gist),
        or the model's summary of them. Nothing is searched and no answerability is
        decided: the turn that showed them decided it, and nothing new is asked."""
        query = replace(
            query,
            wants="overview",
            plural=len(hits) > 1,
            members=frozenset(h.paper.paper_id for h in hits),
        )
        if self.mode_of(mode) == "llm":
            return self._llm(query, hits, on_token, on_reset)
        return self.extractive(query, hits)

    def best_answering(self, query: Query, papers: list[Paper]) -> int:
        """Index of the paper whose best sentence answers `query` best, by the scores the
        extractive answer quotes with: 'the one that picks which preference pairs to
        label?' among three DPO papers -> ActiveDPO ('Collecting these datasets requires
        human preference annotation ...'), which no paper-level search ranks first."""
        vector = self.embedder.embed_query(query.text)
        best = [
            max(extractive.sentence_scores(query, vector, sentences, self._sentence_vectors))
            if sentences
            else float("-inf")
            for sentences in (split_sentences(p.abstract) for p in papers)
        ]
        return int(np.argmax(best))

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
        query: Query,
        hits: list[Hit],
        on_token: OnToken | None,
        on_reset: OnReset | None = None,
    ) -> Answer:
        """The model's answer where it holds up against the sources, else the offline
        answer with a notice and the model's draft beside it (`Answer.draft`). With
        RAG_LLM_STRUCTURED the endpoint is asked for claims tied to sentence ids first;
        an endpoint that refuses that format, or a reply that is not the JSON asked for,
        gets the free-text prompt, judged the same way (`generation.path` says which)."""
        assert self.client is not None
        offline = self.extractive(query, hits)
        draft = "" if offline.abstained else offline.answer
        notices: list[Notice] = []
        t0 = time.perf_counter()
        try:
            made = None
            if self.settings.llm_structured != "off" and self._structured is not False:
                made = self._generate_structured(query, hits)
                if made is None:
                    notices.append(
                        Notice(
                            "structured_unavailable",
                            "the endpoint gave no structured answer; asked for free text",
                        )
                    )
            if made is None:
                made = self._generate_free(query, hits, draft, on_token, on_reset)
        except LLMError as exc:
            offline.notices = [
                *notices,
                Notice(
                    "llm_failed",
                    f"LLM endpoint failed: {exc}; showing the offline extractive answer instead",
                ),
            ]
            return offline
        llm_ms = round((time.perf_counter() - t0) * 1000, 1)
        path, checked, shown, found, more = made
        notices += more
        if not found:
            if offline.abstained:  # the model and the offline answerer agree
                answer = abstention(query.question, shown, "llm")
                answer.notices = notices
                answer.generation = {
                    "path": path,
                    "kept": True,
                    "reasons": [],
                    "unsupported_share": 0.0,
                    "draft_coverage": 1.0,
                    "new_words": 1.0,
                }
                return answer
            verdict = Verdict(False, ["it says the abstracts do not answer, but they do"], 1.0)
        else:
            verdict = judge(
                checked,
                _evidence(shown),
                self.settings.llm_max_unsupported,
                anchors=[] if offline.abstained else offline.citations,
                wants_figure=query.intent == "figure" or query.wants == "number",
                lexical=query.language == "en",
                draft=draft,
                min_draft_coverage=self.settings.llm_min_draft_coverage,
                # claims written from chosen sentences may repeat them: free text only
                min_new_words=self.settings.llm_min_new_words if path == "free" else 0.0,
            )
        generation = {"path": path, "kept": verdict.kept, "reasons": verdict.reasons}
        generation["unsupported_share"] = verdict.unsupported_share
        generation["draft_coverage"] = verdict.draft_coverage
        generation["new_words"] = verdict.new_words
        if not verdict.kept:
            return self._rejected(offline, checked, verdict, notices, generation, llm_ms)
        if path == "structured" and on_token is not None:
            on_token(checked.text)  # written by the code from the claims: shown whole
        if checked.invalid:
            removed = ", ".join(f"[{n}]" for n in checked.invalid)
            notices.append(
                Notice(
                    "citations_removed",
                    f"removed citations to sources that do not exist: {removed}",
                )
            )
        if checked.unsupported:
            notices.append(
                Notice(
                    "unsupported",
                    f"{len(checked.unsupported)} sentence(s) lack support in the sources "
                    "they cite; they are listed as flagged",
                )
            )
        for source in shown:
            source.cited = source.n in checked.citations
        answer = Answer(
            query.question,
            checked.text,
            abstained=False,
            citations=checked.citations,
            sources=shown,
            mode="llm",
            notices=notices,
        )
        answer.flagged = checked.unsupported
        answer.timings_ms["llm"] = llm_ms
        answer.generation = generation
        return answer

    def _generate_free(
        self,
        query: Query,
        hits: list[Hit],
        draft: str,
        on_token: OnToken | None,
        on_reset: OnReset | None,
    ) -> Generated:
        """Free text, streamed, with the offline answer offered as a draft; checked."""
        assert self.client is not None
        sources = make_sources(hits)
        messages, shown, notices = self.build_messages(
            query.question, sources, query.language, draft, query.intent
        )
        reply = self.client.complete(messages, on_token=on_token, on_reset=on_reset)
        if not reply.text.strip():
            raise LLMError("endpoint returned an empty answer")
        if prompts.ABSTAIN_PHRASE in reply.text.casefold():
            return "free", CheckedAnswer(reply.text.strip(), []), shown, False, notices
        return "free", check(reply.text, _evidence(shown)), shown, True, notices

    def _generate_structured(self, query: Query, hits: list[Hit]) -> Generated | None:
        """Claims with the ids of the sentences that state them, under a JSON schema the
        endpoint enforces; the cited answer is written here from them. None when the
        endpoint refuses the format (then never asked again) or does not keep to it."""
        assert self.client is not None
        sources = make_sources(hits)
        messages, shown, notices, sentences = self.build_structured_messages(
            query.question, sources, query.language
        )
        fmt = structured.response_format(self.settings.llm_structured, sorted(sentences))
        try:
            reply = self.client.complete(messages, response_format=fmt)
        except LLMError as exc:
            if exc.status in structured.REFUSED:
                self._structured = False
                return None
            raise
        parsed = structured.parse(reply.text, sentences)
        if parsed is None:
            return None
        self._structured = True
        found, claims = parsed
        if not found or not claims:
            return "structured", CheckedAnswer("", []), shown, False, notices
        return "structured", structured.assemble(claims, sentences), shown, True, notices

    @staticmethod
    def _rejected(
        offline: Answer,
        checked: CheckedAnswer,
        verdict: Verdict,
        notices: list[Notice],
        generation: dict[str, Any],
        llm_ms: float,
    ) -> Answer:
        """The offline answer in place of a model answer that did not hold up; says so."""
        shown = "the quoted answer" if not offline.abstained else "that it is not found"
        offline.notices = [
            *notices,
            Notice(
                "llm_rejected",
                f"the model's answer did not hold up against the sources "
                f"({'; '.join(verdict.reasons)}); showing {shown} instead. The model's "
                "draft is kept beside it",
            ),
            *offline.notices,
        ]
        offline.draft = checked.text
        offline.generation = generation
        offline.timings_ms["llm"] = llm_ms
        return offline

    def build_messages(
        self,
        question: str,
        sources: list[Source],
        language_code: str = "en",
        draft: str = "",
        intent: str = "lookup",
    ) -> tuple[list[dict[str, str]], list[Source], list[Notice]]:
        """Fit as many sources as the context window allows, counted with tiktoken; a
        question in another language is answered in it (`language_code`, ISO 639-1);
        `draft`, the offline answer, is offered to improve on where the space the
        sources leave holds it (sources first: a small window gets the evidence, not a
        copy of it) and every source it cites is shown; `intent` (definition, figure,
        papers, ...) is said in one line after the question."""
        offered = prompts.DRAFT.format(draft=_defuse(draft)) if draft else ""
        instruction = _instruction(language_code)
        asks = prompts.INTENT.get(intent, "")
        fixed = prompts.SYSTEM + prompts.USER.format(
            sources="", draft="", question=question, intent=asks
        )
        shown, blocks, budget, notices = self._fit(sources, fixed + instruction, _source_block)
        numbers = {source.n for source in shown}
        if offered and (count_tokens(offered) > budget or not set(cited_numbers(draft)) <= numbers):
            offered = ""
        user = (
            prompts.USER.format(
                sources="\n\n".join(blocks), draft=offered, question=question, intent=asks
            )
            + instruction
        )
        messages = [
            {"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": user},
        ]
        return messages, shown, notices

    def build_structured_messages(
        self, question: str, sources: list[Source], language_code: str = "en"
    ) -> tuple[list[dict[str, str]], list[Source], list[Notice], dict[str, str]]:
        """The structured prompt: each source's sentences numbered `[n.k]`; also returns
        the sentences shown by id ('2.3' -> its text), what the schema lets be cited."""
        instruction = _instruction(language_code)
        fixed = prompts.STRUCTURED_SYSTEM + prompts.STRUCTURED_USER.format(
            sources="", question=question
        )
        shown, blocks, _, notices = self._fit(sources, fixed + instruction, _numbered_block)
        user = (
            prompts.STRUCTURED_USER.format(sources="\n\n".join(blocks), question=question)
            + instruction
        )
        messages = [
            {"role": "system", "content": prompts.STRUCTURED_SYSTEM},
            {"role": "user", "content": user},
        ]
        return messages, shown, notices, structured.sentence_ids(shown)

    def _fit(
        self, sources: list[Source], fixed: str, block_of: Callable[[Source], str]
    ) -> tuple[list[Source], list[str], int, list[Notice]]:
        """The sources whose blocks fit the window beside `fixed` (the last one trimmed
        to the space left), their blocks, the tokens left, and a notice if some did not."""
        s = self.settings
        budget = s.context_window - s.max_answer_tokens - 64  # 64: chat-format overhead
        budget -= count_tokens(fixed)
        shown: list[Source] = []
        blocks: list[str] = []
        for source in sources:
            block = block_of(source)
            cost = count_tokens(block)
            if cost > budget and budget > 120:  # trim the abstract to the space left
                source.text = _trim_to_tokens(source.text, budget - 40)
                block = block_of(source)
                cost = count_tokens(block)
            if cost > budget:
                break
            budget -= cost
            shown.append(source)
            blocks.append(block)
        notices = []
        if len(shown) < len(sources):
            notices.append(
                Notice(
                    "context_trimmed",
                    f"{len(sources) - len(shown)} source(s) left out to fit the "
                    f"{s.context_window}-token context window",
                )
            )
        return shown, blocks, budget, notices


def _evidence(shown: list[Source]) -> dict[int, str]:
    """What a model answer's citations are checked against: each shown source's label
    (answers name papers by it) and abstract."""
    return {s.n: f"{s.title}\n{s.text}" for s in shown}


def _instruction(language_code: str) -> str:
    """The answer-language line for a question that is not in English."""
    if language_code == "en":
        return ""
    return prompts.ANSWER_LANGUAGE.format(language=language.name(language_code))


def _source_block(source: Source) -> str:
    """Format one source; text inside can never open or close a <source> tag."""
    label = _defuse(source.title).replace('"', "'")
    return prompts.SOURCE.format(n=source.n, label=label, text=_defuse(source.text))


def _numbered_block(source: Source) -> str:
    """One source for the structured prompt: its sentences numbered `[n.k]`."""
    label = _defuse(source.title).replace('"', "'")
    lines = [
        prompts.STRUCTURED_SENTENCE.format(n=source.n, k=k, text=_defuse(sentence))
        for k, sentence in enumerate(split_sentences(source.text), start=1)
    ]
    return prompts.SOURCE.format(n=source.n, label=label, text="\n".join(lines))


_SOURCE_TAG = re.compile(r"<(\s*/?\s*(?:source|draft)\b)", re.I)


def _defuse(text: str) -> str:
    """'</SOURCE >' -> '&lt;/SOURCE >', '</draft>' likewise (abstracts are data, never
    delimiters)."""
    return _SOURCE_TAG.sub(r"&lt;\1", text)


def _trim_to_tokens(text: str, tokens: int) -> str:
    words = text.split()
    while words and count_tokens(" ".join(words)) > tokens:
        words = words[: int(len(words) * 0.9)]
    return " ".join(words) + " …"
