"""The small typed values with one parse and one format: source places and chunk ids."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from rag.types import Notice, SourceRef, chunk_id, split_chunk_id

paths = st.text(min_size=1, max_size=40).filter(lambda p: not p.endswith(":"))


@given(paths, st.integers(min_value=0, max_value=10**7))
def test_source_refs_round_trip(path: str, position: int) -> None:
    ref = SourceRef(path, position)
    assert SourceRef.parse(str(ref)) == ref


def test_a_path_without_a_position() -> None:
    assert SourceRef.parse("data/list.txt") == SourceRef("data/list.txt", 0)
    assert SourceRef.parse("C:/x/list.txt:12") == SourceRef("C:/x/list.txt", 12)


@given(st.text(min_size=1, max_size=40), st.integers(min_value=0, max_value=10**4))
def test_chunk_ids_round_trip(paper_id: str, index: int) -> None:
    assert split_chunk_id(chunk_id(paper_id, index)) == (paper_id, index)


def test_notices_are_strings_with_a_code_and_a_level() -> None:
    notice = Notice("scope", "scope: ICLR 2026")
    assert notice == "scope: ICLR 2026" and (notice.code, notice.level) == ("scope", "info")
    again = pickle.loads(pickle.dumps(notice))
    assert (again, again.code, again.level) == (notice, "scope", "info")
    assert Notice("abstained", "abstained: x").level == "warning"
