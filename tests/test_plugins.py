"""Plugins (docs/extending.md, "Plugins"): an installed package registers kinds through the
entry-point group; a claim requires it by name; a missing, broken or undeclared one is refused
at load; its results version is in the store key of each record that uses it, and in no other.

A plugin changes the process's registries, so most tests install a copy of the example plugin
(plugins/example) under another name into a temporary folder and look from a fresh process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import SpecError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "plugins" / "example"
EXAMPLE_CLAIM = EXAMPLE / "claims" / "quad_mlp_groks.yaml"


def _fake(site: Path, results: str = "1", api: int = 1) -> Path:
    """The example plugin copied as distribution `gv-fake` (module gv_fake, kinds fake_quad and
    fake_rms) into `site`, with its results version and plugin API set; a claim using it."""
    package = site / "gv_fake"
    shutil.copytree(EXAMPLE / "grokverify_example", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in package.glob("*.py"):
        text = (path.read_text().replace("grokverify_example", "gv_fake")
                .replace("quad_mlp", "fake_quad").replace("param_rms", "fake_rms"))
        text = text.replace('RESULTS_VERSION = "1"', f'RESULTS_VERSION = "{results}"')
        path.write_text(text.replace("GROKVERIFY_PLUGIN_API = 1", f"GROKVERIFY_PLUGIN_API = {api}"))
    info = site / "gv_fake-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gv-fake\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[grokverify.plugins]\ngv-fake = gv_fake\n")
    claim = site / "fake_claim.yaml"
    claim.write_text(EXAMPLE_CLAIM.read_text().replace("grokverify-example", "gv-fake")
                     .replace("quad_mlp", "fake_quad").replace("param_rms", "fake_rms"))
    return claim


_PROBE = """
import json, sys
from grokverify.claim.load import load_claim
from grokverify.kinds import plugins
from grokverify.store import record_key
out = {"plugins": {n: [p.results_version, list(p.kinds), p.error] for n, p in plugins().items()}}
for path in sys.argv[1:]:
    loaded = load_claim(path)
    exp = next(e for *_, e in loaded.experiments(["quick"]))
    out[path] = record_key(exp, 0, "cpu")
print(json.dumps(out))
"""


def _look(site: Path | None, *claims: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        ([str(site)] if site else []) + [os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _PROBE, *map(str, claims)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "grokverify.cli", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_plugins_kinds_load_and_its_version_keys_only_its_records(tmp_path: Path) -> None:
    tiny = ROOT / "tests" / "fixtures" / "tiny_claim.yaml"
    one, two = tmp_path / "v1", tmp_path / "v2"
    claim1, claim2 = _fake(one, results="1"), _fake(two, results="2")
    seen1, seen2 = _look(one, claim1, tiny), _look(two, claim2, tiny)
    assert seen1["plugins"]["gv-fake"] == ["1", ["model kind fake_quad", "probe fake_rms"], None]
    assert seen1[str(claim1)] != seen2[str(claim2)]  # a new results version: a new key
    assert seen1[str(tiny)] == seen2[str(tiny)] == _look(None, tiny)[str(tiny)]


def test_an_incompatible_plugin_is_refused_with_what_to_install(tmp_path: Path) -> None:
    claim = _fake(tmp_path, api=99)
    done = _cli(tmp_path, "validate", str(claim))
    assert done.returncode == 2
    assert f"{claim}:3: requires[0]: plugin 'gv-fake' cannot be used: written for plugin API " \
           "99" in done.stderr + done.stdout
    assert "install a release of gv-fake" in done.stderr + done.stdout
    listed = _cli(tmp_path, "plugins")
    assert listed.returncode == 1 and "gv-fake (gv-fake 0.1.0): cannot be used" in listed.stdout


def test_a_claim_must_require_the_plugin_whose_kinds_it_names(tmp_path: Path) -> None:
    claim = _fake(tmp_path)
    claim.write_text(claim.read_text().replace("requires: [gv-fake]\n", ""))
    done = _cli(tmp_path, "validate", str(claim))
    assert done.returncode == 2
    assert "model kind 'fake_quad' comes from plugin 'gv-fake': list it under requires" in (
        done.stderr + done.stdout)
    listed = _cli(tmp_path, "plugins")
    assert listed.returncode == 0 and "gv-fake (gv-fake 0.1.0, module gv_fake): results " \
        "version 1; model kind fake_quad, probe fake_rms" in listed.stdout


def test_a_plugin_that_is_not_installed_is_refused_at_its_line(tmp_path: Path) -> None:
    claim = tmp_path / "c.yaml"
    claim.write_text(EXAMPLE_CLAIM.read_text().replace("grokverify-example", "gv-not-here"))
    with pytest.raises(SpecError) as err:
        load_claim(claim)
    (problem,) = err.value.problems
    assert (problem.line, problem.path) == (3, "requires[0]")
    assert "plugin 'gv-not-here' is not installed: pip install gv-not-here" in problem.message


def test_the_guides_plugin_section_is_the_example_plugins_code() -> None:
    guide = (ROOT / "docs" / "extending.md").read_text().split("\n## Plugins")[1]
    for block, path in ((1, EXAMPLE / "pyproject.toml"),
                        (2, EXAMPLE / "grokverify_example" / "__init__.py")):
        code = guide.split("```")[2 * block - 1].split("\n", 1)[1]
        for line in code.splitlines():
            if not line.startswith("# "):
                assert line.split("  #")[0].strip() in path.read_text(), (path, line)


def _example_installed() -> bool:
    return any(e.name == "grokverify-example"
               for e in metadata.entry_points(group="grokverify.plugins"))


needs_example = pytest.mark.skipif(not _example_installed(), reason="the example plugin is not "
                                   "installed (pip install -e plugins/example; .ci/run does)")


@needs_example
def test_the_example_plugins_claim_runs_and_keys_its_records(tmp_path: Path) -> None:
    from grokverify.cli import main

    store, reports = tmp_path / "store", tmp_path / "reports"
    assert main(["run", str(EXAMPLE_CLAIM), "--executor", "local", "--store", str(store),
                 "--reports", str(reports), "--seeds", "2"]) == 0
    record = json.loads(next((store / "records").glob("*/*.json")).read_text())
    assert record["key_inputs"]["plugins"] == {"grokverify-example": "1"}
    curves = record["result"]["curves"]
    assert {"param_rms.E", "param_rms.W"} <= set(curves)
    assert (reports / "quad_mlp_groks" / "report.md").is_file()


@needs_example
def test_the_example_model_trains_alone_in_a_chunk_and_as_its_plain_module() -> None:
    from reference import train_plain

    from grokverify.engine.loop import train_seeds

    exp = next(e for *_, e in load_claim(EXAMPLE_CLAIM).experiments(["quick"]))
    exp = exp.model_copy(update={"training": exp.training.model_copy(update={"steps": 60}),
                                 "probes": []})
    chunk, alone = train_seeds(exp, [0, 1, 2]), train_seeds(exp, [1])
    assert chunk[1] == alone[0]
    plain = train_plain(exp, 1)
    np.testing.assert_allclose(chunk[1]["curves"]["train_loss"]["values"], plain.train_loss,
                               rtol=1e-4)


@needs_example
def test_the_example_probe_is_the_rms_of_each_role() -> None:
    import torch

    from grokverify.engine.batched import BatchedModel
    from grokverify.engine.models import DataShape
    from grokverify.engine.probes import ProbeContext
    from grokverify.kinds import MODELS, PROBES

    model = BatchedModel(MODELS["quad_mlp"](kind="quad_mlp", d=8, hidden=12),
                         DataShape(p=7, vocab=9, n_classes=7), [0, 1])
    spec = PROBES["param_rms"](name="param_rms", every=1)
    got = PROBES.of(spec)(model, spec, ProbeContext())
    want = torch.sqrt((model.param("embed.weight").double() ** 2).mean(dim=(1, 2)))
    np.testing.assert_allclose(got["param_rms.E"].numpy(), want.detach().numpy(), rtol=1e-12)


@needs_example
def test_a_worker_with_another_plugin_version_refuses_the_trial() -> None:
    from grokverify.run.execute import run_trial
    from grokverify.store import process_part

    exp = next(e for *_, e in load_claim(EXAMPLE_CLAIM).experiments(["quick"]))
    expected = process_part(exp, "cpu")
    assert expected["plugins"] == {"grokverify-example": "1"}
    with pytest.raises(RuntimeError, match="plugins: .*grokverify-example.*in the run's keys"):
        run_trial(exp.model_dump(mode="json"), [0], "cpu", 1,
                  {**expected, "plugins": {"grokverify-example": "0"}})


def _problems(path: Path) -> list[tuple[str, int | None, str, str]]:
    with pytest.raises(SpecError) as err:
        load_claim(path)
    return [(p.file, p.line, p.path, p.message) for p in err.value.problems]


@needs_example
def test_each_undeclared_plugin_kind_is_named_once_at_the_requires_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grokverify.kinds import CHECKS

    monkeypatch.setitem(CHECKS._plugins, "event_share", "grokverify-example")  # two checks of it
    check = "{kind: event_share, arm: quad, event: generalise, at_least: %s, why: w}"
    claim = tmp_path / "c.yaml"
    claim.write_text(EXAMPLE_CLAIM.read_text().replace("[grokverify-example]", "[]")
                     + f"checks: [{check % 0.5}, {check % 0.25}]\n")
    why = "comes from plugin 'grokverify-example': list it under requires"
    assert _problems(claim) == [(str(claim), 3, "requires", f"model kind 'quad_mlp' {why}"),
                                (str(claim), 3, "requires", f"probe 'param_rms' {why}"),
                                (str(claim), 3, "requires", f"validity check 'event_share' {why}")]


@needs_example
def test_every_required_plugin_that_is_missing_or_broken_is_named_with_what_is_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import grokverify.kinds as kinds

    broken = kinds.Plugin("gv-broken", "gv_broken", None, None, None, (), "boom")
    monkeypatch.setattr(kinds, "_PLUGINS", {**kinds.plugins(), "gv-broken": broken})
    claim = tmp_path / "c.yaml"
    text = EXAMPLE_CLAIM.read_text()
    claim.write_text(text.replace("[grokverify-example]", "[grokverify-example, gv-broken, "
                                  "gv-absent]"))
    (_, _, path1, why1), (file, line, path2, why2) = _problems(claim)
    assert (file, line, path1, path2) == (str(claim), 3, "requires[1]", "requires[2]")
    assert why1 == "plugin 'gv-broken' cannot be used: boom"
    assert why2.startswith("plugin 'gv-absent' is not installed: pip install gv-absent "
                           "(installed: grokverify-example, gv-broken;")
    claim.write_text(text.replace("[grokverify-example]", "[1, gv-absent]"))
    assert [p[2] for p in _problems(claim)] == ["requires[1]"]
    monkeypatch.setattr(kinds, "_PLUGINS", {})
    claim.write_text(text.replace("[grokverify-example]", "[gv-absent]"))
    assert "(installed: none;" in _problems(claim)[0][3]
