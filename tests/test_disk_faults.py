"""A full or read-only index folder: a clear error naming the path, nothing stored lost.

Real file systems: tmpfs mounts made by the test (the suite runs as root here and in CI).
Each step runs `rag` in its own process, as a user would, so no Chroma client state
survives from the failed write into the recovery.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.config import BUNDLED_CORPUS

from .conftest import FIXTURES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting tmpfs needs root"),
]


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "mnt"
    point.mkdir()
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


def tmpfs(point: Path, options: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], check=True)


def rag(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAG_", "OPENAI_")) or k == "RAG_CACHE_DIR"  # the test's cache
    }
    return subprocess.run(
        [sys.executable, "-m", "rag.cli", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_full_disk_mid_ingest_loses_nothing(mount: Path) -> None:
    tmpfs(mount, "size=900k")  # the seeds need ~1.3 MB, records.csv ~0.4 MB
    index = mount / "index"
    first = rag("--index-dir", index, "ingest", "--json", FIXTURES / "records.csv")
    assert first.returncode == 0 and json.loads(first.stdout)["total_papers"] == 2
    full = rag("--index-dir", index, "ingest", BUNDLED_CORPUS)
    assert full.returncode == 2
    assert f"Error: cannot write to the index at {index}" in full.stderr
    assert "Traceback" not in full.stderr

    subprocess.run(["mount", "-o", "remount,size=64m", str(mount)], check=True)
    again = rag("--index-dir", index, "ingest", "--json", BUNDLED_CORPUS, FIXTURES / "records.csv")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["total_papers"] == 54  # the two earlier papers and all the seeds
    assert summary["papers_new"] + summary["papers_unchanged"] == 54
    stats = rag("--index-dir", index, "stats", "--json")
    assert json.loads(stats.stdout)["chunks"] == summary["total_chunks"]


def test_read_only_folder_is_a_clear_error(mount: Path) -> None:
    tmpfs(mount, "ro,size=1m")
    result = rag("--index-dir", mount / "index", "stats")
    assert result.returncode == 2
    assert f"cannot open the index folder {mount / 'index'}" in result.stderr
