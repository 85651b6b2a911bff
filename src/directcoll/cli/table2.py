"""``directcoll table2``: regenerate Table 2 of the Swing paper.

Source: Swing (De Sensi et al., NSDI'24) Table 2; docs/architecture.md, "Command line".
"""

from __future__ import annotations

from directcoll.cli.options import count
from directcoll.cli.output import print_json

#: table2 builds side^4 tori: 16^4 = 65,536 ranks is the largest it measures
TABLE2_MAX_SIDE = 16


def register(sub) -> None:
    """Register ``directcoll table2`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    t2 = sub.add_parser("table2", help="regenerate Table 2 of the Swing paper (deficiencies, paper vs measured)")
    t2.add_argument("--side", type=count(2, TABLE2_MAX_SIDE), default=8,
                    help=f"torus side for the 2D/3D/4D measurements, 2 to {TABLE2_MAX_SIDE} (default 8; the 4D torus "
                         "has side^4 ranks)")
    t2.add_argument("--json", action="store_true", help="machine-readable output (default: a Markdown table)")
    t2.set_defaults(func=cmd_table2)


def cmd_table2(args) -> int:
    """``directcoll table2``: regenerate Table 2 of the Swing paper (:func:`directcoll.reports.table2.table2` on
    ``--side``^D tori, D = 2, 3, 4, and Swing-B on 64x64).

    Output: two Markdown tables, or with ``--json`` the rows (:func:`~directcoll.reports.table2.to_dicts`).

    Returns:
        0.

    Raises:
        ResourceError: a torus over the memory budget (``--side`` is capped at 16 by the parser).

    Source: Swing (De Sensi et al., NSDI'24) Table 2 and Sec. 2.3, 4.1.

    >>> from directcoll.cli.main import main
    >>> main(["table2", "--side", "99"])  # a usage error: one line on stderr, status 2
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    from directcoll.reports.table2 import table2, to_dicts, to_markdown

    rows = table2(side=args.side)
    if args.json:
        print_json(to_dicts(rows))
    else:
        print(to_markdown(rows))
    return 0
