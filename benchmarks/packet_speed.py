"""CPU time per packet-hop of the ns-3 packet engine, without and with credit-based flow control.

Run: python3 benchmarks/packet_speed.py [--out DIR] [--repeat 3]

For a few schedules on tori (ring, Swing-B and recursive doubling allreduce on torus:8x8 at 4 MiB, the direct
all-to-all on torus:4x4 at 1 MiB), runs the engine with unbounded queues and with buffers of one bandwidth-delay
product under the deadlock-free scheme with the fewest channels (Duato's on tori), and prints the driver's CPU
seconds (user + system, from the children's resource usage; the best of --repeat runs) per packet-hop (packets
times links crossed, as ``lower`` estimates them), and the ratio of the two in the same run. Parameters: the
Swing paper's SST setup with 4 KiB packets and a 2-byte header, cut-through. Prints a Markdown table for
docs/benchmarks.md.
"""

from __future__ import annotations

import datetime
import functools
import platform
import resource

import benchcli
import numpy as np

from directcoll.registry import build_pattern
from directcoll.simulate import SWING_SST
from directcoll.simulate.packet import bandwidth_delay_bytes, deadlock_free, lower, simulate_packet
from directcoll.topology import parse

ESTIMATE = "about a minute on 2 cores"
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


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--repeat", type=int, default=3, help="runs per case and setting; the best is kept")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "packet_speed")
    print(f"Packet engine, CPU per packet-hop, {datetime.date.today()}, {platform.machine()}, best of "
          f"{args.repeat}:\n")
    print("| schedule | packet-hops | unbounded: µs per packet-hop | 1 BDP: µs per packet-hop | ratio |")
    print("|---|---:|---:|---:|---:|")
    ratios = []
    for spec, name, collective, variant, size in CASES:
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
        print(f"| {label} | {hops:,} | {per_hop[0]:.2f} | {per_hop[1]:.2f} | {ratios[-1]:.2f} |")
    print(f"\nFlow control costs {np.median(ratios):.2f} times the CPU per packet-hop (median of the cases).")


if __name__ == "__main__":
    main()
