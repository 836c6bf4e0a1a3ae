"""Prerequisites: one thing a part of the harness needs, checked without side effects.
`bench doctor` lists every failed one at once, each with its fix."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass
class Requirement:
    name: str
    ok: bool
    detail: str = ""
    fix: str = ""

    def line(self) -> str:
        """One line for an error message."""
        return f"{self.name} ({self.detail}) -> {self.fix}" if self.fix else f"{self.name} ({self.detail})"


def module_requirement(module: str, fix: str) -> Requirement:
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    return Requirement(f"python module {module}", found, "" if found else "not importable", "" if found else fix)
