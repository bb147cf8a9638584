"""A full or read-only index folder: a clear error naming the path, nothing stored lost.

Real file systems: tmpfs mounts made by the test (the suite runs as root here and in CI).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.assistant import Assistant
from rag.config import BUNDLED_CORPUS
from rag.embed import LocalEmbedder
from rag.index import StoreError

from .conftest import FIXTURES, make_settings

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root")


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "mnt"
    point.mkdir()
    yield point
    subprocess.run(["umount", str(point)], check=False)


def tmpfs(point: Path, options: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], check=True)


def test_full_disk_mid_ingest_loses_nothing(mount: Path, embedder: LocalEmbedder) -> None:
    tmpfs(mount, "size=1500k")
    settings = make_settings(mount / "index")
    assistant = Assistant(settings, embedder)
    assert assistant.ingest([FIXTURES / "records.csv"]).total_papers == 2
    with pytest.raises(StoreError, match=f"at {mount / 'index'}"):
        Assistant(settings, embedder).ingest([BUNDLED_CORPUS])

    subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
    again = Assistant(settings, embedder)
    summary = again.ingest([BUNDLED_CORPUS, FIXTURES / "records.csv"])
    assert summary.total_papers == 54  # the two earlier papers and all the seeds
    catalog = again.store.load_catalog()
    assert again.store.count() == catalog.n_chunks == summary.total_chunks
    assert len(set(catalog.ids)) == len(catalog.ids)
    assert all(sp.complete for sp in catalog.papers.values())


def test_read_only_folder_is_a_clear_error(mount: Path, embedder: LocalEmbedder) -> None:
    tmpfs(mount, "ro,size=1m")
    with pytest.raises(StoreError, match=f"cannot open the index folder {mount / 'index'}"):
        Assistant(make_settings(mount / "index"), embedder)
