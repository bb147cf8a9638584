"""Real abstracts -> the acronym glossary (rag/acronyms.py): `rag eval acronyms`.

Every abstract's spelled-out acronyms ('Monte Carlo tree search (MCTS)', rag.text
`spelled_out`) are counted once per abstract. Long forms that differ only by hyphens,
case or a plural ('monte-carlo tree search', 'Monte Carlo tree searches') are one form,
shown as written most often. An acronym is kept when at least MIN_PAPERS abstracts
spell it out and one form holds at least MIN_SHARE of them ('KD': knowledge distillation
3, knowledge discovery 1 -> kept; an acronym split between two meanings is left out). An
acronym with a digit ('A3C') is left out: its initials cannot show what the digit stands
for ('Asynchronous Advantage Actor-Critic').
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rag.text import spelled_out, stem
from rag.types import Paper

MIN_PAPERS = 2
MIN_SHARE = 0.6


def form_key(long: str) -> tuple[str, ...]:
    """What makes two long forms one: 'Monte-Carlo tree searches' -> ('mont', 'carlo',
    'tree', 'search')."""
    return tuple(stem(w) for w in re.split(r"[\s\-]+", long.casefold()) if w)


def build(papers: Iterable[Paper], about: dict[str, Any] | None = None) -> dict[str, Any]:
    """The glossary's JSON: {"acronyms": {key: {written, long, papers}}, "about": {...}}."""
    forms: dict[str, Counter[tuple[str, ...]]] = {}
    shown: dict[tuple[str, ...], Counter[str]] = {}
    written: dict[str, Counter[str]] = {}
    read = 0
    for paper in papers:
        read += 1
        for acronym, long in spelled_out(paper.abstract).items():
            if any(c.isdigit() for c in acronym):
                continue  # 'A3C': its digit stands for letters the initials cannot show
            key = acronym.casefold()
            form = form_key(long)
            forms.setdefault(key, Counter())[form] += 1
            shown.setdefault(form, Counter())[long.casefold()] += 1
            written.setdefault(key, Counter())[acronym] += 1
    acronyms = {}
    for key in sorted(forms):
        counted = forms[key]
        total = sum(counted.values())
        best, n = counted.most_common(1)[0]
        if total < MIN_PAPERS or n / total < MIN_SHARE:
            continue
        acronyms[key] = {
            "written": written[key].most_common(1)[0][0],
            "long": shown[best].most_common(1)[0][0],
            "papers": n,
        }
    return {
        "about": {
            **(about or {}),
            "abstracts": read,
            "acronyms": len(acronyms),
            "min_papers": MIN_PAPERS,
            "min_share": MIN_SHARE,
        },
        "acronyms": acronyms,
    }


def write(glossary: dict[str, Any], path: Path) -> Path:
    """Write the glossary JSON (one acronym a line, so a diff reads)."""
    lines = ",\n".join(
        f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
        for k, v in glossary["acronyms"].items()
    )
    about = json.dumps(glossary["about"], ensure_ascii=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'{{\n  "about": {about},\n  "acronyms": {{\n{lines}\n  }}\n}}\n', encoding="utf-8"
    )
    return path
