"""Loaders: every format on small fixtures and on the real seeds; bad records say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import BUNDLED_CORPUS
from rag.corpus.load import InputError, Record, expand_paths, read_records, venue_year
from rag.corpus.papers import FieldMap, dedupe, derive_label, paper_from_record
from rag.ingest import read_papers
from rag.types import IngestSummary, Paper, Skip

from .conftest import FIXTURES, SHARED


def load(path: Path, fields: FieldMap | None = None) -> list[Paper | Skip]:
    out: list[Paper | Skip] = []
    for item in read_records(path):
        out.append(
            item if isinstance(item, Skip) else paper_from_record(item, fields or FieldMap())
        )
    return out


def papers(items: list[Paper | Skip]) -> list[Paper]:
    return [i for i in items if isinstance(i, Paper)]


def skips(items: list[Paper | Skip]) -> list[Skip]:
    return [i for i in items if isinstance(i, Skip)]


def test_plain_list_reads_header_venue_and_one_abstract_per_line() -> None:
    items = load(FIXTURES / "list_iclr.txt")
    assert len(papers(items)) == 3 and not skips(items)
    first = papers(items)[0]
    assert (first.venue, first.year) == ("ICLR", 2025)
    assert first.title is None and first.label_is_derived
    assert first.label == "FlashWidget: a method that accelerates widget rendering in transformers"
    assert first.sources == [f"{FIXTURES / 'list_iclr.txt'}:3"]


def test_paper_copilot_json_keeps_good_records_and_explains_bad_ones() -> None:
    items = load(FIXTURES / "copilot.json")
    good = {p.paper_id: p for p in papers(items)}
    assert set(good) == {"AbCdEfGh12", "MnBvCxZa78"}
    robust = good["AbCdEfGh12"]
    assert robust.title == "Robust Widgets for Everyone" and not robust.label_is_derived
    assert robust.authors == ("Ada Lovelace", "Alan Turing")
    assert robust.keywords == ("robustness", "widgets")
    assert (robust.area, robust.status) == ("robustness", "Poster")
    assert robust.site == "https://openreview.net/forum?id=AbCdEfGh12"
    reasons = {s.position: s.reason for s in skips(items)}
    assert reasons[2].startswith("placeholder abstract")
    assert reasons[3] == "no abstract field"
    assert "expected an object" in reasons[4]
    assert "not text" in reasons[5]


def test_openreview_v2_notes_are_flattened() -> None:
    [paper] = papers(load(FIXTURES / "openreview_v2.json"))
    assert paper.paper_id == "orV2abcd01"
    assert paper.title == "Tokens That Matter"
    assert (paper.venue, paper.year) == ("ICLR", 2026)
    assert paper.keywords == ("token pruning", "VLM")


def test_jsonl_with_custom_field_names_and_bad_lines() -> None:
    items = load(FIXTURES / "records.jsonl", FieldMap.with_overrides({"abstract": "summary"}))
    found = papers(items)
    assert [p.title for p in found] == ["Kernel Tricks Revisited", "Diffusion for Tables"]
    assert found[0].paper_id == "records/p-1"  # bare ids are namespaced by their file
    assert (found[1].venue, found[1].year) == ("ICML", 2023)
    assert [(s.position, s.reason.split(":")[0]) for s in skips(items)] == [
        (2, "invalid JSON"),
        (5, "expected an object, found list"),
    ]


def test_csv_rows_and_empty_abstract() -> None:
    items = load(FIXTURES / "records.csv")
    assert [p.title for p in papers(items)] == [
        "Graph Rewiring, Simply",
        "Quantile Regression Forests at Scale",
    ]
    assert papers(items)[0].authors == ("Ann Smith", "Bo Li")
    assert [(s.position, s.reason) for s in skips(items)] == [(3, "no abstract field")]


def test_unknown_field_override_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown field 'abstrct'"):
        FieldMap.with_overrides({"abstrct": "summary"})


def test_bundled_seeds_give_52_distinct_papers_from_57_lines() -> None:
    summary = IngestSummary()
    found = list(read_papers(expand_paths([BUNDLED_CORPUS]), FieldMap(), summary))
    assert summary.records == 57 and summary.duplicates_merged == 5
    assert len(papers(found)) == 52 and not skips(found)
    twice = [p for p in papers(found) if len(p.sources) == 2]
    assert len(twice) == 5  # the repeated abstracts remember both files
    assert all(p.venue == "ICLR" and p.year == 2026 for p in papers(found))
    assert len({p.paper_id for p in papers(found)}) == 52


@pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="../shared is not present")
def test_shared_seeds_match_the_bundled_copy() -> None:
    bundled = sorted(p.read_text("utf-8") for p in BUNDLED_CORPUS.glob("*.txt"))
    shared = sorted(p.read_text("utf-8") for p in (SHARED / "seeds").glob("*.txt"))
    assert bundled == shared


@pytest.mark.skipif(not (SHARED / "corpora").is_dir(), reason="../shared is not present")
def test_raw_paperlists_file_ignores_unused_fields() -> None:
    items = load(SHARED / "corpora" / "paperlists-raw" / "iclr2018.json")
    found = papers(items)
    assert len(found) > 900
    assert all(p.site and "/" not in p.paper_id for p in found)  # OpenReview ids kept as-is
    assert all(s.reason.startswith("placeholder") for s in skips(items))


def test_ids_are_stable_and_hash_ids_follow_the_text() -> None:
    a = papers(load(FIXTURES / "list_iclr.txt"))
    b = papers(load(FIXTURES / "list_iclr.txt"))
    assert [p.paper_id for p in a] == [p.paper_id for p in b]
    assert a[0].paper_id == a[2].paper_id != a[1].paper_id
    assert a[0].paper_id.startswith("a-")


def test_dedupe_merges_sources_and_rejects_conflicting_ids() -> None:
    def record(pos: int, ident: str, text: str) -> Paper | Skip:
        fields = {"id": ident, "abstract": text}
        return paper_from_record(Record("f.jsonl", pos, fields, "f"), FieldMap())

    text = "We study widget alignment in large models and show a simple fix works well."
    other = "An entirely different abstract about graph rewiring with effective resistance."
    merged: list[int] = []
    out = list(
        dedupe([record(1, "x1", text), record(2, "x1", text), record(3, "x1", other)], merged)
    )
    assert len(papers(out)) == 1 and papers(out)[0].sources == ["f.jsonl:1", "f.jsonl:2"]
    [conflict] = skips(out)
    assert conflict.position == 3 and "different abstract" in conflict.reason
    assert merged == [1]


def test_expand_paths_folders_globs_and_missing() -> None:
    found = expand_paths([FIXTURES, str(FIXTURES / "*.csv")])
    assert len(found) == len(set(found)) == 6  # folders are walked recursively (llm/)
    assert FIXTURES / "llm" / "injection.jsonl" in found
    with pytest.raises(InputError, match="no such file"):
        expand_paths([FIXTURES / "missing.json"])


def test_binary_and_odd_encodings(tmp_path: Path) -> None:
    binary = tmp_path / "data.json"
    binary.write_bytes(b"\x00\x01\x02garbage\x00" * 50)
    [skip] = list(read_records(binary))
    assert isinstance(skip, Skip) and skip.position == 0 and "binary" in skip.reason
    text = "Header 2024\nCaf\u00e9 models learn na\u00efve widgets with twelve more words here.\n"
    for encoding, prefix in (("utf-16", b""), ("latin-1", b""), ("utf-8", b"\xef\xbb\xbf")):
        path = tmp_path / f"list-{encoding}.txt"
        path.write_bytes(prefix + text.encode(encoding))
        [paper] = papers(load(path))
        assert paper.abstract.startswith("Café models learn naïve"), encoding


def test_markup_and_control_characters_are_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "noisy.jsonl"
    path.write_text(
        '{"abstract": "We <b>boldly</b> show &amp; prove\\u0007 that widgets   align '
        'with eight more words in total here."}\n',
        "utf-8",
    )
    [paper] = papers(load(path))
    assert paper.abstract == (
        "We boldly show & prove that widgets align with eight more words in total here."
    )


def test_venue_year_and_labels() -> None:
    assert venue_year("ICLR 2026 论文列表") == ("ICLR", 2026)
    assert venue_year("nips2017") == ("NIPS", 2017)
    assert venue_year("no year here") == (None, None)
    assert derive_label("We present Group-Normalized Value Optimization (GN-VO), a method.") == (
        "GN-VO: Group-Normalized Value Optimization"
    )
    # A term defined before the contribution is not the paper's name (tests/test_labels.py).
    assert derive_label(
        "Singular Value Decomposition (SVD) is slow. We propose a cheap SVD substitute."
    ).startswith("Cheap SVD substitute")
