"""Recount a planting report's figures from its raw decisions, apart from the code that made them.

    .venv/bin/python benchmarks/planting_recount.py results/planting/<model>/report.json

Reads only the report's `decisions` (each judged intent by intent, with its citations) and
recounts per arm: each plant's hits in its headline world (the wound's in the apologised world,
the others' in the planted one), the unplanted twins' hits, net hits, citations of each plant's
ID, and the fabricated citations the planted decisions record. Counts only units decided in all three worlds, as the report
does. Prints the recount beside the report's figure for every arm and column, and exits 1 on
any difference.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

PLANTS = ("wound", "promise", "identity")
WORLD_OF = {"wound": "apologised", "promise": "planted", "identity": "planted"}


def scored(d: dict, plant: str) -> int:
    return int(any(r["shaped"] for r in (d["judged"].get(plant) or [])))


def recount(report: dict) -> dict[str, dict]:
    by = defaultdict(dict)  # (arm, variant) -> {(character, seed): decision}
    for d in report["decisions"]:
        by[(d["arm"], d["variant"])][(d["character"], d["seed"])] = d
    out = {}
    for arm in dict.fromkeys(d["arm"] for d in report["decisions"]):
        units = set(by[(arm, "planted")]) & set(by[(arm, "apologised")]) & set(by[(arm, "unplanted")])
        hits = {p: sum(scored(by[(arm, WORLD_OF[p])][u], p) for u in units) for p in PLANTS}
        twin = {p: sum(scored(by[(arm, "unplanted")][u], p) for u in units) for p in PLANTS}
        cites = {p: sum(by[(arm, WORLD_OF[p])][u]["plant_ids"].get(p) in
                        {c for it in by[(arm, WORLD_OF[p])][u]["intents"] for c in it["cites"]} for u in units)
                 for p in PLANTS}
        fabricated = sum(len(by[(arm, "planted")][u]["fabricated"]) for u in units)
        out[arm] = {**{f"hits {p}": hits[p] for p in PLANTS}, "unplanted hits": sum(twin.values()),
                    "net hits": sum(hits.values()) - sum(twin.values()),
                    **{f"citations {p}": cites[p] for p in PLANTS}, "fabricated citations": fabricated}
    return out


def reported(report: dict) -> dict[str, dict]:
    return {n["arm"]: {**{f"hits {p}": n["hits"][p] for p in PLANTS}, "unplanted hits": sum(n["unplanted_hits"].values()),
                       "net hits": n["net_hits"], **{f"citations {p}": n["citations"][p] for p in PLANTS},
                       "fabricated citations": n["fabricated_citations"]} for n in report["numbers"]}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        report = json.load(fh)
    mine, theirs = recount(report), reported(report)
    differ = 0
    for arm in theirs:
        for column, figure in theirs[arm].items():
            again = mine.get(arm, {}).get(column)
            same = again == figure
            differ += not same
            print(f"{arm:12s} {column:22s} report {figure!s:>6s} recount {again!s:>6s}{'' if same else '  DIFFERS'}")
    print(f"{differ} figure(s) differ" if differ else "every figure recounted equal")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
