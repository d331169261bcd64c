"""Write reports/<claim-id>/result.json, report.md and figures for one claim run. result.json
holds everything (report.md is rendered from the same dict), so tools never parse Markdown.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grokverify.atomic import write_atomic
from grokverify.claim.budget import scale_costs
from grokverify.claim.load import arm_label
from grokverify.claim.metrics import MetricSpec
from grokverify.claim.tasks import IMAGE_DATASETS
from grokverify.engine.datasets import load as load_data
from grokverify.engine.version import RESULTS_VERSION
from grokverify.report.figures import FigureData, draw_figures
from grokverify.report.markdown import render_markdown
from grokverify.report.provenance import provenance
from grokverify.run.outcome import ClaimRun, RunOptions
from grokverify.stats.arms import seed_value
from grokverify.stats.base import jsonable
from grokverify.store import code_version


def _seed_rows(member: str, arm: str, records: list[dict[str, Any]],
               metric: MetricSpec) -> list[dict[str, Any]]:
    """Each seed's summary and its metric: the value and whether it was observed, or why the
    seed is left out."""
    rows = []
    for rec in records:
        got = seed_value(metric, rec)
        value = {"metric": None, "metric_observed": None, "left_out": got} \
            if isinstance(got, str) else \
            {"metric": got[0], "metric_observed": got[1], "left_out": None}
        rows.append({"member": member, "arm": arm, **rec["result"]["summary"], **value})
    return rows


def _device(record: dict[str, Any]) -> str:
    """Where a record was trained, with the numerics it was trained under (records share a
    numerics tag exactly when they are bit-identical: docs/determinism.md)."""
    threads = f", {record['threads']} threads" if record.get("threads") else ""
    return (f"{record['device']} ({record['device_name']}{threads}; numerics "
            f"{record['numerics']['tag']})")


def _data(run: ClaimRun) -> list[dict[str, Any]]:
    """The files each image dataset of the run was read from: which copy a verdict rests on, and
    whether it is the standard one."""
    out = []
    for name in sorted({n for p in run.plans if (n := p.experiment.task.data_name())}):
        data, info = load_data(name), IMAGE_DATASETS[name]
        rows = {part: data.rows(part) for part in info.files}
        out.append({"dataset": name, "folder": str(data.folder), "digest": data.digest,
                    "rows": rows, "standard_rows": rows == {"train": info.train_rows,
                                                             "test": info.test_rows}})
    return out


def _chunks(records: list[dict[str, Any]]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The records by the chunk that trained them (a chunk's records share experiment, host,
    creation time, seeds and wall)."""
    chunks: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in records:
        key = (r.get("key_inputs", {}).get("experiment"), r.get("host"), r.get("created"),
               tuple(r.get("chunk_seeds", ())), r.get("chunk_wall_s"))
        chunks.setdefault(key, []).append(r)
    return chunks


def records_train_s(records: list[dict[str, Any]]) -> float:
    """The training time the claim's records cost, whichever run trained them: each chunk's wall
    time once."""
    return sum(float(rs[0].get("chunk_wall_s") or 0.0) for rs in _chunks(records).values())


def chunk_model_steps(chunk: list[dict[str, Any]]) -> int:
    """The model-steps one chunk's records computed: a chunk trains all its seeds until its
    last one stops (a finished seed is frozen, not dropped), so its steps times its seeds."""
    return (max(r["result"]["summary"]["stopped_step"] for r in chunk)
            * max(len(chunk[0].get("chunk_seeds", ())), len(chunk)))


def records_model_steps(records: list[dict[str, Any]]) -> int:
    """The model-steps the records' chunks computed (`chunk_model_steps`)."""
    return sum(chunk_model_steps(rs) for rs in _chunks(records).values())


def build_result(run: ClaimRun, records_by_arm: dict[str, list[dict[str, Any] | None]],
                 opts: RunOptions, device: str) -> dict[str, Any]:
    """result.json's content, figures aside (`write_report` adds them)."""
    loaded, claim = run.loaded, run.loaded.claim
    scale = claim.scales[run.scale]
    arms: dict[str, Any] = {}
    per_seed: list[dict[str, Any]] = []
    devices: set[str] = set()
    for plan in run.plans:
        records = records_by_arm[arm_label(plan.member, plan.arm)]
        devices.update(_device(r) for r in records if r)
        rows = _seed_rows(plan.member, plan.arm, [r for r in records if r], claim.metric)
        per_seed.extend(rows)
        arms[arm_label(plan.member, plan.arm)] = {
            "member": plan.member, "arm": plan.arm,
            "override": claim.arms[plan.arm],
            "experiment": plan.experiment.model_dump(mode="json"),
            "seeds": list(plan.seeds),
            "diverged": sum(1 for r in rows if r["diverged"]),
            "store_keys": list(plan.keys),
        }
    return jsonable({
        "claim": {"id": claim.id, "title": claim.title, "statement": claim.statement,
                  "source": claim.source.model_dump(), "notes": claim.notes,
                  "file": str(loaded.path)},
        "scale": {"name": run.scale, "description": scale.description,
                  "paper_setting": scale.paper_setting},
        "scales": scale_costs(loaded),
        "metric": {**claim.metric.model_dump(), "kind": claim.metric.kind,
                   "label": claim.metric.label(), "description": claim.metric.describe()},
        "criterion": claim.criterion.model_dump(),
        "arms": arms,
        "family": ({"correction": claim.family.correction,
                    "members": claim.family.members, **run.family.to_dict()}
                   if claim.family and run.family else None),
        "result": None if claim.family else run.result.to_dict(),
        "verdict": run.verdict.value,
        "reason": run.reason,
        "meaning": (claim.interpretation.meaning(run.verdict.value)
                    if claim.interpretation else None),
        "interpretation": (claim.interpretation.model_dump(exclude_none=True)
                           if claim.interpretation else None),
        "checks": [c.to_dict() for member_checks in run.checks.values() for c in member_checks],
        "more_seeds": run.more_seeds,
        "sequential": ({"looks": [look.n for look in run.seeding.looks],
                        "spending": run.seeding.kind,
                        "rounds": run.rounds} if len(run.seeding.looks) > 1 else None),
        "per_seed": per_seed,
        **({"data": data} if (data := _data(run)) else {}),  # image claims only
        "provenance": {
            **provenance(), "results_version": RESULTS_VERSION, "code_version": code_version(),
            "device": sorted(devices),
            "requested_device": device, "executor": opts.executor, "address": opts.address,
            "store": str(opts.store), "seeds_trained_now": run.trained,
            "seeds_reused": run.reused, "train_wall_s": round(run.train_wall_s, 2),
            "records_train_s": round(records_train_s(read := [
                r for recs in records_by_arm.values() for r in recs if r]), 2),
            "records_model_steps": records_model_steps(read),
            "wall_s": round(run.wall_s, 2), "started": run.started,
            "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    })


def write_report(run: ClaimRun, read: list[list[dict[str, Any]]], opts: RunOptions,
                 device: str) -> Path:
    """The claim's folder from its analysed run and the records the analysis read (one list
    per plan, as `pipeline.analyse` returns them)."""
    out = opts.reports / run.loaded.claim.id
    out.mkdir(parents=True, exist_ok=True)
    records = {arm_label(p.member, p.arm): recs for p, recs in zip(run.plans, read, strict=True)}
    result = build_result(run, records, opts, device)
    result["figures"], result["figure_captions"] = draw_figures(FigureData(result, records), out)
    write_atomic(out / "result.json", json.dumps(result, indent=2, sort_keys=False) + "\n")
    write_atomic(out / "report.md", render_markdown(result))
    return out
