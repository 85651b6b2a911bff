"""Swing's reduce-scatter on a 1D torus in directcoll.lang (De Sensi et al., NSDI'24, Sec. 3.1.1 and 4.1;
docs/language.md)."""

from directcoll.errors import UnsupportedShapeError
from directcoll.lang import Buffer, Program, algorithm


def rho(s):
    """Swing's distance at step s: 1, -1, 3, -5, 11, ... (Eq. 2)."""
    return (1 - (-2) ** (s + 1)) // 3


def peer(r, s, n):
    """The rank r exchanges with at step s: even ranks add rho(s), odd ranks subtract it (Eq. 2)."""
    return (r + rho(s)) % n if r % 2 == 0 else (r - rho(s)) % n


def reached(r, s, n, steps):
    """The ranks whose blocks rank r still reduces from step s on: itself and those its later peers reach."""
    return [r] if s == steps else reached(r, s + 1, n, steps) + reached(peer(r, s, n), s + 1, n, steps)


@algorithm("lang-swing", collectives=["reduce_scatter"],
           summary="Swing's reduce-scatter on a 1D torus of 2^k ranks, written in directcoll.lang: plain and "
                   "mirrored collectives on the two halves of each block (Swing Sec. 3.1.1, 4.1)")
def swing_reduce_scatter(topology):
    n = topology.num_compute
    steps = n.bit_length() - 1
    if n < 2 or n != 1 << steps:
        raise UnsupportedShapeError(f"lang-swing: needs 2^k ranks, got {n}")
    with Program(topology, "reduce_scatter", chunk_factor=2, name="lang-swing") as prog:
        for part, sign in enumerate([+1, -1]):      # the plain collective, and the mirrored one (ranks negated)
            for s in range(steps):
                for r in range(n):
                    q = sign * peer(sign * r % n, s, n) % n
                    for b in reached(sign * q % n, s + 1, n, steps):  # the blocks q's side reduces from now on
                        index = 2 * (sign * b % n) + part
                        prog.chunk(r, Buffer.input, index).send(q, reduce=True, step=s, ch=part)
    return prog
