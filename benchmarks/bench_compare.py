"""Wall time and peak memory of `directcoll compare` with the default contender list (every family, the paper's 25
sizes, swing-sst parameters), beside its peer from the same run: the same command restricted to the Swing paper's
four families (swing, recursive-doubling, ring, bucket). The ratio default / peer is what BFB, the non-power-of-two
baselines and the generalized allreduce cost on top of the paper's comparison.

Run: python3 benchmarks/bench_compare.py [SPEC ...] [--out DIR]
(default: torus:64x64 and Fugaku's full torus:24x23x24x2x3x2). Each command runs in its own process; its peak RSS
comes from os.wait4. Targets: torus:64x64 with BFB within 5 s; Fugaku's default list within 10 minutes and 16 GiB
on the 2-core machine, listing what it skipped.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchcli

ESTIMATE = "about 10 minutes for the defaults (Fugaku's two runs take most of it)"
PEER = "swing,recursive-doubling,ring,bucket"


def run(argv: list[str]) -> tuple[float, float, dict]:
    """(wall s, peak RSS GB, the --json document) of one ``directcoll compare`` in its own process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "c.json"
        cmd = [sys.executable, "-m", "directcoll.cli.main", "compare", *argv, "--json", "-o", str(out)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"bench_compare: {' '.join(cmd)} failed")
        return wall, usage.ru_maxrss / 1e6, json.loads(out.read_text())


def main(specs: list[str]) -> None:
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.machine()}, python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.1f}")
    for spec in specs:
        wall, rss, doc = run([spec])
        peer_wall, peer_rss, _ = run([spec, "--algorithms", PEER])
        lines = {(r["family"], r["variant"]) for r in doc["results"]}
        winners = sorted({b["algorithm"] for b in doc["best"]})
        print(f"{spec}: default list {len(lines)} lines x {len(doc['sizes'])} sizes in {wall:.1f} s, "
              f"peak {rss:.2f} GB; peer ({PEER}) {peer_wall:.1f} s, {peer_rss:.2f} GB; ratio {wall / peer_wall:.2f}x; "
              f"winners {', '.join(winners)}")
        groups: dict[tuple, list[str]] = {}
        for s in doc["skipped"]:  # one line per algorithm, kind and reason, as the table's footer
            groups.setdefault((s["algorithm"], s["kind"], s["reason"]), []).append(s["variant"] or "")
        for (algorithm, kind, reason), variants in groups.items():
            print(f"  skipped {algorithm} {', '.join(v for v in variants if v)} ({kind}): {reason[:100]}")


if __name__ == "__main__":
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("specs", nargs="*", default=["torus:64x64", "torus:24x23x24x2x3x2"], help="networks to compare")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_compare")
    main(args.specs)
