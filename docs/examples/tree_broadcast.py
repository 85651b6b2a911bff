"""A binomial-tree broadcast in directcoll.lang, from any root (docs/language.md)."""

from directcoll.lang import Buffer, Program, algorithm


@algorithm("lang-tree", collectives=["broadcast"],
           summary="binomial-tree broadcast written in directcoll.lang: ceil(log2 N) steps, at each the ranks that "
                   "hold the vector send it to the rank half their range away (option root=R)")
def tree_broadcast(topology, *, root=0):
    n = topology.num_compute
    with Program(topology, "broadcast", root=root, name="lang-tree") as prog:
        span = 1 << (n - 1).bit_length()            # the range one holder covers, halved every step
        step = 0
        while span > 1:
            span //= 2
            for v in range(0, n - span, 2 * span):  # v holds the vector (ranks counted from the root)
                src, dst = (root + v) % n, (root + v + span) % n
                prog.chunk(src, Buffer.input, 0).copy(dst, step=step)
            step += 1
    return prog
