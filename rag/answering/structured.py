"""Structured answers: claims tied to the ids of the sentences that state them.

With RAG_LLM_STRUCTURED the endpoint is held to a JSON schema (OpenAI's and vLLM's
`json_schema`, llama.cpp's `json_object` with a schema): the reply is
`{"found": true, "claims": [{"text": "...", "evidence": ["2.3"]}]}`, where the evidence
ids can only be the sentences shown (`[2.3]` is sentence 3 of source 2: an enum in the
schema). The cited answer is written here: each claim, then the sources of its evidence
as `[n]`; a claim whose evidence sentences do not support it is flagged, as the citation
check does for free text (rag/answering/citations.py), and the judge weighs both paths alike.
"""

from __future__ import annotations

import json
from typing import Any

from rag.answering.citations import CITATION, CheckedAnswer, cited_numbers, supported
from rag.text import split_sentences
from rag.types import Source

MAX_CLAIMS = 4
MAX_EVIDENCE = 3
MAX_CLAIM_CHARS = 300
# Statuses with which an endpoint refuses a response format it does not know: the
# free-text prompt is used from then on. Other faults are faults (retried, or fallback).
REFUSED = frozenset({400, 404, 415, 422, 501})


def sentence_ids(sources: list[Source]) -> dict[str, str]:
    """'2.3' -> sentence 3 of source 2, as the structured prompt numbers them."""
    return {
        f"{source.n}.{k}": sentence
        for source in sources
        for k, sentence in enumerate(split_sentences(source.text), start=1)
    }


def schema(ids: list[str]) -> dict[str, Any]:
    """The JSON schema of a reply whose evidence can only be the sentences shown."""
    claim = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": MAX_CLAIM_CHARS},
            "evidence": {
                "type": "array",
                "items": {"type": "string", "enum": ids},
                "minItems": 1,
                "maxItems": MAX_EVIDENCE,
            },
        },
        "required": ["text", "evidence"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "found": {"type": "boolean"},
            "claims": {"type": "array", "items": claim, "maxItems": MAX_CLAIMS},
        },
        "required": ["found", "claims"],
        "additionalProperties": False,
    }


def response_format(kind: str, ids: list[str]) -> dict[str, Any]:
    """The `response_format` for `kind`: 'json_schema' (OpenAI, vLLM, llama-server) or
    'json_object' with the schema beside it (llama-cpp-python's server, llama-server)."""
    if kind == "json_object":
        return {"type": "json_object", "schema": schema(ids)}
    return {
        "type": "json_schema",
        "json_schema": {"name": "cited_answer", "schema": schema(ids), "strict": True},
    }


def parse(text: str, sentences: dict[str, str]) -> tuple[bool, list[tuple[str, list[str]]]] | None:
    """(found, [(claim, evidence ids)]) from a reply, keeping the ids that exist; None
    when the reply is not the JSON asked for (the schema was not enforced)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        return None
    claims = []
    for item in data["claims"][:MAX_CLAIMS]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            return None
        evidence = item.get("evidence")
        ids = (
            [i for i in evidence if isinstance(i, str) and i in sentences]
            if isinstance(evidence, list)
            else []
        )
        claim = " ".join(CITATION.sub("", item["text"]).split())
        if any(ch.isalnum() for ch in claim):  # ". " or "" states nothing
            claims.append((claim, list(dict.fromkeys(ids))[:MAX_EVIDENCE]))
    return bool(data.get("found", bool(claims))), claims


def assemble(claims: list[tuple[str, list[str]]], sentences: dict[str, str]) -> CheckedAnswer:
    """The cited answer: each claim with its sources' `[n]`; a claim with no evidence,
    or one its evidence sentences do not support, is flagged."""
    parts: list[str] = []
    unsupported: list[str] = []
    for claim, ids in claims:
        numbers = list(dict.fromkeys(int(i.split(".")[0]) for i in ids))
        cites = "".join(f"[{n}]" for n in numbers)
        sentence = f"{claim.rstrip(' .')}. {cites}".rstrip()
        parts.append(sentence)
        evidence = " ".join(sentences[i] for i in ids)
        if not ids or not supported(claim, evidence):
            unsupported.append(sentence)
    text = " ".join(parts)
    return CheckedAnswer(text, cited_numbers(text), [], unsupported)
