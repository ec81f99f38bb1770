#!/usr/bin/env python3
"""What the simulation shows (seed 003's `sim_analysis`): findings, plots as hand-written SVG,
and a Markdown report.

    python3 tests/simulation/sim_analysis.py                 # reads docs/simulation/data/, writes docs/simulation/
    python3 tests/simulation/sim_analysis.py --data /tmp/sim --out /tmp/sim

`findings(results)` is the judged part (the CI test asserts the direction of each finding on a
short run); everything else draws and writes. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOCS = ROOT / "docs" / "simulation"
APPLY, VERIFY = 0.8, 0.5           # seed 003: >= 0.8 apply; 0.5-0.79 apply and verify; < 0.5 reference only
MIN_FEEDBACK = 10                  # a card judged for tracking needs this much feedback
RECENT = 20                        # applications that make a card's usefulness "as applied" (EWA's memory)
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")


# ---------------------------------------------------------------------------- numbers

def ranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (sx * sy) if sx and sy else float("nan")


def spearman(xs: list[float], ys: list[float]) -> float:
    return pearson(ranks(xs), ranks(ys))


def usefulness_at(card: dict, day: int) -> float:
    value = card["usefulness"][0][1]
    for start, u in card["usefulness"]:
        if start <= day:
            value = u
    return value


def first_day(series: list, start: int, below: float) -> int | None:
    for day in range(start, len(series)):
        if series[day] is not None and series[day] < below:
            return day
    return None


def by_key(result: dict) -> dict[str, str]:
    return {card["key"]: card_id for card_id, card in result["cards"].items()}


def findings(results: dict[str, dict]) -> dict:
    """The judged numbers of each scenario run, and of the rejecter against the baseline."""
    out: dict = {}
    for name, result in results.items():
        cards, series, last = result["cards"], result["series"], result["days"] - 1
        keys = by_key(result)
        # What EWA tracks is the share of `used` where a card is applied: its usefulness for its own
        # problem, less where a search put it before agents with other problems. So each judged
        # card is compared with the mean chance of its last RECENT applications ("as applied"), and
        # also, for the record, with its usefulness for its own problem.
        judged = [(sum(p for _, p in c["applied"][-RECENT:]) / len(c["applied"][-RECENT:]), usefulness_at(c, last),
                   series[i][last], c["key"]) for i, c in cards.items()
                  if c["used"] + c["rejected"] >= MIN_FEEDBACK and series.get(i) and series[i][last] is not None]
        found: dict = {"judged_cards": len(judged)}
        if len(judged) >= 3:
            applied, own, conf = [j[0] for j in judged], [j[1] for j in judged], [j[2] for j in judged]
            found["spearman"] = round(spearman(applied, conf), 3)
            found["pearson"] = round(pearson(applied, conf), 3)
            found["mean_abs_gap"] = round(sum(abs(a - c) for a, c in zip(applied, conf)) / len(judged), 3)
            found["spearman_own_topic"] = round(spearman(own, conf), 3)
        found["points"] = [{"key": k, "usefulness": round(a, 3), "own_usefulness": u, "confidence": c}
                           for a, u, c, k in judged]
        for day, key, value in result["changes"]:
            wrong = series[keys[key]]
            before = wrong[day - 1] if day > 0 else None
            below_apply = first_day(wrong, day, APPLY)
            below_verify = first_day(wrong, day, VERIFY)
            found["became_wrong"] = {
                "key": key, "day": day, "usefulness_after": value, "confidence_before": before,
                "days_to_below_apply": None if below_apply is None else below_apply - day,
                "days_to_below_verify": None if below_verify is None else below_verify - day,
                "confidence_end": wrong[last]}
        stale = keys.get("tf-rename")
        if stale and series.get(stale):
            values = series[stale]
            quiet = result["stale_until"]
            fades = quiet + result["decay_after_days"]
            peak_day = max(range(len(values)), key=lambda d: -1 if values[d] is None else values[d])
            found["stale"] = {"key": "tf-rename", "last_asked_day": quiet, "decay_from_day": fades,
                              "confidence_last_asked": values[min(quiet, last)],
                              "confidence_decay_starts": values[min(fades, last)], "confidence_end": values[last],
                              "peak": values[peak_day]}
        for day, key, copies in result.get("floods", []):
            original = keys[key]
            dups = [i for i, c in cards.items() if c["kind"] == "duplicate"]
            flagged = sum(1 for d in result["duplicates"] if d["potential_duplicates"] > 0)
            feedback_to_copies = sum(cards[i]["used"] + cards[i]["rejected"] for i in dups)
            original_fb = cards[original]["used"] + cards[original]["rejected"]
            found["duplicates"] = {"key": key, "day": day, "copies": copies, "flagged_at_create": flagged,
                                   "feedback_to_copies": feedback_to_copies, "feedback_to_original": original_fb,
                                   "original_end": series[original][last],
                                   "copies_end": sorted(series[i][last] for i in dups if series[i][last] is not None),
                                   "near_duplicate_pairs_in_analyze": result["health"]["issues"].get("near_duplicates", 0)}
        found["promotion"] = {"misses": result["misses"], "learned": result["learned"],
                              "promoted": [(p["day"], p["title"]) for p in result["promoted"]],
                              "inbox_end": result["inbox"][-1] if result["inbox"] else 0}
        out[name] = found
    if "baseline" in results and "with_rejecter" in results:
        base, rej = results["baseline"], results["with_rejecter"]
        last = base["days"] - 1
        pairs = []
        for key, base_id in by_key(base).items():
            rej_id = by_key(rej).get(key)
            card = base["cards"][base_id]
            if card["kind"] != "seed" or rej_id is None or usefulness_at(card, last) < 0.7:
                continue
            pairs.append((key, base["series"][base_id][last], rej["series"][rej_id][last]))
        out["rejecter"] = {"share": rej["rejecter_share"], "good_cards": [
            {"key": k, "baseline": b, "with_rejecter": r} for k, b, r in pairs],
            "mean_drop": round(sum(b - r for _, b, r in pairs) / len(pairs), 3) if pairs else None}
    return out


# ---------------------------------------------------------------------------- SVG by hand

W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 360, 60, 170, 40, 50


def _frame(title: str, x_label: str, y_label: str, x_max: float, y_max: float = 1.0) -> list[str]:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{W / 2 - RIGHT / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    px0, py0, px1, py1 = LEFT, H - BOTTOM, W - RIGHT, TOP
    parts.append(f'<line x1="{px0}" y1="{py0}" x2="{px1}" y2="{py0}" stroke="black"/>')
    parts.append(f'<line x1="{px0}" y1="{py0}" x2="{px0}" y2="{py1}" stroke="black"/>')
    for i in range(6):
        y = y_max * i / 5
        yy = py0 - (py0 - py1) * i / 5
        parts.append(f'<line x1="{px0 - 4}" y1="{yy:.1f}" x2="{px1}" y2="{yy:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{px0 - 8}" y="{yy + 4:.1f}" text-anchor="end">{y:.1f}</text>')
    step = _nice_step(x_max)
    x = 0.0
    while x <= x_max + 1e-9:
        xx = px0 + (px1 - px0) * x / x_max
        parts.append(f'<text x="{xx:.1f}" y="{py0 + 16}" text-anchor="middle">{x:g}</text>')
        x += step
    parts.append(f'<text x="{(px0 + px1) / 2}" y="{H - 12}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(f'<text x="16" y="{(py0 + py1) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(py0 + py1) / 2})">{escape(y_label)}</text>')
    return parts


def _nice_step(span: float) -> float:
    raw = span / 8
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def _xy(x: float, y: float, x_max: float, y_max: float = 1.0) -> tuple[float, float]:
    return (LEFT + (W - RIGHT - LEFT) * x / x_max, H - BOTTOM - (H - BOTTOM - TOP) * y / y_max)


def line_chart(path: Path, title: str, lines: list[tuple[str, list]], x_label: str, y_label: str,
               hlines: tuple = (), vlines: tuple = ()) -> None:
    x_max = max(len(values) for _, values in lines) - 1 or 1
    parts = _frame(title, x_label, y_label, x_max)
    for y, label in hlines:
        x0, yy = _xy(0, y, x_max)
        x1, _ = _xy(x_max, y, x_max)
        parts.append(f'<line x1="{x0}" y1="{yy:.1f}" x2="{x1}" y2="{yy:.1f}" stroke="#999" stroke-dasharray="4 3"/>')
        parts.append(f'<text x="{x1 - 4}" y="{yy - 4:.1f}" text-anchor="end" fill="#666">{escape(label)}</text>')
    for x, label in vlines:
        xx, y0 = _xy(x, 0, x_max)
        _, y1 = _xy(x, 1, x_max)
        parts.append(f'<line x1="{xx:.1f}" y1="{y0}" x2="{xx:.1f}" y2="{y1}" stroke="#bbb" stroke-dasharray="2 3"/>')
        parts.append(f'<text x="{xx + 3:.1f}" y="{y1 + 12}" fill="#666">{escape(label)}</text>')
    for n, (label, values) in enumerate(lines):
        color = COLORS[n % len(COLORS)]
        points = [_xy(x, y, x_max) for x, y in enumerate(values) if y is not None]
        if points:
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8" points="'
                         + " ".join(f"{a:.1f},{b:.1f}" for a, b in points) + '"/>')
        ly = TOP + 14 + 18 * n
        parts.append(f'<line x1="{W - RIGHT + 12}" y1="{ly - 4}" x2="{W - RIGHT + 32}" y2="{ly - 4}" '
                     f'stroke="{color}" stroke-width="3"/>')
        parts.append(f'<text x="{W - RIGHT + 38}" y="{ly}">{escape(label)}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")


def scatter(path: Path, title: str, groups: list[tuple[str, list[tuple[float, float]]]], x_label: str,
            y_label: str) -> None:
    parts = _frame(title, x_label, y_label, 1.0)
    x0, y0 = _xy(0, 0, 1)
    x1, y1 = _xy(1, 1, 1)
    parts.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#999" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{x1 - 4}" y="{y1 + 14}" text-anchor="end" fill="#666">confidence = usefulness</text>')
    for n, (label, points) in enumerate(groups):
        color = COLORS[n % len(COLORS)]
        for x, y in points:
            cx, cy = _xy(x, y, 1)
            parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{color}" fill-opacity="0.75"/>')
        ly = TOP + 14 + 18 * n
        parts.append(f'<circle cx="{W - RIGHT + 22}" cy="{ly - 4}" r="5" fill="{color}"/>')
        parts.append(f'<text x="{W - RIGHT + 38}" y="{ly}">{escape(label)}</text>')
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------- the report

def write_report(results: dict[str, dict], found: dict, out: Path, command: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    base = results.get("baseline") or next(iter(results.values()))
    keys, series, days = by_key(base), base["series"], base["days"]
    scatter(out / "tracking.svg", "Final confidence against true usefulness as applied (10+ feedback)",
            [(name, [(p["usefulness"], p["confidence"]) for p in found[name]["points"]])
             for name in results], "true usefulness as applied (last 20 applications)", "effective confidence")
    wrong = found[base["scenario"]].get("became_wrong")
    if wrong:
        lines = [(f"{wrong['key']} ({name})", results[name]["series"][by_key(results[name])[wrong["key"]]])
                 for name in results]
        line_chart(out / "became_wrong.svg", f"A card that becomes wrong on day {wrong['day']}", lines, "day",
                   "effective confidence", hlines=((APPLY, "apply"), (VERIFY, "verify")),
                   vlines=((wrong["day"], "becomes wrong"),))
    if "tf-rename" in keys:
        quiet, fades = base["stale_until"], base["stale_until"] + base["decay_after_days"]
        line_chart(out / "decay.svg", f"Decay: a card whose topic stops coming up on day {quiet}",
                   [("tf-rename (stale)", series[keys["tf-rename"]]),
                    ("rds-sg (in use)", series[keys["rds-sg"]])], "day", "effective confidence",
                   hlines=((APPLY, "apply"), (VERIFY, "verify"), (0.1, "floor")),
                   vlines=((quiet, "last asked"), (fades, f"+{base['decay_after_days']} days")))
    inbox_max = max(base["inbox"] + [1])
    line_chart(out / "inbox.svg", "Inbox backlog (candidates) and promotions",
               [("Inbox candidates / max", [v / inbox_max for v in base["inbox"]])]
               + [(f"lesson {p['title'][:18]}...", series.get(p["id"], [])) for p in base["promoted"]],
               "day", "share of max / confidence",
               vlines=tuple((p["day"], "promoted") for p in base["promoted"]))
    dup = found[base["scenario"]].get("duplicates")
    if dup:
        dup_lines = [(dup["key"] + " (original)", series[keys[dup["key"]]])]
        for card_id, card in base["cards"].items():
            if card["kind"] == "duplicate" and card["used"] + card["rejected"] > 0:
                dup_lines.append((card["key"], series[card_id]))
        line_chart(out / "duplicates.svg", f"A flood of {dup['copies']} near duplicates on day {dup['day']}",
                   dup_lines[:8], "day", "effective confidence", vlines=((dup["day"], "flood"),))
    rejecter = found.get("rejecter")
    lines_md = [
        "# Simulation: how confidence behaves under use",
        "",
        "Seed 003's simulation suite (`tests/simulation/`): simulated agents use a real vault over simulated",
        "months through the library the doors call, on the product's own clock seam (`$BRAIN_NOW`). Each",
        "card has a hidden true usefulness (the chance that an agent who applies it finds that it helped);",
        "agents search, pick one of the top three hits (the more confident, the more often), read it and",
        "record `used` or `rejected` drawn from that usefulness. Produced by:",
        "",
        f"    {command}",
        "",
        "which took " + ", ".join(f"{r.get('seconds', '?')} s for {n}" for n, r in results.items())
        + " (2 cores shared with other work). The CI runs a short form (`tests/test_simulation.py`: 70 days, "
        "4 sessions a day, a 15-day decay threshold) and asserts the direction of each finding below.",
        "",
        "| scenario | days | sessions | cards at the end | judged cards | Spearman (usefulness as applied, confidence) "
        "| mean gap | Spearman (own-topic usefulness, confidence) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        f = found[name]
        lines_md.append(f"| {name} | {result['days']} | {result['sessions']} | {len(result['cards'])} | "
                        f"{f['judged_cards']} | {f.get('spearman')} | {f.get('mean_abs_gap')} | "
                        f"{f.get('spearman_own_topic')} |")
    lines_md += ["", "## Does confidence track true usefulness?", "", "![tracking](tracking.svg)", ""]
    f = found[base["scenario"]]
    lines_md.append(
        f"In `{base['scenario']}`, the {f['judged_cards']} cards with {MIN_FEEDBACK}+ feedback events end with a "
        f"confidence whose rank order follows their true usefulness as applied (the mean chance of help over "
        f"their last {RECENT} applications; Spearman {f.get('spearman')}, Pearson {f.get('pearson')}, mean gap "
        f"{f.get('mean_abs_gap')}); against each card's usefulness for its own problem, Spearman "
        f"{f.get('spearman_own_topic')}. The two differ by how often search puts a card before agents with other "
        "problems (it shares a word with their query: in this world the Kafka question finds the ALB card through "
        "`keep`), where it rarely fits (usefulness 0.1): confidence counts those rejections too, so it measures how "
        "often a card helps where it is actually offered, not how right it is. EWA with alpha 0.1 converges to "
        "that share with the noise of its last ten or so events. A card that gets little traffic stays near its "
        f"start (0.5) whatever it is worth ({sum(1 for c in base['cards'].values() if c['used'] + c['rejected'] < MIN_FEEDBACK)}"
        f" of the {len(base['cards'])} cards had under {MIN_FEEDBACK} feedback events), and agents' preference "
        "for confident cards keeps it rarely picked.")
    if wrong:
        lines_md += ["", "## A card that becomes wrong", "", "![became wrong](became_wrong.svg)", "",
                     f"`{wrong['key']}` was right (usefulness 0.9) until day {wrong['day']}, then wrong "
                     f"({wrong['usefulness_after']}). It stood at {wrong['confidence_before']} the day before. It fell "
                     f"below `apply` ({APPLY}) "
                     + ("at once (it was already under)" if wrong["days_to_below_apply"] == 0
                        else f"{wrong['days_to_below_apply']} day(s) later")
                     + f" and below `verify` ({VERIFY}, reference only) {wrong['days_to_below_verify']} day(s) later, "
                     "and ended at "
                     f"{wrong['confidence_end']}. Each rejection moves it by a tenth of the distance to 0: from 0.85 "
                     "it takes about 6 rejections to go under 0.5, so how many days that is depends only on how "
                     "often the card is applied."]
        if "with_rejecter" in found and found["with_rejecter"].get("became_wrong"):
            w2 = found["with_rejecter"]["became_wrong"]
            lines_md.append(f"With the rejecting agent present it started lower ({w2['confidence_before']}) and "
                            f"went under `verify` in {w2['days_to_below_verify']} day(s).")
    stale = f.get("stale")
    if stale:
        lines_md += ["", "## Decay", "", "![decay](decay.svg)", "",
                     f"`tf-rename`'s topic stops coming up after day {stale['last_asked_day']}. Its effective "
                     f"confidence stays at {stale['confidence_last_asked']} until {base['decay_after_days']} days after "
                     f"its last reference (day {stale['decay_from_day']}: {stale['confidence_decay_starts']}), then "
                     f"fades by 0.05 per 30 days (end: {stale['confidence_end']}), never below the floor 0.1. Reads "
                     "compute the decay and never write it; a single `get` restarts the clock, `record` stores the "
                     "decayed value before applying the feedback. A card nobody needs any more fades the same way "
                     "as one that is no longer true: decay cannot tell them apart, feedback can."]
    promo = f["promotion"]
    lines_md += ["", "## Lessons through the Inbox and promotion", "", "![inbox](inbox.svg)", "",
                 f"Searches with no hit: {promo['misses']} (each a search-miss candidate in the Inbox, by the "
                 f"product); lessons learned into the Inbox after a miss: {promo['learned']}. `promote --auto` (weekly) "
                 f"promoted {len(promo['promoted'])}: " + ", ".join(f"day {d}: {t}" for d, t in promo["promoted"])
                 + f". The Inbox ends with {promo['inbox_end']} candidate(s): search-miss candidates have empty "
                 "Problem and Solution sections, so they never score over the bar and wait for a person; a learned "
                 "lesson is promoted once it is seen twice (completeness 1.0, evidence 0.5: score 0.8 >= 0.7). "
                 "A promoted card starts at 0.5 like any other and earns its confidence from then on."]
    if dup:
        lines_md += ["", "## A flood of duplicates", "", "![duplicates](duplicates.svg)", "",
                     f"On day {dup['day']}, {dup['copies']} near copies of `{dup['key']}` were created. "
                     f"`create` reported a potential duplicate for {dup['flagged_at_create']} of them, and `analyze` "
                     f"counts {dup['near_duplicate_pairs_in_analyze']} near-duplicate pair(s) at the end. Feedback "
                     f"after the flood: {dup['feedback_to_copies']} events went to the copies, "
                     f"{dup['feedback_to_original']} (over the whole run) to the original. The copies split the "
                     "topic's traffic, so each gathers evidence slowly and stays near 0.5 (ends: "
                     f"{', '.join(str(v) for v in dup['copies_end'][:6])}...) while the original ends at "
                     f"{dup['original_end']}: duplicates dilute feedback; `merge` (seed 000's merge_memories) folds "
                     "them back into one card."]
    if rejecter:
        lines_md += ["", "## An agent that always rejects", "",
                     f"With {round(100 * rejecter['share'])}% of sessions run by an agent that rejects every card, "
                     "the good cards (usefulness >= 0.7) end lower: " + ", ".join(
                         f"`{g['key']}` {g['baseline']} -> {g['with_rejecter']}" for g in rejecter["good_cards"])
                     + f" (mean drop {rejecter['mean_drop']}). EWA converges to the share of `used`, so a rejecter "
                     "with share r pulls every card it touches towards usefulness x (1 - r): it cannot be told from "
                     "honest bad news by confidence alone. The log names each event's actor, so `history` shows "
                     "whose rejections they were; per-agent keys make that actor trustworthy."]
    lines_md += ["", "## The data", "", "Raw results: `data/<scenario>.json` (each card's hidden usefulness over time, its "
                 "feedback counts and its effective confidence each day). Findings as numbers:", "", "```json",
                 json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "points"} for k, v in found.items()},
                            indent=1, sort_keys=True), "```", ""]
    report = out / "README.md"
    report.write_text("\n".join(lines_md), encoding="utf-8")
    return report


def load(data: Path) -> dict[str, dict]:
    results = {}
    for path in sorted(data.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        results[result["scenario"]] = result
    if not results:
        raise SystemExit(f"no results in {data}; run tests/simulation/sim_driver.py first")
    return dict(sorted(results.items(), key=lambda kv: kv[0] != "baseline"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DOCS / "data")
    parser.add_argument("--out", type=Path, default=DOCS)
    parser.add_argument("--command", default="python3 tests/simulation/sim_driver.py && "
                                             "python3 tests/simulation/sim_analysis.py")
    args = parser.parse_args(argv)
    results = load(args.data)
    found = findings(results)
    report = write_report(results, found, args.out, args.command)
    for name, f in found.items():
        if name == "rejecter":
            print(f"rejecter: mean drop of good cards {f['mean_drop']}")
            continue
        print(f"{name}: spearman {f.get('spearman')}, gap {f.get('mean_abs_gap')}, became wrong -> below verify in "
              f"{(f.get('became_wrong') or {}).get('days_to_below_verify')} days")
    print(f"report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
