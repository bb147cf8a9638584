"""The one base class of the failures a user can cause or mend.

Every expected failure (a bad input file, an index that cannot be opened or written, an
ingest already running, an embeddings or chat endpoint that fails, a malformed question
set) is a `RagError` whose message names the file, record, path or URL. The CLI prints it
as one line and exits 2, the app shows it as a message, eval stops with it; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations


class RagError(Exception):
    """An expected failure; its message says what and where."""


EXPECTED = (RagError, ValueError, OSError)  # what the CLI, the app and eval report as a line
