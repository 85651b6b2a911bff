"""CPU time per packet-hop of the ns-3 packet engine, without and with credit-based flow control, and against
an earlier engine in the same run.

Run: python3 benchmarks/packet_speed.py [--out DIR] [--repeat 3] [--baseline REV] [--targets]

For a few schedules on tori (ring, Swing-B and recursive doubling allreduce on torus:8x8 at 4 MiB, the direct
all-to-all on torus:4x4 at 1 MiB), runs the engine with unbounded queues and with buffers of one bandwidth-delay
product under the deadlock-free scheme with the fewest channels (Duato's on tori), and prints the driver's CPU
seconds (user + system, from the children's resource usage; the best of --repeat runs) per packet-hop (packets
times links crossed, as ``lower`` estimates them), and the ratio of the two in the same run. Parameters: the
Swing paper's SST setup with 4 KiB packets and a 2-byte header, cut-through. ``--baseline REV`` (default
BASELINE, the engine before flow control, buffers, virtual channels and NICs were added) also times the same cases
with unbounded queues on the project as it was at git revision REV (a temporary ``git worktree``, its own driver
built on first use), and prints the new/old ratio; ``--baseline none`` skips it. ``--targets`` also times, once
each with unbounded queues, the two runs the engine's speed is meant for: Swing-B allreduce on torus:16x16 at 32
MiB (under a minute) and on torus:32x32 at 1 MiB (possible at all), wall and CPU seconds (about a minute more).
Prints Markdown tables for docs/benchmarks.md.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchcli
import numpy as np

from directcoll.registry import build_pattern
from directcoll.simulate import SWING_SST
from directcoll.simulate.packet import bandwidth_delay_bytes, deadlock_free, lower, simulate_packet
from directcoll.topology import parse

ESTIMATE = "about a minute on 2 cores (two with the baseline's first build)"
#: the engine as the packet engine's physics work started from: unbounded queues, no NIC (git revision)
BASELINE = "ceb5d4c"
PARAMS = SWING_SST.with_(packet_header=2)
CASES = [("torus:8x8", "ring", "allreduce", None, 4 << 20), ("torus:8x8", "swing", "allreduce", "bandwidth", 4 << 20),
         ("torus:8x8", "recursive-doubling", "allreduce", "bandwidth", 4 << 20),
         ("torus:4x4", "direct", "alltoall", None, 1 << 20)]


def cpu_seconds(run) -> float:
    """The children's user + system CPU seconds that ``run()`` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: run by the baseline's Python (its own src/ first on the path): CPU seconds per case, best of `repeat`, as JSON
_BASELINE_CHILD = """
import json, resource, sys
from directcoll.registry import build_pattern
from directcoll.simulate import SWING_SST
from directcoll.simulate.packet import simulate_packet
from directcoll.topology import parse
cases, repeat = json.loads(sys.argv[1]), int(sys.argv[2])
params = SWING_SST.with_(packet_header=2)
out = []
for spec, name, collective, variant, size in cases:
    topo = parse(spec)
    pattern = build_pattern(name, topo, collective, variant=variant)
    best = None
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        simulate_packet(pattern, topo, size, params)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = t if best is None else min(best, t)
    out.append(best)
print(json.dumps(out))
"""


def baseline_seconds(rev: str, repeat: int) -> list[float]:
    """CPU seconds of each case with unbounded queues on the project at git revision ``rev`` (best of
    ``repeat``), from a temporary worktree of this repository."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="directcoll-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            run = subprocess.run([sys.executable, "-c", _BASELINE_CHILD, json.dumps(CASES), str(repeat)],
                                 capture_output=True, text=True, env=env, cwd=tmp)
            if run.returncode != 0:
                raise SystemExit(f"packet_speed: the baseline at {rev} failed: {run.stderr.strip()[-500:]}")
            return json.loads(run.stdout)
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], check=False)


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case and setting; the best is kept")
    ap.add_argument("--targets", action="store_true",
                    help="also time Swing-B on torus:16x16 at 32 MiB and torus:32x32 at 1 MiB, once each")
    ap.add_argument("--baseline", default=BASELINE,
                    help=f"git revision of the engine to compare with (default {BASELINE}; 'none' to skip)")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "packet_speed")
    old = None if args.baseline == "none" else baseline_seconds(args.baseline, args.repeat)
    print(f"Packet engine, CPU per packet-hop, {datetime.date.today()}, {platform.machine()}, best of "
          f"{args.repeat}:\n")
    head = "| schedule | packet-hops | unbounded: µs per packet-hop | 1 BDP: µs per packet-hop | ratio |"
    rule = "|---|---:|---:|---:|---:|"
    if old is not None:
        head += f" {args.baseline}: µs per packet-hop | new/old |"
        rule += "---:|---:|"
    print(head + "\n" + rule)
    ratios, speedups = [], []
    for case, (spec, name, collective, variant, size) in enumerate(CASES):
        topo = parse(spec)
        pattern = build_pattern(name, topo, collective, variant=variant)
        hops = lower(pattern, topo, size, PARAMS)[1]
        flow = deadlock_free(topo, "adaptive", bandwidth_delay_bytes(topo, PARAMS), schedule=pattern)
        per_hop = []
        for control in (None, flow):
            run = functools.partial(simulate_packet, pattern, topo, size, PARAMS, flow=control)
            best = min(cpu_seconds(run) for _ in range(args.repeat))
            per_hop.append(best / hops * 1e6)
        ratios.append(per_hop[1] / per_hop[0])
        label = f"{name}{'-' + variant if variant else ''} {collective} on {spec}, {size >> 20} MiB"
        row = f"| {label} | {hops:,} | {per_hop[0]:.2f} | {per_hop[1]:.2f} | {ratios[-1]:.2f} |"
        if old is not None:
            before = old[case] / hops * 1e6
            speedups.append(per_hop[0] / before)
            row += f" {before:.2f} | {speedups[-1]:.2f} |"
        print(row)
    print(f"\nFlow control costs {np.median(ratios):.2f} times the CPU per packet-hop (median of the cases).")
    if speedups:
        print(f"With unbounded queues, this engine takes {np.median(speedups):.2f} times the CPU per packet-hop of "
              f"the engine at {args.baseline} (median of the cases; below 1 is faster).")
    if args.targets:
        targets()


#: the runs the engine's speed is meant for: (topology, bytes)
TARGETS = [("torus:16x16", 32 << 20), ("torus:32x32", 1 << 20)]


def targets() -> None:
    """Swing-B allreduce on each of :data:`TARGETS` once, unbounded queues: packet-hops, wall and CPU seconds."""
    print("\n| Swing-B allreduce | packet-hops | wall s | driver CPU s | µs per packet-hop |")
    print("|---|---:|---:|---:|---:|")
    for spec, size in TARGETS:
        topo = parse(spec)
        pattern = build_pattern("swing", topo, "allreduce", variant="bandwidth")
        hops = lower(pattern, topo, size, PARAMS, max_packet_hops=float("inf"))[1]
        wall = time.perf_counter()
        cpu = cpu_seconds(functools.partial(simulate_packet, pattern, topo, size, PARAMS,
                                            max_packet_hops=float("inf")))
        wall = time.perf_counter() - wall
        print(f"| {spec}, {size >> 20} MiB | {hops:,} | {wall:.1f} | {cpu:.1f} | {cpu / hops * 1e6:.2f} |")


if __name__ == "__main__":
    main()
