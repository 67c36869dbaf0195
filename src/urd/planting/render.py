"""The planting tables (Markdown, CSV, HTML from one document) and figure, from reports alone."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_text, sha256_file
from ..core.provenance import NOT_BY_THE_WORKFLOW
from ..tables.render import Doc, csv_text
from ..tables.sources import sandbox_line
from .report import NOT_CALIBRATED
from .world import PLANTS

HEADER = ["model", "arm", "prompt tokens (median)", "wound (apologised world)", "wound 95% CI", "promise", "promise 95% CI", "identity",
          "identity 95% CI", "unplanted hits", "unplanted 95% CI", "net hits", "net hits 95% CI",
          "net hits per 1K tokens", "per 1K 95% CI", "strategy tokens (median)",
          "net hits per 1K tokens incl. strategy", "citations w/p/i", "judged w/p/i",
          "fabricated citations (not shown / no such event)", "fabricated 95% CI", "off protocol (replies / judge)",
          "short replies", "crowded out w/p/i", "wound: not apologised - apologised"]
HARNESS = "scripted"  # the offline tables: they test the harness, not a model


def tabulable(path, report: dict) -> dict:
    """A report the tables may show: a stopped or failed run's is kept for reading, never tabulated."""
    if report.get("status") in ("stopped", "failed"):
        stop = report.get("stop") or {}
        raise InputError(path, "status", "a complete or incomplete run (a stopped or failed run's report is kept "
                         "for reading, not tabulated; fix what it names, then rerun with --forcerun planting_run)",
                         f"{report['status']} at the {stop.get('at')}: {stop.get('why')}")
    return report


def _calibrated(report: dict) -> bool:
    """Whether a live report's judge was calibrated on the characters' own misjudgements
    (reports before the field: not)."""
    return bool(report.get("calibration_set", {}).get("calibrated_on_own_misjudgements"))


def _label(model: str) -> str:
    return f"{model} (tests the harness, not a model)" if model == HARNESS else model


def _ci(iv: dict) -> str:
    return "n/a" if iv["low"] is None else f"{iv['low']:.4g} to {iv['high']:.4g}"


def _signed(x) -> str:
    return "n/a" if x is None else f"{x:+g}"


def _na(x) -> object:
    return "n/a" if x is None else x


def rows(report: dict) -> list[list]:
    out = []
    for n in report["numbers"]:
        cf = n["counterfactual_wound"]
        hits_iv = n.get("hits_interval", {})  # reports before the per-count intervals: n/a
        out.append([report["model"], n["arm"], _na(n["prompt_tokens_median"]),
                    *(x for p in PLANTS for x in (n["hits"][p], _ci(hits_iv[p]) if p in hits_iv else "n/a")),
                    sum(n["unplanted_hits"].values()),
                    _ci(n["unplanted_hits_interval"]) if "unplanted_hits_interval" in n else "n/a",
                    _na(n["net_hits"]), _ci(n["net_hits_interval"]),
                    _na(n["net_hits_per_1k_tokens"]), _ci(n["net_hits_per_1k_tokens_interval"]),
                    _na(n.get("strategy_tokens_median")),
                    _na(n.get("net_hits_per_1k_total_tokens")), "/".join(str(n["citations"][p]) for p in PLANTS),
                    "/".join(str(n["judged_influence"][p]) for p in PLANTS),
                    f"{n['fabricated_citations']} ({n['fabricated_not_shown']} / {n['fabricated_no_such_event']})",
                    _ci(n["fabricated_citations_interval"]) if "fabricated_citations_interval" in n else "n/a",
                    f"{n['unparsed_decisions']} / {n['judge_off_protocol']}", n["short_replies"],
                    "/".join(str(n["crowded_out"][p]) for p in PLANTS) if "crowded_out" in n else "n/a",
                    f"{cf['difference']['point']:g} ({_ci(cf['difference'])})" if cf["difference"]["point"] is not None
                    else "n/a"])
    return out


def document(reports: list[tuple[str, dict]]) -> Doc:
    harness = any(rep["model"] == HARNESS for _, rep in reports)
    # the study's open weakness, in the title where it holds: the judge is the characters' relative
    same = sorted({rep["model"] for _, rep in reports if rep["model"] != HARNESS
                   and rep.get("judge_model", {}).get("relation", "same model") == "same model"})
    uncalibrated = sorted({rep["model"] for _, rep in reports if rep["model"] != HARNESS and not _calibrated(rep)})
    doc = Doc("Planting: context strategies judged by behaviour"
              + (" (the scripted arm: a test of the harness, not findings about a model)" if harness else "")
              + (f" (judged by the characters' own model: {', '.join(same)})" if same else "")
              + (f" ({NOT_CALIBRATED}: {', '.join(uncalibrated)})" if uncalibrated else ""))
    if harness:
        doc.para("The scripted arm's characters, summarizer and judge are fixed tables (urd.planting.scripted): its "
                 "rows show that the harness counts, subtracts and credits correctly, not how any model behaves.")
    doc.para("Hits are out of the planted decisions of each arm (characters x seeds), the wound's out of the "
             "apologised world's (the study's wound was apologised; not apologised minus apologised is the last "
             "column): a plant scores when the judge ruled it shaped any of the decision's three intents. Net hits subtract the unplanted twin's hits (the "
             "same world with the plants replaced by ordinary filler). Citations count decisions citing the plant's "
             "ID, beside the judge's hits; fabricated citations are cited IDs the decision's prompt did not show: a "
             "real event the arm summarised or dropped (not shown), or no such event at all. Net hits per "
             "1K tokens divide by the median decision prompt, as the write-up does; strategy tokens are what "
             "building the context asked besides (a summary, a retrieval), and the last per-1K figure divides by "
             "the median of both. Off protocol: decisions whose reply could not be read, and judge replies off "
             "their grammar (neither scores); short replies gave fewer than three intents. Intervals: a two-stage "
             "bootstrap (characters, then seeds within them).")
    for _, rep in reports:
        crowding = rep.get("slot_crowding") or {}
        if crowding.get("identity_readable_alone") is False:
            doc.para(f"{_label(rep['model'])}: the identity column is not readable on its own. {crowding['why']}. "
                     "A decision has three intent slots; where promises and wounds take all three, identity cannot score.")
    all_rows = [r for _, rep in reports for r in rows(rep)]
    doc.table(HEADER, [[str(c) for c in r] for r in all_rows], "ll" + "r" * (len(HEADER) - 2))
    for path, rep in reports:
        doc.heading(f"{_label(rep['model'])}: {rep['status']}")
        facts = [f"report {path} (SHA-256 {sha256_file(path)})",
                 f"world {rep['world']['path']} (SHA-256 {rep['world']['sha256']}), "
                 f"{len(rep['world']['characters'])} characters x {rep['world']['seeds']} seeds",
                 f"judge calibration set v{rep['calibration_set']['version']} (SHA-256 {rep['calibration_set']['sha256']})"
                 + (f": {rep['calibration']['correct']}/{rep['calibration']['items']} (required "
                    f"{rep['calibration']['required']}), {rep['calibration']['intents_per_call']} intents a call"
                    if rep["calibration"] else "")
                 + "; hard negatives " + ", ".join(f"{n} {o}" for o, n in
                                                   rep["calibration_set"].get("hard_negatives", {}).items()),
                 f"baseline gate: at most {rep['gate']['max_unplanted_hits']}/{rep['gate']['seeds']} unplanted hits a "
                 f"plant ({rep['gate']['max_unplanted']} of the seeds); worst {rep['gate']['worst']['hits']}"
                 if rep.get("gate") and "seeds" in rep["gate"] else "baseline gate: not reached",
                 f"prompt tokens: {rep['numbers'][0]['prompt_tokens_source']}" if rep["numbers"] else "no decisions",
                 f"95% CI: {rep['interval_method']['method']}, {rep['interval_method']['resamples']} resamples",
                 f"spent US${rep['meter']['spent_usd']:.2f} at list prices ({rep['meter']['calls']} calls)"]
        if rep["stop"]:
            facts.append(f"stopped at the {rep['stop']['at']}: {rep['stop']['why']}")
        lay = rep.get("layered_layout")
        if lay:
            facts.append(f"layered: terms {lay['distant_terms']} only in {', '.join(lay['keep_categories']) or 'no category'}"
                         f" (plants kept there: {', '.join(lay['plants_kept_in_distant_past']) or 'none'}; dropped: "
                         f"{', '.join(lay['plants_dropped_from_distant_past']) or 'none'}), terms {lay['summary_terms']} "
                         f"summarised, terms {lay['current_terms']} verbatim")
            seeded = lay.get("seeded_keep")
            if seeded:
                facts.append(f"sensitivity: {', '.join(seeded['arms'])} keeps as many categories drawn by each world's "
                             "seed, not chosen knowing the plants (" + "; ".join(
                                 f"seed {k}: {', '.join(v)}" for k, v in seeded["keep_categories_by_seed"].items())
                             + "); its credit against the study's arm is `keep`")
        if rep.get("scripted_note"):
            facts.append(rep["scripted_note"])
        facts.append(sandbox_line(rep.get("sandbox") or NOT_BY_THE_WORKFLOW))
        doc.bullets(facts)
        credits = [f"{c['factor']} ({c['from']} -> {c['to']}): net hits {c['credit']['net_hits']:+d} "
                   f"({_ci(c['intervals']['net_hits'])}); per 1K tokens {_signed(c['net_hits_per_1k_tokens'])} "
                   f"({_ci(c['intervals']['net_hits_per_1k_tokens'])}); net per plant: "
                   + ", ".join(f"{p} {c['credit'][p]:+d} ({_ci(c['intervals'][p])})" for p in PLANTS)
                   for c in rep["factor_credits"]]
        credits += [f"not credited: {r['from']} -> {r['to']} " + (f"differ in {', '.join(r['differ_in'])}" if r["differ_in"]
                    else "declare the same features") for r in rep["not_credited"]]
        if credits:
            doc.heading("Factor credits (arms that differ in exactly one feature)", 3)
            doc.bullets(credits)
    return doc


def write_tables(reports: list[tuple[str, dict]], md: Path, csv: Path, html: Path) -> None:
    doc = document(reports)
    atomic_write_text(md, doc.markdown())
    atomic_write_text(html, doc.html())
    atomic_write_text(csv, csv_text(HEADER, [r for _, rep in reports for r in rows(rep)]))


def write_figure(reports: list[tuple[str, dict]], png: Path, dpi: int = 120) -> None:
    """Net hits per arm with their 95 % intervals, one panel per model."""
    from ..tables.figures import COLORS, STYLE, plt, save_png

    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(reports), figsize=(4.2 * len(reports), 3.2), squeeze=False)
        for ax, (_, rep) in zip(axes[0], reports):
            nums = rep["numbers"]
            names = [n["arm"] for n in nums]
            net = [n["net_hits"] or 0 for n in nums]  # an arm with no paired unit draws no bar
            ivs = [n["net_hits_interval"] for n in nums]
            lo = [max(0.0, v - iv["low"]) if iv["low"] is not None else 0.0 for v, iv in zip(net, ivs)]
            hi = [max(0.0, iv["high"] - v) if iv["high"] is not None else 0.0 for v, iv in zip(net, ivs)]
            ax.bar(range(len(nums)), net, color=COLORS[: len(nums)], yerr=[lo, hi], capsize=3)
            for i, n in enumerate(nums):
                per = n["net_hits_per_1k_tokens"]
                ax.text(i, 0, "n/a" if per is None else f"{per}/1K", ha="center", va="bottom", fontsize=7)
            ax.set_xticks(range(len(nums)), names)
            ax.set_ylabel("net hits (95% CI)")
            ax.set_title(f"{rep['model']}: harness test, not a model" if rep["model"] == HARNESS
                         else f"{rep['model']} ({rep['status']})" + ("" if _calibrated(rep) else f"\n{NOT_CALIBRATED}"),
                         fontsize=9)
        fig.tight_layout()
        save_png(fig, png, dpi)
