"""Questions over many papers: counts, comparison tables and topics."""
