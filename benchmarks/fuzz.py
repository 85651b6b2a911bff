"""10,000 fuzzed inputs through the library and the CLI: spec strings, schedule files (JSON and
.npz), MSCCL XML, network files and command lines, counted by outcome (tests/fuzzing.py says what each outcome means).

Run: python3 benchmarks/fuzz.py [--cases 10000] [--seed 0] [--budget 256MiB] [--case-seconds 20] [--json FILE]

Cases run in a worker process under an address-space limit, set before each case, of the worker's
footprint then plus twice the memory budget (or a command line's own larger --memory-budget, up to 2 GiB),
so a case that allocates past its budget fails (MemoryError, or the worker dies) instead of swapping; a case
still running after --case-seconds is a hang; a worker that dies is restarted after the case it died on.
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import collections
import json
import multiprocessing as mp
import platform
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import benchcli
from fuzzing import KINDS, judge, make_case, make_context  # noqa: E402

ESTIMATE = "minutes: up to --case-seconds per case, 10,000 cases by default"

#: Share of the cases per kind (10,000 cases: 3,500 specs, 1,300 of each other kind).
SHARES = {"spec": 0.35, "json": 0.13, "npz": 0.13, "msccl": 0.13, "network": 0.13, "cli": 0.13}


def _worker(kind, seed, start, stop, budget, case_seconds, conn) -> None:
    from directcoll.resources import memory_budget_override
    from directcoll.units import parse_size

    def hang(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, hang)
    context = make_context(tempfile.mkdtemp(prefix="fuzz-"))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    budget_bytes = parse_size(budget)
    for i in range(start, stop):
        case = make_case(kind, random.Random(seed * 1_000_003 + i), context)
        # the mappings the worker holds before the case (modules, bounded caches), then the case's budget (a
        # command line's own --memory-budget where it names a larger one) with headroom
        limit = _vm_bytes() + 2 * max(budget_bytes, _budget_in(case))
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        conn.send(("start", i, repr(case)[:300]))
        signal.alarm(case_seconds)
        try:
            with memory_budget_override(budget):
                outcome = judge(kind, case, context)
        except TimeoutError:
            outcome = "hang"
        finally:
            signal.alarm(0)
        conn.send(("done", i, outcome))
    conn.send(("end",))


def _budget_in(case) -> int:
    """The largest valid ``--memory-budget`` of a command line, at most 2 GiB (0 for other cases)."""
    from directcoll.errors import DirectcollError
    from directcoll.units import parse_size

    if not isinstance(case, list):
        return 0
    sizes = [0]
    for flag, value in zip(case, case[1:], strict=False):
        if flag == "--memory-budget":
            try:
                sizes.append(parse_size(value))
            except DirectcollError:
                pass
    return min(max(sizes), 2**31)


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_kind(kind: str, cases: int, seed: int, budget: str, case_seconds: int):
    counts, examples = collections.Counter(), collections.defaultdict(list)
    ctx = mp.get_context("spawn")
    i = 0
    while i < cases:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(kind, seed, i, cases, budget, case_seconds, child))
        proc.start()
        child.close()
        current, shown = i, ""
        while True:
            try:
                msg = parent.recv()
            except EOFError:  # the worker died on case `current`
                proc.join()
                outcome = f"died:{-proc.exitcode if proc.exitcode and proc.exitcode < 0 else proc.exitcode}"
                counts[outcome] += 1
                examples[outcome].append(f"case {current}: {shown}")
                i = current + 1
                break
            if msg[0] == "start":
                current, shown = msg[1], msg[2]
            elif msg[0] == "done":
                counts[msg[2]] += 1
                if msg[2] not in ("ok", "refused"):  # a finding: the case the "start" message showed
                    examples[msg[2]].append(f"case {msg[1]}: {shown}")
                i = msg[1] + 1
            else:
                proc.join()
                i = cases
                break
        print(f"  {kind}: {i}/{cases}", file=sys.stderr)
    return counts, dict(examples)


def main() -> int:
    p = benchcli.parser(__doc__, ESTIMATE)
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", default="256MiB", help="memory budget of every case (default 256MiB)")
    p.add_argument("--case-seconds", type=int, default=20)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--json", help="also write the counts to this file")
    args = p.parse_args()
    benchcli.begin(args, ESTIMATE, "fuzz")
    kinds = args.kinds.split(",")
    total = sum(SHARES[k] for k in kinds)
    results, t0 = {}, time.perf_counter()
    for kind in kinds:
        n = round(args.cases * SHARES[kind] / total)
        counts, examples = run_kind(kind, n, args.seed, args.budget, args.case_seconds)
        results[kind] = {"cases": n, "counts": dict(counts), "examples": examples}
    seconds = time.perf_counter() - t0
    print(f"Fuzz, {args.cases} cases, seed {args.seed}, budget {args.budget}, {time.strftime('%Y-%m-%d')}, "
          f"{platform.machine()} ({mp.cpu_count()} cores), {seconds:.0f} s\n")
    print("| input | cases | accepted | refused (own error) | other exception | silent | hang | "
          "memory / died |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind, r in results.items():
        c = r["counts"]
        other = sum(v for k, v in c.items() if k.startswith(("exception:", "exit:")))
        died = c.get("memory", 0) + sum(v for k, v in c.items() if k.startswith("died:"))
        print(f"| {kind} | {r['cases']} | {c.get('ok', 0)} | {c.get('refused', 0)} | {other} | {c.get('silent', 0)} | "
              f"{c.get('hang', 0)} | {died} |")
    for kind, r in results.items():
        for outcome, cases in r["examples"].items():  # the JSON has every one
            print(f"- {kind} {outcome} ({len(cases)}): {cases[0]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"seed": args.seed, "budget": args.budget, "seconds": seconds,
                                               "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
