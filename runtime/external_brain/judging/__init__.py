"""The judged rules, one function each: duplicates and contradictions, claims, subjects, redaction."""
