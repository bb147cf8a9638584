"""Question sets: loading errors name file and line; gold snippets resolve to one paper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.metrics import Scope
from eval.questions import (
    QuestionError,
    abstracts_in_files,
    load_questions,
    parse_question,
    resolve_gold,
)
from rag.config import BUNDLED_CORPUS

QUESTIONS = Path(__file__).resolve().parents[1] / "eval" / "questions" / "iclr2026.jsonl"


def write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "set.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def test_only_id_and_question_are_required(tmp_path: Path) -> None:
    (q,) = load_questions(write(tmp_path, {"id": "a", "question": "What is X?"}))
    assert (q.kind, q.gold, q.answer_contains, q.answerable, q.line) == ("lookup", (), (), True, 1)


def test_unanswerable_defaults_to_not_answerable() -> None:
    q = parse_question(json.dumps({"id": "u", "question": "Q?", "kind": "unanswerable"}))
    assert q.answerable is False


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"question": "Q?"}), "`id`"),
        (json.dumps({"id": "a", "question": "  "}), "`question`"),
        (json.dumps({"id": "a", "question": "Q?", "kind": "trivia"}), "`kind`"),
        (json.dumps({"id": "a", "question": "Q?", "gold": "one snippet"}), "`gold`"),
        (json.dumps({"id": "a", "question": "Q?", "answerable": "yes"}), "`answerable`"),
        (json.dumps({"id": "a", "question": "Q?", "answer_contain": ["x"]}), "answer_contain"),
        (
            json.dumps({"id": "a", "question": "Q?", "kind": "unanswerable", "answerable": True}),
            "cannot have",
        ),
    ],
)
def test_bad_lines_are_reported_with_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, {"id": "ok", "question": "Fine?"}, "", line)
    with pytest.raises(QuestionError, match=message) as caught:
        load_questions(path)
    assert f"{path}:3:" in str(caught.value)


def test_repeated_ids_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"id": "a", "question": "Q1?"}, {"id": "a", "question": "Q2?"})
    with pytest.raises(QuestionError, match="repeats line 1"):
        load_questions(path)


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(QuestionError, match="no questions"):
        load_questions(write(tmp_path, ""))


ABSTRACTS = {
    "p1": "We propose  Group Tree\nOptimization for drafts.",
    "p2": "We study alternating gradient descent-ascent.",
    "p3": "We propose a kernel for graphs.",
}


def resolve(*gold: str) -> tuple[frozenset[str] | None, list[str]]:
    q = parse_question(json.dumps({"id": "q", "question": "Q?", "gold": list(gold)}))
    result = resolve_gold([q], ABSTRACTS)
    return result.ids["q"], [p.reason for p in result.problems]


def test_snippets_match_case_and_spacing_blind() -> None:
    assert resolve("group tree optimization") == (frozenset({"p1"}), [])
    assert resolve("GRADIENT  descent-ascent", "id:p3") == (frozenset({"p2", "p3"}), [])


def test_ambiguous_or_unknown_gold_leaves_the_question_unscored() -> None:
    ids, problems = resolve("group tree", "we propose")
    assert ids is None and problems == ["matches 2 papers (p1, p3…)"]
    ids, problems = resolve("a sentence no abstract has", "id:p9")
    assert ids is None and problems == ["matches no paper in the index"] * 2


def test_no_gold_means_not_scored_without_a_problem() -> None:
    assert resolve() == (None, [])


def test_a_count_is_scored_on_an_empty_gold_but_not_on_a_missing_one(tmp_path: Path) -> None:
    """An empty `gold` says no paper is about the topic; a count without `gold` ("how many
    papers are there": 52, no snippets) is answered and not scored."""
    none, unscored = load_questions(
        write(
            tmp_path,
            {"id": "a", "question": "how many papers on weather", "kind": "count", "gold": []},
            {"id": "b", "question": "how many papers are there", "kind": "count"},
        )
    )
    result = resolve_gold([none, unscored], ABSTRACTS)
    assert (result.ids["a"], result.ids["b"], result.problems) == (frozenset(), None, [])


@pytest.mark.parametrize("name", ["iclr2026.jsonl", "natural.jsonl", "test.jsonl"])
def test_the_shipped_sets_keep_dev_and_test_apart(name: str) -> None:
    """The test set is its own file, every line `split: test`; the sets tuned on are dev."""
    splits = {q.split for q in load_questions(Path("eval/questions") / name)}
    assert splits == ({"test"} if name == "test.jsonl" else {"dev"})


def test_the_shipped_test_set_resolves_against_the_seeds() -> None:
    questions = load_questions("eval/questions/test.jsonl")
    result = resolve_gold(questions, abstracts_in_files([BUNDLED_CORPUS]))
    assert [str(p) for p in result.problems] == []
    counts = [q for q in questions if q.kind == "count"]
    assert counts and all(len(result.ids[q.id] or ()) == len(q.gold) for q in counts)


def test_the_shipped_set_resolves_against_the_seeds() -> None:
    questions = load_questions(QUESTIONS)
    result = resolve_gold(questions, abstracts_in_files([BUNDLED_CORPUS]))
    assert [str(p) for p in result.problems] == []
    answerable = [q for q in questions if q.answerable]
    assert all(result.ids[q.id] for q in answerable)
    assert all(len(result.ids[q.id] or ()) == len(q.gold) for q in answerable)


# -- group, language, scope, follow_up_of ------------------------------------------------


def test_new_keys_default_sensibly() -> None:
    q = parse_question(json.dumps({"id": "a", "question": "Q?", "kind": "factual"}))
    assert (q.group, q.group_name, q.follow_up_of, q.scope, q.language) == (
        "factual",
        "factual",
        None,
        None,
        "en",
    )


def test_new_keys_are_read() -> None:
    q = parse_question(
        json.dumps(
            {
                "id": "a",
                "question": "Welche ICLR-2026-Arbeiten gibt es zu Graphen?",
                "group": " which-papers ",
                "scope": {"venue": "ICLR", "year": 2026, "status": "Poster"},
                "language": "DE",
            }
        )
    )
    assert q.group == q.group_name == "which-papers"
    assert q.scope == Scope(venue="ICLR", year=2026, status="Poster")
    assert q.scope.to_dict() == {"venue": "ICLR", "year": 2026, "status": "Poster"}
    assert q.language == "de"
    assert q.split == "dev"  # the default: questions the code may be tuned on
    assert (
        parse_question(json.dumps({"id": "b", "question": "Q?", "split": "test"})).split == "test"
    )


def test_a_partial_scope_leaves_the_rest_open() -> None:
    q = parse_question(json.dumps({"id": "a", "question": "Q?", "scope": {"year": 2026}}))
    assert q.scope == Scope(year=2026) and q.scope.to_dict() == {"year": 2026}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"group": ""}, "`group`"),
        ({"group": 3}, "`group`"),
        ({"follow_up_of": ["a"]}, "`follow_up_of`"),
        ({"scope": "ICLR 2026"}, "`scope` must be an object"),
        ({"scope": {}}, "`scope` must be an object"),
        ({"scope": {"conference": "ICLR"}}, "unknown `scope` key"),
        ({"scope": {"venue": ""}}, "`scope.venue`"),
        ({"scope": {"status": 1}}, "`scope.status`"),
        ({"scope": {"year": "2026"}}, "`scope.year`"),
        ({"scope": {"year": True}}, "`scope.year`"),
        ({"language": "english"}, "`language`"),
        ({"language": "e1"}, "`language`"),
        ({"language": None}, "`language`"),
        ({"split": "train"}, "`split`"),
    ],
)
def test_bad_new_keys_name_file_and_line(
    tmp_path: Path, extra: dict[str, object], message: str
) -> None:
    path = write(
        tmp_path, {"id": "ok", "question": "Fine?"}, {"id": "a", "question": "Q?", **extra}
    )
    with pytest.raises(QuestionError, match=message) as caught:
        load_questions(path)
    assert f"{path}:2:" in str(caught.value)


def test_follow_up_of_an_earlier_question_is_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"id": "a", "question": "Which paper proposes GTO?"},
        {"id": "b", "question": "What speedup does it report?", "follow_up_of": "a"},
        {"id": "c", "question": "And on which models?", "follow_up_of": "b"},
    )
    assert [q.follow_up_of for q in load_questions(path)] == [None, "a", "b"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [
                {"id": "b", "question": "What does it use?", "follow_up_of": "a"},
                {"id": "a", "question": "Which paper proposes GTO?"},
            ],
            r":1: `follow_up_of` 'a' names a later question \(line 2\)",
        ),
        (
            [{"id": "b", "question": "And it?", "follow_up_of": "zz"}],
            r":1: `follow_up_of` 'zz' names no question in this file",
        ),
        (
            [{"id": "b", "question": "And it?", "follow_up_of": "b"}],
            r":1: `follow_up_of` 'b' names the question itself",
        ),
    ],
)
def test_follow_up_of_must_name_an_earlier_question(
    tmp_path: Path, lines: list[dict[str, str]], message: str
) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(QuestionError, match=message) as caught:
        load_questions(path)
    assert str(caught.value).startswith(f"{path}:1:")
