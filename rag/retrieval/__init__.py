"""Query -> ranked papers: hybrid dense + BM25 retrieval, spelling, related papers."""
