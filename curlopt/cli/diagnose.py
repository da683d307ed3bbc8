"""PLACEHOLDER — the environments helper replaces this module (issue 5)."""
