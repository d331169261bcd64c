"""report.md, rendered from the result dict (the same data as result.json); its number formats
and pieces serve a suite's index too (`report.cells`, `report.suite_md`)."""

from __future__ import annotations

import json
from typing import Any

from grokverify.claim.load import arm_label
from grokverify.numbers import format_number
from grokverify.report.escape import block, code, text
from grokverify.report.referee import caveat_lines, reasoning_lines, reproduce_lines, setup_lines
from grokverify.report.suite import member_results


def number(x: Any) -> str:
    """A result.json number ("inf"/"-inf" strings too) as report text; None as —."""
    if x is None:
        return "—"
    if x in ("inf", "-inf"):
        return "∞" if x == "inf" else "−∞"
    return format_number(float(x))


def interval(pair: list[Any]) -> str:
    return f"[{number(pair[0])}, {number(pair[1])}]"


def _quote(words: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in block(words))


def _scale_banner(scale: dict[str, Any]) -> str:
    if scale["paper_setting"]:
        return f"**Scale: {code(scale['name'])} — the paper's setting.** " \
               f"{text(scale['description'])}"
    return (f"> ⚠️ **NOT THE PAPER'S SETTING.** This report was run at scale "
            f"{code(scale['name'])}: {text(scale['description'])} Its verdict is about this "
            f"reduced setting; run `--scale paper` for the paper's own setting.")


def _data_banner(data: list[dict[str, Any]]) -> list[str]:
    """Which files an image claim read; said loudly when they are not the standard set."""
    lines = []
    for d in data:
        counts = f"{d['rows']['train']:,} training and {d['rows']['test']:,} test images"
        where = f"{code(d['folder'])}, digest {code(d['digest'])}"
        if d["standard_rows"]:
            lines.append(f"Data: {text(d['dataset'])}'s standard files ({counts}) from {where}.")
        else:
            lines.append(f"> ⚠️ **NOT THE STANDARD {text(d['dataset']).upper()} FILES.** The "
                         f"data read holds {counts} (from {where}); the standard files hold "
                         f"more. Its verdict is about this sample.")
        lines.append("")
    return lines


def _cell(x: Any) -> str:
    """A table cell: a pair is a CI, a word stays a word, anything else a number."""
    if isinstance(x, list) and len(x) == 2:
        return interval(x)
    if isinstance(x, str) and x not in ("inf", "-inf"):
        return text(x)
    return number(x)


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """The criterion's column labels, in the order it gives them (a column an arm lacks is —)."""
    labels: list[str] = []
    for row in rows:
        labels += [k for k in row["columns"] if k not in labels]
    return labels


def _arm_table(result: dict[str, Any], arms: dict[str, Any], member: str = "") -> list[str]:
    """One row per arm: its diverged and left-out seeds, then the columns its criterion chose
    (e.g. a Kaplan-Meier median for times, a mean for signed values, a share)."""
    labels = _columns(result["arms"])
    rows = ["| arm | diverged | left out | " + " | ".join(map(text, labels)) + " |",
            "|---" * (3 + len(labels)) + "|"]
    for arm in result["arms"]:
        info = arms[arm_label(member, arm["name"])]
        excluded = ", ".join(f"{text(k)}: {v}" for k, v in arm["excluded"].items()) or "0"
        cells = [_cell(arm["columns"][k]) if k in arm["columns"] else "—" for k in labels]
        rows.append(f"| {text(arm['name'])} | {info['diverged']} | {excluded} | " +
                    " | ".join(cells) + " |")
    return rows


def _effect_lines(result: dict[str, Any]) -> list[str]:
    """The effect, its CI and region, the criterion's own test (its p labelled by what it
    tests, usually no effect: it never decides), then the p's against θ that match the
    verdict printed next."""
    from grokverify.stats.base import p_against_words

    p = result["p_value"]
    label = result.get("p_value_label", "no-effect test p")
    return [
        f"- Effect: {text(result['effect_label'])} = **{number(result['estimate'])}**, "
        f"{result['ci_level'] * 100:.4g}% CI {interval(result['ci'])}",
        f"- Claimed region: {text(result['claimed_region'])}",
        f"- Test: {text(result['test'])}" + (f", {text(label)} = {number(p)}" if p is not None
                                               else ""),
        f"- {text(p_against_words(result))}",
    ]


def _single_result(res: dict[str, Any]) -> list[str]:
    result = res["result"]
    return [*_effect_lines(result), f"- Verdict: **{res['verdict']}**", "",
            *_arm_table(result, res["arms"]), "",
            "How censoring is handled: " + text(result["details"].get("censoring", "")), ""]


def _member_sections(res: dict[str, Any]) -> list[str]:
    """Each family member's own result: its effect lines and arm table."""
    out: list[str] = []
    for m in res["family"]["members"]:
        r = m["result"]
        out += [f"### {text(m['member'])}: {m['verdict']}", "", *_effect_lines(r), "",
                *_arm_table(r, res["arms"], m["member"]), ""]
    return out


def _findings(res: dict[str, Any]) -> list[str]:
    """An open question's family: each member's estimate and CI, the fitted trend (if one is
    declared) and each member's own result; nothing is judged."""
    from grokverify.stats.trend import describe

    fam = res["family"]
    trend = fam.get("trend")
    predicted = (trend or {}).get("predicted") or {}
    xs = (trend or {}).get("x") or {}
    out = [f"An open question ({len(fam['members'])} members): each member's estimate and CI "
           "are its own criterion's; nothing is claimed, so nothing is judged.", "",
           "| member | x | estimate | CI | trend's value | result |", "|---|---|---|---|---|---|"]
    for m in fam["members"]:
        r = m["result"]
        out.append(f"| {text(m['member'])} | {number(xs.get(m['member']))} | "
                   f"{number(r['estimate'])} | {interval(r['ci'])} | "
                   f"{number(predicted.get(m['member']))} | {m['verdict']} |")
    out += ["", f"Family verdict: **{res['verdict']}** — {text(fam['reason'])}", ""]
    if trend:
        left = "; ".join(f"{text(k)}: {text(v)}" for k, v in trend["left_out"].items())
        out += [f"Trend ({text(trend['fit'])}): {text(describe(trend))} Method: "
                f"{text(trend['method'])}." + (f" Left out: {left}." if left else ""), ""]
    out += _member_sections(res)
    return out


def _family_result(res: dict[str, Any]) -> list[str]:
    """The family's rule by what it claims (grokverify.stats.family), a row per member, its
    verdict, then each member's own result."""
    if res["verdict"] == "FINDING":
        return _findings(res)
    rules = {
        "all": "The claim is about **every** member (`claims: all`), an intersection–union "
               "test: the family is SUPPORTED when every member is supported at the nominal "
               "one-sided level {alpha}, unadjusted; REFUTED when any member is refuted after the "
               "`{correction}` correction across members; INCONCLUSIVE otherwise.",
        "any": "The claim is about **some** members (`claims: any`): every member is judged "
               "after the `{correction}` correction across members at one-sided level {alpha}; "
               "the family is SUPPORTED when every member is supported, PARTIAL when some are "
               "(named below), REFUTED when every member is refuted, INCONCLUSIVE otherwise.",
    }
    fam = res["family"]
    rule = rules[fam.get("claims", "all")].format(alpha=number(fam["alpha_one_sided"]),
                                                  correction=fam["correction"])
    # one criterion for every member: its own p has one label
    label = fam["members"][0]["result"].get("p_value_label", "no-effect test p")
    out = [f"Family of {len(fam['members'])} members; one-sided p-values against θ, the "
           f"boundary of each member's claimed region, corrected across members with statsmodels "
           f"multipletests (`{fam['correction']}`) where the claim needs it. {rule}",
           "", f"| member | effect | CI | {text(label)} | p support (decides) | "
           "p refute (decides) | verdict |", "|---|---|---|---|---|---|---|"]
    for m in fam["members"]:
        r = m["result"]
        out.append(f"| {text(m['member'])} | {number(r['estimate'])} | {interval(r['ci'])} | "
                   f"{number(r['p_value'])} | {number(m['p_support'])} "
                   f"({number(m['p_support_adj'])}) | {number(m['p_refute'])} "
                   f"({number(m['p_refute_adj'])}) | {m['verdict']} |")
    out += ["", "p support, p refute: the member's one-sided p against θ, then (in brackets) the p "
            "that decides, after the correction that applies to that direction under the claim.",
            "",
            f"Family verdict: **{res['verdict']}** — {text(fam['reason'])}", ""]
    out += _member_sections(res)
    first = fam["members"][0]["result"]
    out += ["How censoring is handled: " + text(first["details"].get("censoring", "")), ""]
    return out


def _setup(arms: dict[str, Any]) -> list[str]:
    out = []
    for name, arm in arms.items():  # name: "arm" or "member/arm"
        exp = arm["experiment"]
        override = json.dumps(arm["override"], sort_keys=True) if arm["override"] else "{}"
        out += [f"- **{text(name)}** (override of base: {code(override)})"]
        out += [f"  - {part}: {code(json.dumps(exp[part], sort_keys=True))}"
                for part in ("task", "model", "optimizer", "training", "probes", "interventions")
                if part in ("task", "model", "optimizer", "training") or exp.get(part)]
    return out


def _metric_cell(r: dict[str, Any]) -> str:
    if r.get("left_out"):
        return f"left out ({text(r['left_out'])})"
    return number(r["metric"]) + ("" if r["metric_observed"] else " (censored)")


def _per_seed(rows: list[dict[str, Any]], metric: str) -> list[str]:
    out = [f"| arm | seed | {text(metric)} | train step | val step | gap | final train acc | "
           "final val acc | stopped | diverged |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        div = f"yes (step {r['diverged_step']})" if r["diverged"] else "no"
        arm = arm_label(r.get("member"), r["arm"])
        out.append(f"| {text(arm)} | {r['seed']} | {_metric_cell(r)} | "
                   f"{number(r['train_step'])} | {number(r['val_step'])} | {number(r['gap'])} | "
                   f"{number(r['final_train_acc'])} | {number(r['final_val_acc'])} | "
                   f"{r['stopped_step']} | {div} |")
    return out


# default captions, for a result.json without `figure_captions`
_FIGURE_CAPTIONS = {"curves": "accuracy curves", "survival": "Kaplan–Meier curves",
                    "values": "per-seed values of the metric"}


def figure_lines(figures: dict[str, str], captions: dict[str, str] | None = None) -> list[str]:
    """Each figure as a Markdown image, `figures` mapping its name to its path, with its
    caption (result.json's `figure_captions`, else the name's) as the alt text and below it."""
    out: list[str] = []
    for name, file in figures.items():
        caption = text(figure_caption(name, captions))
        out += [f"![{caption}](<{file}>)", "", f"*Figure: {caption}.*", ""]
    return out


def _rounds(seq: dict[str, Any] | None) -> list[str]:
    if not seq:
        return []
    out = ["## Sequential rounds", "",
           f"Looks at {', '.join(map(str, seq['looks']))} seeds per arm; alpha spending: "
           f"{seq['spending'].replace('_', '-')} (Lan–DeMets). The run stops at the first round "
           "whose verdict is SUPPORTED or REFUTED; each round's CI is at that round's nominal "
           "level.", "", "| round | seeds per arm | CI level | verdict | estimate | CI |",
           "|---|---|---|---|---|---|"]
    for i, r in enumerate(seq["rounds"], 1):
        est = number(r.get("estimate")) if "estimate" in r else "—"
        ci = interval(r["ci"]) if "ci" in r else ", ".join(f"{text(k)}: {v}" for k, v in
                                                            r.get("members", {}).items())
        out.append(f"| {i} | {r['seeds']} | {number(r['ci_level'])} | {r['verdict']} | {est} | "
                   f"{ci} |")
    return [*out, ""]


def _pairs(res: dict[str, Any]) -> list[str]:
    """Which analysis was used (paired by seed or unpaired), the within-pair correlation, seeds
    without a partner, and each seed's value in both arms side by side."""
    crit = res["criterion"]
    base, treat = crit.get("baseline"), crit.get("treated")
    fam = res["family"]
    results = member_results(res)
    if not base or not treat or not results:
        return []
    out = ["## Paired analysis", "",
           "Arms share seed i's split, initialisation and data order, so seed i's results in two "
           "arms are compared within seed when the claim is paired (the default): this removes "
           "the spread the arms share, and helps as much as the within-pair correlation is "
           "high; pairing gains nothing when arms share no randomness.", ""]
    for member, r in results.items():
        d = r["details"]
        if "analysis" not in d:
            continue
        head = f"**{text(member)}**: " if member else ""
        broken = ", ".join(f"{text(k)}: {v}" for k, v in d.get("broken_pairs", {}).items() if v)
        corr = ("" if d.get("paired") else
                f"; within-pair correlation {number(d.get('within_pair_correlation'))}")
        out += [f"- {head}analysis: {text(d['analysis'])}{corr}"
                + (f"; seeds without a partner: {broken}" if broken else "")]
        if d.get("estimate_bound"):
            out += [f"- {head}the point estimate is an {d['estimate_bound']} bound (an arm's "
                    "median is beyond the budget)"]
    method = next((r["details"].get("within_pair_correlation_method") for r in results.values()
                   if "within_pair_correlation_method" in r["details"]), "")
    out += ["", f"Within-pair correlation: {text(method)}." if method else ""]
    rows: dict[tuple[str, int], dict[str, str]] = {}
    for r in res["per_seed"]:
        if r["arm"] in (base, treat) and (r.get("member") or "") in results:
            rows.setdefault((r.get("member") or "", r["seed"]), {})[r["arm"]] = _metric_cell(r)
    first = "| member " if fam else ""
    out += ["", f"{first}| seed | {text(base)} | {text(treat)} |", "|---" * (3 + bool(fam)) + "|"]
    out += [(f"| {text(m)} " if fam else "") + f"| {seed} | {v.get(base, '—')} | "
            f"{v.get(treat, '—')} |" for (m, seed), v in sorted(rows.items())]
    return [*out, ""]


# a phase map's cell marks, here and in its figure (report/figures.py)
PHASE_LETTER = {"comprehension": "C", "grokking": "G", "memorization": "M", "confusion": "X"}


def phase_share(cell: dict[str, Any]) -> float | None:
    """The share of a phase-map cell's seeds in its most common phase; None for a tie."""
    top = cell["most_common"]
    return cell["counts"][top] / cell["seeds"] if top and cell["seeds"] else None


def _phase_map(res: dict[str, Any]) -> list[str]:
    """A phase diagram's map (criterion phase_order): y rows from the largest down, x columns
    rising, each cell its most common phase's letter and that phase's share of the seeds."""
    if res.get("family") or "phase_map" not in res["result"]["details"]:
        return []
    pm = res["result"]["details"]["phase_map"]
    cells = {(c["x"], c["y"]): c for c in pm["cells"]}
    xs = sorted({x for x, _ in cells})
    ys = sorted({y for _, y in cells}, reverse=True)

    def mark(c: dict[str, Any] | None) -> str:
        if c is None:
            return ""
        share = phase_share(c)
        return (PHASE_LETTER[c["most_common"]] if c["most_common"] else "·") + (
            f" {share:.2f}" if share is not None else "")

    lines = ["### Phase map", "",
             f"Rows: {text(pm['y_label'])}; columns: {text(pm['x_label'])}. Each cell: its "
             "most common phase (C comprehension, G grokking, M memorization, X confusion, "
             "· a tie) and that phase's share of the cell's seeds; every count is in result.json "
             "and the arm table.", "",
             f"| {text(pm['y_label'])} \\ {text(pm['x_label'])} | "
             + " | ".join(number(x) for x in xs) + " |", "|---" * (1 + len(xs)) + "|"]
    lines += [f"| {number(y)} | " + " | ".join(mark(cells.get((x, y))) for x in xs) + " |"
              for y in ys]
    return [*lines, ""]


def claim_lines(res: dict[str, Any]) -> list[str]:
    """The verdict line, the scale (and data) banners, the claim and its quoted source: the
    head of report.md, and of each claim's section in a suite's index (report/suite_md.py)."""
    claim = res["claim"]
    src = claim["source"]
    meaning = res.get("meaning")
    return [
        f"**Verdict: {res['verdict']}** — {text(res['reason'])}",
        "",
        *([f"**What it means:** {text(meaning)}", ""] if meaning else []),
        _scale_banner(res["scale"]),
        "",
        *_data_banner(res.get("data", [])),
        "## Claim",
        "",
        *block(claim["statement"]),
        "",
        f"Source: arXiv:{text(src['arxiv'])}, {text(src['where'])} (role: {text(src['role'])}).",
        "",
        _quote(src["quote"]),
        "",
    ]


def result_lines(res: dict[str, Any]) -> list[str]:
    """The metric, the criterion's result tables, a phase map and sequential rounds: the
    result a reader checks the verdict against (report.md's and a suite section's)."""
    return [
        f"- Metric: {code(res['metric']['label'])} ({text(res['metric']['kind'])}) — "
        f"{text(res['metric']['description'])} Diverged seeds: "
        f"{text(res['metric']['on_diverged'])}.",
        *(_family_result(res) if res["family"] else _single_result(res)),
        *_phase_map(res),
        *_rounds(res.get("sequential")),
    ]


def check_lines(checks: list[dict[str, Any]] | None) -> list[str]:
    """The validity checks, each with its measured value: what shows the test could test."""
    if not checks:
        return ["", "### Validity checks", "", "None declared: nothing shows that the run "
                "realised the claim's regime (docs/verdicts.md, \"NOT TESTED and validity "
                "checks\").", ""]
    rows = [f"| {text(c['check'])} | {text(c['arm'])} | {text(c['what'])} | "
            f"{number(c['measured'])} | {text(c['needed'])} | "
            f"{'pass' if c['passes'] else '**FAIL**'} | {text(c.get('why') or '')} |"
            for c in checks]
    return ["", "### Validity checks", "",
            "| check | arm | measures | measured | needed | result | why |",
            "|---|---|---|---|---|---|---|", *rows, ""]


def figure_caption(name: str, captions: dict[str, str] | None = None) -> str:
    """The caption of a figure result.json names: its own (`figure_captions`), else its name's
    default, else the name."""
    return (captions or {}).get(name) or _FIGURE_CAPTIONS.get(name, name)


def render_markdown(res: dict[str, Any]) -> str:
    """report.md in the referee's order: verdict, claim and source, setup, result and figures,
    reasoning, caveats; then each arm's experiment, notes, per-seed rows, commands, provenance."""
    claim, prov = res["claim"], res["provenance"]
    lines = [
        f"# {text(claim['title'])}",
        "",
        *claim_lines(res),
        "## Setup",
        "",
        *setup_lines(res),
        "",
        "## Result",
        "",
        *result_lines(res),
        *check_lines(res.get("checks")),
        *_pairs(res),
        *figure_lines(res.get("figures", {}), res.get("figure_captions")),
        "## Reasoning",
        "",
        *reasoning_lines(res),
        "",
        "## Caveats",
        "",
        *caveat_lines(res),
        "",
        "## Each arm's experiment",
        "",
        *_setup(res["arms"]),
        "",
    ]
    if claim["notes"].strip():
        lines += ["## Notes (choices where the source is silent)", "", *block(claim["notes"]), ""]
    lines += ["## Per-seed results", "", *_per_seed(res["per_seed"], res["metric"]["label"]), "",
              "## Reproduce", "", *reproduce_lines(res), "",
              "## Provenance", "",
              f"- claim file: {code(claim['file'])}",
              f"- git commit: `{prov['git_commit']}`" + (" (dirty)" if prov["git_dirty"] else ""),
              f"- engine results version: `{prov['results_version']}` (in every store key: "
              f"docs/store.md); engine source hash `{prov['code_version']}`",
              f"- device: {', '.join(prov['device'])}; executor: {prov['executor']}",
              f"- seeds trained in this run: {prov['seeds_trained_now']}, reused from the store: "
              f"{prov['seeds_reused']} (store {code(prov['store'])})",
              f"- training time in this run (sum over trials): {prov['train_wall_s']} s; "
              f"wall time of the run: {prov['wall_s']} s; finished {prov['finished']}"
              + (f"; training time of all its records (each chunk once, whichever run trained "
                 f"it): {prov['records_train_s']} s" if "records_train_s" in prov else "")
              + _throughput(prov),
              f"- packages: {', '.join(f'{k} {v}' for k, v in prov['packages'].items() if v)}",
              f"- python {prov['python']} on {prov['platform']}",
              "- store keys: see `result.json` (`arms.<arm>.store_keys`)",
              ""]
    return "\n".join(lines)


def _throughput(prov: dict[str, Any]) -> str:
    """The records' model-steps per second of training: what a claim at this scale costs on
    the hardware named above (benchmarks/README.md measures the engine alone)."""
    steps, seconds = prov.get("records_model_steps"), prov.get("records_train_s")
    if not steps or not seconds:
        return ""
    return f", {steps:,} model-steps: {format_number(steps / seconds)} model-steps/s"


__all__ = ["claim_lines", "figure_caption", "figure_lines", "interval", "number",
           "render_markdown", "result_lines"]
