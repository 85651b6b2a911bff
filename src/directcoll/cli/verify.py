"""``directcoll verify FILE``: execute a schedule file exactly and check its collective.

Source: docs/verification.md; docs/architecture.md, "Command line".

>>> from directcoll.cli.main import main
>>> main(["verify", "no/such/file.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

from directcoll.cli.options import count
from directcoll.cli.output import ProgressBar, print_json


def register(sub) -> None:
    """Register ``directcoll verify`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    ver = sub.add_parser("verify", help="execute a schedule exactly and check its collective")
    ver.add_argument("file", help="schedule file (.json or .npz)")
    ver.add_argument("--seed", type=count(0), default=0, help="seed of the random 64-bit words, >= 0 (default 0)")
    ver.add_argument("--json", action="store_true", help="machine-readable output")
    ver.add_argument("--order", action="store_true",
                     help="also check the reductions run in rank order 0..N-1 (non-commutative operators); "
                          "exit 1 when they do not")
    ver.set_defaults(func=cmd_verify)


def cmd_verify(args) -> int:
    """``directcoll verify FILE``: execute a schedule file exactly (:func:`directcoll.verify.verify`).

    Output: ``OK: ...`` or ``FAILED: ...: step, rank, interval, expected, found, reason``; with ``--json``
    :meth:`VerifyResult.to_dict <directcoll.verify.exact.VerifyResult.to_dict>`. With ``--order``, the OK line
    ends with ``; order-preserving (...)`` or ``; not order-preserving: step, rank, interval: why``
    (:func:`directcoll.verify.order.check_order`).

    Returns:
        0 when the schedule implements its collective (in rank order, with ``--order``), 1 when it does not.

    Raises:
        ScheduleFormatError, ScheduleError, ResourceError: an unreadable file or a state over the budget.

    Source: docs/verification.md.

    >>> from directcoll.cli.main import main
    >>> main(["verify", "no/such/file.json"])
    2
    """
    from directcoll.schedule import load
    from directcoll.verify import verify

    schedule = load(args.file)
    big = not args.json and schedule.num_transfers > 50_000
    with ProgressBar(schedule.num_steps, "verifying", enabled=big) as tick:
        result = verify(schedule, seed=args.seed, on_step=tick, order=getattr(args, "order", False))
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0 if result.ok and (result.order is None or result.order.preserving) else 1
