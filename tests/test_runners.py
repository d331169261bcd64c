"""The runners: the library table reads every committed reference report; the shell scripts
parse; and the cluster files agree with each other and with the project, since the image cannot
be built here: runners/Dockerfile (Ray's base image, the CUDA build of torch, the package in
/app), runners/rayjob.yaml and runners/ray-cluster.yaml (the image, the Ray version, the
entrypoint, the store's volume) and runners/nightly.sh (the flags it gives `grokverify run`, the
night it diffs with, its exit codes; and once end to end, without Ray, on a tiny claim)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parent.parent
RUNNERS = REPO / "runners"
REFERENCE = REPO / "reports" / "reference" / "quick"
TINY = REPO / "tests" / "fixtures" / "tiny_claim.yaml"
sys.path.insert(0, str(RUNNERS))

import paper_plan  # noqa: E402
import verdict_table  # noqa: E402

from grokverify.claim.load import load_claim  # noqa: E402
from grokverify.cli import _parser  # noqa: E402


def test_the_verdict_table_has_one_row_per_reference_report(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict_table.main(str(REFERENCE)) == 0
    lines = capsys.readouterr().out.splitlines()
    results = sorted(REFERENCE.glob("*/result.json"))
    assert lines[0].startswith("| claim | role | verdict |") and len(lines) == 2 + len(results)
    for line, path in zip(lines[2:], results, strict=True):
        result = json.loads(path.read_text())
        assert line.startswith(f"| {result['claim']['id']} | {result['claim']['source']['role']}"
                               f" | **{result['verdict']}** |")
        assert line.endswith(" H200-h |")


def test_the_paper_plan_gives_adam_lrs_hours_near_its_measured_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    """adam_lr at paper scale: 2 arms x 20 seeds x 50,000 steps = 2.0 M model-steps; its run at
    4 seeds took 2,500.7 s on 2 cores (0.69 h; x 5 = 3.5 h), and budget.cpu_seconds says 3.1 h."""
    paper_plan.main([str(REPO / "claims" / "adam_lr.yaml"),
                     str(REPO / "claims" / "p1_uniform_split_faster.yaml")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| adam_lr | 2 × 20 | 50,000, 512 | 2.0 M | 3.1 h |"
    assert lines[3].startswith("| p1_uniform_split_faster | 4 × 20 | 50,000, 128/64 | 4.0 M |")
    paper_plan.main(["--seeds", "4", str(REPO / "claims" / "adam_lr.yaml")])
    row = capsys.readouterr().out.splitlines()[2]
    assert row == "| adam_lr | 2 × 4 | 50,000, 512 | 0.4 M | 0.6 h |"


def test_gpu_step_time_follows_the_measured_points() -> None:
    # benchmarks/README.md: 8 seeds 4,151 model-steps/s, 32 seeds 12,966, 512 seeds 44,719
    assert verdict_table.gpu_step_seconds(1) == pytest.approx(8 / 4151)
    assert verdict_table.gpu_step_seconds(8) == pytest.approx(8 / 4151)
    assert verdict_table.gpu_step_seconds(20) == pytest.approx((8 / 4151 + 32 / 12966) / 2)
    assert verdict_table.gpu_step_seconds(1024) == pytest.approx(2 * 512 / 44719)


def test_gpu_hours_sum_every_arm_to_its_budget() -> None:
    # skeptic_sgd's paper scale: 4 learning rates x 2 arms, 20 seeds, 50,000 steps each
    loaded = load_claim(REPO / "claims" / "skeptic_sgd.yaml")
    step = (8 / 4151 + 32 / 12966) / 2
    assert verdict_table.gpu_hours(loaded, "paper") == pytest.approx(8 * 50_000 * step / 3600)


def test_the_verdict_table_refuses_an_empty_folder(tmp_path: Path) -> None:
    assert verdict_table.main(str(tmp_path)) == 1


def test_peer_grok_compares_two_committed_peer_runs_without_training() -> None:
    peer = REPO / "reports" / "reference" / "peer"
    out = subprocess.run(
        [sys.executable, str(RUNNERS / "peer_grok.py"), "--code", "/nonexistent",
         "--rows", str(peer / "grok_f0.3.json"), "--baseline", str(peer / "grok_f0.5.json")],
        capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)["against_baseline"]
    assert (got["baseline_median"], got["this_median"]) == (2250.0, 5450.0)
    assert got["ratio_this_over_baseline"] == pytest.approx(2.42, abs=0.005)
    assert got["ratio_ci95"][0] > 1.5 and got["logrank_p"] < 0.01


@pytest.mark.parametrize("script", sorted(RUNNERS.glob("*.sh")))
def test_runner_scripts_parse(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_nightly_is_shellcheck_clean() -> None:
    proc = subprocess.run(["shellcheck", str(RUNNERS / "nightly.sh")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout


# --- what the files say -------------------------------------------------------------------


def _project() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]


def _requirement(name: str) -> Requirement:
    [req] = [r for r in map(Requirement, _project()["dependencies"]) if r.name == name]
    return req


def _ray_pin() -> str:
    [spec] = _requirement("ray").specifier
    assert spec.operator == "==", f"pyproject should pin ray exactly, not {spec}"
    return spec.version


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions (keyword, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (RUNNERS / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1])
            for line in lines if line and not line.startswith("#")]


def _documented_image() -> str:
    """The image name the Dockerfile's header says to build it as."""
    found = re.findall(r"docker build -f runners/Dockerfile -t (\S+) \.",
                       (RUNNERS / "Dockerfile").read_text())
    assert len(found) == 1, "the Dockerfile's header should give one `docker build` command"
    return found[0]


def _image_layout() -> tuple[dict[PurePosixPath, Path], dict[str, str], list[PurePosixPath]]:
    """What COPY puts where (image path -> repository path), the ENV values, and the working
    directory of each `pip install`."""
    workdir, copied, env, installs = PurePosixPath("/"), {}, {}, []
    for keyword, args in _instructions():
        if keyword == "WORKDIR":
            workdir = workdir / args
        elif keyword == "COPY":
            *sources, dest = [a for a in shlex.split(args) if not a.startswith("--")]
            target = workdir / dest
            for source in sources:
                into = target / Path(source).name if len(sources) > 1 else target
                copied[into] = REPO / source
        elif keyword == "ENV":
            name, value = re.split(r"[= ]", args, maxsplit=1)
            env[name] = value.strip()
        elif keyword == "RUN" and re.search(r"pip install [^&]*-e \.", args):
            installs.append(workdir)
    return copied, env, installs


def _in_repo(image_path: str) -> Path:
    """The repository file COPY put at `image_path` (the longest copied prefix)."""
    path = PurePosixPath(image_path)
    copied, _, _ = _image_layout()
    for dest in sorted(copied, key=lambda p: len(p.parts), reverse=True):
        if path == dest or dest in path.parents:
            return copied[dest].joinpath(*path.parts[len(dest.parts):])
    raise AssertionError(f"{image_path}: the Dockerfile copies nothing there")


def _yaml_documents(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((RUNNERS / name).read_text()))


def _rayjob() -> dict[str, Any]:
    [job] = [d for d in _yaml_documents("rayjob.yaml") if d["kind"] == "RayJob"]
    return job


def _pod_specs(job: dict[str, Any]) -> list[dict[str, Any]]:
    cluster = job["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"]["spec"]] + [
        group["template"]["spec"] for group in cluster["workerGroupSpecs"]]


def _cluster() -> dict[str, Any]:
    [cluster] = _yaml_documents("ray-cluster.yaml")
    return cluster


def _unregistered(image: str) -> str:
    """An image name without the registry the user writes before it (REGISTRY/name:tag)."""
    return image.rsplit("/", 1)[-1]


def _accepted_by_run(flags: list[str]) -> Any:
    """`grokverify run`'s own parser on these arguments (fails the test if it refuses them)."""
    try:
        return _parser().parse_args(["run", *flags])
    except SystemExit as exc:
        pytest.fail(f"grokverify run refuses {flags} (exit {exc.code})")


# --- consistency of the image, the RayJob and the cluster YAML -----------------------------


def test_one_ray_version_everywhere() -> None:
    ray = _ray_pin()
    [base] = [args for keyword, args in _instructions() if keyword == "FROM"]
    match = re.fullmatch(r"rayproject/ray:(\d+\.\d+\.\d+)-py(\d)(\d+)-(gpu|cu\d+)", base)
    assert match, f"FROM {base}: expected Ray's own GPU image, rayproject/ray:X.Y.Z-pyXY-gpu"
    assert match[1] == ray
    python = Version(f"{match[2]}.{match[3]}")
    assert python in SpecifierSet(_project()["requires-python"])
    assert _rayjob()["spec"]["rayClusterSpec"]["rayVersion"] == ray
    # no other version is named, comments included (one that says 2.59.0 would be stale)
    known = {ray, _project()["version"]}
    torch = re.findall(r"\btorch==(\S+)", (RUNNERS / "Dockerfile").read_text())
    for name, allowed in (("rayjob.yaml", known), ("ray-cluster.yaml", known),
                          ("Dockerfile", known | set(torch))):
        named = set(re.findall(r"\b\d+\.\d+\.\d+\b", (RUNNERS / name).read_text()))
        assert named <= allowed, f"{name} names {named - allowed}: not Ray's pin {ray}"


def test_the_image_installs_a_cuda_torch_within_the_pin_before_the_package() -> None:
    runs = [args for keyword, args in _instructions() if keyword == "RUN"]
    [(i, torch_run)] = [(i, r) for i, r in enumerate(runs) if re.search(r"\btorch==", r)]
    version = re.search(r"\btorch==(\S+)", torch_run)[1]
    assert Version(version) in _requirement("torch").specifier, (
        f"torch=={version} is outside pyproject's {_requirement('torch')}")
    assert re.search(r"--index-url https://download\.pytorch\.org/whl/cu\d+(\s|$)", torch_run), (
        "torch should come from PyTorch's CUDA index (whl/cuXYZ)")
    [package] = [j for j, r in enumerate(runs) if re.search(r"pip install [^&]*-e \.", r)]
    assert i < package, "torch first, so installing the package keeps the CUDA build"


def test_every_image_named_is_the_one_the_dockerfile_builds() -> None:
    documented = _documented_image()
    assert documented == f"grokverify:{_project()['version']}", (
        "the image is tagged with pyproject's project version")
    images = [c["image"] for spec in _pod_specs(_rayjob()) for c in spec["containers"]]
    docker = _cluster()["docker"]
    images += [docker[key] for key in ("image", "head_image", "worker_image") if key in docker]
    assert len(images) >= 3 and {_unregistered(image) for image in images} == {documented}
    assert len(set(images)) == 1, f"one image (one registry) everywhere, not {set(images)}"


def test_the_cluster_yaml_installs_nothing_outside_the_image() -> None:
    cluster = _cluster()
    assert not cluster.get("setup_commands") and not cluster.get("file_mounts")
    assert not any("pip" in c for key in ("head_setup_commands", "worker_setup_commands")
                   for c in cluster.get(key) or [])


def test_the_rayjob_entrypoint_is_in_the_image_and_its_flags_are_run_flags() -> None:
    bash, script, *flags = shlex.split(_rayjob()["spec"]["entrypoint"])
    assert bash == "bash" and _in_repo(script) == RUNNERS / "nightly.sh"
    # nightly.sh runs from the folder above its own: the image's copy of the repository
    root = PurePosixPath(script).parent.parent
    for part in ("pyproject.toml", "grokverify", "claims"):
        assert _in_repo(str(root / part)) == REPO / part
    _, _, installs = _image_layout()
    assert installs == [root], "the package is installed (pip install -e .) from that copy"
    args = _accepted_by_run(["claims/", *flags])
    assert "--gpus-per-task" not in flags  # run's default packs several chunks on one GPU
    assert args.executor == "ray"


def test_the_store_is_on_a_persistent_volume_where_the_image_puts_it() -> None:
    _, env, _ = _image_layout()
    data = env["GROKVERIFY_DATA"]
    head = _pod_specs(_rayjob())[0]
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in head["volumes"]
              if "persistentVolumeClaim" in v}
    [container] = head["containers"]
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounted.get(data) in claims, f"the head should mount a PVC at {data}"
    pvcs = [d["metadata"]["name"] for d in _yaml_documents("rayjob.yaml")
            if d["kind"] == "PersistentVolumeClaim"]
    assert claims[mounted[data]] in pvcs, "rayjob.yaml should define the PVC it mounts"
    options = " ".join(_cluster()["docker"].get("head_run_options", []))
    assert re.search(rf"(-v|--volume)[ =]\S+:{re.escape(data)}(\s|:|$)", options), (
        f"the cluster launcher's head should mount a folder at {data}")


# --- nightly.sh ------------------------------------------------------------------------------

STUB = """#!{python}
import json, os, sys
args = sys.argv[1:]
record = {{"argv": args}}
if args[0] == "diff" and os.path.isfile(args[1]):
    record["old_text"] = open(args[1]).read()
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps(record) + "\\n")
sys.exit(int(os.environ.get("STUB_" + args[0].upper() + "_EXIT", "0")))
"""


def _nightly(tmp_path: Path, *flags: str, stub: bool = True, **env: str) -> tuple[int, str]:
    """Run runners/nightly.sh with GROKVERIFY_DATA in tmp_path; with `stub`, `grokverify` is a
    stand-in that records its arguments (tmp_path/calls.jsonl) and exits STUB_RUN_EXIT or
    STUB_DIFF_EXIT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = [str(Path(sys.executable).parent), os.environ["PATH"]]
    if stub:
        (bin_dir / "grokverify").write_text(STUB.format(python=sys.executable))
        (bin_dir / "grokverify").chmod(0o755)
        path.insert(0, str(bin_dir))
    full = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "CLAIMS")}
    full.update({"PATH": os.pathsep.join(path), "GROKVERIFY_DATA": str(tmp_path / "data"),
                 "STUB_LOG": str(tmp_path / "calls.jsonl"), "NIGHTLY_DATE": "2026-01-02", **env})
    proc = subprocess.run(["bash", str(RUNNERS / "nightly.sh"), *flags], env=full,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def _calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _suite(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text('{"claims": []}')


def test_nightly_runs_the_library_at_paper_scale_on_ray_address(tmp_path: Path) -> None:
    code, out = _nightly(tmp_path)
    assert code == 0, out
    run, diff = _calls(tmp_path)
    reports = tmp_path / "data" / "reports"
    assert run["argv"] == ["run", "claims/", "--scale", "paper", "--address", "auto",
                           "--store", str(tmp_path / "data" / "store"),
                           "--reports", str(reports / "2026-01-02")]
    args = _accepted_by_run(run["argv"][1:])
    assert (args.scale, args.address, args.executor) == ("paper", "auto", "ray")
    # the first night compares with an empty suite (a temporary file, removed after)
    assert diff["argv"][0] == "diff" and diff["argv"][2] == str(reports / "2026-01-02")
    assert json.loads(diff["old_text"]) == {"claims": []}
    assert not Path(diff["argv"][1]).exists()


def test_nightly_passes_extra_flags_on_and_they_win(tmp_path: Path) -> None:
    flags = ["--scale", "quick", "--executor", "local", "--chunk-size", "4"]
    code, out = _nightly(tmp_path, *flags, CLAIMS="elsewhere/")
    assert code == 0, out
    run, _ = _calls(tmp_path)
    assert run["argv"][1] == "elsewhere/" and run["argv"][-len(flags):] == flags
    args = _accepted_by_run(run["argv"][1:])
    assert (args.scale, args.executor, args.chunk_size) == ("quick", "local", 4)


def test_nightly_diffs_with_the_latest_earlier_night(tmp_path: Path) -> None:
    reports = tmp_path / "data" / "reports"
    _suite(reports / "2025-12-30")
    (reports / "2025-12-31").mkdir()  # a night whose run failed: no suite
    _suite(reports / "2026-01-02")  # tonight, run before: a rerun must not compare with it
    _suite(reports / "2026-01-03")  # later (a NIGHTLY_DATE given by hand)
    _suite(reports / "latest")  # not a night
    code, out = _nightly(tmp_path)
    assert code == 0, out
    _, diff = _calls(tmp_path)
    assert diff["argv"] == ["diff", str(reports / "2025-12-30"), str(reports / "2026-01-02")]


@pytest.mark.parametrize(("run_exit", "diff_exit", "expected", "diffed"),
                         [(0, 0, 0, True), (0, 1, 3, True), (0, 2, 2, True),
                          (1, 0, 1, False), (2, 0, 2, False)])
def test_nightly_exit_codes(tmp_path: Path, run_exit: int, diff_exit: int, expected: int,
                            diffed: bool) -> None:
    code, out = _nightly(tmp_path, STUB_RUN_EXIT=str(run_exit), STUB_DIFF_EXIT=str(diff_exit))
    assert code == expected, out
    assert [c["argv"][0] for c in _calls(tmp_path)] == ["run", "diff"][:1 + diffed]


def test_nightly_refuses_a_malformed_date(tmp_path: Path) -> None:
    code, out = _nightly(tmp_path, NIGHTLY_DATE="../../etc")
    assert code == 2 and "NIGHTLY_DATE" in out and not _calls(tmp_path)


def test_two_nights_end_to_end_without_ray(tmp_path: Path) -> None:
    """The real CLI on a tiny claim, in-process (no Ray): the first night lists it NEW, the
    second trains nothing and finds its verdict the same (exit 0)."""
    library = tmp_path / "library"
    library.mkdir()
    shutil.copy(TINY, library / "tiny.yaml")
    flags = ("--scale", "quick", "--executor", "local", "--device", "cpu")
    code, out = _nightly(tmp_path, *flags, stub=False, CLAIMS=str(library))
    assert code == 0, out
    assert "NEW" in out and "tiny" in out
    code, out = _nightly(tmp_path, *flags, stub=False, CLAIMS=str(library),
                         NIGHTLY_DATE="2026-01-03")
    assert code == 0, out
    reports = tmp_path / "data" / "reports"
    assert f"comparing {reports / '2026-01-03'} with {reports / '2026-01-02'}" in out
    assert "CHANGED" not in out and "same" in out
    for night in ("2026-01-02", "2026-01-03"):
        assert {"results.json", "index.html", "index.md"} <= {
            p.name for p in (reports / night).iterdir()}
