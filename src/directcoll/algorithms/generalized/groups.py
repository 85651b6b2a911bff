"""Abelian groups of order P for Kolmakov & Zhang's generalized allreduce (Sec. 4, 5, 7 and 11), and the placement
permutation h of Sec. 5.1-5.2.

A group is a product of cyclic factors Z_n1 x ... x Z_nd (``"4x3"``; ``"12"`` or ``"cyclic"`` is Z_P, ``"xor"``
is Z_2 x ... x Z_2, the group of Table 1.b). Its elements are coded 0..P-1 row-major (the first factor's digit
most significant), the same numbering as the ranks of a torus of that shape (docs/topology.md), so on
``torus:4x3`` the group ``4x3`` with the identity placement acts on ranks by torus translations.

**Fold order.** Sec. 7 writes the bandwidth-optimal reduction with powers of one generator t: before step i the
vectors sit at placements t^0 .. t^(N_i - 1), N_i = ceil(P / 2^i), and the operator t^(-f_i), f_i = floor(N_i / 2),
moves those at t^(N_i - f_i) .. t^(N_i - 1) onto those f_i below them. For any abelian group the same schedule
needs an ordering e_0 = 0, e_1, .., e_(P-1) of the elements and one operator per step, g_i = e_(k + f_i) - e_k for
every moved k (one message per rank per step, Sec. 5.3). We call such an ordering a *fold order* (the paper's
"suitable group", Sec. 7 and 11) and find one by, in turn: the codes in order (cyclic groups and every
power-of-two P: e_k = k), mixed radix with the factors' significance permuted, the interval of the odd part
followed by the bits of the 2-part (any group whose odd part is cyclic), and an exhaustive search. Z_3 x Z_3
and Z_3 x Z_6 have none (the search exhausts every candidate), and are refused.

**Placement h.** The paper's h (Sec. 5.1-5.2) puts element i of the distributed vector Q_k on process t_k(h(i)).
We keep MPI's ownership (the reduce-scatter leaves part b on rank b), so h maps rank b to the group element its
part sits at: with processes labelled by group elements, part b of Q_k is on the rank whose element is h(b) + k.
``identity`` (h(b) = b), ``aligned`` (a group isomorphism onto the torus' coordinates, so that every operator is
one torus translation) or an explicit permutation.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from directcoll.errors import UnsupportedShapeError

#: fold-order search: element placements tried before giving up, and the largest P searched (a refusal says so)
SEARCH_BUDGET = 1_000_000
SEARCH_MAX_P = 1024
PLACEMENTS = ("identity", "aligned")


def fold_counts(p: int) -> list[int]:
    """N_i = ceil(P / 2^i) until 1 (eq. 18): how many distributed vectors remain before step i.

    Returns:
        A list of ceil(log2 P) + 1 ints, from P down to 1 ([1, 1] for P = 1).

    Raises:
        Nothing: arithmetic.

    Source: Kolmakov & Zhang, Sec. 7, eq. (18).

    >>> fold_counts(7)
    [7, 4, 2, 1]
    """
    counts = [p]
    while counts[-1] > 1 or len(counts) == 1:
        counts.append(-(-counts[-1] // 2))
    return counts


def parse_group(spec, p: int) -> tuple[int, ...]:
    """The cyclic factors of the group ``spec`` of order ``p``.

    Args:
        spec: ``"cyclic"`` (Z_P), ``"xor"`` (Z_2^k, power-of-two P), ``"N1xN2x..."`` or ``"P"``; or a sequence
            of ints.
        p: the number of ranks P.

    Returns:
        The factors, a tuple of ints >= 2 whose product is P (``()`` for P = 1).

    Raises:
        UnsupportedShapeError: unparseable, a factor < 2, a product other than P, or xor with P not a power of two.

    Source: Kolmakov & Zhang, Sec. 4-5 (an abelian group T_P of order P acting transitively) and Table 1.

    >>> parse_group("4x3", 12), parse_group("xor", 8), parse_group("cyclic", 5)
    ((4, 3), (2, 2, 2), (5,))
    >>> parse_group("2x5", 12)
    Traceback (most recent call last):
    ...
    directcoll.errors.UnsupportedShapeError: generalized: group 2x5 has order 10, not P = 12 (give cyclic factors \
>= 2 whose product is P, e.g. 12, 2x6, 3x4)
    """
    if not isinstance(spec, str):
        factors = tuple(int(f) for f in spec)
        name = "x".join(map(str, factors))
    elif spec == "cyclic":
        return (p,) if p > 1 else ()
    elif spec == "xor":
        if p < 1 or p & (p - 1):
            raise UnsupportedShapeError(f"generalized: the group of Table 1.b (xor) needs a power-of-two P, got {p}")
        return (2,) * (p.bit_length() - 1)
    else:
        name = spec.strip().lower()
        if not re.fullmatch(r"\d+(x\d+)*", name):
            raise UnsupportedShapeError(f"generalized: unknown group {spec!r}; accepted: cyclic, xor, or cyclic "
                                        "factors whose product is P such as 12, 4x3, 2x2x3")
        factors = tuple(int(f) for f in name.split("x"))
    if any(f < 2 for f in factors):
        raise UnsupportedShapeError(f"generalized: group {name} has a factor < 2 (every cyclic factor Z_n needs "
                                    "n >= 2)")
    if math.prod(factors) != p:
        raise UnsupportedShapeError(f"generalized: group {name} has order {math.prod(factors)}, not P = {p} (give "
                                    f"cyclic factors >= 2 whose product is P, e.g. {_examples(p)})")
    return factors


def _examples(p: int) -> str:
    pairs = [f"{f}x{p // f}" for f in range(2, p) if p % f == 0 and f <= p // f]
    return ", ".join([str(p)] + pairs[:2])


@dataclass(frozen=True)
class AbelianGroup:
    """Z_n1 x ... x Z_nd with elements coded 0..P-1 row-major; vectorised arithmetic on codes.

    Attributes:
        factors: the cyclic factors (their product is P).

    Raises:
        Nothing itself: build it with :func:`group_of`, which checks the factors.

    Source: Kolmakov & Zhang, Sec. 4-5 (T_P), Sec. 7 (operators), Table 1.b (xor).

    >>> g = AbelianGroup((4, 3))
    >>> int(g.add(5, 7)), int(g.neg(5)), g.fold_ops  # (1, 2) + (2, 1) = (3, 0); -(1, 2) = (3, 1)
    (9, 10, (6, 3, 1, 1))
    """

    factors: tuple[int, ...]

    @property
    def p(self) -> int:
        """The order P of the group (the product of its factors). Raises: Nothing. Source: Kolmakov & Zhang, Sec. 5.
        """
        return math.prod(self.factors)

    @property
    def name(self) -> str:
        """The factors as ``4x3`` (``--group``'s form). Raises: Nothing. Source: Kolmakov & Zhang, Sec. 11."""
        return "x".join(map(str, self.factors)) or "1"

    def digits(self, codes) -> np.ndarray:
        """Digits of element codes: int64 (..., d), row-major over the factors.

        Raises: ValueError (numpy's): a code outside [0, P). Source: Kolmakov & Zhang, Sec. 11 (Z_{n_1} x ... ).
        """
        codes = np.asarray(codes, dtype=np.int64)
        if not self.factors:
            return np.zeros((*codes.shape, 0), np.int64)
        return np.stack(np.unravel_index(codes, self.factors), axis=-1).astype(np.int64)

    def code(self, digits) -> np.ndarray:
        """Codes of digit tuples (..., d), taken modulo the factors: int64 (...).

        Raises: Nothing. Source: Kolmakov & Zhang, Sec. 11 (Z_{n_1} x ... x Z_{n_d}).
        """
        digits = np.asarray(digits, dtype=np.int64) % np.asarray(self.factors or (1,))
        if not self.factors:
            return np.zeros(digits.shape[:-1], np.int64)
        return np.ravel_multi_index(tuple(np.moveaxis(digits, -1, 0)), self.factors).astype(np.int64)

    @cached_property
    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        """Digits of every code (P, d) and the row-major weights (d,)."""
        weights = np.cumprod((1, *self.factors[:0:-1]))[::-1].astype(np.int64)
        return self.digits(np.arange(self.p)), weights

    def add(self, a, b) -> np.ndarray:
        """a + b on codes (broadcasts): the group operation.

        Raises: IndexError: a code outside [0, P). Source: Kolmakov & Zhang, Sec. 4-5 (T_P).
        """
        if len(self.factors) <= 1:
            return (np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64)) % max(self.p, 1)
        digits, weights = self._table
        return ((digits[np.asarray(a)] + digits[np.asarray(b)]) % np.asarray(self.factors)) @ weights

    def neg(self, a) -> np.ndarray:
        """-a on codes: the inverse element.

        Raises: IndexError: a code outside [0, P). Source: Kolmakov & Zhang, Sec. 4-5 (T_P).
        """
        if len(self.factors) <= 1:
            return (-np.asarray(a, dtype=np.int64)) % max(self.p, 1)
        digits, weights = self._table
        return ((-digits[np.asarray(a)]) % np.asarray(self.factors)) @ weights

    @cached_property
    def fold(self) -> tuple[np.ndarray, tuple[int, ...]]:
        """(fold order e: int64 (P,), operators g_i per reduction step); see the module docstring.

        Raises:
            UnsupportedShapeError: the group has no fold order (or none was found within the search budget).

        Source: Kolmakov & Zhang, Sec. 7 (the reduction phase's operators).
        """
        return _fold_order(self.factors)

    @property
    def fold_ops(self) -> tuple[int, ...]:
        """The operators g_i of the reduction steps (see :attr:`fold`).

        Raises: UnsupportedShapeError: as :attr:`fold`. Source: Kolmakov & Zhang, Sec. 7.
        """
        return self.fold[1]


def group_of(spec, p: int) -> AbelianGroup:
    """The group ``spec`` (see :func:`parse_group`) of order ``p``, its fold order checked.

    Returns:
        An :class:`AbelianGroup`.

    Raises:
        UnsupportedShapeError: as :func:`parse_group`, or a group without a fold order (e.g. 3x3).

    Source: Kolmakov & Zhang, Sec. 5 and 7 (a suitable group T_P).

    >>> group_of("2x2x3", 12).fold_ops
    (6, 3, 1, 1)
    """
    g = AbelianGroup(parse_group(spec, p))
    g.fold  # noqa: B018 - raises now for a group without a fold order
    return g


def _ops(factors: tuple[int, ...], order: np.ndarray) -> tuple[int, ...] | None:
    """The step operators of a candidate order, or None where it is not a fold order."""
    g = AbelianGroup(factors)
    n = fold_counts(len(order))
    if len(np.unique(order)) != len(order) or order[0] != 0:
        return None
    ops = []
    for i in range(len(n) - 1):
        f = n[i] // 2
        ks = np.arange(n[i] - 2 * f, n[i] - f)
        diff = np.unique(g.add(order[ks + f], g.neg(order[ks])))
        if len(diff) != 1:
            return None
        ops.append(int(diff[0]))
    return tuple(ops)


@lru_cache(maxsize=256)
def _fold_order(factors: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    g = AbelianGroup(factors)
    p = g.p
    candidates = [np.arange(p, dtype=np.int64)]
    for perm in itertools.islice(itertools.permutations(range(len(factors))), 1, 120):  # significance permuted
        shape = tuple(factors[j] for j in perm)
        digits = np.stack(np.unravel_index(np.arange(p), shape), axis=-1)
        candidates.append(g.code(digits[:, np.argsort(perm)]))
    odd = [f >> ((f & -f).bit_length() - 1) for f in factors]
    if all(math.gcd(a, b) == 1 for a, b in itertools.combinations(odd, 2)):  # the odd part is cyclic
        m = math.prod(odd)
        gamma = np.array([f // o for f, o in zip(factors, odd, strict=True)])
        unit = np.eye(len(factors), dtype=np.int64)
        bits = sorted((int(g.code(unit[j] * (o << b))), j) for j, (f, o) in enumerate(zip(factors, odd, strict=True))
                      for b in range((f // o).bit_length() - 1))
        k = np.arange(p)
        digits = (k % m)[:, None] * gamma
        for t, (code, _) in enumerate(bits):
            digits = digits + ((k // m) >> t & 1)[:, None] * g.digits(code)
        candidates.append(g.code(digits))
    for order in candidates:
        ops = _ops(factors, order)
        if ops is not None:
            order.setflags(write=False)
            return order, ops
    found, exhausted = _search(g)
    if found is None:
        why = ("none exists (exhaustive search)" if exhausted else f"none found within {SEARCH_BUDGET:,} tries"
               if p <= SEARCH_MAX_P else f"the search stops at P = {SEARCH_MAX_P}")
        raise UnsupportedShapeError(f"generalized: group {g.name} has no element order that Sec. 7's folds "
                                    f"(N_i = ceil(N_(i-1) / 2), one operator per step) can use: {why}; "
                                    f"take {p} (cyclic) or another factorization")
    order = np.array(found, dtype=np.int64)
    order.setflags(write=False)
    return order, _ops(factors, order)


def _search(g: AbelianGroup) -> tuple[list[int] | None, bool]:
    """Depth-first search of the operators, from the last step (2 vectors) back to the first (P vectors)."""
    p, n = g.p, fold_counts(g.p)
    if p > SEARCH_MAX_P:
        return None, False
    table = g.add(np.arange(p)[:, None], np.arange(p)[None, :]).tolist()  # at most 2^20 entries
    weight = np.count_nonzero(g.digits(np.arange(p)), axis=-1)
    cands = sorted(range(1, p), key=lambda c: (int(weight[c]), c))
    tries = [0]

    def rec(i: int, seq: list[int]) -> list[int] | None:
        if i < 0:
            return seq
        f = n[i] // 2
        src = seq[n[i + 1] - f: n[i + 1]]
        have = set(seq)
        for c in cands:
            new, seen = [], set()
            for e in src:  # stop at the first element already taken
                tries[0] += 1
                x = table[e][c]
                if x in have or x in seen:
                    break
                seen.add(x)
                new.append(x)
            if tries[0] > SEARCH_BUDGET:
                return None
            if len(new) == len(src):
                out = rec(i - 1, seq + new)
                if out is not None:
                    return out
        return None

    found = rec(len(n) - 2, [0])
    return found, tries[0] <= SEARCH_BUDGET


def placement_of(spec, group: AbelianGroup, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The placement permutation h: element code of every rank's part, int64 (P,).

    Args:
        spec: ``None`` or ``"identity"`` (h(b) = b); ``"aligned"``: a group isomorphism from the grid coordinates
            of ``shape`` (row-major ranks) onto the group, matching their primary cyclic components, so every
            group operator is one torus translation; or a permutation of 0..P-1 (a sequence, or a string of
            comma-separated ints).
        group: the group; shape: the topology's grid shape (for ``aligned``).

    Returns:
        h, int64 (P,): rank b's part sits at group element h[b] (module docstring).

    Raises:
        UnsupportedShapeError: an unknown name, not a permutation of 0..P-1, or ``aligned`` without a grid of P
            ranks or with a group not isomorphic to the grid's (e.g. 2x6 on torus:4x3).

    Source: Kolmakov & Zhang, Sec. 5.1-5.2, eq. (3) and (5) (the permutation h).

    >>> placement_of("aligned", AbelianGroup((12,)), (4, 3)).tolist()[:4]  # CRT: rank (x, y) -> e, e = x mod 4 ...
    [0, 4, 8, 9]
    """
    p = group.p
    if spec is None or (isinstance(spec, str) and spec == "identity"):
        return np.arange(p, dtype=np.int64)
    if isinstance(spec, str) and spec == "aligned":
        return _aligned(group, shape)
    try:
        h = np.array([int(x) for x in (spec.split(",") if isinstance(spec, str) else spec)], dtype=np.int64)
    except ValueError:
        raise UnsupportedShapeError(f"generalized: unknown placement {spec!r}; accepted: identity, aligned, or a "
                                    f"permutation of 0..{p - 1} as comma-separated ranks' group elements") from None
    if len(h) != p or not np.array_equal(np.sort(h), np.arange(p)):
        raise UnsupportedShapeError(f"generalized: placement must be a permutation of 0..{p - 1} (one group "
                                    f"element per rank), got {len(h)} values {h[:8].tolist()}...")
    return h


def _primary(n: int) -> list[int]:
    """The prime powers whose product is n (Z_n = their product, by the Chinese remainder theorem)."""
    out, q = [], 2
    while n > 1:
        if q * q > n:
            q = n
        if n % q == 0:
            pk = 1
            while n % q == 0:
                n //= q
                pk *= q
            out.append(pk)
        q += 1
    return out


def _aligned(group: AbelianGroup, shape) -> np.ndarray:
    p = group.p
    if not shape or math.prod(shape) != p:
        raise UnsupportedShapeError(f"generalized: placement aligned needs a grid topology of P = {p} ranks "
                                    f"(e.g. torus:...), got shape {shape}")
    # primary components (modulus, coordinate axis) of the grid and of the group, matched by modulus
    grid = sorted((q, a) for a, n in enumerate(shape) for q in _primary(n))
    mine = sorted((q, a) for a, n in enumerate(group.factors) for q in _primary(n))
    if [q for q, _ in grid] != [q for q, _ in mine]:
        raise UnsupportedShapeError(f"generalized: placement aligned maps grid coordinates onto the group by an "
                                    f"isomorphism; group {group.name} (Z_{' x Z_'.join(map(str, [q for q, _ in mine]))}"
                                    f") is not isomorphic to the grid {'x'.join(map(str, shape))} "
                                    f"(Z_{' x Z_'.join(map(str, [q for q, _ in grid]))}); use identity or a "
                                    "permutation")
    coords = np.stack(np.unravel_index(np.arange(p), tuple(shape)), axis=-1)
    digits = np.zeros((p, len(group.factors)), dtype=np.int64)
    for (q, axis), (_, gaxis) in zip(grid, mine, strict=True):
        n = group.factors[gaxis]
        # the component x mod q of the grid axis goes to the Z_q component of the group factor Z_n (CRT: the
        # idempotent e with e = 1 mod q, e = 0 mod n / q)
        rest = n // q
        e = rest * pow(rest, -1, q) % n if rest > 1 else 1
        digits[:, gaxis] += (coords[:, axis] % q) * e
    return group.code(digits)
