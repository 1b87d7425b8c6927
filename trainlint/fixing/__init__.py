"""Fixing: minimal text edits per file kind, conflict handling, validation, atomic writes."""
