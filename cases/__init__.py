"""Bundled case files (TOML), installed as ``derive.cases``; see ``derive cases``."""
