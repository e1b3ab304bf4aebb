"""Optional integrations with other frameworks (each behind its own extra)."""
