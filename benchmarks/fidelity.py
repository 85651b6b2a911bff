"""Fidelity: the step and flow models against the ns-3 packet engine (docs/fidelity.md).

Run: python3 benchmarks/fidelity.py [--out DIR] [--figure FILE] [--workers 2] [--max-packet-hops 2e6] [--quick]
     [--buffer-bdp K [--adaptive-channels A]] [--orderings N]
     (writes DIR/fidelity.csv and DIR/fidelity.png, DIR defaulting to benchmarks/out/; the files docs/fidelity.md
     shows: --out benchmarks/results --figure docs/img/fidelity.png)
     python3 benchmarks/fidelity.py --from-csv benchmarks/results/fidelity.csv   (the summary and the tie table of a
     stored run, nothing simulated; with --models-only the step and flow models are rerun against its ns-3 times,
     for checking a model change in seconds, and the run is written again to OUT with the new model times; with
     --against OTHER.csv its ns-3 times are compared cell by cell with another stored run's, e.g. 1 BDP of buffer
     against unbounded queues)

For every topology of the validation matrix, every default contender of ``directcoll compare`` (allreduce; and
all-to-all on the smaller topologies) and every size from 32 B to 64 MiB (every 8x), times the schedule with the
step model, the flow model and the packet engine, all with the same parameters: the Swing paper's SST setup
(400 Gb/s links, 100 ns, 300 ns per hop), 4 KiB packets with the engine's 2-byte header, cut-through. A packet
simulation estimated above ``--max-packet-hops`` is skipped (recorded, not guessed). With ``--buffer-bdp K``
the engine runs with credit-based flow control: input buffers of K bandwidth-delay products per virtual channel
(``bandwidth_delay_bytes``) under the deadlock-free scheme with the fewest channels (``deadlock_free``: Duato's
on tori, hop-count channels elsewhere); ``--adaptive-channels A`` gives Duato's protocol A adaptive channels
besides its two escape channels (default 1, the fewest; the outputs are then named ``-bdpK-acA``); without
``--buffer-bdp``, queues are unbounded. A deadlock would be a skipped cell. With ``--orderings N`` each packet
cell is also timed with N - 1 other orders of each step's transfers (seeded shuffles, every transfer keeping its
route: the same problem, which the engine may serve in another order) and the CSV gains the fastest and slowest
of the N times (``packet_lo_s``, ``packet_hi_s``); the summary then also counts a model's winner as agreeing when
its ns-3 range overlaps that of ns-3's winner.
Writes one CSV row per cell and prints, per model, the distribution of |model/packet - 1| over sizes >= 4 KiB and
the (topology, collective, size) cells where the model's winner differs from the packet engine's.
"""

from __future__ import annotations

import csv
import datetime
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import benchcli
import numpy as np

from directcoll.errors import DeadlockError, DirectcollError, ResourceError
from directcoll.registry import build_pattern
from directcoll.reports.contenders import TIE_TOLERANCE, default_contenders
from directcoll.simulate import SWING_SST, simulate
from directcoll.simulate.flow import flow_times
from directcoll.simulate.packet import bandwidth_delay_bytes, deadlock_free, order_range, simulate_packet
from directcoll.topology import parse

ESTIMATE = ("about 6 to 8 minutes on 2 cores (350 s with unbounded queues, 426 s with --buffer-bdp 1, both with "
            "--orderings 3, on 2026-11-29; --quick about 3 minutes)")

ALLREDUCE = ["torus:4x4", "torus:8x8", "torus:16x16", "torus:4x4x4", "torus:8x4", "torus:3x3x3", "hypercube:4",
             "hyperx:4x4", "hammingmesh:2x2:2x2", "genkautz:2:16", "circulant:16:1,5"]
ALLTOALL = ["torus:4x4", "torus:4x4x4", "torus:8x4", "torus:3x3x3", "hypercube:4", "hyperx:4x4", "genkautz:2:16"]
QUICK = ["torus:4x4", "torus:8x4", "hypercube:4", "genkautz:2:16"]
SIZES = [32 * 8**k for k in range(8)]      # 32 B .. 64 MiB, every 8x
PARAMS = SWING_SST.with_(packet_header=2, name="swing-sst, 4 KiB packets, 2-byte header")


def jobs(quick: bool) -> list[tuple]:
    out = []
    for collective, specs in (("allreduce", QUICK if quick else ALLREDUCE), ("alltoall", QUICK if quick else ALLTOALL)):
        for spec in specs:
            for c in default_contenders(parse(spec), collective):
                if c.family == "mcf" and not quick and spec in ("torus:4x4x4",):
                    continue  # the LP for 64 ranks takes minutes; the smaller tori cover MCF
                out.append((spec, collective, c.family, c.algorithm, c.variant, dict(c.options)))
    return out


def label_of(pattern, variant: str | None, options: dict) -> str:
    """The ``variant`` column of a schedule's rows: its variant, or the option that tells it apart."""
    if "r" in options:
        return f"r={options['r']}"
    if "chunks" in options:
        return f"P={options['chunks']}"
    return variant or pattern.meta.get("variant") or ""


def model_times(pattern, topo) -> tuple[np.ndarray, np.ndarray]:
    """The step and flow models' times of a schedule at every size of the matrix, s."""
    sizes = np.array(SIZES, dtype=float)
    return simulate(pattern, topo, PARAMS).time(sizes), flow_times(pattern, topo, sizes, PARAMS)


def run_job(job: tuple, max_hops: float, buffer_bdp: float | None = None, adaptive: int = 1,
            orderings: int = 1) -> list[dict]:
    spec, collective, family, name, variant, options = job
    topo = parse(spec)

    try:
        pattern = build_pattern(name, topo, collective, variant=variant, **options)
    except DirectcollError as exc:
        return [{"topology": spec, "collective": collective, "family": family, "algorithm": name,
                 "variant": variant or "", "size": 0, "skipped": f"build: {exc}"}]
    label = label_of(pattern, variant, options)
    control = None if buffer_bdp is None else deadlock_free(
        topo, "adaptive", int(np.ceil(buffer_bdp * bandwidth_delay_bytes(topo, PARAMS))), schedule=pattern)
    if control is not None and control.scheme == "duato":  # the escape's two channels and `adaptive` more
        control = replace(control, virtual_channels=2 + adaptive)
    step, flow = model_times(pattern, topo)
    rows = []
    for size, t_step, t_flow in zip(SIZES, step, flow, strict=True):
        row = {"topology": spec, "collective": collective, "family": family, "algorithm": name, "variant": label,
               "size": size, "step_s": float(t_step), "flow_s": float(t_flow), "packet_s": "", "skipped": ""}
        t0 = time.perf_counter()
        try:
            row["packet_s"] = simulate_packet(pattern, topo, size, PARAMS, max_packet_hops=max_hops,
                                              flow=control).time_s
            if orderings > 1:  # the orders `compare --orderings` takes
                row["packet_lo_s"], row["packet_hi_s"] = order_range(
                    pattern, topo, [size], [row["packet_s"]], orderings, PARAMS, flow=control,
                    max_packet_hops=max_hops)[0].tolist()
        except ResourceError:
            row["skipped"] = f"packet: over {max_hops:.0e} packet-hops"
        except DeadlockError as exc:
            row["skipped"] = f"packet: {exc}"
        row["packet_wall_s"] = round(time.perf_counter() - t0, 3)
        rows.append(row)
    return rows


def _cells(rows: list[dict]) -> dict[tuple, list]:
    """The rows with a packet time, by (topology, collective, size): one cell of the matrix each."""
    cells: dict[tuple, list] = {}
    for r in rows:
        if r.get("packet_s") not in ("", None):
            cells.setdefault((r["topology"], r["collective"], r["size"]), []).append(r)
    return cells


def _tied(cell: list[dict], model: str, tol: float) -> list[dict]:
    """The rows of a cell within ``tol`` of the model's fastest: the model's tie set."""
    fastest = min(r[f"{model}_s"] for r in cell)
    return [r for r in cell if r[f"{model}_s"] <= fastest * (1 + tol)]


def summarize(rows: list[dict]) -> dict:
    cells = _cells(rows)
    out = {}
    for model in ("step", "flow"):
        err = np.array([r[f"{model}_s"] / r["packet_s"] - 1 for c in cells.values() for r in c if r["size"] >= 4096])
        # per cell of two schedules or more, 4 KiB and up: a winner the packet engine disagrees with (unless within
        # 0.5 % of its fastest), and a tie the model calls (several schedules within compare's tolerance of its
        # fastest) that ns-3 separates (their packet times spread by more than the same tolerance)
        big, differ, called, separated, lost, ranged, apart = 0, [], 0, [], [], 0, 0
        for key, cell in cells.items():
            if len(cell) < 2 or key[2] < 4096:
                continue
            big += 1
            best_packet = min(cell, key=lambda r: r["packet_s"])
            best_model = min(cell, key=lambda r: r[f"{model}_s"])
            same = (best_model["family"], best_model["variant"]) == (best_packet["family"], best_packet["variant"])
            lost.append(0.0 if same else best_model["packet_s"] / best_packet["packet_s"] - 1)
            ranged += same or _reaches(best_model, best_packet, TIE_TOLERANCE)
            if lost[-1] > 0.005:
                differ.append((*key, f"{best_model['family']} {best_model['variant']}",
                               f"{best_packet['family']} {best_packet['variant']}", lost[-1]))
            tied = _tied(cell, model, TIE_TOLERANCE)
            if len(tied) >= 2:
                called += 1
                spread = max(r["packet_s"] for r in tied) / min(r["packet_s"] for r in tied) - 1
                if spread > TIE_TOLERANCE:
                    separated.append((*key, len(tied), spread))
                    # and in every order of the transfers: the slowest in its fastest order is still beyond the
                    # tolerance of the fastest in its slowest
                    slow, fast = (f(tied, key=lambda r: r["packet_s"]) for f in (max, min))
                    apart += not _reaches(slow, fast, TIE_TOLERANCE)
        out[model] = {"cells": len(err), "median_abs_err": float(np.median(np.abs(err))) if len(err) else None,
                      "p90_abs_err": float(np.quantile(np.abs(err), 0.9)) if len(err) else None,
                      "max_abs_err": float(np.abs(err).max()) if len(err) else None,
                      "winner_cells": big, "winner_agree": big - len(differ), "winner_differs": differ,
                      "winner_within": {tol: int(sum(x <= tol for x in lost)) for tol in WINNER_TOLERANCES},
                      "ties_called": called, "ties_separated": separated,
                      "winner_agree_in_spread": ranged if _has_spread(rows) else None,
                      "ties_separated_in_spread": apart if _has_spread(rows) else None}
    return out


def _ranged(r: dict) -> bool:
    """Whether a row was timed in several orders of its transfers (``--orderings``)."""
    return r.get("packet_lo_s") not in ("", None)


def _has_spread(rows: list[dict]) -> bool:
    """Whether a run timed its cells in several orders of their transfers."""
    return any(map(_ranged, rows))


def _reaches(pick: dict, winner: dict, tol: float) -> bool:
    """Whether ns-3 times a model's pick, in its fastest order of the transfers, within ``tol`` of ns-3's winner
    in its slowest (a row timed in one order: its time): the two cannot be told apart by the engine."""
    lo = pick["packet_lo_s"] if _ranged(pick) else pick["packet_s"]
    hi = winner["packet_hi_s"] if _ranged(winner) else winner["packet_s"]
    return lo <= hi * (1 + tol)


def order_spread(rows: list[dict]) -> dict:
    """Per collective, over cells >= 4 KiB timed in several orders: (cells, median and largest spread hi/lo - 1,
    cells over 1 %)."""
    out = {}
    for collective in dict.fromkeys(r["collective"] for r in rows):
        x = np.array([r["packet_hi_s"] / r["packet_lo_s"] - 1 for r in rows if r["collective"] == collective
                      and r["size"] >= 4096 and _ranged(r)])
        if len(x):
            out[collective] = (len(x), float(np.median(x)), float(x.max()), int((x > 0.01).sum()))
    return out


#: how much slower in ns-3 than ns-3's own winner a model's winner may be and still count as agreeing (the summary
#: prints each; 0.5 %, compare's tie, is the one the winner counts use)
WINNER_TOLERANCES = (0.005, 0.01, 0.02, 0.05)
#: tie tolerances whose coverage the summary prints (docs/fidelity.md, "Ties"; compare's TIE_TOLERANCE among them)
TOLERANCES = (0.0, 0.001, 0.005, 0.01, 0.02, 0.05)


def tie_coverage(rows: list[dict], tolerances=TOLERANCES) -> dict:
    """Per model and tolerance: in how many (topology, collective, size >= 4 KiB) cells the model's tie set (every
    schedule within the tolerance of the model's fastest) holds a packet-engine winner (a schedule within 0.5 % of
    ns-3's fastest), and the mean size of the tie set. Returns {model: [(tolerance, covered, cells, mean size)]}."""
    cells = [c for k, c in _cells(rows).items() if k[2] >= 4096 and len(c) >= 2]
    out = {}
    for model in ("step", "flow"):
        out[model] = []
        for tol in tolerances:
            covered, sizes = 0, []
            for cell in cells:
                fastest = min(r["packet_s"] for r in cell)
                tie = _tied(cell, model, tol)
                covered += any(r["packet_s"] <= fastest * 1.005 for r in tie)
                sizes.append(len(tie))
            out[model].append((tol, covered, len(cells), float(np.mean(sizes)) if sizes else 0.0))
    return out


def figure(rows: list[dict], path: Path, buffers: str = "unbounded queues") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in rows if r.get("packet_s") not in ("", None)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, model in zip(axes, ("step", "flow"), strict=True):
        for collective, marker in (("allreduce", "o"), ("alltoall", "^")):
            mine = [r for r in done if r["collective"] == collective]
            if mine:
                x = np.array([r["size"] for r in mine], dtype=float)
                y = np.array([r[f"{model}_s"] / r["packet_s"] for r in mine])
                x = x * np.exp(np.random.default_rng(0).uniform(-0.15, 0.15, len(x)))
                dots = ax.scatter(x, y, s=9, alpha=0.45, marker=marker, label=collective)
                ranged = [i for i, r in enumerate(mine) if _ranged(r)]
                if ranged:  # the ratio over ns-3's fastest and slowest order of the transfers
                    lo = np.array([mine[i][f"{model}_s"] / mine[i]["packet_hi_s"] for i in ranged])
                    hi = np.array([mine[i][f"{model}_s"] / mine[i]["packet_lo_s"] for i in ranged])
                    ax.vlines(x[ranged], lo, hi, color=dots.get_facecolor()[0], lw=0.8, alpha=0.6)
        ax.axhline(1.0, color="black", lw=0.8)
        for bound in (0.95, 1.05):
            ax.axhline(bound, color="gray", lw=0.6, ls="--")
        ax.axvline(4096, color="gray", lw=0.6, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("vector size (bytes)")
        ax.set_title(f"{model} model / packet engine")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("time ratio")
    axes[0].legend(loc="upper right", fontsize=8)
    spread = "\nbars: from ns-3's fastest to its slowest order of the transfers" if _has_spread(done) else ""
    fig.suptitle(f"Model fidelity against ns-3 (swing-sst parameters, 4 KiB packets, cut-through, {buffers}){spread}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=150)


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--figure", type=Path, help="the figure (default OUT/fidelity.png; docs: docs/img/fidelity.png)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-packet-hops", type=float, default=2e6)
    ap.add_argument("--quick", action="store_true", help="four small topologies (a few minutes)")
    ap.add_argument("--from-csv", type=Path, help="summarize this stored fidelity.csv instead of simulating")
    ap.add_argument("--models-only", action="store_true",
                    help="with --from-csv: recompute the step and flow models' times (the stored ns-3 times kept)")
    ap.add_argument("--buffer-bdp", type=float, help="flow control: input buffers of this many bandwidth-delay "
                                                     "products per virtual channel (default: unbounded queues)")
    ap.add_argument("--against", type=Path,
                    help="with --from-csv: compare its ns-3 times cell by cell with this stored run's (another "
                         "buffer size): how many cells are slower or faster, and where the winner changes")
    ap.add_argument("--orderings", type=int, default=1,
                    help="time each packet cell in this many orders of each step's transfers (the first as built, "
                         "the others seeded shuffles) and record the fastest and slowest (default 1)")
    ap.add_argument("--adaptive-channels", type=int, default=1,
                    help="with --buffer-bdp: adaptive channels of Duato's protocol on tori, besides the two escape "
                         "channels (default 1, the fewest)")
    args = ap.parse_args()
    if args.adaptive_channels < 1:
        ap.error(f"--adaptive-channels {args.adaptive_channels}: accepted: a whole number >= 1")
    if args.orderings < 1:
        ap.error(f"--orderings {args.orderings}: accepted: a whole number >= 1")
    suffix = "" if args.buffer_bdp is None else f"-bdp{args.buffer_bdp:g}" + (
        f"-ac{args.adaptive_channels}" if args.adaptive_channels != 1 else "")
    benchcli.begin(args, ESTIMATE, f"fidelity{suffix}")
    buffers = "unbounded queues" if args.buffer_bdp is None else f"buffers of {args.buffer_bdp:g} BDP" + (
        f", {args.adaptive_channels} adaptive channels" if args.adaptive_channels != 1 else "")
    if args.models_only and not args.from_csv:
        ap.error("--models-only needs --from-csv FILE (the stored ns-3 times to compare with)")
    if args.from_csv:
        rows = _read(args.from_csv)
        if args.models_only:
            rows = remodel(rows)
            _write(rows, args.out / args.from_csv.name)  # the stored run with the models as they are now
        print_summary(rows, f"{args.from_csv} (stored run{', models recomputed' if args.models_only else ''})")
        if args.against:
            print_against(rows, _read(args.against), args.against)
        if args.figure:  # redrawn from the stored run (--buffer-bdp names its buffers in the title)
            figure(rows, args.figure, buffers)
        return
    todo = jobs(args.quick)
    t0 = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(args.workers) as pool:
        for i, result in enumerate(pool.map(run_job, todo, [args.max_packet_hops] * len(todo),
                                            [args.buffer_bdp] * len(todo), [args.adaptive_channels] * len(todo),
                                            [args.orderings] * len(todo))):
            rows += result
            print(f"[{i + 1}/{len(todo)}] {todo[i][0]} {todo[i][1]} {todo[i][3]} {todo[i][4] or ''} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    _write(rows, args.out / f"fidelity{suffix}.csv")
    figure(rows, args.figure or args.out / f"fidelity{suffix}.png", buffers)
    print_summary(rows, f"{datetime.date.today()} {platform.node()} {os.cpu_count()} cores, {len(todo)} schedules, "
                        f"{buffers}, {time.perf_counter() - t0:.0f} s")


def print_against(rows: list[dict], other: list[dict], name: Path) -> None:
    """The ns-3 times of ``rows`` against those of another stored run (``other``, e.g. unbounded queues), over the
    cells both timed: how many are more than 1 % and 10 % slower or 1 % faster, the extremes, and the (topology,
    collective, size >= 4 KiB) cells whose ns-3 winner differs by more than compare's tie tolerance in either run
    (each winner's loss in the other run)."""
    def key(r: dict) -> tuple:
        return r["topology"], r["collective"], r["family"], r["algorithm"], r["variant"], r["size"]

    theirs = {key(r): r["packet_s"] for r in other if r.get("packet_s") not in ("", None)}
    pairs = [(r, r["packet_s"] / theirs[key(r)]) for r in rows
             if r.get("packet_s") not in ("", None) and key(r) in theirs]
    ratio = np.array([x for _, x in pairs])
    slowest, fastest = max(pairs, key=lambda p: p[1]), min(pairs, key=lambda p: p[1])
    print(f"against {name}: {len(pairs)} cells both timed; {int((ratio > 1.01).sum())} more than 1 % slower, "
          f"{int((ratio > 1.1).sum())} more than 10 % slower, {int((ratio < 0.99).sum())} more than 1 % faster; "
          f"median ratio {np.median(ratio):.4f}")
    for label, (r, x) in (("slowest", slowest), ("fastest", fastest)):
        print(f"   {label}: {r['topology']} {r['collective']} {r['family']} {r['variant']} {r['size']} B: {x:.3f}")
    mine, base = _cells(rows), _cells([r for r in other if r.get("packet_s") not in ("", None)])
    for cell_key in sorted(set(mine) & set(base)):
        a, b = mine[cell_key], base[cell_key]
        if cell_key[2] < 4096 or len(a) < 2:
            continue
        wa, wb = min(a, key=lambda r: r["packet_s"]), min(b, key=lambda r: r["packet_s"])
        if (wa["family"], wa["variant"]) == (wb["family"], wb["variant"]):
            continue
        here = {(r["family"], r["variant"]): r["packet_s"] for r in a}
        there = {(r["family"], r["variant"]): r["packet_s"] for r in b}
        lost_here = here.get((wb["family"], wb["variant"]), float("nan")) / wa["packet_s"] - 1
        lost_there = there.get((wa["family"], wa["variant"]), float("nan")) / wb["packet_s"] - 1
        if not max(lost_here, lost_there) > TIE_TOLERANCE:  # within compare's tie in both runs: the same verdict
            continue
        print(f"   winner differs: {cell_key[0]} {cell_key[1]} {cell_key[2]} B: {wb['family']} {wb['variant']} in "
              f"{name.name} ({100 * lost_here:.1f} % slower here), {wa['family']} {wa['variant']} here "
              f"({100 * lost_there:.1f} % slower there)")


def remodel(rows: list[dict]) -> list[dict]:
    """The stored rows with their step and flow times recomputed by the models as they are now (the packet
    engine's times kept): a model change is checked against the matrix in seconds, not a rerun of ns-3."""
    times = {}
    for spec, collective, _family, name, variant, options in jobs(False):
        topo = parse(spec)
        try:
            pattern = build_pattern(name, topo, collective, variant=variant, **options)
        except DirectcollError:
            continue
        key = (spec, collective, name, label_of(pattern, variant, options))
        times[key] = dict(zip(SIZES, zip(*model_times(pattern, topo), strict=True), strict=True))
    out, kept = [], 0
    for r in rows:
        new = times.get((r["topology"], r["collective"], r["algorithm"], r["variant"]), {}).get(r["size"])
        out.append({**r, "step_s": float(new[0]), "flow_s": float(new[1])} if new else r)
        kept += new is None and r.get("packet_s") not in ("", None)
    if kept:
        print(f"fidelity: {kept} stored cells are no schedule of the matrix now: their stored model times are kept",
              file=sys.stderr)
    return out


def _write(rows: list[dict], path: Path) -> None:
    """A fidelity.csv: one row per (schedule, size), the three engines' times."""
    keys = ["topology", "collective", "family", "algorithm", "variant", "size", "step_s", "flow_s", "packet_s",
            "packet_wall_s", "skipped"]
    if any("packet_lo_s" in r for r in rows):  # a run with --orderings
        keys[9:9] = ["packet_lo_s", "packet_hi_s"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _read(path: Path) -> list[dict]:
    """The rows of a stored fidelity.csv, numbers as numbers."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r["size"] = int(r["size"])
            for key in ("step_s", "flow_s", "packet_s", "packet_lo_s", "packet_hi_s"):
                if key in r:
                    r[key] = float(r[key]) if r[key] not in ("", None) else ""
            rows.append(r)
    return rows


def print_summary(rows: list[dict], heading: str) -> None:
    summary = summarize(rows)
    print(f"\n{heading}: {sum(1 for r in rows if r.get('packet_s') not in ('', None))} packet cells, "
          f"{sum(1 for r in rows if r.get('skipped'))} skipped")
    for model, s in summary.items():
        print(f"{model}: sizes >= 4 KiB: {s['cells']} cells, median |err| {s['median_abs_err']:.4f}, "
              f"p90 {s['p90_abs_err']:.4f}, max {s['max_abs_err']:.4f}; winner agrees in {s['winner_agree']}/"
              f"{s['winner_cells']} (topology, collective, size) cells")
        print("   winner within a tolerance of ns-3's fastest (the model's pick timed by ns-3): " + ", ".join(
            f"{100 * tol:g} %: {n}/{s['winner_cells']}" for tol, n in s["winner_within"].items()))
        if s["winner_agree_in_spread"] is not None:
            print(f"   winner within ns-3's spread over the orders of the transfers (the model's pick in its fastest "
                  f"order within {100 * TIE_TOLERANCE:g} % of ns-3's winner in its slowest): "
                  f"{s['winner_agree_in_spread']}/{s['winner_cells']}")
        for d in s["winner_differs"]:
            print(f"   differs: {d[0]} {d[1]} {d[2]} B: model picks {d[3]}, packet {d[4]} "
                  f"(model's pick {100 * d[5]:.1f} % slower in ns-3)")
        print(f"   ties the model calls (within {100 * TIE_TOLERANCE:g} %): {s['ties_called']} cells; ns-3 separates "
              f"{len(s['ties_separated'])} of them" + "".join(f"; {d[0]} {d[1]} {d[2]} B ({d[3]} tied, ns-3 spread "
                                                                 f"{100 * d[4]:.1f} %)" for d in s["ties_separated"]))
        if s["ties_separated_in_spread"] is not None:
            print(f"   of those, ns-3 separates {s['ties_separated_in_spread']} in every order of the transfers (the "
                  f"slowest in its fastest order more than {100 * TIE_TOLERANCE:g} % from the fastest in its slowest)")
    for collective, (n, median, largest, over) in order_spread(rows).items():
        print(f"ns-3's spread over the orders of the transfers, {collective}, sizes >= 4 KiB: {n} cells, median "
              f"{100 * median:.2f} %, largest {100 * largest:.1f} %, {over} over 1 %")
    worst = sorted((r for r in rows if r.get("packet_s") not in ("", None) and r["size"] >= 4096),
                   key=lambda r: -abs(r["step_s"] / r["packet_s"] - 1))[:8]
    print("largest step-model errors (sizes >= 4 KiB):")
    for r in worst:
        print(f"   {r['topology']} {r['collective']} {r['family']} {r['variant']} {r['size']} B: "
              f"step/packet {r['step_s'] / r['packet_s']:.3f}, flow/packet {r['flow_s'] / r['packet_s']:.3f}")
    print("per topology (sizes >= 4 KiB): | topology | collective | cells | step median | step max | flow median | "
          "flow max |")
    groups: dict[tuple, list] = {}
    for r in rows:
        if r.get("packet_s") not in ("", None) and r["size"] >= 4096:
            groups.setdefault((r["topology"], r["collective"]), []).append(
                (abs(r["step_s"] / r["packet_s"] - 1), abs(r["flow_s"] / r["packet_s"] - 1)))
    for (spec, collective), errs in groups.items():
        e = np.array(errs)
        print(f"   | {spec} | {collective.replace('alltoall', 'all-to-all')} | {len(e)} | "
              + " | ".join(f"{100 * f(e[:, j]):.1f} %" for j in (0, 1) for f in (np.median, np.max)) + " |")
    print("ties: cells whose model tie set holds a packet-engine winner (within 0.5 % of ns-3's fastest)")
    for model, per_tol in tie_coverage(rows).items():
        print(f"   {model}: " + "; ".join(f"{100 * tol:g} %: {c}/{n}, {size:.2f} schedules"
                                         for tol, c, n, size in per_tol))


if __name__ == "__main__":
    main()
