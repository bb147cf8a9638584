"""Short titles written by the endpoint model for papers that have none (one call each).

With `RAG_GENERATE_TITLES=1` and an endpoint, an ingest asks once per untitled paper
(`title_papers`) and stores the reply as the paper's `generated_title`: its label then, shown
as derived, never in place of a real title and never embedded (vectors and BM25 see only
the source's own words). A reply that is no title (a bare tag, the abstract's first words
copied, a paragraph) is recorded as "" and the offline label stays. Papers once asked are
not asked again; a paper whose abstract changes loses its title and is asked anew. Calls
run a few at a time; after a run of endpoint failures in a row the endpoint is taken to be
down and the rest keep their offline labels (counted in the ingest summary, asked again by
the next ingest).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rag.lexicon import NOT_A_TITLE, STOP
from rag.llm import Chat, LLMError
from rag.prompts import TITLE, TITLE_SYSTEM
from rag.types import Paper

TITLE_DEADLINE_S = 15.0
TITLE_MAX_TOKENS = 40
MAX_TITLE_WORDS = 16
MAX_TITLE_CHARS = 140
GIVE_UP_AFTER = 4  # failed calls in a row: the endpoint is down, stop asking
_ABSTRACT_CHARS = 2_000  # the start of the abstract says what the paper contributes
_PREFIX = re.compile(r"^\s*(title\s*:\s*)", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][\w-]*>")  # '<title>...</title>': a weak model's wrapping

# abstract -> title ("" when the reply was no usable title); raises LLMError when it fails
Titler = Callable[[str], str]
TitleProgress = Callable[[int, int], None]  # (papers asked so far, papers to ask)


def generate_title(chat: Chat, abstract: str, deadline_s: float = TITLE_DEADLINE_S) -> str:
    """The model's short title for `abstract`, or "" when its reply is no usable title
    (see `clean_title`). LLMError when the endpoint gives no reply at all."""
    messages = [
        {"role": "system", "content": TITLE_SYSTEM},
        {"role": "user", "content": TITLE.format(abstract=abstract[:_ABSTRACT_CHARS])},
    ]
    reply = chat.complete(messages, deadline_s=deadline_s, max_tokens=TITLE_MAX_TOKENS)
    return clean_title(reply.text, abstract) or ""


def clean_title(text: str, abstract: str = "") -> str | None:
    """'Title: "Fast Drafts for Speculative Decoding."\n...' -> 'Fast Drafts for Speculative
    Decoding'; None when nothing title-like is left: empty, a bare tag ('<title>'), longer
    than a title, or the abstract's own first words (a copy names nothing)."""
    lines = [line.strip() for line in _TAG.sub(" ", text).strip().splitlines() if line.strip()]
    if not lines:
        return None
    title = _PREFIX.sub("", lines[0]).strip().strip("\"'*`“”").strip().rstrip(".")
    title = re.sub(r"\s+", " ", title)
    if not title or len(title) > MAX_TITLE_CHARS or len(title.split()) > MAX_TITLE_WORDS:
        return None
    if abstract and (_words(abstract).startswith(_words(title)) or not _grounded(title, abstract)):
        return None
    return title


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _grounded(title: str, abstract: str) -> bool:
    """Tell whether the title names something of the abstract: one of its words that is
    neither a stop word nor a heading or field name ('Introduction', 'Machine Learning')
    is there (by its first five letters, so 'models' meets 'modelling')."""
    stems = {w[:5] for w in _words(abstract).split()}
    return any(
        w[:5] in stems
        for w in _words(title).split()
        if len(w) > 2 and w not in STOP and w not in NOT_A_TITLE
    )


def needs_title(paper: Paper) -> bool:
    """Tell whether a paper has no real title and the endpoint was never asked for one
    (`generated_title` "" records a reply that was no usable title: not asked again)."""
    return not paper.title and paper.generated_title is None


@dataclass(frozen=True)
class TitleJob:
    """What an ingest needs to title untitled papers: who writes a title, how many at once,
    and whom to tell how far it got."""

    titler: Titler
    workers: int = 4
    progress: TitleProgress | None = None


def title_papers(papers: Sequence[Paper], job: TitleJob) -> Iterator[tuple[Paper, str | None]]:
    """Ask for each paper's title, `job.workers` at a time, in order: (paper, title), the
    title "" when the reply was no usable title and None when the endpoint failed. Stops
    after GIVE_UP_AFTER failures in a row; papers never asked are not yielded."""
    streak = asked = 0
    wave = max(1, job.workers)
    with ThreadPoolExecutor(max_workers=wave, thread_name_prefix="rag-title") as pool:
        for start in range(0, len(papers), wave):
            group = papers[start : start + wave]
            for paper, title in zip(group, pool.map(_asking(job.titler), group), strict=True):
                asked += 1
                streak = streak + 1 if title is None else 0
                yield paper, title
            if job.progress:
                job.progress(asked, len(papers))
            if streak >= GIVE_UP_AFTER:
                return


def _asking(titler: Titler) -> Callable[[Paper], str | None]:
    def ask(paper: Paper) -> str | None:
        try:
            return titler(paper.abstract)
        except LLMError:
            return None

    return ask
