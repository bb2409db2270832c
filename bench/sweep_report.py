#!/usr/bin/env python3
"""Turns chtbench sweep results into one CSV, a Markdown table and a plot.

  sweep_report.py csv RUN.json... > OUT.csv     one row per run, the union of all columns
                                                 (structures report different event counts)
  sweep_report.py table OUT.csv                 Markdown: Mops/s (ratio to limit_mops) per
                                                 structure x (u, n), bytes per item, and the
                                                 2-thread / 1-thread scaling of structure and probe
  sweep_report.py plot OUT.csv OUT.png          throughput per structure, one panel per u
                                                 (gnuplot)
  sweep_report.py aborts OUT.csv OUT.png        RTM-elided structures: where their critical
                                                 sections ended (committed, or which fallback)
                                                 and their aborts per section by cause (gnuplot)
  sweep_report.py inserts OUT.csv               Markdown for `chtbench filter` sweeps
                                                 (bench/insert_sweep.sh): median construction
                                                 M inserts/s (load reached) per structure x n,
                                                 one column per fill x insert batch
"""
import csv
import json
import statistics
import subprocess
import sys
import tempfile


def flatten(obj, prefix, out):
    for key, value in obj.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            flatten(value, name, out)
        elif isinstance(value, list):
            out[name] = " ".join(json.dumps(v) for v in value)
        else:
            out[name] = "" if value is None else value


def to_csv(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for run in data if isinstance(data, list) else [data]:
            row = {}
            flatten(run, "", row)
            rows.append(row)
    columns = sorted({c for row in rows for c in row})
    writer = csv.DictWriter(sys.stdout, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def grid(rows):
    """(structures in first-seen order, sorted (u, n) columns, {(structure, u, n): row})."""
    structures, cells = [], {}
    for row in rows:
        key = (row["structure"], int(row["update_pct"]), int(row["threads"]))
        if row["structure"] not in structures:
            structures.append(row["structure"])
        cells[key] = row
    columns = sorted({(u, n) for (_, u, n) in cells})
    return structures, columns, cells


def table(path):
    rows = read(path)
    structures, columns, cells = grid(rows)
    head = ["structure"] + [f"u={u}% n={n}" for u, n in columns] + ["B/item"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for s in structures:
        line = [s]
        bytes_per_item = ""
        for u, n in columns:
            row = cells.get((s, u, n))
            if row is None:
                line.append("–")
                continue
            line.append(f"{float(row['throughput_mops']):.1f} ({float(row['ratio_to_limit']):.2f})")
            if row["bytes_per_item"]:
                bytes_per_item = f"{float(row['bytes_per_item']):.1f}"
        print("| " + " | ".join(line + [bytes_per_item]) + " |")
    pairs = [(u, n) for u, n in columns if n == 2 and (u, 1) in columns]
    if pairs:
        print()
        print("2-thread / 1-thread throughput, structure (memory probe):")
        print()
        head = ["structure"] + [f"u={u}%" for u, _ in pairs]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for s in structures:
            line = [s]
            for u, _ in pairs:
                one, two = cells.get((s, u, 1)), cells.get((s, u, 2))
                if one is None or two is None:
                    line.append("–")
                    continue
                scale = float(two["throughput_mops"]) / float(one["throughput_mops"])
                probe = float(two["limit_mops"]) / float(one["limit_mops"])
                line.append(f"{scale:.2f} ({probe:.2f})")
            print("| " + " | ".join(line) + " |")
    false_negatives = sum(int(r["false_negatives"] or 0) for r in rows if r["workload"] == "filter")
    print()
    print(f"false negatives over all filter runs: {false_negatives}")
    events = sorted({c for r in rows for c, v in r.items() if c.startswith("events_per_insert.") and v})
    if events:
        print()
        print("Events per successful insert in the timed phase:")
        print()
        head = ["structure", "u", "n"] + [e.split(".", 1)[1] for e in events]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for (s, u, n), row in sorted(cells.items(), key=lambda kv: (structures.index(kv[0][0]), kv[0][1], kv[0][2])):
            if u == 0 or not any(row.get(e) for e in events):
                continue
            values = [f"{float(row[e]):.4f}" if row.get(e) else "–" for e in events]
            print("| " + " | ".join([s, str(u), str(n)] + values) + " |")


def inserts(path):
    groups = {}
    for row in read(path):
        key = (row["structure"], int(row["threads"]))
        column = (float(row["fill"]), int(row["insert_batch"]))
        groups.setdefault(key, {}).setdefault(column, []).append(row)
    columns = sorted({c for cells in groups.values() for c in cells})

    def fill_name(fill):
        return "to the first refusal" if fill >= 1 else f"to {fill:.0%}"

    head = ["structure", "n"] + [
        f"{fill_name(f)}, {'one per call' if b == 0 else f'batches of {b}'}" for f, b in columns
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (structure, n), cells in groups.items():
        line = [structure, str(n)]
        for column in columns:
            runs = cells.get(column)
            if not runs:
                line.append("–")
                continue
            mops = statistics.median(float(r["construction_mops"]) for r in runs)
            load = statistics.median(float(r["load_factor"]) for r in runs)
            line.append(f"{mops:.1f} ({load:.3f})")
        print("| " + " | ".join(line) + " |")
    print()
    print("(median M inserts/s over the repeats, load reached in parentheses)")


def plot(path, png):
    rows = read(path)
    structures, columns, cells = grid(rows)
    updates = sorted({u for u, _ in columns})
    threads = sorted({n for _, n in columns})
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        for s in structures:
            values = []
            for u in updates:
                for n in threads:
                    row = cells.get((s, u, n))
                    values.append(row["throughput_mops"] if row else "NaN")
            data.write(s + " " + " ".join(values) + "\n")
    size = rows[0]["initial"] if rows else "?"
    batch = rows[0].get("batch", "1") if rows else "1"
    lookups = "one call per operation" if batch == "1" else f"lookups in batches of {batch}"
    script = [
        f"set terminal pngcairo size {420 * len(updates) + 200},{60 + 22 * len(structures) * 3} font ',9'",
        f"set output '{png}'",
        f"set multiplot layout 1,{len(updates)} title 'chtbench, i = {size}, {lookups}: throughput (Mops/s), one bar per thread count'",
        "set style data histograms",
        "set style histogram clustered gap 1",
        "set style fill solid 0.8 border -1",
        "set xtics rotate by -45 scale 0",
        "set grid ytics",
        "set key top right opaque box",
        "set offsets 0, 0, graph 0.12, 0",
        "set yrange [0:*]",
    ]
    for k, u in enumerate(updates):
        script.append(f"set title 'u = {u}%'")
        parts = []
        for j, n in enumerate(threads):
            col = 2 + k * len(threads) + j
            xtic = ":xtic(1)" if j == 0 else ""
            parts.append(f"'{data.name}' using {col}{xtic} title 'n = {n}'")
        script.append("plot " + ", ".join(parts))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


# The elision counters (docs/chtbench.md, "Event counts"): a section ends committed or under the
# lock, and a fallback follows a spent budget, a skip (adaptive policy), or anything else (an abort
# retrying cannot cure; every section where there is no RTM).
OUTCOMES = [("committed", lambda e: e["tx_committed"]),
            ("budget spent", lambda e: e["retries_exhausted"]),
            ("skipped", lambda e: e["skipped"]),
            ("other fallback",
             lambda e: e["lock_fallbacks"] - e["retries_exhausted"] - e["skipped"])]
ABORTS = ["aborts_conflict", "aborts_capacity", "aborts_was_locked", "aborts_bad_rop",
          "aborts_explicit", "aborts_other"]


def aborts(path, png):
    runs = []
    for row in read(path):
        if not row.get("events.tx_started"):
            continue
        events = {k.split(".", 1)[1]: int(float(v or 0)) for k, v in row.items()
                  if k.startswith("events.")}
        sections = events["tx_committed"] + events["lock_fallbacks"]
        if sections == 0:
            continue
        label = f"{row['structure']} u{row['update_pct']} n{row['threads']}"
        runs.append((label, [f(events) / sections for _, f in OUTCOMES],
                     [events[a] / sections for a in ABORTS]))
    if not runs:
        sys.exit(f"{path}: no run of an RTM-elided structure (no events.tx_started column)")
    with tempfile.NamedTemporaryFile("w", suffix=".dat", delete=False) as data:
        for label, outcome, abort in runs:
            data.write(f'"{label}" ' + " ".join(f"{v:.6f}" for v in outcome + abort) + "\n")
    machines = sorted({f"{row.get('cpu', '?')} ({row.get('rtm', '?')})" for row in read(path)
                       if row.get("events.tx_started")})
    script = [
        f"set terminal pngcairo size {900 + 12 * len(runs)},{520} font ',9'",
        f"set output '{png}'",
        "set termoption noenhanced",
        f"set multiplot layout 1,2 title 'RTM-elided structures on {'; '.join(machines)}'",
        "set style data histograms",
        "set style histogram rowstacked",
        "set style fill solid 0.8 border -1",
        "set boxwidth 0.75",
        "set xtics rotate by -60 scale 0",
        "set grid ytics",
        "set key outside top center horizontal",
        "set yrange [0:*]",
        "set title 'where each critical section ended (share of sections)'",
        "plot " + ", ".join(f"'{data.name}' using {2 + k}{':xtic(1)' if k == 0 else ''} "
                            f"title '{name}'" for k, (name, _) in enumerate(OUTCOMES)),
        "set title 'aborts per critical section, by cause'",
        "plot " + ", ".join(f"'{data.name}' using {2 + len(OUTCOMES) + k}"
                            f"{':xtic(1)' if k == 0 else ''} title '{name[7:]}'"
                            for k, name in enumerate(ABORTS)),
        "unset multiplot",
    ]
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)


def main(argv):
    if len(argv) >= 2 and argv[1] == "csv":
        to_csv(argv[2:])
    elif len(argv) == 3 and argv[1] == "table":
        table(argv[2])
    elif len(argv) == 3 and argv[1] == "inserts":
        inserts(argv[2])
    elif len(argv) == 4 and argv[1] == "plot":
        plot(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "aborts":
        aborts(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
