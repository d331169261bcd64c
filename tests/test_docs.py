"""The documents: docs/claims.md is what the schema generates, README.md stays short with its
set-up commands and an example claim that loads, and the paths, modules and sections the
documents and the code point to exist."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from grokverify.claim.load import load_claim
from grokverify.cli import main
from grokverify.report.fields import KIND_SECTIONS, REGENERATE, markdown

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
CLAIMS_MD = REPO / "docs" / "claims.md"
# documents whose paths and modules must exist (extending.md names the files it creates; the
# mutation report names the modules of the commit it was made at)
DOCUMENTS = [README, REPO / "benchmarks" / "README.md", REPO / "claims" / "README.md",
             *(p for p in sorted((REPO / "docs").glob("*.md"))
               if p.name not in ("extending.md", "mutation-report.md"))]
SET_UP = ("pip install torch==2.13.0 -e '.[dev]'", "grokverify run claims/skeptic_sgd.yaml",
          "pytest -q")


def test_the_claim_reference_is_what_the_schema_generates() -> None:
    assert CLAIMS_MD.read_text() == markdown(), f"docs/claims.md is stale: run `{REGENERATE}`"


def test_grokverify_schema_prints_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--format", "markdown"]) == 0
    assert capsys.readouterr().out == markdown()


def _section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = heading.split()[0]
    body = text.split(f"\n{heading}\n", 1)[1]
    return re.split(rf"\n#{{1,{len(level)}}} ", body, maxsplit=1)[0]


def test_the_reference_shows_every_registered_name_with_its_fields() -> None:
    text = markdown()
    for title, kind, named_by in KIND_SECTIONS:
        names = [n for n in kind if kind.plugin_of(n) is None]  # a plugin documents its own
        assert names and f"`{named_by}`: one of {', '.join(f'`{n}`' for n in names)} (and " \
            "the kinds of installed plugins: `grokverify plugins`)." in text
        for name in names:
            section = _section(text, f"### `{name}`")
            assert f"Implementation: `{kind.path(name)}`." in section, (title, name)
            for field in getattr(kind[name], "model_fields", {}):
                assert (f"| `{field}` |" in section) == (field != kind.tag), (name, field)


def test_the_reference_gives_types_bounds_defaults_and_what_a_kind_records() -> None:
    text = markdown()
    task = _section(text, "## TaskSpec")
    assert "| `p` | int (≥ 2, ≤ 10000) | required |" in task
    assert "| `skew` | number (> 0, ≤ 100) | `3.0` |" in task
    assert "| `split_seed` | int (≥ 0, ≤ 4294967295) \\| null | `null` |" in task
    assert "| `eps` | number (> 0) | `1e-08` |" in _section(text, "## OptimizerSpec")
    claim = _section(text, "## Claim")
    assert "| `id` | string (matching `^[a-z0-9][a-z0-9_-]{0,63}$`) | required |" in claim
    assert "| `metric` | [metric](#metrics) | required |" in claim
    assert "| `probes` | list of [probe](#probes) | `[]` |" in _section(text, "## ExperimentSpec")
    sigma = _section(text, "### `sigma_max`")
    assert "curves at its defaults: sigma_max.E, sigma_max.W." in sigma
    assert '| `of` | list of `"E"` \\| `"W"` (at least 1) | `["E", "W"]` |' in sigma
    survival = _section(text, "### `survival_compare`")
    assert "Takes time metrics." in survival
    assert "| `n_boot` | int (≥ 100, ≤ 100000) | `2000` |" in survival
    assert "Kind: value." in _section(text, "### `curve_at`")
    assert "Works on operand pairs; needs roles: E." in _section(text, "### `freeze_embeddings`")
    assert "Reads images; roles: W (the first weight matrix)." in _section(text, "### `image_mlp`")
    # models a field names get their own section once (an intervention's condition)
    assert text.count("\n### Condition\n") == 1 and "[Condition](#condition)" in text


def test_the_readme_is_short_and_keeps_the_set_up_commands_ci_runs() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200
    for command in SET_UP:
        assert any(line.startswith(command + " ") for line in lines), command
    ci = (REPO / ".ci" / "run").read_text()
    assert "torch==2.13.0 -e '.[dev]'" in ci and "\npytest -q\n" in ci


def test_the_readme_example_claim_loads(tmp_path: Path) -> None:
    [block] = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    path = tmp_path / "example.yaml"
    path.write_text(block)
    loaded = load_claim(path)
    assert list(loaded.claim.arms) == ["adam", "adam_lr"]
    assert loaded.claim.criterion.name == "survival_compare"


_PATH = re.compile(r"(?<![\w./-])((?:grokverify|tests|benchmarks|runners|claims|docs|reports)"
                   r"/[\w./-]*[\w/])")
_MODULE = re.compile(r"(?<![\w./-])(grokverify(?:\.[A-Za-z_]\w*)+)")
_TEST = re.compile(r"(tests/[\w/]+\.py)::(\w+)")


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_the_paths_and_modules_a_document_names_exist(doc: Path) -> None:
    text = doc.read_text()
    missing = [p for p in _PATH.findall(text) if not (REPO / p.rstrip(".")).exists()]
    missing += [f"{path}::{name}" for path, name in _TEST.findall(text)
                if (REPO / path).is_file() and f"def {name}(" not in (REPO / path).read_text()]
    assert not missing, f"{doc.name} names files or tests that do not exist: {missing}"
    for dotted in sorted(set(_MODULE.findall(text))):
        parts = dotted.split(".")
        found = next(i for i in range(len(parts), 0, -1)
                     if REPO.joinpath(*parts[:i]).with_suffix(".py").is_file()
                     or REPO.joinpath(*parts[:i], "__init__.py").is_file())
        obj = importlib.import_module(".".join(parts[:found]))
        for attribute in parts[found:]:
            assert hasattr(obj, attribute), f"{doc.name} names {dotted}: no {attribute}"
            obj = getattr(obj, attribute)


_SECTION_REF = re.compile(r"((?:docs/[\w-]+|benchmarks/README|README)\.md),\s+\"([^\"]+)\"")
_SOURCES = ["grokverify/**/*.py", "runners/*", "benchmarks/*", "tests/*.py", "docs/*.md",
            "README.md"]


def test_every_section_a_file_points_to_exists() -> None:
    """`(docs/store.md, "Locks")`: a heading, or a bold paragraph lead, of that document."""
    dangling = []
    for pattern in _SOURCES:
        for source in sorted(REPO.glob(pattern)):
            if not source.is_file() or source.name == "mutation-report.md":
                continue
            for doc, section in _SECTION_REF.findall(source.read_text()):
                target = (REPO / doc).read_text()
                plain = " ".join(re.sub(r"\n\s*#", " ", section).replace("`", "").split())
                leads = re.findall(r"^#+ (.+)$|^\*\*([^*]+)\*\*", target, re.M)
                if not any((h or b).replace("`", "").startswith(plain) for h, b in leads):
                    dangling.append(f"{source.relative_to(REPO)}: {doc}, {section!r}")
    assert not dangling, dangling
