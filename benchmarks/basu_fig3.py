"""Basu et al. (HPDC'24) Fig. 3's host-to-NIC bottleneck on the 27-node torus, and the ILP baselines at N = 44 and 81:
the tables of docs/alltoall.md, "Basu et al.'s Fig. 3 and the ILP baselines".

Table 1 (Sec. 5.1-5.2, Fig. 3 right and Fig. 4 right): torus:3x3x3 with 6 x 25 Gb/s links per node and a 100 Gb/s
host link. For each model (no host link; the host forwards, Fig. 2's augmentation, the tsMCF setting; the NIC
forwards, the path-schedule setting): the fluid MCF F (relative to one 25 Gb/s link) and the bound (N - 1) F b the
paper prints; then each ``mcf`` schedule (timestepped, path, extp) built with that host link, verified by the exact
verifier, its LP value, its own time (its meta's ``schedule_time_m_over_b``) and the step model's and flow model's
simulated times with the host injection limit, as all-to-all throughput (N - 1) m / T per node at m bytes per
pair; and the timestepped schedule built without the host link, run on the fabric with it ("own time": the step
model's).

Table 1b: where the host-aware LP matters, on topologies whose nodes forward unequal shares (meshes, torus:3x4,
GenKautz): the host-aware timestepped schedule against the one built without the host link, both run with the
host injection limit.

Table 2 (Sec. 5.3, Fig. 7 and Fig. 9): ``ilp-disjoint`` (one path per pair out of 4 link-disjoint candidates, the
MIP minimizing the largest link load) on genkautz:4:44, genkautz:8:81 and genkautz:8:81 with 16 links disabled
(``punctured``, Fig. 9) with a time limit: HiGHS's status, the
incumbent z (the all-to-all time in shard / link-bandwidth units), the bound and gap, its seconds, against the link
MCF's 1 / F.

Run: python3 benchmarks/basu_fig3.py [--ilp-time-limit S] [--no-ilp]
"""

from __future__ import annotations

import sys
import time

import benchcli

from directcoll.algorithms.alltoall.ilp import ilp_alltoall, ilp_gap
from directcoll.simulate.flow import simulate_flow
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.schedules import mcf_schedule
from directcoll.topology.spec import parse
from directcoll.verify import verify

#: measured 2026-11-26 at load 2-3 on the shared 2-core VM: table 1 in about 2 s, table 2 in about 90 s
ESTIMATE = "about 2 minutes (table 2's MIPs stop at --ilp-time-limit each, 300 s by default)"
TORUS = "links(torus:3x3x3,bandwidth=25gbps)"
HOST = 12.5e9          # 100 Gb/s
LINK = 3.125e9         # 25 Gb/s
SHARD = 64 * 2**20     # m, bytes per pair ("large buffers")
#: Fig. 7's degree-4 GenKautz at N = 44; Fig. 9's N = 81, d = 8 GenKautz, whole and with links disabled
ILP_SPECS = ["genkautz:4:44", "genkautz:8:81", "punctured(genkautz:8:81,links=16,seed=0)"]
PAPER_F = {"none": "1/9 (Sec. 5.2)", "host": "2/27 (Sec. 5.2)", "nic": "1/9 (Fig. 4 right, theoretical)"}


def _gbs(x: float) -> str:
    return f"{x / 1e9:.3f}"


def table1() -> None:
    topo = parse(TORUS)
    n = topo.num_compute
    print(f"Table 1: {TORUS}, host link 100 Gb/s, m = {SHARD / 2**20:.0f} MiB per pair; throughput = (N - 1) m / T "
          "per node, GB/s\n")
    print("| model | F (MCF) | paper F | (N-1) F b | schedule | LP value | verified | own time | step model | "
          "flow model |\n|---|---|---|---|---|---|---|---|---|---|")
    # (model, host link, NIC forwards, variants); "blind": the no-host timestepped schedule run with the host link
    models = [("none", None, False, ("timestepped", "path", "extp")),
              ("host", HOST, False, ("timestepped", "blind")),
              ("nic", HOST, True, ("path", "extp"))]
    for name, host, nic, variants in models:
        f = alltoall_mcf(topo, host_bandwidth=host, nic_forwarding=nic).value
        params = NetworkParams(host_injection=host)
        label = {"none": "no host link", "host": "host forwards (Fig. 2)", "nic": "NIC forwards"}[name]
        for variant in variants:
            blind = variant == "blind"
            s = mcf_schedule(topo, "timestepped" if blind else variant,
                             **({} if host is None or blind else {"host_bandwidth": host}))
            if blind:
                variant = "timestepped built without the host link"
            ok = "yes" if verify(s).ok else "NO"
            step = float(simulate(s, topo, params).time([n * SHARD])[0])
            own = step if blind else s.meta["schedule_time_m_over_b"] * SHARD / LINK
            flow = float(simulate_flow(s, topo, n * SHARD, params).time_s)
            print(f"| {label} | {f:.6f} | {PAPER_F[name]} | {_gbs((n - 1) * f * LINK)} | {variant} | "
                  f"{s.meta['lp_value']:.6f} | {ok} | {_gbs((n - 1) * SHARD / own)} | "
                  f"{_gbs((n - 1) * SHARD / step)} | {_gbs((n - 1) * SHARD / flow)} |", flush=True)


def table1b() -> None:
    """Where the host-aware LP matters: nodes of unequal degree or distance sums forward unequal shares."""
    print("\nTable 1b: timestepped schedule with the host link in its LP (aware) or not (blind), run with the host "
          "injection limit (step and flow model, no latency), m = 1 MiB per pair, time in us\n")
    print("| topology | host link | F (host forwards) | aware: step | aware: flow | blind: step | blind: flow | "
          "blind / aware (step) |\n|---|---|---|---|---|---|---|---|")
    for spec, host in (("mesh:3x3", 30e9), ("mesh:4x4", 50e9), ("torus:3x4", 40e9), ("genkautz:3:12", 60e9),
                       ("petersen", 60e9), ("links(torus:3x3x3,bandwidth=25gbps)", HOST)):
        topo = parse(spec)
        n, m = topo.num_compute, 2.0**20
        params = NetworkParams(host_injection=host, link_latency=0.0)
        times = []
        for s in (mcf_schedule(topo, "timestepped", host_bandwidth=host), mcf_schedule(topo, "timestepped")):
            assert verify(s).ok
            times += [float(simulate(s, topo, params).time([n * m])[0]) * 1e6,
                      float(simulate_flow(s, topo, n * m, params).time_s) * 1e6]
        f = alltoall_mcf(topo, host_bandwidth=host).value
        print(f"| {spec} | {host * 8 / 1e9:g} Gb/s | {f:.6g} | " + " | ".join(f"{t:.1f}" for t in times)
              + f" | {times[2] / times[0]:.3f} |", flush=True)


def table2(time_limit: float) -> None:
    print(f"\nTable 2: ilp-disjoint (4 disjoint candidates per pair), HiGHS time limit {time_limit:g} s, against the "
          "link MCF (time in m / b)\n")
    print("| topology | N | candidate paths | status | incumbent z | bound | gap | MIP s | verified | MCF 1/F | "
          "z F |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in ILP_SPECS:
        topo = parse(spec)
        t0 = time.perf_counter()
        s = ilp_alltoall(topo, time_limit=time_limit)
        print(f"{spec}: MIP {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        f = alltoall_mcf(topo).value
        m = s.meta
        ok = "yes" if verify(s).ok else "NO"
        print(f"| {spec} | {topo.num_compute} | {m['candidate_paths']:,} | {m['ilp_status']} | "
              f"{m['ilp_objective']:.6g} | {m['ilp_bound']:.6g} | {ilp_gap(m):.2%} | {m['ilp_seconds']:.1f} | {ok} | "
              f"{1 / f:.4f} | {m['ilp_objective'] * f:.4f} |", flush=True)


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--ilp-time-limit", type=float, default=300.0, help="seconds for each MIP (default 300)")
    ap.add_argument("--no-ilp", action="store_true", help="table 1 only")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "basu_fig3")
    table1()
    table1b()
    if not args.no_ilp:
        table2(args.ilp_time_limit)


if __name__ == "__main__":
    main()
