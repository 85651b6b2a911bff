"""``directcoll native``: the native runtime's library and program files (docs/runtime.md, "The native runtime").

``native lib`` prints the path of ``libdirectcoll`` (building it first against the MPI of ``$MPICC`` or the
mpich wheel); ``native compile`` writes a verified schedule as a program file for ``DIRECTCOLL_SCHEDULES``.

Source: docs/runtime.md, "The native runtime".

>>> from directcoll.cli.main import main
>>> main(["native", "compile", "no/such/file.json", "-o", "p.dcp"])  # the error goes to stderr
2
"""

from __future__ import annotations

from directcoll.cli.options import check_output
from directcoll.cli.output import print_json


def register(sub) -> None:
    """Register ``directcoll native lib`` and ``directcoll native compile`` on the subparsers ``sub``.

    Returns:
        None.

    Raises:
        Nothing: builds parsers.

    Source: docs/runtime.md, "The native runtime".

    >>> from directcoll.cli.main import build_parser
    >>> build_parser().parse_args(["native", "lib"]).func.__name__
    'cmd_native_lib'
    """
    nat = sub.add_parser("native", help="the native runtime: libdirectcoll for LD_PRELOAD and its program files",
                         description="Run verified schedules inside unmodified MPI programs: LD_PRELOAD=$(directcoll "
                                     "native lib) DIRECTCOLL_SCHEDULES=tuning.json mpiexec ... (docs/runtime.md)")
    nat_sub = nat.add_subparsers(dest="native_command", required=True, metavar="SUBCOMMAND")
    lib = nat_sub.add_parser("lib", help="print the path of libdirectcoll, building it first against the MPI of "
                                         "$MPICC or the mpich wheel")
    lib.add_argument("--json", action="store_true", help="machine-readable output (path, mpicc, MPI version)")
    lib.set_defaults(func=cmd_native_lib)
    comp = nat_sub.add_parser("compile", help="write a schedule file as a native program file (verified first)")
    comp.add_argument("file", help="schedule file (.json or .npz): allreduce, reduce_scatter, allgather, "
                                           "alltoall, broadcast or reduce (a rooted program serves its root)")
    comp.add_argument("-o", "--output", required=True, help="program file to write, e.g. swing8.dcp")
    comp.add_argument("--json", action="store_true", help="machine-readable output")
    comp.set_defaults(func=cmd_native_compile)


def cmd_native_lib(args) -> int:
    """``directcoll native lib``: build libdirectcoll if needed (:func:`directcoll.runtime.native.library_path`)
    and print its path, for ``LD_PRELOAD=$(directcoll native lib)``.

    Output: the path alone on stdout; ``--json``: {path, mpicc, mpi_version}.

    Returns:
        0.

    Raises:
        MissingDependencyError: no MPI compiler wrapper (install the mpi extra or set MPICC).
        DirectcollError: the build failed (the compiler's last lines); the CLI turns both into exit status 2.

    Source: docs/runtime.md, "The native runtime".
    """
    from directcoll.runtime.native import find_mpicc, library_path, mpi_identity

    mpicc = find_mpicc()
    path = library_path(mpicc)
    if args.json:
        print_json({"path": str(path), "mpicc": " ".join(mpicc), "mpi_version": mpi_identity(mpicc)[1].strip()})
    else:
        print(path)
    return 0


def cmd_native_compile(args) -> int:
    """``directcoll native compile FILE -o OUT.dcp``: verify a schedule file and write it as a program file
    (:func:`directcoll.runtime.native.write_program`) for a ``DIRECTCOLL_SCHEDULES`` table.

    Output: ``wrote OUT: NAME COLLECTIVE program for N ranks[ from root R], S steps, B bytes``; ``--json``: the
    program's header fields (:func:`~directcoll.runtime.native.program_info`) and ``file``.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``; ScheduleFormatError, ScheduleError: an unreadable schedule file or
            one that fails verification. The CLI turns them into exit status 2.

    Source: docs/runtime.md, "Program files".

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path]) and None  # doctest: +ELLIPSIS
    ...     main(["native", "compile", path, "-o", os.path.join(tmp, "ring.dcp")])  # doctest: +ELLIPSIS
    wrote .../ring.json: ...
    wrote .../ring.dcp: ring:bidirectional allreduce program for 4 ranks, 6 steps, ... bytes
    0
    """
    from directcoll.runtime.native import program_info, write_program
    from directcoll.schedule import load

    check_output(args.output, "-o")
    path = write_program(load(args.file), args.output)
    info = program_info(path.read_bytes())
    if args.json:
        print_json({"file": str(path), **info})
    else:
        root = "" if info["root"] is None else f" from root {info['root']}"
        print(f"wrote {path}: {info['name']} {info['collective']} program for {info['ranks']} ranks{root}, "
              f"{info['steps']} steps, {info['bytes']} bytes")
    return 0
