"""Lines of code, of docstrings and of comments per package folder, and prose's share of the
characters, so that a change's effect on them is measured, not guessed.

    python benchmarks/code_stats.py [--root grokverify] [--rev REV]
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def measure(source: str) -> dict[str, int]:
    """Line and character counts of one file: code, docstring, comment (blank lines apart)."""
    doc = _docstring_lines(ast.parse(source))
    comment_chars, comment_only = 0, set()
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comment_chars += len(tok.string)
            comment_only.add(tok.start[0])
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER) and tok.start[0] not in doc:
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    lines = source.splitlines()
    doc_chars = sum(len(lines[i - 1].strip()) for i in doc)
    total_chars = sum(len(ln.strip()) for ln in lines)
    return {"code": len(code_lines), "docstring": len(doc),
            "comment": len(comment_only - code_lines), "chars": total_chars,
            "prose_chars": doc_chars + comment_chars}


def files_at(root: str, rev: str | None) -> dict[str, str]:
    if rev is None:
        return {str(p.relative_to(REPO)): p.read_text() for p in (REPO / root).rglob("*.py")}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, root], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout for n in names if n.endswith(".py")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="grokverify")
    parser.add_argument("--rev", default=None, help="a git revision (default: the work tree)")
    args = parser.parse_args()
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    longest = (0, "")
    for name, source in sorted(files_at(args.root, args.rev).items()):
        parts = Path(name).parts
        folder = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
        counts = measure(source)
        for key, value in counts.items():
            totals[folder][key] += value
            totals["all"][key] += value
        tree = ast.parse(source)
        if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(
                getattr(tree.body[0], "value", None), ast.Constant):
            n = tree.body[0].end_lineno - tree.body[0].lineno + 1
            longest = max(longest, (n, name))
    print(f"{'package':<22} {'code':>6} {'docstr':>7} {'comment':>8} {'prose share':>12}")
    for folder, c in sorted(totals.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        share = c["prose_chars"] / max(c["chars"], 1)
        print(f"{folder:<22} {c['code']:>6} {c['docstring']:>7} {c['comment']:>8} "
              f"{share:>12.0%}")
    print(f"longest module docstring: {longest[0]} lines ({longest[1]})")


if __name__ == "__main__":
    main()
