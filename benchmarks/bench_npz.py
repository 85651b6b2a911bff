"""Writing a large schedule file: ``directcoll.schedule.save`` (.npz at zlib level 1) against its peer from the same
run, ``numpy.savez_compressed`` (zlib's default level) on the same arrays; wall time and file size.

Run: python3 benchmarks/bench_npz.py [SPEC] [--out DIR]   (default: BFB's allreduce on torus:50x50, 12.5 M pieces)
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from pathlib import Path

import benchcli
import numpy as np

from directcoll.registry import build
from directcoll.schedule.io import load, save
from directcoll.topology import parse

ESTIMATE = "about 30 s"


def main(spec: str) -> None:
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} {platform.machine()}, python {platform.python_version()}, "
          f"numpy {np.__version__}, load {os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    schedule = build("bfb", parse(spec), "allreduce")
    print(f"bfb allreduce on {spec}: {schedule.num_transfers} transfers, {len(schedule.piece_start)} pieces, "
          f"built in {time.perf_counter() - t0:.1f} s")
    with tempfile.TemporaryDirectory() as tmp:
        ours, peer = Path(tmp) / "ours.npz", Path(tmp) / "peer.npz"
        t0 = time.perf_counter()
        save(schedule, ours)
        t_ours = time.perf_counter() - t0
        arrays = {k: v for k, v in vars(schedule).items() if isinstance(v, np.ndarray)}
        t0 = time.perf_counter()
        np.savez_compressed(peer, **arrays)
        t_peer = time.perf_counter() - t0
        t0 = time.perf_counter()
        back = load(ours)
        t_load = time.perf_counter() - t0
        assert back.num_transfers == schedule.num_transfers
        print(f"save (level 1): {t_ours:.2f} s, {ours.stat().st_size / 1e6:.1f} MB; numpy.savez_compressed: "
              f"{t_peer:.2f} s, {peer.stat().st_size / 1e6:.1f} MB; ratio {t_peer / t_ours:.2f}x faster; "
              f"load (checked) {t_load:.2f} s")


if __name__ == "__main__":
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("spec", nargs="?", default="torus:50x50")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_npz")
    main(args.spec)
