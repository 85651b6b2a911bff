"""``python -m directcoll``: the ``directcoll`` command (:mod:`directcoll.cli.entry`).

After Ctrl-C (status 130) the process ends with ``os._exit`` once its streams are flushed: everything to clean up
was cleaned up while the interrupt unwound, and a SIGINT that lands while ``runpy`` itself is on the stack could
otherwise make the interpreter's shutdown re-raise it (exit by signal instead of status 130).
"""

import os
import sys

from directcoll.cli.entry import INTERRUPTED, main

status = main()
if status == INTERRUPTED:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
sys.exit(status)
