"""The rooms hold whole concepts: no function under bench/, datagen/ or reports/ over 80 lines (the project's
standard); a module is as long as the one concept it holds, with no line cap of its own."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "datagen", "reports")
MAX_FUNCTION_LINES = 80


def too_long(root: Path) -> list[str]:
    """Every function (methods and nested ones too) over MAX_FUNCTION_LINES under `root`, as
    'path:line: function name (lines)'."""
    out = []
    for p in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (n := node.end_lineno - start + 1) > MAX_FUNCTION_LINES:
                    out.append(f"{p}:{node.lineno}: function {node.name} ({n} lines)")
    return out


def test_no_function_over_80_lines(tmp_path):
    assert [x for pkg in PACKAGES for x in too_long(ROOT / pkg)] == []
    # the check itself: a long function is caught, a long module of short functions is not
    (tmp_path / "big.py").write_text("def f():\n" + "    x = 1\n" * 90 + "\n" * 700 + "def g():\n    pass\n" * 200)
    assert [line.split(": ", 1)[1] for line in too_long(tmp_path)] == ["function f (91 lines)"]
