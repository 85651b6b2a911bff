"""Building, using and removing an emulated testbed on this machine: Linux network namespaces, veth pairs and
``tc`` queues (tbf; netem for a delay), driven through iproute2's ``ip`` and ``tc`` in batch mode.

Everything a testbed creates is named by its run's prefix (``dctb-<id>``) and listed in a state file written
*before* anything is created, so that removal never touches what another run or the machine's owner made:
:func:`down` removes the namespaces a state file lists (a veth pair goes with its namespaces), after killing the
processes still inside them. A state file records its owner's process id and start time; :func:`stale` finds
those whose owner is gone (a launcher killed with SIGKILL), ``directcoll testbed down --stale`` removes them.

Source: docs/testbed.md; Linux ip-netns(8) (named namespaces under /run/netns), veth(4), tc-netem(8),
ip-route(8); proc(5) (a process's start time, field 22 of /proc/PID/stat).

>>> isinstance(privileges(), str)  # "" when this process may build namespaces, else what it lacks
True
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from directcoll.errors import DirectcollError, MissingDependencyError
from directcoll.testbed.plan import BURST, PREFIX, Plan

#: where state files live; $DIRECTCOLL_TESTBED_STATE overrides (tests)
STATE_DIR = "/run/directcoll-testbed"
#: CAP_NET_ADMIN's bit in /proc/self/status CapEff (linux/capability.h)
CAP_NET_ADMIN = 12
#: seconds one ip or tc batch may take
COMMAND_TIMEOUT = 120.0
#: what the ranks' MPI library is told (MPICH): no shared memory between ranks, so that every message crosses
#: the emulated links; the TCP provider of libfabric; and sleep (usleep(1)) after 64 polls without progress, so
#: that waiting ranks leave the cores to the kernel, which carries every packet (docs/testbed.md, "Choosing rates")
MPICH_ENV = {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp",
             "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1", "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "64"}


def state_dir() -> Path:
    """The folder of the state files (:data:`STATE_DIR` or ``$DIRECTCOLL_TESTBED_STATE``).

    Returns:
        Its path (not created).

    Raises:
        Nothing: reads the environment.

    Source: docs/testbed.md, "Removal".

    >>> isinstance(state_dir(), Path)
    True
    """
    return Path(os.environ.get("DIRECTCOLL_TESTBED_STATE") or STATE_DIR)


def privileges() -> str:
    """What this process lacks to build a testbed: "" when it is root or holds CAP_NET_ADMIN and has ``ip`` and
    ``tc``, else one line saying what is needed.

    Returns:
        "" or the reason.

    Raises:
        Nothing: reads /proc/self/status and PATH.

    Source: capabilities(7) (CAP_NET_ADMIN); ip-netns(8).

    >>> isinstance(privileges(), str)
    True
    """
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        return f"the testbed needs iproute2's {' and '.join(missing)} (Debian: apt-get install iproute2)"
    try:  # root holds every capability unless some were dropped: the capability is what counts
        caps = next(int(line.split()[1], 16) for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        caps = -1 if os.geteuid() == 0 else 0
    if not caps >> CAP_NET_ADMIN & 1:
        return ("the testbed needs root or CAP_NET_ADMIN to create network namespaces, veth links and tc queues: "
                "run it as root (sudo)")
    return ""


def require_privileges() -> None:
    """Refuse, in one line, where :func:`privileges` says something is missing.

    Raises:
        MissingDependencyError: not root and no CAP_NET_ADMIN, or no ``ip`` / ``tc``.

    Source: docs/testbed.md, "Requirements".
    """
    why = privileges()
    if why:
        raise MissingDependencyError(why)


def _run(argv: list[str], batch: str | None = None) -> None:
    """Run one ip or tc command (``batch``: its ``-batch -`` input); a failure is one DirectcollError line."""
    try:
        done = subprocess.run(argv, input=batch, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise DirectcollError(f"{' '.join(argv[:4])} did not finish in {COMMAND_TIMEOUT:g} s") from None
    if done.returncode != 0:
        first = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[0]
        raise DirectcollError(f"{' '.join(argv[:4])} failed: {first}")


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks after boot), or None when the process is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


class Testbed:
    """One emulated testbed: :meth:`up` builds :class:`~directcoll.testbed.plan.Plan` ``plan``, :meth:`down`
    removes it; as a context manager, it is up inside the block and removed on the way out (an exception, Ctrl-C
    or SIGTERM included). ``owner``: the process whose death makes it stale (default: this one; None: a testbed
    left up on purpose, ``directcoll testbed up``).

    Raises:
        DirectcollError: from :meth:`up` (a command that failed; what was made is removed first).

    Source: docs/testbed.md.

    >>> from directcoll.testbed.plan import plan
    >>> from directcoll.topology import parse
    >>> Testbed(plan(parse("ring:2"), link_rate=1e6)).state_file.name  # doctest: +ELLIPSIS
    'dctb-0.json'
    """

    __test__ = False  # a testbed, not a pytest test class

    def __init__(self, plan: Plan, owner: int | None = -1) -> None:
        self.plan = plan
        self.owner = os.getpid() if owner == -1 else owner
        self.state_file = state_dir() / f"{plan.prefix}.json"
        self._previous_term = None

    # -- building ------------------------------------------------------------------------------------
    def up(self) -> Testbed:
        """Create the namespaces, links, addresses, routes and queues of the plan.

        Returns:
            self.

        Raises:
            MissingDependencyError: no privileges (:func:`require_privileges`).
            DirectcollError: a state file of this name exists, or an ip or tc command failed (everything made is
                removed before the error is raised).

        Source: docs/testbed.md, "What it builds".
        """
        require_privileges()
        p = self.plan
        folder = state_dir()
        folder.mkdir(parents=True, exist_ok=True)
        if self.state_file.exists():
            raise DirectcollError(f"a testbed named {p.prefix} exists ({self.state_file}); remove it with "
                                  "`directcoll testbed down`")
        state = {"name": p.prefix, "spec": p.spec, "namespaces": p.namespaces, "ranks": p.num_compute,
                 "pid": self.owner, "start": _start_time(self.owner) if self.owner else None,
                 "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.state_file.write_text(json.dumps(state, indent=1) + "\n")  # before anything exists
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        return self

    def _build(self) -> None:
        p = self.plan
        _run(["ip", "-batch", "-"], "".join(f"netns add {ns}\n" for ns in p.namespaces))
        _run(["ip", "-batch", "-"], "".join(
            f"link add {q.a_name} netns {p.namespaces[q.a]} type veth peer name {q.b_name} netns {p.namespaces[q.b]}\n"
            for q in p.pairs))
        ends: list[list[tuple[str, float, float]]] = [[] for _ in p.namespaces]  # (interface, rate, delay)
        for q in p.pairs:
            ends[q.a].append((q.a_name, q.rate_ab, q.delay_ab))
            ends[q.b].append((q.b_name, q.rate_ba, q.delay_ba))
        for node, ns in enumerate(p.namespaces):
            lines = ["link set lo up"]
            for dev, _, _ in ends[node]:
                lines += [f"addr add {p.addresses[node]}/32 dev {dev}", f"link set {dev} up"]
            for dest, hops in p.routes[node].items():
                via = " ".join(f"nexthop via {p.addresses[w]} dev {dev} onlink" for w, dev in hops)
                lines.append(f"route add {p.addresses[dest]}/32 {via if len(hops) > 1 else via[len('nexthop '):]}")
            _run(["ip", "-n", ns, "-batch", "-"], "\n".join(lines) + "\n")
            # forwarding on (every node routes), reverse-path filtering off (a node's address is on every link, and
            # ECMP replies may arrive on another link than the request left by), layer-4 multipath hashing
            sysctl = ("echo 1 > /proc/sys/net/ipv4/ip_forward; echo 1 > /proc/sys/net/ipv4/fib_multipath_hash_policy; "
                      "for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > $f; done")
            _run(["ip", "netns", "exec", ns, "sh", "-c", sysctl])
            tc = "".join(_shaping(dev, rate, delay, p.queue) for dev, rate, delay in ends[node])
            if tc:
                _run(["tc", "-n", ns, "-batch", "-"], tc)

    # -- using ---------------------------------------------------------------------------------------
    def mpiexec(self, launcher: list[str], argv: list[str]) -> list[str]:
        """The MPMD command line that runs ``argv`` as one rank in the namespace of every compute node (rank r on
        node r), for MPICH's Hydra launcher ``launcher``, with :data:`MPICH_ENV`.

        Parameters
        ----------
        launcher : list of str
            MPICH's ``mpiexec`` and its own options.
        argv : list of str
            The program and its arguments, the same on every rank.

        Returns:
            The command line.

        Raises:
            Nothing: builds a list.

        Source: MPICH's Hydra (``-genv``, ``:`` between executables); ip-netns(8) (``ip netns exec``).

        >>> from directcoll.testbed.plan import plan
        >>> from directcoll.topology import parse
        >>> cmd = Testbed(plan(parse("ring:2"), link_rate=1e6)).mpiexec(["mpiexec"], ["hostname"])
        >>> " ".join(cmd[-15:])
        '-n 1 ip netns exec dctb-0-n0 hostname : -n 1 ip netns exec dctb-0-n1 hostname'
        """
        cmd = list(launcher)
        for key, value in MPICH_ENV.items():
            cmd += ["-genv", key, value]
        for r in range(self.plan.num_compute):
            cmd += ([":"] if r else []) + ["-n", "1", "ip", "netns", "exec", self.plan.namespaces[r], *argv]
        return cmd

    # -- removing ------------------------------------------------------------------------------------
    def down(self) -> None:
        """Remove the testbed (:func:`down` of its state file).

        Raises:
            Nothing: what cannot be removed is left for ``directcoll testbed down --stale``.

        Source: docs/testbed.md, "Removal".
        """
        if self.state_file.exists():
            down(self.state_file)

    def __enter__(self) -> Testbed:
        self._previous_term = signal.signal(signal.SIGTERM, _terminate)  # SIGTERM unwinds like Ctrl-C
        try:
            return self.up()
        except BaseException:
            signal.signal(signal.SIGTERM, self._previous_term or signal.SIG_DFL)
            raise

    def __exit__(self, *exc) -> None:
        try:
            self.down()
        finally:
            signal.signal(signal.SIGTERM, self._previous_term or signal.SIG_DFL)


def require_hydra(launcher: list[str]) -> None:
    """Refuse a launcher that is not MPICH's Hydra: the testbed starts one rank per namespace with Hydra's MPMD
    syntax and passes MPICH's variables (:data:`MPICH_ENV`).

    Parameters
    ----------
    launcher : list of str
        The ``mpiexec`` command.

    Raises:
        MissingDependencyError: the launcher does not run, or is not Hydra (Open MPI's ``mpirun`` is not supported
            on the testbed yet).

    Source: docs/testbed.md, "Requirements"; MPICH's Hydra (``mpiexec --version``).
    """
    try:
        out = subprocess.run([*launcher, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError as exc:
        raise MissingDependencyError(f"cannot start {launcher[0]!r}: {exc.strerror or exc}") from None
    if "HYDRA" not in out.upper():
        raise MissingDependencyError(f"the testbed runs ranks with MPICH's mpiexec (Hydra); {launcher[0]} is not "
                                     "(pip install 'directcoll[mpi]' brings it, or pass --mpiexec)")


def _shaping(dev: str, rate: float, delay: float, queue: int) -> str:
    """The tc batch lines of one link end: a token bucket of ``rate`` bytes/s holding ``queue`` bytes, behind a
    netem delay of ``delay`` s where it is > 0."""
    tbf = f"tbf rate {round(rate * 8)}bit burst {BURST} limit {queue}"
    if delay <= 0:
        return f"qdisc add dev {dev} root {tbf}\n"
    return (f"qdisc add dev {dev} root handle 1: netem delay {delay * 1e6:.3f}us limit {max(1000, queue // 64)}\n"
            f"qdisc add dev {dev} parent 1:1 handle 10: {tbf}\n")


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt


def states() -> list[dict]:
    """Every testbed's state (its state file's JSON plus ``file`` and ``stale``), oldest first.

    Returns:
        A list of dicts: name, spec, namespaces, ranks, pid, start, created, file, stale.

    Raises:
        Nothing: unreadable state files are listed as stale with their name only.

    Source: docs/testbed.md, "Removal".
    """
    out = []
    folder = state_dir()
    for path in sorted(folder.glob(f"{PREFIX}*.json"), key=lambda f: f.stat().st_mtime) if folder.is_dir() else []:
        try:
            state = json.loads(path.read_text())
            pid, start = state.get("pid"), state.get("start")
            state["stale"] = pid is not None and _start_time(pid) != start  # gone, a zombie (None) or reused
        except (OSError, ValueError, TypeError):
            state = {"name": path.stem, "namespaces": [], "stale": True}
        out.append({**state, "file": str(path)})
    return out


def down(state_file: str | os.PathLike) -> list[str]:
    """Remove the testbed of ``state_file``: kill the processes still in its namespaces, delete the namespaces
    (their veth pairs go with them), then the state file.

    Parameters
    ----------
    state_file : path
        A state file of :func:`states`.

    Returns:
        The namespaces removed.

    Raises:
        Nothing: a namespace that is already gone is skipped; one that cannot be deleted is left and reported by
        the next :func:`states`.

    Source: ip-netns(8) (``ip netns pids``, ``ip netns delete``).
    """
    path = Path(state_file)
    try:
        names = [str(ns) for ns in json.loads(path.read_text()).get("namespaces", [])]
    except (OSError, ValueError, AttributeError):
        names = []
    names = [ns for ns in names if ns.startswith(PREFIX)]  # never anything the project did not create
    existing = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    removed = []
    for ns in names:
        if ns not in existing:
            continue
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30).stdout
        for pid in map(int, pids.split()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        done = subprocess.run(["ip", "netns", "delete", ns], capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            removed.append(ns)
    if all(ns not in existing or ns in removed for ns in names):
        path.unlink(missing_ok=True)
    return removed
