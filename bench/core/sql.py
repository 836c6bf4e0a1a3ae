"""Quoting for the SQL the harness writes: standard SQL (DuckDB, SQLite) and Spark SQL.  The one place."""

from __future__ import annotations

from typing import Any


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


def spark_ident(name: str) -> str:
    """A Spark SQL identifier (backticks, doubled inside)."""
    return "`" + str(name).replace("`", "``") + "`"


def spark_idents(*parts: str) -> str:
    """A qualified Spark SQL name, each part quoted: spark_idents("cat", "ns", "t") -> '`cat`.`ns`.`t`'."""
    return ".".join(spark_ident(p) for p in parts)


def spark_literal(value: Any) -> str:
    """A Spark SQL string literal (backslash escapes) of a scalar; booleans as 'true'/'false'."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    if not isinstance(value, (str, int, float)):
        raise ValueError(f"only scalars can be Spark SQL literals, got {value!r}")
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
