"""Doctest collection over ``src/directcoll``: modules of an optional extra are skipped when it is not installed
(``directcoll[torch]``, ``directcoll[mpi]``), as their tests are."""

import importlib.util

collect_ignore = []
if importlib.util.find_spec("torch") is None:
    collect_ignore.append("src/directcoll/runtime/torch_dist.py")
if importlib.util.find_spec("mpi4py") is None:
    collect_ignore.append("src/directcoll/runtime/mpi.py")
