"""SMPI beside the step, flow and packet models (docs/fidelity.md, "SMPI").

Run: python3 benchmarks/smpi_fidelity.py [--specs torus:4x4,torus:8x8] [--sizes 1KiB,64KiB,1MiB,8MiB]
                                         [--out benchmarks/results/smpi_fidelity.csv]

For every topology, algorithm (Swing bandwidth- and latency-optimal, the ring, recursive doubling) and size, runs
the schedule as real MPI code (libdirectcoll) inside SimGrid SMPI on the topology's platform
(``directcoll run --engine smpi``), and times the same schedule on the same bytes with the step model, the flow
model and the ns-3 packet engine, every engine with dimension-order routes (SimGrid sends a message along one path)
and the Swing paper's SST parameters (400 Gb/s links, 100 ns per link, 300 ns per hop; the packet engine's 2-byte
header, which the models add too and SMPI does not: 0.05 % at 4 KiB packets). SMPI's own MPI_Allreduce
(``smpi/coll-selector:mpich``) is recorded beside ours. A packet simulation over ``--max-packet-hops`` is skipped.
Prints one row per cell with SMPI / model - 1 for each model and writes the CSV.
"""

from __future__ import annotations

import csv
import datetime
import time

import benchcli

from directcoll.errors import DirectcollError, ResourceError
from directcoll.registry import build
from directcoll.runtime.smpi import smpi_run
from directcoll.simulate import simulate
from directcoll.simulate.flow import simulate_flow
from directcoll.simulate.packet import simulate_packet
from directcoll.simulate.params import SWING_SST
from directcoll.topology import parse
from directcoll.units import parse_sizes

#: measured 2026-11-26 (load 10-16): torus:4x4 and torus:8x8 at the default sizes, a few minutes with ns-3
ESTIMATE = "about 5 minutes (ns-3 and SMPI cells)"
ALGORITHMS = [("swing", "bandwidth"), ("swing", "latency"), ("ring", None), ("recursive-doubling", None)]
MODEL_PARAMS = SWING_SST.with_(packet_header=2, name="swing-sst, 4 KiB packets, 2-byte header")


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE, out_help="the CSV is DIR/smpi_fidelity.csv (docs: --out "
                         "benchmarks/results)")
    ap.add_argument("--specs", default="torus:4x4,torus:8x8", help="comma list of topology specs")
    ap.add_argument("--sizes", default="1KiB,64KiB,1MiB,8MiB", help="vector sizes")
    ap.add_argument("--max-packet-hops", type=float, default=2e6, help="ns-3 cells above this are skipped")
    args = ap.parse_args()
    out_dir = benchcli.begin(args, ESTIMATE, "smpi_fidelity")
    csv_path = out_dir / "smpi_fidelity.csv"
    rows = []
    started = time.time()
    for spec in args.specs.split(","):
        topo = parse(spec)
        doc = smpi_run(topo, SWING_SST, "allreduce", ALGORITHMS, list(parse_sizes(args.sizes)), repeat=1,
                       progress=lambda text, spec=spec: print(f"  {spec}: {text}", flush=True))
        for r in doc["results"]:
            if "skipped" in r:
                print(f"skipped {r['algorithm']} on {spec}: {r['skipped']}")
                continue
            schedule = build(r["algorithm"], topo, variant=r["variant"])
            step = float(simulate(schedule, topo, MODEL_PARAMS, "dor").time(r["bytes"]))
            flow = float(simulate_flow(schedule, topo, r["bytes"], MODEL_PARAMS, "dor").time_s)
            try:
                packet = simulate_packet(schedule, topo, r["bytes"], MODEL_PARAMS, "dor",
                                         max_packet_hops=args.max_packet_hops).time_s
            except (ResourceError, DirectcollError) as exc:
                packet = None
                print(f"  packet skipped: {exc}")
            rows.append({"topology": spec, "algorithm": r["algorithm"], "variant": r["variant"] or "",
                         "bytes": r["bytes"], "smpi_s": r["time_s"], "step_s": step, "flow_s": flow,
                         "packet_s": packet, "smpi_native_s": r["native_time_s"], "correct": r["correct"],
                         "served": r["served"]})
    print(f"{'topology':<10} {'algorithm':<26} {'bytes':>9} {'SMPI':>11} {'step':>11} {'flow':>11} {'packet':>11} "
          f"{'/step-1':>8} {'/flow-1':>8} {'/pkt-1':>8} {'SMPI native':>11}")
    for r in rows:
        rel = [f"{(r['smpi_s'] / m - 1) * 100:+.1f}%" if m else "-" for m in (r["step_s"], r["flow_s"], r["packet_s"])]
        label = r["algorithm"] + (f":{r['variant']}" if r["variant"] else "")
        times = [f"{r[k] * 1e6:>9.2f}us" if r[k] else f"{'-':>11}" for k in ("smpi_s", "step_s", "flow_s", "packet_s")]
        print(f"{r['topology']:<10} {label:<26} {r['bytes']:>9} " + " ".join(times) + " "
              + " ".join(f"{x:>8}" for x in rel) + f" {r['smpi_native_s'] * 1e6:>9.2f}us")
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} cells in {time.time() - started:.0f} s, {datetime.date.today()}; wrote {csv_path}")


if __name__ == "__main__":
    main()
