"""Readers: one per file kind. Each turns text into a tree that knows where every piece is written."""
