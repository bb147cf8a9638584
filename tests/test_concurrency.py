"""Load: concurrent questions on one assistant are all answered, none mixed up."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from eval.bench import QUESTIONS
from eval.peer import percentile
from rag.assistant import Assistant


def test_sixteen_concurrent_questions_match_their_sequential_answers(
    fake_seeded: Assistant,
) -> None:
    questions = (QUESTIONS * 2)[:16]
    expected = {q: [s.paper_id for s in fake_seeded.ask(q).sources] for q in set(questions)}
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(fake_seeded.ask, questions))
    assert [a.question for a in answers] == questions
    for answer in answers:
        assert [s.paper_id for s in answer.sources] == expected[answer.question]
        assert answer.answer.strip()
    totals = [a.timings_ms["total"] for a in answers]
    print(
        f"16 concurrent questions: p50 {percentile(totals, 50)} ms, p95 {percentile(totals, 95)} ms"
    )
