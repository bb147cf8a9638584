"""Fuzzing the loaders: whatever the bytes, a loader yields papers or precise skips and
never raises; good records survive next to bad ones; huge inputs stay bounded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.corpus.load import read_records
from rag.corpus.papers import MAX_ABSTRACT_CHARS, FieldMap, paper_from_record
from rag.types import Paper, Skip

GOOD = (
    "We propose a simple method for widget alignment and show that it improves accuracy "
    "on three benchmarks by a wide margin."
)
SUFFIXES = [".json", ".jsonl", ".csv", ".txt", ".tsv"]
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def load(path: Path) -> list[Paper | Skip]:
    out: list[Paper | Skip] = []
    for item in read_records(path):
        out.append(item if isinstance(item, Skip) else paper_from_record(item, FieldMap()))
    return out


def assert_well_formed(items: list[Paper | Skip], path: Path) -> None:
    for item in items:
        if isinstance(item, Skip):
            assert item.file == str(path) and item.reason and item.position >= 0
        else:
            assert len(item.abstract.split()) >= 8 and item.paper_id
            assert "\x00" not in item.abstract and len(item.abstract) <= MAX_ABSTRACT_CHARS


@FUZZ
@given(data=st.binary(max_size=4000), suffix=st.sampled_from(SUFFIXES))
def test_random_bytes_never_crash_a_loader(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    assert_well_formed(load(path), path)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=60),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@FUZZ
@given(
    records=st.lists(
        st.dictionaries(
            st.sampled_from(["id", "title", "abstract", "author", "keywords", "year", "site", "x"]),
            JSON_VALUES,
            max_size=6,
        ),
        max_size=8,
    )
)
def test_records_with_wrong_types_are_skipped_and_good_ones_kept(
    tmp_path: Path, records: list[dict[str, object]]
) -> None:
    good = {
        "id": "GoodPaper1",
        "title": "Good",
        "abstract": GOOD,
        "site": "https://openreview.net/forum?id=GoodPaper1",
    }
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps([*records, good]), "utf-8")
    items = load(path)
    assert_well_formed(items, path)
    assert any(isinstance(i, Paper) and i.paper_id == "GoodPaper1" for i in items)
    assert len(items) == len(records) + 1  # every record is accounted for


@FUZZ
@given(noise=st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_control_characters_markup_and_latex_are_cleaned(tmp_path: Path, noise: str) -> None:
    path = tmp_path / "noisy.jsonl"
    abstract = f"<p>{noise}</p> $\\mathcal{{O}}(n^2)$ **bold** &lt;tag&gt; {GOOD}"
    path.write_text(json.dumps({"abstract": abstract}) + "\n", "utf-8")
    [paper] = load(path)
    assert isinstance(paper, Paper)
    assert not any(ord(c) < 32 for c in paper.abstract)
    assert "<p>" not in paper.abstract and GOOD in paper.abstract


def test_truncated_json_is_rejected_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps([{"abstract": GOOD}] * 3)[:-40], "utf-8")
    [skip] = load(path)
    assert isinstance(skip, Skip) and skip.position == 0 and "invalid JSON at line 1" in skip.reason


def test_huge_abstract_is_cut_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps({"abstract": GOOD + " word" * 2_000_000}) + "\n", "utf-8")
    [paper] = load(path)
    assert isinstance(paper, Paper) and len(paper.abstract) == MAX_ABSTRACT_CHARS


@pytest.mark.slow
def test_200k_line_file_streams_through(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    lines = [f"{GOOD} Variant {i}." for i in range(200_000)]
    path.write_text("ICLR 2026 Papers\n" + "\n".join(lines), "utf-8")
    count = sum(1 for item in load(path) if isinstance(item, Paper))
    assert count == 200_000
