"""An algorithm from a program: the :func:`algorithm` decorator turns a function that writes a
:class:`~directcoll.lang.program.Program` into a registry entry (:class:`~directcoll.registry.Algorithm`), which a
plugin package or a ``file:`` module hands to :mod:`directcoll.plugins`.

Source: docs/language.md, "Your algorithm in the registry"; docs/architecture.md, "Adding things" (a builder
``build(topology, collective, *, variant, ports, **options) -> Schedule``).

>>> @algorithm("two-ring", collectives=["allgather"])
... def two_ring(topology):
...     '''Two ranks swap their chunks.'''
...     prog = Program(topology, "allgather")
...     for r in (0, 1):
...         prog.chunk(r, "input", 0).copy(1 - r)
...     return prog
>>> two_ring.summary, two_ring.build(parse("ring:2"), "allgather").meta["algorithm"]
('Two ranks swap their chunks.', 'two-ring')
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable

from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.lang.program import Program
from directcoll.registry import Algorithm
from directcoll.schedule.ir import Collective, Schedule
from directcoll.topology.spec import parse

#: the keyword arguments a program's function may take besides the topology (and any build option it names)
KEYWORDS = ("collective", "variant", "ports")


def _accepts(fn: Callable, names: Iterable[str]) -> set[str]:
    """Which of ``names`` ``fn`` takes as keywords (all of them with ``**kwargs``)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return set(names)
    keywords = {p.name for p in params if p.kind in (inspect.Parameter.KEYWORD_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)}
    return set(names) & keywords


def algorithm(name: str, *, collectives: Iterable[str] = ("allreduce",), variants: Iterable[str] = (),
              summary: str | None = None, topologies: str = "any", aliases: Iterable[str] = ()
              ) -> Callable[[Callable], Algorithm]:
    """Decorate ``fn(topology, *, collective, variant, ports, **options) -> Program | Schedule`` into a registry
    :class:`~directcoll.registry.Algorithm` named ``name``.

    The function gets the topology and, of ``collective``, ``variant`` (the first of ``variants`` when none is
    asked for), ``ports`` and the build options (``root`` for broadcast and reduce, ``chunks``, ...), those it
    names as parameters; a value it cannot take is refused (an unsupported shape for ``compare``). A returned
    :class:`~directcoll.lang.program.Program` is compiled, so every build is checked and verified.

    Args:
        name: the registry name (lowercase, ``-`` between words).
        collectives, variants, aliases: as :class:`~directcoll.registry.Algorithm`'s.
        summary: one line for ``directcoll algorithms`` (default: the first line of the function's docstring).
        topologies: the networks it serves, in words.

    Returns:
        A decorator returning the :class:`~directcoll.registry.Algorithm` (its ``build`` wraps the function).

    Raises:
        ScheduleError: an unknown collective in ``collectives``, or several collectives for a function that takes
            no ``collective``. The built algorithm's ``build`` raises UnsupportedShapeError (a value the function
            cannot take), ScheduleError (a result that is not a program or schedule of the collective asked for) and
            ProgramError (the program's mistakes).

    Source: docs/language.md, "Your algorithm in the registry"; docs/architecture.md, "Adding things".

    >>> @algorithm("swap", collectives=["allreduce"], summary="two ranks add each other's vector")
    ... def swap(topology):
    ...     prog = Program(topology)
    ...     for r in (0, 1):
    ...         prog.chunk(r, "input", 0).send(1 - r, reduce=True, step=0)
    ...     return prog
    >>> swap.build(parse("ring:2"), "allreduce")
    Schedule(allreduce, swap, N=2, nblocks=1, steps=1, transfers=2)
    """
    served = tuple(Collective.parse(c).value for c in collectives)
    variants, aliases = tuple(variants), tuple(aliases)

    def wrap(fn: Callable) -> Algorithm:
        takes = _accepts(fn, KEYWORDS)
        if len(served) > 1 and "collective" not in takes:
            raise ScheduleError(f"{name}: serves {', '.join(served)}, so its function {fn.__name__} must take "
                                "`collective`")

        @functools.wraps(fn)
        def build(topology, collective=served[0], *, variant=None, ports=None, **options) -> Schedule:
            coll = Collective.parse(collective)
            topo = parse(topology) if isinstance(topology, str) else topology
            variant = variant or (variants[0] if variants else None)
            given = {"collective": coll.value, "variant": variant, "ports": ports, **options}
            accepted = _accepts(fn, given)
            for key, value in given.items():
                if key not in accepted and value is not None and key != "collective" and \
                        not (key == "root" and value == 0):
                    raise UnsupportedShapeError(f"{name}: takes no {key} ({fn.__name__} has no parameter {key!r}); "
                                                f"got {key}={value!r}")
            out = fn(topo, **{k: v for k, v in given.items() if k in accepted})
            if not isinstance(out, Program | Schedule):
                raise ScheduleError(f"{name}: {fn.__name__} returned {type(out).__name__}, not a Program or a "
                                    "Schedule")
            if out.collective is not coll:
                raise ScheduleError(f"{name}: asked for {coll.value}, {fn.__name__} wrote a {out.collective.value}")
            schedule = out.compile() if isinstance(out, Program) else out
            meta = {"algorithm": name, **({"variant": variant} if variant else {}),
                    **({"ports": int(ports)} if ports else {})}
            return schedule.with_meta(**meta)

        doc = inspect.getdoc(fn) or ""
        line = summary or (doc.strip().splitlines()[0] if doc.strip() else f"{name}: a directcoll.lang program")
        return Algorithm(name=name, build=build, collectives=served, variants=variants, topologies=topologies,
                         summary=line, aliases=aliases)

    return wrap
