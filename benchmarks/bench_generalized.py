"""Full sweep of the generalized allreduce (docs/benchmarks.md): every P from 2 to 300 and every r, built and verified,
with steps and bytes per rank checked against eq. 25 (r = 0), eq. 36 (r = 1, an upper bound for r >= 2)
and eq. 44 (r = ceil(log2 P)).

Run: python3 benchmarks/bench_generalized.py [--max-p 300]
"""

from __future__ import annotations

import time

import benchcli
import numpy as np

from directcoll.algorithms.generalized import generalized_allreduce, num_steps
from directcoll.verify import verify

ESTIMATE = "about 4 minutes at --max-p 300 (docs/benchmarks.md: 2,488 schedules in 213 s)"


def units_per_rank(s) -> np.ndarray:
    net = ~s.is_local
    return np.bincount(s.src[net], weights=s.transfer_size[net], minlength=s.nranks) * s.nranks


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--max-p", type=int, default=300)
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_generalized")
    t0 = time.perf_counter()
    built = failures = exact = below = 0
    for p in range(2, args.max_p + 1):
        top = num_steps(p)
        for r in range(top + 1):
            s = generalized_allreduce(p, r)
            built += 1
            if not verify(s).ok or s.num_steps != 2 * top - r:
                failures += 1
                print(f"FAILED P={p} r={r}")
                continue
            sent = units_per_rank(s)
            eq = p * top if r == top else 2 * (p - 1) + (2 ** r - 1) * (top - 1)
            if np.allclose(sent, eq):
                exact += 1
            elif r >= 2 and sent.max() < eq + 1e-9:
                below += 1
            else:
                failures += 1
                print(f"BYTES P={p} r={r}: {sent.max():.3f} u, equation {eq} u")
    print(f"{built} schedules (P = 2..{args.max_p}, every r) in {time.perf_counter() - t0:.0f} s: "
          f"{failures} failures; bytes equal to the equation in {exact}, below eq. 36 in {below}")


if __name__ == "__main__":
    main()
