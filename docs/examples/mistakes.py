"""The three mistakes of docs/language.md, "Errors": each program compiles into one line naming the step, the rank
and the chunk. Run it: python3 docs/examples/mistakes.py"""

from directcoll.lang import Buffer, Program, ProgramError


def ring_reduce_scatter(prog, n):
    for step in range(n - 1):
        for i in range(n):
            rank = (i + step) % n
            prog.chunk((rank + 1) % n, Buffer.input, i).reduce(prog.chunk(rank, Buffer.input, i))


def early():
    """A ring allgather one step ahead of itself: rank r forwards a chunk it has not received."""
    prog = Program("ring:4", "allgather", name="early")
    for step in range(3):
        for r in range(4):
            prog.chunk(r, Buffer.output, (r - step - 1) % 4).copy((r + 1) % 4, step=step)
    return prog


def twice():
    """A ring reduce-scatter, then rank 0's share of chunk 0 added into rank 1 a second time."""
    prog = Program("ring:4", "allreduce", chunk_factor=4, name="twice")
    ring_reduce_scatter(prog, 4)
    prog.chunk(1, Buffer.input, 0).reduce(prog.chunk(0, Buffer.input, 0))
    return prog


def short():
    """A ring allreduce whose allgather stops one step early."""
    prog = Program("ring:4", "allreduce", chunk_factor=4, name="short")
    ring_reduce_scatter(prog, 4)
    for step in range(2):
        for i in range(4):
            rank = (i + step - 1) % 4
            prog.chunk(rank, Buffer.input, i).copy((rank + 1) % 4)
    return prog


if __name__ == "__main__":
    for program in (early(), twice(), short()):
        try:
            program.compile()
        except ProgramError as error:
            print(error)
