"""Files -> papers -> chunks: loading, merging duplicates, labels, titles, chunks."""
