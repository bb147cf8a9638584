"""Optional LLM judge: faithfulness and answer relevance of each answer, from 0 to 1.

Off by default (`rag eval run --judge`); it needs an OpenAI-compatible endpoint and
goes through `rag.llm.ChatClient`, so it has the same retries and deadline as answering.
The model grades 1-5 (prompts in eval/prompts.py); a grade g is reported as (g - 1) / 4,
so 5 -> 1.0 and 3 -> 0.5. Abstentions make no claim and are not judged. A judge fault
or an unreadable reply leaves that question's scores None with the reason; it never
stops a run.

Left out on purpose: judging retrieval (the gold-based metrics do that), and any claim
that the judge is right. A model grading its own answers is lenient; `--judge-model`
names another one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from eval import prompts
from rag.config import Settings
from rag.llm import ChatClient, LLMError

GRADES = ("faithfulness", "answer_relevance")
_OBJECT = re.compile(r"\{.*\}", re.S)


class Judge:
    """Grades answers with a chat model at temperature 0."""

    def __init__(self, settings: Settings, model: str | None = None) -> None:
        if not settings.base_url:
            raise ValueError("the judge needs an endpoint: set OPENAI_BASE_URL (and a model)")
        update: dict[str, Any] = {"temperature": 0.0}
        if model:
            update["llm_model"] = model
        judged = settings.model_copy(update=update)
        self.model = judged.llm_model
        self.client = ChatClient(judged)

    def score(self, question: str, answer: Mapping[str, Any]) -> dict[str, Any]:
        """{"faithfulness": 0.75, "answer_relevance": 1.0, "reason": ...} for one answer."""
        if answer["abstained"]:
            return {"skipped": "abstained"}
        try:
            reply = self.client.complete(messages(question, answer), max_tokens=200)
        except LLMError as exc:
            return {"error": str(exc)}
        return parse_grades(reply.text)


def messages(question: str, answer: Mapping[str, Any]) -> list[dict[str, str]]:
    """The judge's chat messages: the question, the answer and the sources it cites."""
    sources = [s for s in answer["sources"] if s["cited"]] or answer["sources"]
    blocks = "\n\n".join(
        prompts.JUDGE_SOURCE.format(n=s["n"], text=s["text"].replace("</source>", "</ source>"))
        for s in sources
    )
    user = prompts.JUDGE.format(question=question, answer=answer["answer"], sources=blocks)
    return [
        {"role": "system", "content": prompts.JUDGE_SYSTEM},
        {"role": "user", "content": user},
    ]


def parse_grades(text: str) -> dict[str, Any]:
    """Read the grades: '{"faithfulness": 5, "answer_relevance": 3}' -> 1.0 and 0.5."""
    found = _OBJECT.search(text)
    try:
        data = json.loads(found.group(0)) if found else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return {"error": f"unreadable judge reply: {text[:80]!r}"}
    result: dict[str, Any] = {}
    for name in GRADES:
        grade = data.get(name)
        if isinstance(grade, int | float) and not isinstance(grade, bool) and 1 <= grade <= 5:
            result[name] = round((grade - 1) / 4, 4)
        else:
            result[name] = None
            result["error"] = f"no 1-5 grade for {name} in the judge reply"
    if isinstance(data.get("reason"), str):
        result["reason"] = data["reason"][:300]
    return result
