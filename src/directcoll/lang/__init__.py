"""The schedule language: your own algorithm in a few lines, in MSCCLang's words, compiled into the IR with every
check the IR has (docs/language.md).

- :mod:`~directcoll.lang.program`: :class:`Program` (buffers and their aliasing, the steps of its operations) and
  MSCCLang's ``chunk``, ``XML`` and ``Check``;
- :mod:`~directcoll.lang.chunks`: :class:`Buffer`, :class:`Ref` (``chunk(rank, buffer, index)``: ``.copy``,
  ``.reduce``, ``.send``, ``.split``, ``.group``) and the operations they record;
- :mod:`~directcoll.lang.execute`: the compiler: the program run on symbols step by step (a chunk sent before it
  is held, a contribution counted twice, a rank left short: one :class:`~directcoll.errors.ProgramError` line
  naming the step, rank and chunk), lowered to the IR and verified;
- :mod:`~directcoll.lang.define`: :func:`algorithm`, a program as a registry entry, for plugins
  (:mod:`directcoll.plugins`).

Source: docs/language.md; MSCCLang (Cowan et al., ASPLOS'23; msccl-tools ``msccl.language``) for the vocabulary.

>>> with Program("ring:3", "allreduce", chunk_factor=3) as prog:
...     for step in range(2):                          # reduce-scatter around the ring
...         for i in range(3):
...             _ = chunk((i + step + 1) % 3, Buffer.input, i).reduce(chunk((i + step) % 3, Buffer.input, i))
...     for step in range(2):                          # allgather around the ring
...         for i in range(3):
...             _ = chunk((i + step + 2) % 3, Buffer.input, i).copy((i + step + 3) % 3, Buffer.input, i)
...     Check()
True
>>> prog.compile().num_steps
4
"""

from directcoll.errors import ProgramError
from directcoll.lang.define import algorithm
from directcoll.lang.program import XML, Buffer, Check, Program, Ref, chunk, current

__all__ = ["XML", "Buffer", "Check", "Program", "ProgramError", "Ref", "algorithm", "chunk", "current"]
