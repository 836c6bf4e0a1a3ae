"""Quoting for the standard SQL the harness writes (DuckDB, SQLite).  The one place."""

from __future__ import annotations


def literal(text: str) -> str:
    """A standard SQL string literal (DuckDB, SQLite): quotes doubled."""
    return "'" + str(text).replace("'", "''") + "'"


def ident(name: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def idents(names: list[str] | tuple[str, ...], prefix: str = "") -> str:
    """Comma-separated identifiers, each optionally qualified: idents(["a"], "t") -> 't."a"'."""
    p = f"{prefix}." if prefix else ""
    return ", ".join(p + ident(n) for n in names)


def string_list(items: list[str]) -> str:
    """A DuckDB list literal of strings: ['a', 'b']."""
    return "[" + ", ".join(literal(i) for i in items) + "]"
