"""`rag app`: the Streamlit app, registered with the `rag` command as a plugin
(entry point `rag.commands`), so the core CLI never imports the UI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click


@click.command("app")
@click.option("--port", type=int, default=8501, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
def app_cmd(port: int, host: str) -> None:
    """Open the Streamlit chat app (builds the bundled index on first start)."""
    app = Path(__file__).parent / "app.py"
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--browser.gatherUsageStats",
        "false",
    ]
    raise SystemExit(subprocess.call(command))
