"""The step model against real machines: Fugaku's allreduce timings (the package's fugaku_allreduce.csv), every
variant predicted after fitting the others (leave one variant out), per run.

Each run's rows become a calibrate CSV (``algorithm,ranks,bytes,seconds,ports,implementation``): Fujitsu
MPI's forced ring and recursive doubling (implementation ``fujitsu-mpi``), Swing over MPI point-to-point
(``libswing-mpi``), Swing and recursive doubling over uTofu RDMA (``libswing-utofu``, one thread and one network
interface per port). ``directcoll calibrate``'s default fit starts from the ``fugaku-4x4x4`` preset's published
figures (Tofu-D's 6.8 GB/s links and 0.49 us Put latency, kept) and its libraries' structure (threads, code
paths), not the overheads it ships: it fits the per-hop latency shared by all rows and each implementation's
software terms (per call, per port, per message, per byte copied, gamma, bandwidth efficiency, what a code path
adds), and leaves each variant out in turn: its times are predicted by a fit of the others. The tables give the
error of those predictions and the winner, measured and predicted, at every size of 64 KiB and more.

Left out, with the reason printed: Fujitsu's default (its algorithm is not known), its algorithms without a
schedule here (trix3, trix6, rdbc, nonoverlapping, basic_linear) or whose segment size is not recorded
(segmented_ring), Fujitsu at one element (every algorithm takes the same time: the forced one does not run),
Fujitsu's ring below one element per rank (Open MPI's ring runs recursive doubling there), ``bw`` (each block of
a step sent as its own message; ``bw_cont``, one contiguous message per step and port, is the schedule's message
structure), uTofu segments other than 1 MiB (the model has no segments; 1 MiB is the one every run has), and rows
with more ports than 2D on the run's network (the library's further plain and mirrored collectives over the same
links) where the links alone take 10 % or more of the measured time: the model has their software (per call, per
thread, per port) but not how the extra collectives share the links.

The network: the torus each job declared, unless some cells are measured faster than its links alone allow (link
time at Tofu-D's rate, no latency or software cost). Then the job did not run on that network: a job declared as
a 1D torus of N nodes runs on a block of Tofu-D's 6D mesh/torus, its ring laid along a Hamiltonian cycle (Tofu's
virtual torus), and which block was not recorded. The script tries the blocks of N nodes, sparsest first (fewest
links: 2x8, 4x4, 2x2x4, 2x2x2x2 for 16 nodes), the ranks along a Gray code (``placed(torus:N,mesh:...,order=gray)``),
and takes the first that no measured time beats; the table of candidates is printed with the run.

Where a run timed Fujitsu's algorithms, the script also follows the held-out protocol through the command line,
as an outside check would run it: ``directcoll calibrate`` on Fujitsu's ring and recursive doubling and Swing's
bandwidth path over uTofu at 1 and 6 ports (from the same base as above, written as a parameters file), then
``directcoll schedule`` and ``directcoll simulate --implementation`` for every variant, scored on the variants
left out (error) and on all of them (winners).

With ``--fit-injection`` the NIC's injection cap (``host_injection``: what a rank's ports send in all) is fitted
too, instead of kept at Tofu-D's 6 x 6.8 GB/s.

Run: python3 benchmarks/real_machines.py [--out DIR] [--runs RUN,...] [--json FILE] [--figure PNG] [--fit-injection]
"""

from __future__ import annotations

import csv
import io
import json
import sys
import tempfile
import time
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchcli  # noqa: E402

ESTIMATE = "a few minutes (one fit per variant and run)"
#: rows with more ports than 2D are used where the links alone take less than this share of their measured time
SOFTWARE_SHARE = 0.1
#: cells at and above this size are scored (the sizes where the network, not only software, sets the time)
SCORED = 64 * 1024
#: variant -> (algorithm[:variant], implementation); None: left out (the reason)
FUJITSU = {"fjmpi_ring": "ring:unidirectional", "fjmpi_recursive_doubling": "recursive-doubling:latency"}
SWING = {"lat": "swing:latency", "bw_cont": "swing:bandwidth", "lat_utofu": "swing:latency",
         "bw_utofu": "swing:bandwidth", "lat_recdoub_utofu": "recursive-doubling:latency",
         "bw_recdoub_utofu": "recursive-doubling:bandwidth"}
SEGMENT = 1 << 20


def load_rows() -> list[dict]:
    """The packaged medians, as dicts of the CSV's columns."""
    text = (resources.files("directcoll.catalog") / "data" / "fugaku_allreduce.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def mapped(row: dict) -> tuple[str, str] | str:
    """(algorithm[:variant], implementation) of a row, or the reason it is left out."""
    v = row["variant"]
    if v.startswith("fjmpi_") and int(row["count"]) == 1:
        return ("Fujitsu MPI at one element: every algorithm, forced or not, takes the same 3.2-3.3 us (the forced "
                "algorithm does not run there)")
    if v == "fjmpi_ring" and int(row["count"]) < int(row["nodes"]):
        return ("fjmpi_ring below one element per rank: Open MPI's ring runs recursive doubling there "
                "(coll_base_allreduce.c), which fjmpi_recursive_doubling measures")
    if v in FUJITSU:
        return FUJITSU[v], "fujitsu-mpi"
    if v == "default":
        return "Fujitsu's default: its algorithm is not known"
    if v.startswith("fjmpi_"):
        return f"{v}: no schedule of this algorithm here" + (" (segment size not recorded)" if "segmented" in v
                                                              else "")
    if v == "bw":
        return "bw: sends each block of a step as its own message (the schedule's messages are bw_cont's)"
    if v in SWING:
        if v.endswith("_utofu") and row["segment_size"] and int(row["segment_size"]) != SEGMENT:
            return f"{v}: segment {row['segment_size']} B (the 1 MiB rows are used)"
        return SWING[v], "libswing-utofu" if v.endswith("_utofu") else "libswing-mpi"
    return f"{v}: unknown variant"


def blocks(n: int) -> list[tuple[int, ...]]:
    """The grids of ``n`` nodes with 2 to 6 sides of 2 or more (Tofu-D has six coordinates), sides in ascending
    order, each once."""
    out = []

    def split(left: int, least: int, sides: tuple[int, ...]) -> None:
        if left == 1:
            if 2 <= len(sides) <= 6:
                out.append(sides)
            return
        for d in range(least, left + 1):
            if left % d == 0:
                split(left // d, d, (*sides, d))

    split(n, 2, ())
    return out


def network(declared, measurements, link_rate: float) -> tuple[object, list[tuple[str, int, int]]]:
    """The network a run is modelled on and the candidates tried: (spec, directed links, cells measured faster than
    its links allow: :func:`~directcoll.simulate.calibrate.faster_than_links`) each. The declared network unless
    cells beat its links; then, for a 1D job, the first block (fewest links) that no cell beats, the ranks along a
    Gray code; else the declared network."""
    from directcoll.simulate.calibrate import faster_than_links
    from directcoll.topology import parse

    tried = [(declared, len(faster_than_links(measurements, declared, link_rate)))]
    if tried[0][1] and len(declared.shape) == 1:
        grids = sorted((parse(f"mesh:{'x'.join(map(str, g))}") for g in blocks(declared.num_compute)),
                       key=lambda t: t.num_links)
        for grid in grids:
            t = parse(f"placed({declared.spec},{grid.spec},order=gray)")
            tried.append((t, len(faster_than_links(measurements, t, link_rate))))
            if not tried[-1][1]:
                break
    chosen = next((t for t, beaten in tried if not beaten), declared)
    return chosen, [(t.spec, t.num_links, beaten) for t, beaten in tried]


def run_csv(rows: list[dict], topology) -> tuple[str, list[str], list[tuple[float, float]]]:
    """The calibrate CSV of one run's rows, the reasons rows were left out (counted), and each CSV row's 10th and
    90th percentile times (s)."""
    from directcoll.registry import build_pattern

    out = ["algorithm,ranks,bytes,seconds,ports,implementation"]
    skipped: dict[str, int] = {}
    spread = []
    servable: dict[tuple, bool] = {}
    for row in rows:
        m = mapped(row)
        if isinstance(m, str):
            skipped[m] = skipped.get(m, 0) + 1
            continue
        algorithm, impl = m
        ports = row["ports"] or ""
        key = (algorithm, ports)
        if key not in servable:
            name, _, variant = algorithm.partition(":")
            try:
                build_pattern(name, topology, "allreduce", variant=variant or None, ports=int(ports) if ports else None)
                servable[key] = True
            except Exception as exc:  # noqa: BLE001 -- the registry's refusal, reported as the reason
                servable[key] = False
                skipped[f"{algorithm} P={ports}: {str(exc).split(';')[0]}"] = 0
        if not servable[key]:
            skipped[[k for k in skipped if k.startswith(f"{algorithm} P={ports}:")][0]] += 1
            continue
        out.append(f"{algorithm},{row['nodes']},{row['bytes']},{float(row['median_us']) * 1e-6!r},{ports},{impl}")
        spread.append((float(row["p10_us"]) * 1e-6, float(row["p90_us"]) * 1e-6))
    return "\n".join(out) + "\n", [f"{n} rows: {why}" for why, n in skipped.items()], spread


def beyond_2d(measurements, topology, link_rate: float) -> list[bool]:
    """Which rows to keep: every row with at most 2D ports on the topology's grid, and rows with more (a port is a
    thread and a network interface; the library runs further plain and mirrored collectives over the same 2D
    directions) only where the links alone take under :data:`SOFTWARE_SHARE` of the measured time. There their
    time is the library's per-call, per-thread and per-port software, which the model has; above it, the extra
    collectives share links in ways the model does not express (docs/fidelity.md, "Real machines")."""
    from directcoll.algorithms.butterfly import logical_shape
    from directcoll.simulate.calibrate import link_times

    limit = 2 * len(logical_shape(topology))
    beyond = [i for i, m in enumerate(measurements) if m.ports and m.ports > limit]
    keep = [True] * len(measurements)
    if not beyond:
        return keep
    for i, t in zip(beyond, link_times([measurements[i] for i in beyond], topology, link_rate), strict=True):
        keep[i] = float(t) < SOFTWARE_SHARE * measurements[i].seconds
    return keep


def score(cal, spread: dict) -> dict:
    """Median and largest |prediction / measured - 1| over the scored cells, and winners per scored size.

    The predicted winner is right when it is the measured one, or when the measurement cannot tell the two apart:
    their 10th-90th percentile ranges overlap (``tie``). ``spread`` maps (label, bytes) to (p10, p90) in s."""
    ms = cal.measurements
    cv = np.array(cal.cross_validation["residuals"])
    sizes = np.array([m.size for m in ms])
    seconds = np.array([m.seconds for m in ms])
    scored = sizes >= SCORED
    found = winners([m.label for m in ms], sizes, seconds, seconds * (1 + cv),
                    [spread[m.label, int(m.size)] for m in ms])
    return {"cells": int(scored.sum()), "median_abs": float(np.median(np.abs(cv[scored]))),
            "max_abs": float(np.max(np.abs(cv[scored]))), "winners": found,
            "winners_right": sum(w["same"] for w in found), "sizes": len(found)}


def winners(labels: list, sizes, seconds, predicted, spread: list) -> list[dict]:
    """Per scored size, the measured and the predicted winner among the rows (labels, bytes, measured and
    predicted s, (p10, p90) s each); a tie where their 10th-90th percentile ranges overlap."""
    out = []
    for size in sorted(set(sizes[sizes >= SCORED].tolist())):
        at = np.flatnonzero(sizes == size)
        w, m = at[np.argmin(seconds[at])], at[np.argmin(predicted[at])]
        tie = bool(w != m and spread[m][0] <= spread[w][1] and spread[w][0] <= spread[m][1])
        out.append({"bytes": int(size), "measured": labels[w], "predicted": labels[m], "tie": tie,
                    "same": bool(w == m or tie)})
    return out


def trained(m) -> bool:
    """Whether a measurement is in the held-out protocol's training set: Fujitsu's algorithms and Swing's bandwidth
    path over uTofu at 1 and 6 ports."""
    return m.implementation == "fujitsu-mpi" or (
        (m.algorithm, m.variant, m.implementation) == ("swing", "bandwidth", "libswing-utofu") and m.ports in (1, 6))


def held_out(text: str, measurements, topology, base, spread: list, work: Path) -> dict | None:
    """The held-out protocol on one run's calibrate CSV (``text``, read as ``measurements``) through the command
    line: calibrate on the training rows (:func:`trained`) from ``base``, then schedule and simulate every variant
    with the fitted parameters and its implementation. None when the run has no Fujitsu rows. ``spread``: each
    row's (p10, p90) in s; ``work``: a directory for the files. Returns the error over the rows left out
    (>= 64 KiB) and the winner per size (>= 64 KiB) over every row, as :func:`score` does."""
    import subprocess

    if not any(m.implementation == "fujitsu-mpi" for m in measurements):
        return None
    spec = topology.spec
    header, *lines = text.splitlines()
    (work / "base.json").write_text(json.dumps(base.file_dict()))
    (work / "train.csv").write_text("\n".join([header, *(ln for ln, m in zip(lines, measurements, strict=True)
                                                         if trained(m))]) + "\n")

    def cli(*argv: str) -> str:
        done = subprocess.run(["directcoll", *argv], capture_output=True, text=True, cwd=work)
        if done.returncode:
            raise SystemExit(f"directcoll {' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    cli("calibrate", "train.csv", spec, "--params", "base.json", "-o", "net.json", "--json")
    variants: dict[tuple, list[int]] = {}
    for i, m in enumerate(measurements):
        variants.setdefault((m.algorithm, m.variant, m.ports, m.implementation), []).append(i)
    predicted = np.zeros(len(measurements))
    for (name, variant, ports, impl), rows in variants.items():
        cli("schedule", name, spec, "-o", "s.json", *(["--variant", variant] if variant else []),
            *(["--ports", str(ports)] if ports else []))
        sizes = ",".join(f"{int(measurements[i].size)}B" for i in rows)
        times = json.loads(cli("simulate", "s.json", "--sizes", sizes, "--params", "net.json", "--implementation",
                               impl, "--json"))["results"]
        predicted[rows] = [float(r["time_s"]) for r in times]
    label = [m.label.replace(" allreduce", "") for m in measurements]
    size = np.array([m.size for m in measurements])
    seconds = np.array([m.seconds for m in measurements])
    error = predicted / seconds - 1
    out_rows = np.array([not trained(m) for m in measurements]) & (size >= SCORED)
    worst = int(np.flatnonzero(out_rows)[np.argmax(np.abs(error[out_rows]))])
    found = winners(label, size, seconds, predicted, spread)
    return {"cells": int(out_rows.sum()), "median_abs": float(np.median(np.abs(error[out_rows]))),
            "max_abs": float(abs(error[worst])), "largest": f"{label[worst]} at {int(size[worst])} B",
            "winners": found, "winners_right": sum(w["same"] for w in found), "sizes": len(found)}


def below_bound(cal) -> list[str]:
    """The cells a calibration found measured faster than its network alone allows (``cal.beaten``), each as
    "LABEL at SIZE: RATIO of it"."""
    from directcoll.units import format_size

    ms = cal.measurements
    return [f"{ms[i].label.replace(' allreduce', '')} at {format_size(ms[i].size)}: {ratio:.2f} of it"
            for i, ratio in cal.beaten]


def main() -> int:
    p = benchcli.parser(__doc__, ESTIMATE)
    p.add_argument("--runs", help="comma list of run names (default: all)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--figure", help="also draw measured against predicted times, one panel per run, to this PNG")
    p.add_argument("--fit-injection", action="store_true",
                   help="also fit the NIC's injection cap (host_injection, shared by the ports of a rank) instead "
                        "of keeping Tofu-D's 6 x 6.8 GB/s")
    args = p.parse_args()
    out = benchcli.begin(args, ESTIMATE, "real_machines")

    from directcoll.simulate.calibrate import calibrate, default_fit
    from directcoll.simulate.implementation import Implementation
    from directcoll.simulate.measurements import parse_csv
    from directcoll.simulate.params import network_params
    from directcoll.topology import parse
    from directcoll.units import format_size

    # the Fugaku preset: Tofu-D's published link rate (6.8 GB/s a direction) and Put latency, kept by calibrate's
    # default fit, and the libraries' structure: threads (libswing-utofu: one per port), code paths and the size
    # above which a reduction on one thread pays its own cost; not the overheads the preset ships (fitted on the
    # 16-node run): each run is predicted from its own rows only
    preset = network_params("fugaku-4x4x4")
    BASE = replace(preset, implementations=tuple(
        Implementation(i.name, threads=i.threads, paths=tuple((sel, ()) for sel, _ in i.paths),
                       reduction_threshold=i.reduction_threshold, source=i.source)
        for i in preset.implementations))

    rows = load_rows()
    runs = list(dict.fromkeys(r["run"] for r in rows))
    if args.runs:
        runs = [r for r in runs if r in args.runs.split(",")]
    results = {}
    print(f"Real machines: Fugaku, leave one variant out, {time.strftime('%Y-%m-%d')}\n")
    for run in runs:
        mine = [r for r in rows if r["run"] == run]
        declared = parse(f"torus:{mine[0]['shape']}")
        text, skipped, spread = run_csv(mine, declared)
        (out / f"{run}.csv").write_text(text)
        t0 = time.perf_counter()
        measurements = parse_csv(text, f"{run}.csv")
        topology, tried = network(declared, measurements, BASE.link_bandwidth)
        keep = beyond_2d(measurements, topology, BASE.link_bandwidth)
        if not all(keep):
            lines = text.splitlines(keepends=True)
            text = lines[0] + "".join(line for line, k in zip(lines[1:], keep, strict=True) if k)
            spread = [s for s, k in zip(spread, keep, strict=True) if k]
            skipped.append(f"{keep.count(False)} rows: more ports than 2D where the links take "
                           f"{SOFTWARE_SHARE:.0%} or more of the time (the model has their software, not how "
                           "their extra collectives share the links)")
            (out / f"{run}.csv").write_text(text)
            measurements = parse_csv(text, f"{run}.csv")
        fit = default_fit(measurements, BASE) + (("host_injection",) if args.fit_injection else ())
        cal = calibrate(measurements, topology, fit=fit, base=BASE, source=f"{run}.csv")
        s = score(cal, {(m.label, int(m.size)): pq for m, pq in zip(measurements, spread, strict=True)})
        results[run] = {"topology": topology.spec, "networks_tried": tried, "seconds": time.perf_counter() - t0,
                        "skipped": skipped, "fitted": cal.fitted, "rms_in_sample": cal.rms, **s,
                        "by_variant": cal.cross_validation["by_label"],
                        "cells": [{"label": m.label, "implementation": m.implementation, "bytes": m.size,
                                   "measured_s": m.seconds, "predicted_s": m.seconds * (1 + r)}
                                  for m, r in zip(measurements, cal.cross_validation["residuals"], strict=True)]}
        print(f"## {run} on {topology.spec}: {len(cal.measurements)} cells, {s['cells']} of 64 KiB or more\n")
        if len(tried) > 1:
            print("| network tried | directed links | cells measured faster than its links allow |")
            print("|---|---:|---:|")
            for spec, links, beaten in tried:
                print(f"| {spec} | {links} | {beaten} |")
            print()
        print(f"Leave one variant out, cells >= 64 KiB: median |error| {s['median_abs']:.1%}, largest "
              f"{s['max_abs']:.1%}; winner right at {s['winners_right']} of {s['sizes']} sizes; in-sample RMS "
              f"{cal.rms:.1%} ({results[run]['seconds']:.0f} s)\n")
        print("| variant | median |error| (all sizes) |")
        print("|---|---:|")
        for label, err in cal.cross_validation["by_label"].items():
            print(f"| {label.replace(' allreduce', '')} | {err:.1%} |")
        print("\n| size | measured winner | predicted winner |")
        print("|---|---|---|")
        for w in s["winners"]:
            mark = " (tie: p10-p90 ranges overlap)" if w["tie"] else "" if w["same"] else " (wrong)"
            print(f"| {format_size(w['bytes'])} | {w['measured'].replace(' allreduce', '')} | "
                  f"{w['predicted'].replace(' allreduce', '')}{mark} |")
        fast = below_bound(cal)
        results[run]["below_bound"] = fast
        print(f"\nMeasured faster than the model's links alone allow: {len(fast)} cells"
              + (": " + "; ".join(fast) if fast else "") + "\n")
        with tempfile.TemporaryDirectory() as work:
            protocol = held_out(text, measurements, topology, BASE, spread, Path(work))
        if protocol is not None:
            results[run]["held_out"] = protocol
            print(f"Held-out protocol (calibrate on Fujitsu's ring and recursive doubling and Swing's bandwidth path "
                  f"over uTofu at 1 and 6 ports; every variant scheduled and simulated through the command line): "
                  f"{protocol['cells']} cells left out of 64 KiB or more, median |error| "
                  f"{protocol['median_abs']:.1%}, largest {protocol['max_abs']:.1%} ({protocol['largest']}); "
                  f"winner right at "
                  f"{protocol['winners_right']} of {protocol['sizes']} sizes\n")
            print("| size | measured winner | predicted winner |")
            print("|---|---|---|")
            for w in protocol["winners"]:
                mark = " (tie: p10-p90 ranges overlap)" if w["tie"] else "" if w["same"] else " (wrong)"
                print(f"| {format_size(w['bytes'])} | {w['measured']} | {w['predicted']}{mark} |")
            print()
        print("Left out: " + "; ".join(skipped) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    if args.figure:
        figure(results, args.figure)
    return 0


def figure(results: dict, path: str) -> None:
    """Measured against leave-one-variant-out predicted time, log-log, a panel per run; the diagonal and the
    +-25 % band; hollow markers below the scored sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 5.0), squeeze=False,
                             layout="constrained")
    markers = {"fujitsu-mpi": "s", "libswing-mpi": "^", "libswing-utofu": "o"}
    for ax, (run, res) in zip(axes[0], results.items(), strict=True):
        cells = res["cells"]
        lo = min(min(c["measured_s"], c["predicted_s"]) for c in cells) * 1e6 / 1.5
        hi = max(max(c["measured_s"], c["predicted_s"]) for c in cells) * 1e6 * 1.5
        grid = np.geomspace(lo, hi, 50)
        ax.fill_between(grid, grid * 0.75, grid * 1.25, color="0.9", label="within 25 %")
        ax.plot(grid, grid, color="0.4", lw=0.8)
        for impl, mark in markers.items():
            for scored in (True, False):
                pick = [c for c in cells if c["implementation"] == impl and (c["bytes"] >= SCORED) == scored]
                if pick:
                    ax.scatter([c["measured_s"] * 1e6 for c in pick], [c["predicted_s"] * 1e6 for c in pick],
                               marker=mark, s=18, facecolors=f"C{list(markers).index(impl)}" if scored else "none",
                               edgecolors=f"C{list(markers).index(impl)}", lw=0.8,
                               label=impl if scored else None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        ax.set_title(f"{run[:10].replace('_', '-')} on {res['topology']}\nmedian error >= 64 KiB "
                     f"{res['median_abs']:.0%}", fontsize=9)
        ax.set_xlabel("measured time (us)")
        ax.grid(True, which="major", lw=0.3)
    axes[0][0].set_ylabel("predicted time, variant left out (us)")
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=len(handles), fontsize=8)
    fig.suptitle("Fugaku allreduce: step model, each variant predicted from the others (hollow: below 64 KiB)",
                 fontsize=10)
    fig.savefig(path, dpi=130)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
