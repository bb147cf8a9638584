"""The library API the CLI, the UI and eval share: ingest, search, ask, converse.

`Assistant` owns one store, one embedder, one retriever and one answerer per process
(the UI caches it; it is safe for concurrent questions). A question is read first
(rag/question/reading.py: scope, intent, terms), searched inside the scope it names (flags and UI
filters override it; a scope the index does not hold is refused, never widened), then
answered. `Conversation` keeps one user's turns: a question that refers back ("what
dataset did it use?", "the second one?") is a follow-up; with an LLM it is condensed into
a standalone query, without one it is searched together with what it refers to.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rag import acronyms, frequency, prompts
from rag.aggregate import matching
from rag.aggregate.conference import (
    count_answer,
    count_of_previous,
    record_answer,
    scope_answer,
    table_answer,
)
from rag.aggregate.topics import TopicSet, topics_of
from rag.answering.answer import Answerer, abstention
from rag.answering.answerable import Model
from rag.answering.citations import CITATION, MARKUP
from rag.config import BUNDLED_CORPUS, Settings
from rag.corpus.papers import FieldMap
from rag.corpus.titles import TitleJob, TitleProgress, generate_title
from rag.embedding.embed import Embedder, make_embedder
from rag.ingest import Progress, ingest
from rag.lexicon import (
    ASKS_AUTHORS,
    ASKS_CODE,
    ASKS_RECORD,
    COMPARE_SHOWN,
    GENERIC_HEADS,
    SMALL_COUNTS,
    USAGE_FRAME,
)
from rag.llm import Chat, ChatClient, LLMError, OnReset, OnToken
from rag.question import followup, plain
from rag.question.reading import (
    DEFAULT_COLUMNS,
    Query,
    alternatives_of,
    author_candidates,
    distinctive_terms,
    grouping_of,
    keywords_of,
    named_by_best_hit,
    overview_rest,
    read,
    topic_of,
    with_acronyms,
)
from rag.question.translate import Translation, translate
from rag.retrieval.related import Related, related
from rag.retrieval.retrieve import (
    Retriever,
    Scope,
    author_names,
    papers_in,
    vocabulary_of,
)
from rag.store.index import Store, adopt_layout, recorded_family
from rag.text import content_words, hyphen_words, mentions, overlap, stem
from rag.types import Answer, Filters, Hit, IngestSummary, Notice, Paper, Source

CONDENSE_KEEPS = 0.5  # share of a follow-up's own content words its rewrite must keep
OWN_WORDS_HELD = 0.2  # share of a question's own words a retried follow-up's papers must hold
MAX_OVERVIEW = 5  # papers an overview of the last answer ('summarize them') quotes, at most
# What a question asking for a paper's code or authors says besides ('is the code released')
_RECORD_WORDS = content_words(" ".join((*ASKS_CODE, *ASKS_AUTHORS, "any link")))
# ... for a paper's venue, year or status ('which conference is it from', 'is it an oral?')
_RECORD_FIELD_WORDS = content_words(" ".join((*ASKS_RECORD, "first second third last")))
_COMPARE_SHOWN = content_words(" ".join(COMPARE_SHOWN | SMALL_COUNTS.keys()))


class Assistant:
    """Everything needed to answer questions over one index."""

    def __init__(
        self, settings: Settings, embedder: Embedder | None = None, chat: Chat | None = None
    ) -> None:
        # An existing index is opened the way it was built; a given embedder that does not
        # fit that layout is refused by the store ("built with X, not Y"), never mixed in.
        settings = adopt_layout(settings)
        self.settings = settings
        frequency.use_folder(settings.cache_dir)  # word frequencies mapped from the cache
        self.embedder = embedder or make_embedder(settings, recorded_family(settings))
        self.store = Store(settings, self.embedder.name, getattr(self.embedder, "family", None))
        self.retriever = Retriever(self.store, self.embedder, settings)
        self.client: Chat | None = chat or (ChatClient(settings) if settings.base_url else None)
        self.answerer = Answerer(
            settings,
            self.embedder,
            self.client,
            coverage=lambda q, t: self.retriever.terms.coverage(q, t),
            lexical=self.retriever.lexical_ceiling,
            rarest_missing=lambda q, t: self.retriever.terms.rarest_missing(q, t),
            spread=self.retriever.cosine_spread,
        )
        self.matcher = matching.Matcher(self.retriever, self.embedder, settings.match_depth)
        self._topics: dict[tuple[Any, ...], TopicSet] = {}
        # the records' author names, read at the first 'papers by ...' (per catalog)
        self._authors: tuple[int, frozenset[str]] | None = None
        self._authors_lock = threading.Lock()

    # -- ingest ------------------------------------------------------------------

    def ingest(
        self,
        paths: Iterable[str | Path],
        fields: FieldMap | None = None,
        prune: bool = False,
        progress: Progress | None = None,
        title_progress: TitleProgress | None = None,
    ) -> IngestSummary:
        """Ingest files into the index and refresh retrieval. With RAG_GENERATE_TITLES and
        an endpoint, untitled papers are then titled by it (rag/corpus/titles.py)."""
        summary, catalog = ingest(
            paths,
            self.store,
            self.embedder,
            self.settings,
            fields,
            prune,
            progress,
            titles=self.title_job(title_progress),
        )
        self.retriever.refresh(catalog)
        return summary

    def title_job(self, progress: TitleProgress | None = None) -> TitleJob | None:
        """How an ingest titles untitled papers: by the endpoint when RAG_GENERATE_TITLES
        is on and one is configured; else None (offline labels only)."""
        if not self.settings.generate_titles or self.client is None:
            return None
        client = self.client
        return TitleJob(
            lambda abstract: generate_title(client, abstract),
            self.settings.title_workers,
            progress,
        )

    def ensure_default_corpus(self, progress: Progress | None = None) -> IngestSummary | None:
        """Build the index of the bundled ICLR 2026 abstracts if the index is empty."""
        if self.count():
            return None
        return self.ingest([BUNDLED_CORPUS], progress=progress)

    # -- ask ---------------------------------------------------------------------

    def read(
        self,
        question: str,
        mode: str | None = None,
        translations: dict[str, Translation] | None = None,
    ) -> Query:
        """Read a question against the values this index holds (see rag/question/reading.py). One
        in another language is read in English: its translation (rag/question/translate.py) is
        made once per `translations` (a conversation's cache), by the LLM in llm mode."""
        vocabulary = self.retriever.vocabulary()
        spellings = acronyms.Spellings(
            self.retriever.acronym_spellings(), self.glossary, self.holds_word
        )
        asked = with_acronyms(read(question, vocabulary), spellings)
        if asked.language == "en":
            return asked
        cache = translations if translations is not None else {}
        done = cache.get(asked.question)
        if done is None:
            done = cache[asked.question] = self.translate(asked.question, asked.language, mode)
        english = with_acronyms(read(done.text, vocabulary), spellings)
        return replace(
            english,
            question=asked.question,
            language=asked.language,
            translated=done.text,
            translation=done.method,
            notices=done.notices,
        )

    def translate(self, question: str, language: str, mode: str | None = None) -> Translation:
        """The English question to search for one in `language` (an ISO 639-1 code): by
        the LLM in llm mode, else offline (see rag/question/translate.py)."""
        s = self.settings
        use_llm = (mode or s.answer_mode) == "llm" and self.client is not None
        return translate(
            question,
            language,
            self.retriever.held,
            self.client if use_llm else None,
            deadline_s=min(s.condense_deadline_s, s.llm_deadline_s),
            vocabulary=self.retriever.spelling_counts,
        )

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        retriever: str | None = None,
    ) -> list[Hit]:
        """Ranked papers for a query, inside `filters` only (no scope is read from it)."""
        return self.retriever.search(query, top_k, filters, retriever)

    def search_scoped(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        retriever: str | None = None,
        ignore_scope: Iterable[str] = (),
    ) -> tuple[list[Hit], Filters]:
        """Ranked papers for a query inside the scope it names (as `ask` searches), and
        the filters applied. A scope the index does not hold gives no papers."""
        read_q, applied = self.plan(query, filters, ignore_scope)
        if applied.active and not self.retriever.holds(applied):
            return [], applied
        hits = self.retriever.search(
            read_q.text, top_k, applied, retriever, lexical=read_q.keywords
        )
        return hits, applied

    def plan(
        self,
        question: str,
        filters: Filters | None = None,
        ignore_scope: Iterable[str] = (),
        query: str | None = None,
        context: Filters | None = None,
        mode: str | None = None,
        translations: dict[str, Translation] | None = None,
    ) -> tuple[Query, Filters]:
        """The question read, with the text to search (`query` when given, else the
        question less the scope it named), and the filters to apply: `filters` over the
        scope named (less `ignore_scope`) over `context` (a follow-up's previous scope)."""
        read_q = self.read(question, mode, translations)
        named = read_q.read_scope.without(ignore_scope) if self.settings.read_scope else Filters()
        candidates = author_candidates(read_q.text) if self.settings.read_scope else []
        held = self._author_names() if candidates else frozenset()
        by = next(((n, span) for n, span in candidates if n.casefold() in held), None)
        if by and "author" not in ignore_scope:  # 'papers by yoshua bengio'
            named = replace(named, author=by[0])
            cut = re.sub(rf"(?i)\s*{re.escape(by[1])}", "", read_q.text, count=1).strip()
            read_q = replace(read_q, text=cut or read_q.text)
        elif candidates and by is None:  # 'papers by deepmind'
            read_q = _author_unlisted(read_q, [n for n, _ in candidates], held)
        inherited = (context or Filters()).without(ignore_scope)
        applied = (filters or Filters()).over(named).over(inherited)
        asked = read_q.translated or read_q.question  # the English of one in another language
        # ('give me an overview of the rlhf papers' searches 'rlhf papers')
        text = query or (read_q.text if named.active else overview_rest(asked) or asked)
        text, fixes = self.retriever.correct(text)
        text, plainly = plain.expand(text, self.holds_word)
        terms = read_q.terms
        if query:  # a follow-up's standalone query names what the follow-up refers to
            terms = tuple(dict.fromkeys((*terms, *distinctive_terms(query))))
        # 'the discrete cosine transform' is also 'DCT' where the abstracts say so
        known = {t.casefold() for t in terms}
        implied = tuple(a for a in self.retriever.abbreviations(text) if a not in known)
        aliases = self.retriever.aliases((*terms, *implied))
        # An acronym the index spells out two ways ('DP': differential privacy, dynamic
        # programming) names nothing by itself: 'dynamic programming on GPUs' is not
        # answered from a paper whose 'DP' is differential privacy.
        lowered = text.casefold()
        ambiguous = {a for a in implied if any(f not in lowered for f in aliases.get(a, ()))}
        implied = tuple(a for a in implied if a not in ambiguous)
        aliases = {t: forms for t, forms in aliases.items() if t not in ambiguous}
        topic = read_q.topic
        notices = list(read_q.notices)
        notices.extend(
            Notice("expanded", f"searched '{e.phrase}' also as '{', '.join(e.terms)}'")
            for e in plainly
        )
        for term in terms:  # an acronym no stored abstract holds: searched by its long form
            entry = self.glossary.get(term)
            if term in aliases or entry is None or self.holds_word(term):
                continue
            aliases[term] = (entry.long,)
            if not mentions(text, entry.long):  # a follow-up's query may hold it already
                text = _spelled_out(text, term, f"{entry.long} ({entry.written})")
            topic = _spelled_out(topic, term, entry.long)
            notices.append(
                Notice(
                    "expanded",
                    f"no indexed abstract writes {entry.written}: searched it as "
                    f"'{entry.long}', as {entry.papers} abstracts of the glossary spell it out",
                )
            )
        read_q = replace(
            read_q,
            text=text,
            topic=topic,
            notices=tuple(notices),
            detail=(read_q.text if named.active else asked) if query else "",
            read_scope=named,
            corrections=fixes,
            terms=terms,
            implied=implied,
            aliases=aliases,
        )
        return read_q, applied

    def ask(
        self,
        question: str,
        *,
        top_k: int | None = None,
        filters: Filters | None = None,
        mode: str | None = None,
        retriever: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
        query: str | None = None,
        ignore_scope: Iterable[str] = (),
        context_filters: Filters | None = None,
        prefer: Sequence[str] = (),
        focus_only: bool = False,
        translations: dict[str, Translation] | None = None,
        shown: Iterable[str] = (),
    ) -> Answer:
        """Retrieve and answer one question.

        `query` overrides what is searched (a follow-up's standalone query); the scope is
        `filters` over what the question names over `context_filters` (a follow-up's
        previous scope), less the fields in `ignore_scope`; papers in `prefer` (what a
        follow-up refers to) rank first, and with `focus_only` only they answer (when the
        search finds them); `translations` caches the English of questions in
        other languages (a conversation's); `shown`: the sentences the answer before
        quoted, which a follow-up's offline answer adds to rather than repeats.
        """
        question = question.strip()
        if not question:
            raise ValueError("the question is empty")
        started = time.perf_counter()
        timings: dict[str, float] = {}
        read_q, applied = self.plan(
            question, filters, ignore_scope, query, context_filters, mode, translations
        )
        if shown:
            read_q = replace(read_q, shown=frozenset(shown))
        searched = read_q.text
        t0 = time.perf_counter()
        sides = self._sides(read_q, applied) if self._about_many(read_q, query) else []
        if len(sides) > 1 and len({found[0].paper.paper_id for found in sides if found}) == 1:
            # 'dr-sac reward vs sac', 'gvpo vs o1 on appworld': one abstract is the best
            # match for every side, so this compares its method with a baseline it names;
            # it asks about that paper, not for a table of two.
            read_q = replace(read_q, intent="lookup", plural=False, compared=(), topic="")
        if applied.active and not self.retriever.holds(applied):
            why = f"this index holds no {applied.describe()} papers"
            answer = abstention(question, [], self.answerer.mode_of(mode), why)
        elif read_q.lists_scope and not query:
            answer = self.list_scope(read_q, applied)
        elif self._about_many(read_q, query):
            answer = self.about_many(read_q, applied, sides)
        else:
            hits = self.retriever.search(
                searched, top_k, applied, retriever, timings, read_q.keywords, prefer
            )
            if focus_only and prefer:
                hits = [h for h in hits if h.paper.paper_id in prefer] or hits
            # wall time: the dense and BM25 searches overlap, so their parts do not add up
            timings["retrieve"] = round((time.perf_counter() - t0) * 1000, 2)
            t0 = time.perf_counter()
            if hits:
                texts = [f"{h.paper.label} {h.paper.abstract}" for h in hits]
                read_q = named_by_best_hit(read_q, texts[0], texts[1:])
                if self._lists_members(read_q, query):
                    read_q = self._with_members(read_q, applied, hits)
            answer = self.answerer.answer(read_q, hits, mode, on_token, on_reset)
        timings["answer"] = round((time.perf_counter() - t0) * 1000, 2)
        answer.timings_ms = {
            **timings,
            **answer.timings_ms,
            "total": round((time.perf_counter() - started) * 1000, 2),
        }
        if read_q.translated:
            how = {
                "llm": "translated",
                "dictionary": "glossed offline",
                "cognates": "glossed offline by cognates of the index's words",
            }.get(read_q.translation)
            if how:
                answer.notices.insert(0, Notice("translated", f"{how} as: {read_q.translated}"))
        # a refusal lists no papers for 'papers_none' to speak of
        answer.notices[:0] = [
            n for n in read_q.notices if not (answer.abstained and n.code == "papers_none")
        ]
        if read_q.corrections:
            fixed = ", ".join(f"'{a}' as '{b}'" for a, b in read_q.corrections.items())
            answer.notices.insert(0, Notice("corrected", f"searched {fixed}"))
        if applied.active:
            how = " (read from the question)" if read_q.read_scope.active else ""
            answer.notices.insert(0, Notice("scope", f"scope: {applied.describe()}{how}"))
        answer.query = searched
        answer.applied_filters = applied.to_dict()
        answer.intent = read_q.intent
        answer.language = read_q.language
        return answer

    def about_shown(
        self,
        question: str,
        shown: Sequence[Source],
        filters: Filters | None = None,
        searched: str = "",
        *,
        mode: str | None = None,
        on_token: OnToken | None = None,
        on_reset: OnReset | None = None,
        translations: dict[str, Translation] | None = None,
    ) -> Answer:
        """Answer a question about papers already shown, in the scope and after the search
        (`searched`) of the turn that showed them: their venue, year and status where it
        asks the record ('which conference is it from'), a table of them for a comparison
        ('compare them'), else their gist ('summarize them', 'tl;dr', 'tell me more about
        the second one'), what each does and finds (`Answerer.overview`)."""
        started = time.perf_counter()
        read_q = self.read(question, mode, translations)
        stored = self.retriever.catalog.papers
        hits = [Hit(stored[s.paper_id].paper, s.score) for s in shown if s.paper_id in stored]
        if not hits:
            why = "the papers shown are no longer in the index"
            return abstention(question, [], self.answerer.mode_of(mode), why)
        if read_q.asks_record:
            answer = record_answer(read_q, hits, read_q.asks_record)
        elif read_q.intent == "comparison":
            answer = table_answer(read_q, hits, read_q.columns or DEFAULT_COLUMNS)
        else:
            answer = self.answerer.overview(read_q, hits, mode, on_token, on_reset)
        answer.notices[:0] = read_q.notices
        answer.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 2)
        answer.query = searched  # what found them: a follow-up after this one searches it
        answer.applied_filters = (filters or Filters()).to_dict()
        answer.intent = read_q.intent
        answer.language = read_q.language
        return answer

    def list_scope(self, read_q: Query, applied: Filters) -> Answer:
        """The papers of the applied scope (the whole index when none), counted and the
        newest `count_cited` listed: 'how many iclr 2026 papers are there', 'list the
        aistats 2021 papers', 'how many papers per year'. Counted from the scope fields
        (`CatalogView.facets`); only the listed papers' records are read."""
        catalog, inside = self.retriever.papers_inside(applied)  # the mask `holds` made
        facets, codes = catalog.facets()
        rows = np.flatnonzero(inside)
        years = np.array([facets[c].year or 0 for c in codes[rows]], dtype=np.int64)
        newest = rows[np.argsort(-years, kind="stable")][: self.settings.count_cited]
        ids = catalog.paper_ids
        listed = [catalog.papers[ids[i]].paper for i in newest]
        return scope_answer(
            read_q, listed, len(rows), [facets[c] for c in codes[rows]], applied.papers()
        )

    def _author_names(self) -> frozenset[str]:
        """The authors the index's records list (full and last names, folded), read once
        per catalog, at the first 'papers by ...'."""
        catalog = self.retriever.catalog
        with self._authors_lock:
            if self._authors is None or self._authors[0] != id(catalog):
                self._authors = (id(catalog), author_names(catalog))
            return self._authors[1]

    def _lists_members(self, read_q: Query, query: str | None) -> bool:
        """Tell whether a question lists the papers of a topic ('which papers study X?',
        asked afresh) and the count's cut can weigh them here: where the search is exact.
        Past RAG_ANN_MIN_ROWS chunks the paper vectors the cut reads would be a second copy
        of a large index (1M papers: 1.5 GB), and where the Chroma server searches an
        instance holds no vector at all (docs/deployment.md)."""
        if read_q.intent != "papers" or query or read_q.asks_for_one:
            return False
        return self.retriever.exact()

    def _with_members(self, read_q: Query, applied: Filters, hits: list[Hit]) -> Query:
        """'which papers study calibration?' asks for the papers a count of its topic would
        count: of the retrieved papers, those that pass the count's cut answer it."""
        topic = topic_of(read_q.text)
        matches = self._matches(
            replace(read_q, topic=topic), applied, {h.paper.paper_id for h in hits}
        )
        members = frozenset(c.paper.paper_id for c in matches.members)
        notices = read_q.notices
        if not members:  # 'which iclr 2026 papers are about autonomous driving'
            notices = (
                *notices,
                Notice(
                    "papers_none",
                    f"none of these papers is mainly about '{matches.topic}' (a count of it "
                    "finds none): they are the closest found, and may only mention it "
                    f"(the count's cut: P(about it) >= {matches.threshold:.2f})",
                ),
            )
        return replace(read_q, members=members, notices=notices)

    @property
    def glossary(self) -> acronyms.Glossary:
        """The acronym glossary (rag/acronyms.py, read on first use)."""
        return acronyms.load(self.settings.acronyms_file)

    def holds_word(self, word: str) -> bool:
        """Tell whether some stored abstract holds the word (its stem)."""
        return bool(self.retriever.terms.df.get(stem(word), 0))

    @property
    def match_model(self) -> Model:
        """The fitted relevance cut of counts and comparison sets (read on first use)."""
        return matching.load_model(self.settings.match_file)

    @property
    def followup_model(self) -> Model:
        """The fitted follow-up model (rag/question/followup.py, read on first use)."""
        return followup.load_model(self.settings.followup_file)

    @staticmethod
    def _about_many(read_q: Query, query: str | None) -> bool:
        """A count or comparison asked afresh (a follow-up's standalone query is answered
        as a question about its papers)."""
        if query:
            return False
        if read_q.intent == "count":
            return bool(read_q.topic)
        return read_q.intent == "comparison" and bool(read_q.compared or read_q.topic)

    def topic_names(self, read_q: Query) -> tuple[str, ...]:
        """The names a count or comparison topic holds: those typed as names, and the
        words the abstracts write as one ('clip' -> CLIP; see `Retriever.written_names`)."""
        written = self.retriever.written_names(read_q.topic)
        held = [t for t in read_q.terms if self.holds_word(t)]  # not one the glossary spelled out
        return tuple(dict.fromkeys((*held, *written)))

    def _matches(
        self, read_q: Query, applied: Filters, within: Collection[str] | None = None
    ) -> matching.Matches:
        """The papers of the scope about the question's topic (rag/aggregate/matching.py),
        or about one of the others a count weighs (`count_topic`); with `within`, of
        those papers only."""
        topic, names, alternatives = self.count_topic(read_q)
        return self.matcher.match(topic, self.match_model, applied, names, within, alternatives)

    def count_topic(self, read_q: Query) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """What a count weighs: its topic, the names in it (`topic_names`), and the topics
        a paper may be about instead. The topic less the words that only say how a paper
        uses a name it holds ('run experiments with llama' -> 'llama', 'qwen models' ->
        'qwen': lexicon USAGE_FRAME). The others: each side of an 'or' in it, and the topic
        (or a side) in the field's terms for its plain words (rag/question/plain.py:
        'faster text generation' -> 'speculative decoding'), and each less a generic head
        ('recommender systems' -> 'recommender': lexicon GENERIC_HEADS)."""
        topic = read_q.topic or read_q.keywords
        names = self.topic_names(read_q)
        if names:
            kept = " ".join(w for w in topic.split() if w.casefold() not in USAGE_FRAME)
            if kept and all(n.casefold() in kept.casefold() for n in names):
                topic = kept
        asked = (topic, *alternatives_of(read_q.text))
        rewrites = (f for t in asked for f in plain.field_topics(t, self.holds_word))
        headless = (h for t in asked if (h := _without_generic_head(t)))
        return topic, names, tuple(dict.fromkeys((*asked[1:], *rewrites, *headless)))

    def about_many(
        self, read_q: Query, applied: Filters, sides: Sequence[list[Hit]] = ()
    ) -> Answer:
        """Answer a count or a comparison (rag/aggregate/conference.py) inside the applied
        scope (`sides`: the hits of each thing compared, when already searched)."""
        if read_q.intent == "count":
            matches = self._matches(read_q, applied)
            fitted_on = int(self.match_model.about.get("questions", 0))
            coverage = self.retriever.terms.coverage
            return count_answer(
                read_q, matches, self.settings.count_cited, coverage, fitted_on, applied.papers()
            )
        notices: list[Notice] = []
        if read_q.compared:
            hits = _one_each(sides or self._sides(read_q, applied))
        else:
            matches = self._matches(read_q, applied)
            rows = matches.members[: self.settings.table_rows]
            hits = [Hit(c.paper, round(c.probability, 4)) for c in rows]
            if not hits:
                hits = self.retriever.search(read_q.topic, 3, applied, lexical=read_q.topic)
                notices.append(
                    Notice(
                        "table_fallback",
                        f"no paper passed the relevance cut for '{read_q.topic}': the "
                        f"{len(hits)} closest are compared",
                    )
                )
        if not hits:
            return abstention(
                read_q.question, [], "extractive", "the index holds no matching paper"
            )
        return table_answer(read_q, hits, read_q.columns, notices)

    def _sides(self, read_q: Query, applied: Filters) -> list[list[Hit]]:
        """The best papers for each thing a comparison names ('GTO', 'the n-draft
        paper'); none for a count or a comparison of a topic's set."""
        return [
            self.retriever.search(part, 3, applied, lexical=keywords_of(part))
            for part in read_q.compared
        ]

    def conversation(self) -> Conversation:
        """Start a conversation (one per user or browser session)."""
        return Conversation(self)

    def count(self) -> int:
        """Chunks the index holds (0: empty)."""
        return self.store.count()

    @property
    def has_endpoint(self) -> bool:
        """Tell whether an LLM endpoint is configured."""
        return self.client is not None

    def papers(self) -> dict[str, Paper]:
        """Every stored paper by id."""
        return {pid: sp.paper for pid, sp in self.retriever.catalog.papers.items()}

    def embedded_texts(self) -> tuple[Sequence[str], Sequence[str]]:
        """The chunk ids and the texts embedded for them (title + chunk), in index order."""
        catalog = self.retriever.catalog
        return catalog.ids, catalog.texts

    def warm_up(self, background: bool = False) -> threading.Thread | None:
        """Load the embedding model's weights now (the first call pays for its set-up); with
        `background`, on a thread, while the caller reads the index or draws a page (a
        first `rag ask` loads both at once: the model's load releases the GIL)."""
        if not background:
            self.embedder.embed(["A warm-up sentence."])
            return None
        thread = threading.Thread(target=self._warm_quietly, name="rag-warm-up", daemon=True)
        thread.start()
        return thread

    def prefetch(self) -> threading.Thread | None:
        """In a long-running process: read the index's mapped files into the page cache in
        the background (`Retriever.prefetch`), so the first questions are as fast as later
        ones."""
        return self.retriever.prefetch()

    def _warm_quietly(self) -> None:
        # A failure here is reported by the question that needs the model.
        with contextlib.suppress(Exception):
            self.embedder.embed(["A warm-up sentence."])

    # -- the whole index: topics, related papers ----------------------------------------

    def topics(
        self, filters: Filters | None = None, k: int | None = None, with_map: bool = False
    ) -> TopicSet:
        """The topics of the papers inside `filters` (rag/aggregate/topics.py), with their 2-D map
        when asked; cached per index version, so only the first call pays."""
        catalog = self.retriever.catalog
        filters = filters or Filters()
        key = (id(catalog), tuple(sorted(filters.to_dict().items())), k)
        known = self._topics.get(key)
        if known is not None and (known.mapped or not with_map):
            return known
        scope = Scope.of(filters, vocabulary_of(catalog))
        inside = papers_in(catalog, scope)
        papers = {
            pid: catalog.papers[pid].paper
            for pid, keep in zip(catalog.paper_ids, inside.tolist(), strict=True)
            if keep
        }
        found = topics_of(
            self.store, catalog.stamp, papers, self.settings, filters.to_dict(), k, with_map
        )
        self._topics = {key: found}  # one index version, one request: the last one asked
        return found

    def related(self, paper_id: str, top_k: int = 10, filters: Filters | None = None) -> Related:
        """The stored papers nearest to `paper_id`, never itself (rag/retrieval/related.py); an
        unknown id raises `UnknownPaper`, a `RagError`."""
        catalog, rows, matrix = self.retriever.stored_vectors()
        scope = Scope.of(filters or Filters(), vocabulary_of(catalog))
        if scope.empty:
            stored = catalog.papers.get(paper_id)
            return Related(paper_id, stored.paper.label if stored else paper_id, [])
        keep = scope.match if scope.filters.active else None
        return related(catalog, rows, matrix, paper_id, top_k, keep, self.store.location)

    def stats(self) -> dict[str, Any]:
        """Index statistics for the UI and `rag stats`."""
        catalog = self.retriever.catalog
        held = vocabulary_of(catalog)
        return {
            "papers": len(catalog.papers),
            "chunks": catalog.n_chunks,
            "embedding_model": self.embedder.name,
            "location": self.store.location,
            "venues": sorted(held.venues),
            "years": sorted(held.years),
            "statuses": sorted(held.statuses),
            "areas": sorted(held.areas),
        }

    def answerability(self) -> dict[str, Any]:
        """The answerability model in use: its threshold and what it was fitted on."""
        model = self.answerer.model
        return {"threshold": model.threshold, "fitted_on": model.about}

    def endpoint_health(self) -> tuple[bool, str]:
        """(ok, description) of the LLM endpoint; (False, ...) when none is configured."""
        if self.client is None:
            return False, "no endpoint configured (offline extractive answers)"
        return self.client.health()


@dataclass
class Turn:
    """One question and its answer."""

    question: str
    answer: Answer


@dataclass
class Conversation:
    """One user's chat: questions answered in the context of the previous turns."""

    assistant: Assistant
    turns: list[Turn] = field(default_factory=list)
    # The English of each question asked in another language, translated once.
    translations: dict[str, Translation] = field(default_factory=dict, repr=False)
    # One question at a time: a question sent while the previous one is still being
    # answered (the app asks in a worker thread) waits for it, so it sees that turn.
    _asking: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def ask(self, question: str, **options: Any) -> Answer:
        """Answer a question, treating it as a follow-up when it refers back to a turn."""
        with self._asking:
            return self._ask(question, options)

    def _ask(self, question: str, options: dict[str, Any]) -> Answer:
        notices: list[Notice] = []
        options["translations"] = self.translations
        read_q = self.assistant.read(question, options.get("mode"), self.translations)
        if self.turns and read_q.counts_without_topic:  # 'how many of them?'
            counted = count_of_previous(read_q, self.turns[-1].answer)
            if counted is not None:
                counted.follow_up = True
                self.turns.append(Turn(question, counted))
                return counted
        shown = self._shown_asked_about(read_q)  # 'summarize them', 'compare the two'
        if shown:
            answer = self.assistant.about_shown(
                question,
                shown,
                Filters(**self.turns[-1].answer.applied_filters),
                self.turns[-1].answer.query or self.turns[-1].question,
                mode=options.get("mode"),
                on_token=options.get("on_token"),
                on_reset=options.get("on_reset"),
                translations=self.translations,
            )
            answer.follow_up = True
            about = Notice(
                "about_shown", "answered from the papers the previous answer cited, not searched"
            )
            answer.notices.insert(0, about)
            self.turns.append(Turn(question, answer))
            return answer
        query, condensed = self._standalone(read_q, options.get("mode"), notices)
        follow_up = query is not None
        alone = dict(options)
        if follow_up:
            options = self._follow_up_options(read_q, options, condensed)
        answer = self.assistant.ask(question, query=query, **options)
        if condensed and answer.abstained and answer.sources:
            # Decided after the check: a rewrite by the model that finds no answer gives
            # way to the offline one (the previous query with the follow-up's words).
            retried = self._ask_offline_follow_up(question, read_q, alone)
            if not retried.abstained:
                notices.append(
                    Notice(
                        "condense_rejected",
                        f"the model's rewrite of the follow-up ({query!r}) found no answer; "
                        "searched it together with the previous question instead",
                    )
                )
                answer = retried
        elif not follow_up and answer.abstained and self._last_answered():
            # 'how much faster than the cpu version', 'real recordings or just simulations?':
            # a detail asked without a pointing word, found nowhere alone; the last turn's
            # paper may hold it, if it holds the question's own words ('medical imaging
            # segmentation' after the GPU paper: a new topic, refused)
            retried = self._ask_offline_follow_up(question, read_q, alone)
            if not retried.abstained and self._own_words_held(read_q, retried):
                notices.append(
                    Notice(
                        "read_as_follow_up",
                        "the question alone found no answer; read as a follow-up of the "
                        f"previous one ({self.turns[-1].question!r})",
                    )
                )
                answer, follow_up = retried, True
        answer.notices = notices + answer.notices
        answer.follow_up = follow_up
        self.turns.append(Turn(question, answer))
        return answer

    def _ask_offline_follow_up(
        self, question: str, read_q: Query, options: dict[str, Any]
    ) -> Answer:
        """Ask a question as a follow-up of the last turn, the offline way: searched with
        the previous query, the paper it refers to first."""
        return self.assistant.ask(
            question,
            query=self._offline_standalone(read_q),
            **self._follow_up_options(read_q, options, condensed=False),
        )

    def _follow_up_options(
        self, read_q: Query, options: dict[str, Any], condensed: bool
    ) -> dict[str, Any]:
        """`options` for asking a follow-up: the previous turn's scope holds unless the
        follow-up names one, and the papers it refers to rank first (or alone)."""
        last = self.turns[-1].answer
        options = {**options, "context_filters": Filters(**last.applied_filters)}
        options["shown"] = [h for s in last.sources if s.cited for h in s.highlights]
        if condensed:  # a condensed query already names what 'it' is
            return options
        options["prefer"] = referred_papers(last, read_q)
        if not read_q.plural and not self._asked_for_many():
            # 'how many scenarios can it handle?' after 'which paper speeds up dynamic
            # programming on GPUs?': 'it' is the paper that answer is about, its first
            # cited one, and only that paper answers
            options["prefer"] = options["prefer"][:1]
            options["focus_only"] = True
        elif not read_q.plural and followup.picks_one(read_q.english):
            # 'the one that picks which preference pairs to label?' after a list: the
            # listed paper whose sentences answer its own words best, and only that one
            options["prefer"] = self._best_listed(read_q, options["prefer"])
            options["focus_only"] = True
        return options

    def _shown_asked_about(self, read_q: Query) -> list[Source]:
        """The papers the last answer cited that a question asks about as a whole, naming
        nothing else: their gist ('summarize them', 'tl;dr', 'tell me more about the second
        one') or a table of them ('compare them', 'compare the two'); none for any other
        question ('summarize the rlhf papers' names its own papers)."""
        if not self._last_answered():
            return []
        last = self.turns[-1].answer
        cited = [s for s in last.sources if s.cited]
        if read_q.asks_record and not (content_words(read_q.english) - _RECORD_FIELD_WORDS):
            referred = _referred_source(last, read_q.ordinal)  # 'is it an oral?'
            return [referred] if referred else cited[:MAX_OVERVIEW]
        if read_q.wants == "overview":
            if content_words(overview_rest(read_q.english) or "") and not read_q.refers_back:
                return []  # 'summarize the rlhf papers' names its own
            referred = _referred_source(last, read_q.ordinal)
            return [referred] if referred else cited[:MAX_OVERVIEW]
        if read_q.intent != "comparison" or read_q.compared or len(cited) < 2:
            return []
        if content_words(read_q.topic) - _COMPARE_SHOWN:
            return []  # 'compare the rlhf papers': a set of its own
        words = [w.casefold() for w in hyphen_words(read_q.english)]
        wanted = next(
            (SMALL_COUNTS.get(w) or int(w) for w in words if w in SMALL_COUNTS or w.isdecimal()), 0
        )
        return cited[: wanted or self.assistant.settings.table_rows]

    def _last_answered(self) -> bool:
        """Tell whether the last turn answered (a refusal leaves nothing to follow up)."""
        return bool(self.turns) and not self.turns[-1].answer.abstained

    def _own_words_held(self, read_q: Query, answer: Answer) -> bool:
        """Tell whether the papers an answer cites hold at least `OWN_WORDS_HELD` of the
        question's own words (IDF-weighted, those some abstract writes): 'how much faster
        than the cpu version' (0.29: 'CPU') after the GPU dynamic-programming paper, not
        'how many qubits does it need' after it (0: nothing of it is there)."""
        cited = " ".join(s.text for s in answer.sources if s.cited)
        held = self.assistant.retriever.terms.coverage(read_q.text, cited, known=True)
        return held >= OWN_WORDS_HELD

    def _best_listed(self, read_q: Query, listed: Sequence[str]) -> tuple[str, ...]:
        """The one of the `listed` papers whose sentences answer the follow-up's own words
        (not the previous question's) best (`Answerer.best_answering`)."""
        stored = self.assistant.retriever.catalog.papers
        papers = [stored[pid].paper for pid in listed if pid in stored]
        if len(papers) < 2:
            return tuple(listed)
        return (papers[self.assistant.answerer.best_answering(read_q, papers)].paper_id,)

    def _asked_for_many(self) -> bool:
        """Tell whether the last turn's question asked for several papers ('which papers
        ...', a count, a comparison) rather than about one ('which paper ...')."""
        asked = self.assistant.read(self.turns[-1].question, None, self.translations)
        return asked.plural and not asked.asks_for_one

    def standalone_query(
        self, question: str, mode: str | None = None, notices: list[Notice] | None = None
    ) -> str | None:
        """The query to search for `question` given the conversation so far; None when
        it does not refer back (it is then read and searched as it stands)."""
        read_q = self.assistant.read(question, mode, self.translations)
        return self._standalone(read_q, mode, notices)[0]

    def _standalone(
        self, read_q: Query, mode: str | None, notices: list[Notice] | None
    ) -> tuple[str | None, bool]:
        """(standalone query or None, whether the LLM wrote it), for a question read once."""
        question = read_q.question
        if not self.turns:
            return None, False
        if not self.leans_back(read_q):
            return None, False
        client = self.assistant.client
        use_llm = (mode or self.assistant.settings.answer_mode) == "llm" and client is not None
        if use_llm:
            assert client is not None
            try:
                return self._condense(client, question), True
            except LLMError as exc:
                if notices is not None:
                    notices.append(
                        Notice(
                            "condense_failed",
                            f"could not condense the follow-up ({exc}); "
                            "searched it together with the previous question",
                        )
                    )
        return self._offline_standalone(read_q), False

    def leans_back(self, read_q: Query) -> bool:
        """Tell whether a question leans on the last turn (rag/question/followup.py): a
        pointing word in a short question says so, else the fitted model weighs its words
        against the paper that turn's answer is about."""
        if not self.turns or read_q.question.casefold() == self.turns[-1].question.casefold():
            return False  # (a question asked again leans on nothing)
        if (read_q.asks_code or read_q.asks_authors) and not (
            content_words(read_q.english) - _RECORD_WORDS
        ):
            return True  # 'any code?', 'github?', 'who wrote it': the paper in focus's
        return followup.follows_up(self.followup_features(read_q), self.assistant.followup_model)

    def followup_features(self, read_q: Query) -> dict[str, float]:
        """The follow-up model's features of a question after the last turn."""
        last = self.turns[-1]
        shown = [s for s in last.answer.sources if s.cited] or last.answer.sources
        focus = f"{shown[0].title} {shown[0].text}" if shown else ""
        terms = self.assistant.retriever.terms
        return followup.features(
            read_q,
            focus,
            last.answer.query or last.question,
            lambda question, text: terms.coverage(question, text, known=True),
            terms.coverage,
        )

    def _offline_standalone(self, read_q: Query) -> str:
        """A follow-up's query without an LLM: the paper it points to ('the second one')
        or the previous query, with its own words."""
        last = self.turns[-1].answer
        referred = _referred_source(last, read_q.ordinal)
        if referred is not None:
            return f"{referred.title} {read_q.text}"
        return f"{last.query or self.turns[-1].question} {read_q.text}"

    def _condense(self, client: Chat, question: str) -> str:
        s = self.assistant.settings
        history = "\n".join(
            f"User: {t.question}\nAssistant: {t.answer.answer[: s.condense_answer_chars]}"
            for t in self.turns[-s.condense_turns :]
        )
        prompt = prompts.CONDENSE.format(history=history, question=question)
        reply = client.complete(
            [
                {"role": "system", "content": prompts.CONDENSE_SYSTEM},
                {"role": "user", "content": prompt},
            ],
            deadline_s=min(s.condense_deadline_s, s.llm_deadline_s),
            max_tokens=s.condense_max_tokens,
        )
        # Small models preface the query ("The answer to your question is:"): skip lines
        # that end in a colon, and a reply that only repeats the follow-up.
        lines = [ln.strip().strip('"').strip() for ln in reply.text.splitlines()]
        kept = [ln for ln in lines if ln and not ln.endswith(":")]
        query = kept[0] if kept else ""
        if not query or query.casefold() == question.casefold():
            raise LLMError("the model did not rewrite the follow-up")
        # A rewrite is a search query: one carrying citation markers ('... reaches 90% [1]')
        # copies a sentence of the previous answer instead of rewriting the follow-up.
        if CITATION.search(query):
            raise LLMError(f"the model's rewrite ({query[:80]!r}) copies the previous answer")
        # A rewrite keeps what the follow-up itself asks: one that drops most of its words
        # ('how much does it increase acceptance length?' -> a sentence of an abstract) or
        # carries markup is no rewrite of it.
        if MARKUP.search(query) or (
            content_words(question) and overlap(question, query) < CONDENSE_KEEPS
        ):
            raise LLMError(f"the model's rewrite ({query[:80]!r}) drops the follow-up's words")
        return query

    def clear(self) -> None:
        """Forget the turns."""
        self.turns.clear()


def _author_unlisted(read_q: Query, candidates: Sequence[str], held: frozenset[str]) -> Query:
    """The question with a notice: its 'papers by ...' names no author of `held` (the
    records' authors; records hold no affiliations: 'papers by deepmind'), so it is
    searched in the abstracts' words; unchanged where 'by' groups ('how many papers by
    year')."""
    names = [n for n in candidates if all(map(content_words, n.split()))]
    if not names or grouping_of(read_q.question)[0] is not None:
        return read_q
    name = names[0]  # the longest run of words naming someone: 'google deepmind'
    why = (
        f"no record lists an author named '{name}' (records list authors, not affiliations)"
        if held
        else "the indexed records list no authors"
    )
    notice = Notice("author_unlisted", f"{why}: 'by {name}' was searched in the abstracts")
    return replace(read_q, notices=(*read_q.notices, notice))


def _without_generic_head(topic: str) -> str | None:
    """'recommender systems' -> 'recommender', 'bilevel optimization methods' -> 'bilevel
    optimization'; None when the last word is no generic head or nothing would be left."""
    words = topic.split()
    if len(words) < 2 or words[-1].casefold() not in GENERIC_HEADS:
        return None
    rest = " ".join(words[:-1])
    return rest if content_words(rest) else None


def _spelled_out(text: str, term: str, long: str) -> str:
    """The text with the term, however typed, as its long form: ('how many papers use
    mcts', 'MCTS', 'monte-carlo tree search') -> 'how many papers use monte-carlo tree
    search'; the text as it is where the term is not a word of it."""
    return re.sub(rf"(?i)(?<![\w-]){re.escape(term)}s?(?![\w-])", lambda _: long, text)


def _one_each(sides: Sequence[list[Hit]]) -> list[Hit]:
    """The best paper for each side compared, no paper twice."""
    chosen: list[Hit] = []
    for found in sides:
        fresh = [h for h in found if h.paper.paper_id not in {c.paper.paper_id for c in chosen}]
        if fresh:
            chosen.append(fresh[0])
    return chosen


def referred_papers(answer: Answer, query: Query) -> tuple[str, ...]:
    """The papers a follow-up points at: the one it numbers ('the second one', '[3]'),
    else, when it says 'it' / 'they' / 'that paper', the previous answer's cited papers;
    none for 'what about ...', which asks for something new."""
    referred = _referred_source(answer, query.ordinal)
    if referred is not None:
        return (referred.paper_id,)
    if query.changes_topic:
        return ()
    return tuple(s.paper_id for s in answer.sources if s.cited)


def _referred_source(answer: Answer, ordinal: int | None) -> Source | None:
    """The source 'the second one' (the answer's second cited paper) or '[3]' points to."""
    if ordinal is None or not answer.sources:
        return None
    listed = [s for s in answer.sources if s.cited] or answer.sources
    if ordinal == -1:
        return listed[-1]
    if 1 <= ordinal <= len(listed):
        return listed[ordinal - 1]
    return None


__all__ = ["Assistant", "Conversation", "Filters", "Settings"]
