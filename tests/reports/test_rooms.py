"""The rooms stay small: no module under bench/, datagen/ or reports/ over 700 lines, no function over 80 (the
project's standard; campaigns, results, the Spark engine, the view model and the charts are split to keep it)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "datagen", "reports")
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80


def too_large(root: Path) -> list[str]:
    """Every module over MAX_MODULE_LINES lines and every function (methods and nested ones too) over
    MAX_FUNCTION_LINES under `root`, as 'path: what (lines)'."""
    out = []
    for p in sorted(root.rglob("*.py")):
        text = p.read_text()
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            out.append(f"{p}: module ({n} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if (n := node.end_lineno - start + 1) > MAX_FUNCTION_LINES:
                    out.append(f"{p}:{node.lineno}: function {node.name} ({n} lines)")
    return out


def test_no_module_over_700_lines_no_function_over_80(tmp_path):
    assert [x for pkg in PACKAGES for x in too_large(ROOT / pkg)] == []
    # the check itself: a long module and a long function are caught
    (tmp_path / "big.py").write_text("def f():\n" + "    x = 1\n" * 90 + "\n" * 700)
    assert [line.split(": ", 1)[1] for line in too_large(tmp_path)] == ["module (791 lines)", "function f (91 lines)"]
