"""A typed question -> a Query: intent, scope, terms, follow-ups, language, translation."""
