"""Code structure of one program phase: functions made of basic blocks, loops, ifs and call sites.

Every function is a structured region tree (sequences of blocks, ``if``/``if-else``
constructs and loops, laid out the way a compiler lays them out, so a not-taken
branch falls through to the next instruction), flattened into a block table.
Each block ends in at most one control transfer (its *terminator*).  A phase also
has a *driver*: an endless loop of direct calls to the top-level functions, with
a phase check after each call (a branch that leaves for the next phase's driver
once the phase's instructions are done).

The expected number of executions of every block per driver iteration follows
from the structure alone (loop trip means, forward-branch probabilities, call
sites), which is what calibration uses: :func:`block_weights`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from whatif.simulator.synth.streams import M1, M2, M3
from whatif.simulator.workload import PhaseParams

# block terminators
T_NONE, T_IF, T_LOOP, T_JUMP, T_CALL, T_RET, T_PH_EXIT, T_PH_CONT, T_PH_SWITCH = range(9)
TERM_NAMES = ("none", "if", "loop", "jump", "call", "ret", "phase_exit", "phase_continue", "phase_switch")
COND_TERMS = (T_IF, T_LOOP, T_PH_EXIT, T_PH_CONT)
# forward-branch behaviours
B_BIASED, B_PERIODIC, B_RANDOM = range(3)
BEHAVIOUR_NAMES = ("biased", "periodic", "random")

MAX_NEST = 4          # nesting of ifs and loops
MAX_LOOP_DEPTH = 2    # loop nesting
P_STRUCT = 0.55       # probability that a sequence item is an if or a loop (else a plain or call block)
STRUCT_MEAN = 3.0     # mean blocks in an if
LOOP_MEAN = 7.0       # mean blocks in a loop (bodies hold ifs and calls, as real loop bodies do)
TRIP_SIGMA = 0.6      # log-normal spread of loop trip means around branches.loop_trips
MAX_PERIOD_BITS = 64


@dataclass
class PhaseCode:
    """Structure of one phase: region trees, constructs, call sites, and the block table of the
    current layout (driver blocks last).  Arrays are indexed by block, construct or call site."""
    params: PhaseParams
    n_functions: int
    f_level: np.ndarray        # function -> call level (0: called by the driver)
    f_rank: np.ndarray         # function -> popularity rank (0: most popular)
    trees: list                # function -> region tree (items, see _Builder.gen_seq)
    atom_call: np.ndarray      # atom -> call site made there, or -1
    driver_sites: int          # call sites of the driver
    c_loop: np.ndarray         # construct -> True for loops, False for ifs
    c_else: np.ndarray         # if -> has an else arm
    c_mu: np.ndarray           # loop -> expected trip count (integral for fixed loops)
    c_base: np.ndarray         # loop -> trip count around which a variable loop draws (fixed: the count)
    c_fixed: np.ndarray        # loop -> fixed trip count
    c_behaviour: np.ndarray    # if -> B_*
    c_u: np.ndarray            # if -> uniform draw: a biased if's first arm is the common (>= 0.5) or rare one
    c_period: np.ndarray       # periodic if -> period
    c_bits_u: np.ndarray       # periodic if -> uniforms deciding each pattern bit (constructs x 64)
    c_flip: np.ndarray         # if -> laid out with the arms the other way round (see if_probabilities)
    cs_indirect: np.ndarray    # call site -> indirect
    cs_targets: list           # call site -> array of callee functions
    cs_probs: list             # call site -> array of target probabilities
    # block table of the current layout (set by layout())
    f_first: np.ndarray = None     # function -> first block (the driver is function n_functions)
    f_count: np.ndarray = None     # function -> number of blocks
    b_func: np.ndarray = None      # block -> function
    b_term: np.ndarray = None      # block -> terminator T_*
    b_construct: np.ndarray = None  # block -> construct of its if/loop branch, or -1
    b_target: np.ndarray = None    # block -> target block of its branch or jump, or -1
    b_call: np.ndarray = None      # block -> call site, or -1
    b_chain: np.ndarray = None     # block x MAX_NEST -> factor index; sentinel 2 * constructs
    cs_block: np.ndarray = None    # call site -> block
    b_key: np.ndarray = None       # block -> (function, number within the function), a stable draw key
    c_key: np.ndarray = None       # construct -> (function, number within the function)
    taken_step: float = 0.0        # largest change of the taken rate one flip makes (calibration granularity)

    @property
    def n_blocks(self) -> int:
        return len(self.b_func)

    @property
    def n_constructs(self) -> int:
        return len(self.c_loop)

    @property
    def driver(self) -> int:
        return self.n_functions

    def base_taken(self) -> np.ndarray:
        """Taken probability of every if's branch in the unflipped layout (first arm falls
        through, the branch jumps to the second arm or past the if).  The arm-execution
        probabilities (and so the block weights) are the same in both layouts."""
        br = self.params.branches
        p = np.zeros(self.n_constructs)
        ifs = ~self.c_loop
        biased = ifs & (self.c_behaviour == B_BIASED)
        p[biased] = np.where(self.c_u[biased] < 0.5, br.bias, 1.0 - br.bias)
        per = ifs & (self.c_behaviour == B_PERIODIC)
        if per.any():
            bits = self.c_bits_u[per] < 0.5
            mask = np.arange(MAX_PERIOD_BITS)[None, :] < self.c_period[per][:, None]
            p[per] = (bits & mask).sum(axis=1) / self.c_period[per]
        p[ifs & (self.c_behaviour == B_RANDOM)] = br.random_taken
        return p

    def if_probabilities(self) -> np.ndarray:
        """Taken probability of every if's branch in the current layout (loops: 0).  A flipped if
        without an else is laid out as "branch to the arm, else jump past it"; a flipped if-else
        swaps its arms: either way the branch is taken exactly when it was not taken before."""
        p = self.base_taken()
        return np.where(self.c_flip & ~self.c_loop, 1.0 - p, p)

    def arm_probabilities(self) -> np.ndarray:
        """Probability that the first arm of each if runs (layout independent)."""
        return 1.0 - self.base_taken()

    def flat_calls(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(call site, callee, probability) triples of every call edge."""
        if not hasattr(self, "_flat"):
            sizes = [len(t) for t in self.cs_targets]
            self._flat = (np.repeat(np.arange(len(sizes), dtype=np.int64), sizes),
                          np.concatenate(self.cs_targets) if sizes else np.zeros(0, np.int64),
                          np.concatenate(self.cs_probs) if sizes else np.zeros(0))
        return self._flat

    def pattern_bits(self, c: int) -> int:
        """The repeating outcome pattern of periodic construct ``c`` (bit i: outcome of execution i)."""
        bits = self.c_bits_u[c, :self.c_period[c]] < 0.5
        if self.c_flip[c]:
            bits = ~bits
        return int(sum(1 << i for i, b in enumerate(bits) if b))

    def layout(self) -> None:
        """(Re)build the block table from the region trees and the current flips."""
        _emit_all(self)


# ------------------------------------------------------------------------------------ generation
class _Builder:
    """Region trees: lists of items ("atom", a), ("loop", body, c), ("if", first, second_or_None, c)
    with atoms and constructs numbered as they are generated."""

    def __init__(self, params: PhaseParams, rng: np.random.Generator):
        self.p = params
        self.rng = rng
        self.c_loop: list[bool] = []
        self.c_else: list[bool] = []
        self.atom_func: list[int] = []
        self.atom_in_loop: list[bool] = []

    def gen_seq(self, budget: int, loop_depth: int, nest: int, func: int) -> list:
        rng, br = self.rng, self.p.branches
        items: list = []
        while budget > 0:
            if budget >= 2 and nest < MAX_NEST and rng.random() < P_STRUCT:
                loop = rng.random() < br.loops and loop_depth < MAX_LOOP_DEPTH
                size = int(min(budget, 1 + rng.geometric(1.0 / (LOOP_MEAN if loop else STRUCT_MEAN))))
                size = max(size, 2)
                c = len(self.c_loop)
                self.c_loop.append(loop)
                self.c_else.append(False)
                if loop:
                    items.append(("loop", self.gen_seq(size - 1, loop_depth + 1, nest + 1, func), c))
                elif size >= 4 and rng.random() < br.if_else:
                    self.c_else[c] = True
                    t = 1 + int(rng.integers(0, size - 3))
                    items.append(("if", self.gen_seq(t, loop_depth, nest + 1, func),
                                  self.gen_seq(size - 2 - t, loop_depth, nest + 1, func), c))
                else:
                    items.append(("if", self.gen_seq(size - 1, loop_depth, nest + 1, func), None, c))
                budget -= size
            else:
                items.append(("atom", len(self.atom_func)))
                self.atom_func.append(func)
                self.atom_in_loop.append(loop_depth > 0)
                budget -= 1
        return items


class _Emitter:
    """Flattens region trees into blocks: [func, term, construct, target, call site, chain]."""

    def __init__(self, pc: PhaseCode):
        self.pc = pc
        self.blocks: list[list] = []

    def new_block(self, func: int, term: int, chain: list, construct: int = -1, target: int = -1,
                  call: int = -1) -> int:
        self.blocks.append([func, term, construct, target, call, chain])
        return len(self.blocks) - 1

    def emit(self, items: list, func: int, chain: list) -> None:
        flip = self.pc.c_flip
        for item in items:
            kind = item[0]
            if kind == "atom":
                site = int(self.pc.atom_call[item[1]])
                self.new_block(func, T_CALL if site >= 0 else T_NONE, chain, call=site)
            elif kind == "loop":
                c = item[2]
                start = len(self.blocks)
                inner = chain + [2 * c]
                self.emit(item[1], func, inner)
                self.new_block(func, T_LOOP, inner, c, start)
            else:
                c = item[3]
                first, second = item[1], item[2]
                head = self.new_block(func, T_IF, chain, c)
                if second is None and flip[c]:
                    # branch to the arm (taken when it runs), else jump past it
                    jump = self.new_block(func, T_JUMP, chain + [2 * c])
                    self.blocks[head][3] = len(self.blocks)
                    self.emit(first, func, chain + [2 * c + 1])
                    self.blocks[jump][3] = len(self.blocks)
                    continue
                if second is not None and flip[c]:
                    first, second = second, first
                # link 2c: the fall-through position (runs with 1 - p), 2c + 1: the taken one (p)
                self.emit(first, func, chain + [2 * c])
                if second is not None:
                    jump = self.new_block(func, T_JUMP, chain + [2 * c])
                    self.blocks[head][3] = len(self.blocks)
                    self.emit(second, func, chain + [2 * c + 1])
                    self.blocks[jump][3] = len(self.blocks)
                else:
                    self.blocks[head][3] = len(self.blocks)


def _emit_all(pc: PhaseCode) -> None:
    """Block table of every function (then the driver) for the current flips.  Chain links: for an
    if c, 2c marks blocks in its fall-through position (run with 1 - p, p its taken probability in
    this layout) and 2c + 1 blocks in its taken position (run with p); see block_weights."""
    e = _Emitter(pc)
    F = pc.n_functions
    first = np.zeros(F + 1, dtype=np.int64)
    count = np.zeros(F + 1, dtype=np.int64)
    for f in range(F):
        first[f] = len(e.blocks)
        e.emit(pc.trees[f], f, [])
        e.new_block(f, T_RET, [])
        count[f] = len(e.blocks) - first[f]
    # driver: [call f; phase-exit check] x sites, phase-continue back to the head, switch jump
    first[F] = head = len(e.blocks)
    n_sites = len(pc.cs_targets)
    exits = []
    for k in range(pc.driver_sites):
        e.new_block(F, T_CALL, [], call=n_sites - pc.driver_sites + k)
        exits.append(e.new_block(F, T_PH_EXIT, []))
    e.new_block(F, T_PH_CONT, [], -1, head)
    switch = e.new_block(F, T_PH_SWITCH, [])
    for x in exits:
        e.blocks[x][3] = switch
    count[F] = len(e.blocks) - first[F]
    blocks = e.blocks
    C = pc.n_constructs
    chain = np.full((len(blocks), MAX_NEST), 2 * C, dtype=np.int64)
    for i, blk in enumerate(blocks):
        chain[i, :len(blk[5])] = blk[5]
    pc.f_first, pc.f_count = first, count
    pc.b_func = np.array([x[0] for x in blocks], dtype=np.int64)
    pc.b_term = np.array([x[1] for x in blocks], dtype=np.int64)
    pc.b_construct = np.array([x[2] for x in blocks], dtype=np.int64)
    pc.b_target = np.array([x[3] for x in blocks], dtype=np.int64)
    pc.b_call = np.array([x[4] for x in blocks], dtype=np.int64)
    pc.b_chain = chain
    pc.b_key = place_key(pc.b_func, np.arange(len(blocks)) - first[pc.b_func])
    cs_block = np.full(n_sites, -1, dtype=np.int64)
    calls = np.flatnonzero(pc.b_call >= 0)
    cs_block[pc.b_call[calls]] = calls
    pc.cs_block = cs_block


def _levels(n: int, depth: int, rng: np.random.Generator) -> np.ndarray:
    """Call level of each function: level d holds a share proportional to 2**d (more leaves)."""
    nlev = max(1, min(depth + 1, n))
    w = 2.0 ** np.arange(nlev)
    counts = np.maximum(1, np.floor(n * w / w.sum())).astype(int)
    while counts.sum() > n:
        counts[np.argmax(counts)] -= 1
    counts[-1] += n - counts.sum()
    return rng.permutation(np.repeat(np.arange(nlev), counts))


class _Popularity:
    """Zipf choice among candidates ordered most popular first."""

    def __init__(self, cands: np.ndarray, skew: float):
        self.cands = cands
        self.cw = np.cumsum(1.0 / np.arange(1, len(cands) + 1) ** skew)

    def pick(self, rng: np.random.Generator, k: int = 1) -> np.ndarray:
        """``k`` distinct candidates (fewer when there are fewer), most popular first."""
        k = min(k, len(self.cands))
        got: list[int] = []
        while len(got) < k:
            i = int(np.searchsorted(self.cw, rng.random() * self.cw[-1], side="right"))
            i = min(i, len(self.cands) - 1)
            if i not in got:
                got.append(i)
        return self.cands[np.sort(np.array(got, dtype=np.int64))]


class SourceDraws:
    """The random draws of a program's source (its control structure, block sizes, instructions, dataflow,
    field offsets), keyed so that a change to one function leaves the draws of every other one alone: a generator per
    (tag, function) from ``entropy``, and hashed uniforms per (tag, item key).  So a description
    perturbed a little (a mix share, a footprint) gives a program that differs a little."""

    PHASE, FUNCTION, BLOCK, DEAL, CALL_SITE, REGISTERS, OFFSET, CONSTRUCT = range(8)

    def __init__(self, *entropy: int):
        self.entropy = tuple(int(e) for e in entropy)
        self._salt = np.uint64(np.random.SeedSequence([*self.entropy, 0xC0DE]).generate_state(1, np.uint64)[0])

    def rng(self, tag: int, index: int = 0) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence([*self.entropy, tag, int(index)]))

    def uniform(self, tag: int, *keys: np.ndarray) -> np.ndarray:
        """A uniform in [0, 1) per item, a function of (tag, keys) only (splitmix64 of the folded keys)."""
        with np.errstate(over="ignore"):
            # the tag is hashed first: with salt + tag, (tag, key) and (tag + 1, key ^ 1) collided
            start = _mix64(np.array([self._salt ^ np.uint64(tag)], np.uint64))[0]
            z = np.full(np.broadcast(*keys).shape if keys else (), start, np.uint64)
            for k in keys:
                z = _mix64(z ^ np.asarray(k, dtype=np.int64).astype(np.uint64))
        return (z >> np.uint64(11)).astype(float) * (1.0 / 9007199254740992.0)


def place_key(func: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The draw key of an item (block, construct, instruction): its function and its number within it, so
    that a change to one function leaves the keys of every other one alone."""
    return np.asarray(func, dtype=np.int64) * (1 << 24) + np.asarray(index, dtype=np.int64)


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's step and output function (:func:`..streams.mix64`), vectorised (uint64 arithmetic wraps)."""
    z = z + M1
    z = (z ^ (z >> np.uint64(30))) * M2
    z = (z ^ (z >> np.uint64(27))) * M3
    return z ^ (z >> np.uint64(31))


def generate(params: PhaseParams, source: SourceDraws) -> PhaseCode:
    """Generate the structure of one phase (unflipped layout).  Phase-wide draws (call levels, popularity,
    function sizes, the driver's call sites) depend on the number of functions only; each function's tree,
    call sites and construct attributes come from its own generator."""
    code, mix, br = params.code, params.mix, params.branches
    F = code.functions
    rng = source.rng(SourceDraws.PHASE)
    level = _levels(F, code.call_depth, rng)
    rank = rng.permutation(F)
    deepest = int(level.max())
    sigma = code.size_sigma
    sizes = code.function_instructions * np.exp(sigma * rng.standard_normal(F) - sigma ** 2 / 2)
    budgets = np.maximum(1, np.rint(sizes * mix.branch)).astype(np.int64)
    n_calls_drawn = rng.poisson(code.calls_per_function, size=F)
    # callees: candidates of a level-d caller are the deeper functions, most popular first
    by_rank = np.argsort(rank)
    pop = {d: _Popularity(by_rank[level[by_rank] > d], code.hot_skew) for d in range(deepest)}
    b = _Builder(params, rng)
    trees = []
    atom_call: list[int] = []
    cs_targets, cs_probs, cs_indirect = [], [], []
    attrs, c_keys = [], []
    for f in range(F):
        b.rng = frng = source.rng(SourceDraws.FUNCTION, f)
        a0, c0 = len(b.atom_func), len(b.c_loop)
        trees.append(b.gen_seq(int(budgets[f]), 0, 0, f))
        atoms = np.arange(a0, len(b.atom_func))
        atom_call.extend([-1] * len(atoms))
        if level[f] < deepest and len(atoms) and n_calls_drawn[f]:
            pref = np.where(np.array(b.atom_in_loop[a0:]), code.calls_in_loops, 1.0)
            n_calls = min(int((pref > 0).sum()), int(n_calls_drawn[f]))
            # weighted sampling without replacement (Efraimidis-Spirakis keys), a key per atom of the function
            # and a generator per call site: a tree that grows at its end keeps its earlier call sites
            u = source.uniform(SourceDraws.CALL_SITE, place_key(f, np.arange(len(atoms))))
            keys = np.where(pref > 0, u ** (1.0 / np.maximum(pref, 1e-300)), -1.0)
            cands = pop[int(level[f])]
            for j in np.argsort(-keys, kind="stable")[:n_calls]:
                crng = source.rng(SourceDraws.CALL_SITE, int(place_key(f, j)))
                indirect = (code.indirect_targets > 1 and crng.random() < code.indirect_calls
                            and len(cands.cands) > 1)
                if indirect:
                    t = cands.pick(crng, code.indirect_targets)
                    wt = 1.0 / (np.arange(1, len(t) + 1) ** code.indirect_skew)
                    probs = wt / wt.sum()
                else:
                    t = cands.pick(crng)
                    probs = np.ones(1)
                atom_call[atoms[j]] = len(cs_targets)
                cs_targets.append(t.astype(np.int64))
                cs_probs.append(probs)
                cs_indirect.append(indirect)
        c_keys.append(place_key(f, np.arange(len(b.c_loop) - c0)))
        attrs.append(_construct_draws(source, c_keys[-1]))
    top = _Popularity(by_rank[level[by_rank] == 0], code.hot_skew)
    driver_sites = max(16, 3 * len(top.cands))
    for _ in range(driver_sites):
        cs_targets.append(top.pick(rng))
        cs_probs.append(np.ones(1))
        cs_indirect.append(False)
    # construct attributes
    c_loop = np.array(b.c_loop, dtype=bool)
    C = len(c_loop)
    normal, u_fixed, u_behaviour, c_u, period_u, bits_u = (
        np.concatenate([a[k] for a in attrs]) if C else np.zeros((0, MAX_PERIOD_BITS) if k == 5 else 0)
        for k in range(6))
    mu = br.loop_trips * np.exp(TRIP_SIGMA * normal - TRIP_SIGMA ** 2 / 2)
    fixed = c_loop & (u_fixed < br.fixed_trip_loops)
    base = np.where(fixed, np.maximum(1.0, np.rint(mu)), np.maximum(1.0, mu))
    base[~c_loop] = 1.0
    mu = np.where(fixed, base, expected_trips(base, br.loop_trip_spread))
    x = u_behaviour * (br.biased + br.periodic + br.random)
    behaviour = np.where(x < br.biased, B_BIASED, np.where(x < br.biased + br.periodic, B_PERIODIC, B_RANDOM))
    behaviour[c_loop] = B_BIASED
    period = np.minimum(2 + np.floor(period_u * (br.max_period - 1)), br.max_period).astype(np.int64)
    pc = PhaseCode(
        params=params, n_functions=F, f_level=level.astype(np.int64), f_rank=rank.astype(np.int64), trees=trees,
        atom_call=np.array(atom_call, dtype=np.int64), driver_sites=driver_sites, c_loop=c_loop,
        c_else=np.array(b.c_else, dtype=bool), c_mu=mu.astype(float), c_base=base.astype(float), c_fixed=fixed,
        c_behaviour=behaviour.astype(np.int64), c_u=c_u, c_period=period, c_bits_u=bits_u,
        c_flip=np.zeros(C, dtype=bool), cs_indirect=np.array(cs_indirect, dtype=bool), cs_targets=cs_targets,
        cs_probs=cs_probs)
    # a construct's key: (function, its number within the function), stable when other functions change
    pc.c_key = np.concatenate(c_keys) if C else np.zeros(0, np.int64)
    pc.layout()
    return pc


def _construct_draws(source: SourceDraws, keys: np.ndarray) -> tuple:
    """The per-construct draws of one function's constructs, by their keys (function, construct number):
    trip-mean normals, fixed-trip, behaviour, arm and period uniforms, and the periodic pattern's bit
    uniforms."""
    u = source.uniform(SourceDraws.CONSTRUCT, keys[:, None], np.arange(5 + MAX_PERIOD_BITS)[None, :])
    return (ndtri(np.maximum(u[:, 0], 1e-16)), u[:, 1], u[:, 2], u[:, 3], u[:, 4], u[:, 5:])


def trip_range(base: np.ndarray | float, spread: float) -> tuple:
    """A variable loop draws T = max(1, floor(lo + width * u)), u uniform in [0, 1): (lo, width)."""
    return np.asarray(base) * (1.0 - spread) + 0.5, 2.0 * np.asarray(base) * spread


def expected_trips(base: np.ndarray, spread: float) -> np.ndarray:
    """E[max(1, floor(X))] for X uniform on [lo, lo + width) (see trip_range), in closed form."""
    lo, width = trip_range(np.asarray(base, dtype=float), spread)
    return mean_floor(lo, width)


def mean_floor(lo: np.ndarray, width: np.ndarray) -> np.ndarray:
    """E[max(1, floor(X))], X uniform on [lo, lo + width) (a point mass at lo when width is 0)."""
    lo = np.asarray(lo, dtype=float)
    width = np.asarray(width, dtype=float)

    def prim(x):          # integral of floor(t) dt from 0 to x, x >= 0
        f = np.floor(x)
        return f * (f - 1.0) / 2.0 + f * (x - f)

    wide = width > 1e-9            # narrower draws are a point mass (and the formula would cancel badly)
    hi = lo + width
    safe = np.where(wide, width, 1.0)
    below_one = np.clip(np.minimum(hi, 1.0) - lo, 0.0, None)      # where floor is 0, max() makes it 1
    spread_mean = (prim(hi) - prim(lo) + below_one) / safe
    return np.where(wide, spread_mean, np.maximum(1.0, np.floor(lo)))


# ------------------------------------------------------------------------------------ weights
def block_weights(pc: PhaseCode) -> tuple[np.ndarray, np.ndarray]:
    """Expected executions of every block per driver iteration, and of every function.

    A block inside loops and ifs executes (function invocations) x (product of the trip means of
    its loops and of the probabilities of the if-arms it sits in); invocations follow the call
    sites level by level (the call graph only calls deeper levels, so it is a DAG)."""
    fv = _factors(pc, pc.if_probabilities(), pc.c_mu)
    lam = fv[pc.b_chain].prod(axis=1)
    F = pc.n_functions
    inv = np.zeros(F + 1)
    inv[F] = 1.0
    sites, targets, probs = pc.flat_calls()
    blk = pc.cs_block[sites]
    callers = pc.b_func[blk]
    lev = np.where(callers == F, -1, pc.f_level[np.minimum(callers, F - 1)])
    for d in np.unique(lev):      # callers level by level: callees are deeper, so counts are final
        sel = lev == d
        np.add.at(inv, targets[sel], inv[callers[sel]] * lam[blk[sel]] * probs[sel])
    w = inv[pc.b_func] * lam
    w[pc.b_term == T_PH_SWITCH] = 0.0
    return w, inv


def _factors(pc: PhaseCode, p: np.ndarray, mu: np.ndarray) -> np.ndarray:
    C = pc.n_constructs
    fv = np.ones(2 * C + 1)
    fv[0:2 * C:2] = np.where(pc.c_loop, mu, 1.0 - p)
    fv[1:2 * C:2] = np.where(pc.c_loop, 1.0, p)
    return fv


def bound_call_sizes(pc: PhaseCode, cap: float) -> int:
    """Shrink loop trip counts where one call of a function (its callees included) would run more
    than ``cap`` instructions on average: first the loops that enclose other loops or calls, then,
    if that is not enough, all of the function's loops.  Functions are treated deepest level first,
    so callee sizes are final.  Phases can only change between top-level calls, so this bounds how
    late a phase switch can come.  Returns the number of functions shrunk."""
    F = pc.n_functions
    if F == 0 or pc.n_constructs == 0:
        return 0
    est_len = 1.0 / pc.params.mix.branch          # upper bound of the calibrated mean block length
    p = pc.if_probabilities()
    spread = pc.params.branches.loop_trip_spread
    loop_blocks = np.flatnonzero(pc.b_term == T_LOOP)
    c_func = np.full(pc.n_constructs, -1, np.int64)
    c_func[pc.b_construct[loop_blocks]] = pc.b_func[loop_blocks]
    # a loop is "outer" when a block inside it sits in a deeper loop or makes a call
    outer = np.zeros(pc.n_constructs, bool)
    chain_c = pc.b_chain // 2
    even = (pc.b_chain % 2 == 0) & (pc.b_chain < 2 * pc.n_constructs)
    is_loop_link = even & pc.c_loop[np.minimum(chain_c, pc.n_constructs - 1)]
    nloops = is_loop_link.sum(axis=1)
    for blk in np.flatnonzero((nloops >= 2) | ((nloops >= 1) & (pc.b_term == T_CALL))):
        links = chain_c[blk][is_loop_link[blk]]
        outer[links[:-1] if pc.b_term[blk] != T_CALL else links] = True
    sites, targets, probs = pc.flat_calls()
    site_blk = pc.cs_block[sites]
    site_func = pc.b_func[site_blk]
    order = np.argsort(site_func, kind="stable")
    bounds = np.searchsorted(site_func[order], np.arange(F + 2))
    fv = _factors(pc, p, pc.c_mu)
    E = np.zeros(F + 1)
    shrunk = 0

    def size(f: int, loops: np.ndarray, alpha: float) -> tuple:
        lo, n = pc.f_first[f], pc.f_count[f]
        sel = order[bounds[f]:bounds[f + 1]]
        if not len(loops):
            lam = fv[pc.b_chain[lo:lo + n]].prod(axis=1)
            return lam.sum() * est_len + float((lam[site_blk[sel] - lo] * probs[sel] * E[targets[sel]]).sum()), None, None
        base = np.maximum(1.0, pc.c_base[loops] * alpha)
        mu = np.where(pc.c_fixed[loops], np.maximum(1.0, np.rint(base)), expected_trips(base, spread))
        saved = fv[2 * loops].copy()
        fv[2 * loops] = mu
        lam = fv[pc.b_chain[lo:lo + n]].prod(axis=1)
        fv[2 * loops] = saved
        own = lam.sum() * est_len
        calls = float((lam[site_blk[sel] - lo] * probs[sel] * E[targets[sel]]).sum())
        return own + calls, base, mu

    none = np.zeros(0, np.int64)
    for f in np.argsort(-pc.f_level, kind="stable"):
        e, _, _ = size(f, none, 1.0)
        E[f] = e
        if e <= cap:
            continue
        shrunk += 1
        mine = c_func == f
        for loops in (np.flatnonzero(mine & outer), np.flatnonzero(mine)):
            if not len(loops):
                continue
            lo_a, hi_a = 0.0, 1.0
            for _ in range(30):
                mid = 0.5 * (lo_a + hi_a)
                if size(f, loops, mid)[0] > cap:
                    hi_a = mid
                else:
                    lo_a = mid
            e, base, mu = size(f, loops, lo_a)
            pc.c_base[loops] = base
            pc.c_mu[loops] = mu
            fv[2 * loops] = mu
            E[f] = e
            if e <= cap * 1.0001:
                break
    return shrunk


def taken_rate(pc: PhaseCode, w: np.ndarray) -> float:
    """Expected dynamic taken rate of the conditional branches for block weights ``w``."""
    p = pc.if_probabilities()
    cond = np.isin(pc.b_term, COND_TERMS)
    taken = np.zeros(pc.n_blocks)
    c = pc.b_construct
    is_if = pc.b_term == T_IF
    taken[is_if] = p[c[is_if]]
    is_loop = pc.b_term == T_LOOP
    taken[is_loop] = 1.0 - 1.0 / pc.c_mu[c[is_loop]]
    taken[pc.b_term == T_PH_CONT] = 1.0
    total = float((w * cond).sum())
    return float((w * taken).sum() / total) if total > 0 else 0.0


def taken_range(pc: PhaseCode) -> tuple[float, float]:
    """Lowest and highest expected taken rate that flipping the biased and periodic ifs can give
    (loop branches and data-dependent random ifs are fixed)."""
    flips = pc.c_flip.copy()
    pc.c_flip[:] = False
    pc.layout()
    w, _ = block_weights(pc)
    cond = np.isin(pc.b_term, COND_TERMS)
    total = float((w * cond).sum())
    base = taken_rate(pc, w) * total
    heads = np.flatnonzero(pc.b_term == T_IF)
    cons = pc.b_construct[heads]
    gain = w[heads] * (1.0 - 2.0 * pc.base_taken()[cons])
    gain = np.where(pc.c_behaviour[cons] != B_RANDOM, gain, 0.0)
    pc.c_flip[:] = flips
    pc.layout()
    if total <= 0:
        return 0.0, 0.0
    return (base + gain[gain < 0].sum()) / total, (base + gain[gain > 0].sum()) / total


def calibrate_taken(pc: PhaseCode) -> float:
    """Lay the ifs out so that the expected taken rate comes closest to ``branches.taken_rate``.

    Flipping an if (the arm becomes the taken path, or the arms swap) turns its taken
    probability p into 1 - p without changing which code runs, so block weights stay put and the
    choice is a subset-sum over the biased and periodic ifs (data-dependent random ifs keep their
    ``random_taken``): hottest first, flip an if when that brings the rate closer.  Returns the
    rate reached; without a target nothing is flipped."""
    target = pc.params.branches.taken_rate
    pc.c_flip[:] = False
    w, _ = block_weights(pc)
    if target is None:
        return taken_rate(pc, w)
    heads = np.flatnonzero(pc.b_term == T_IF)
    cons = pc.b_construct[heads]
    p0 = pc.base_taken()[cons]
    cond = np.isin(pc.b_term, COND_TERMS)
    total = float((w * cond).sum())
    if total <= 0:
        return 0.0
    current = taken_rate(pc, w) * total
    goal = target * total
    gain = w[heads] * (1.0 - 2.0 * p0)                 # change of the taken count when flipped
    movable = pc.c_behaviour[cons] != B_RANDOM
    flipped = np.zeros(len(heads), dtype=bool)
    order = np.argsort(-np.abs(gain), kind="stable")
    for _ in range(6):          # hottest first, then passes that undo or add flips while it helps
        changed = False
        for i in order:
            delta = -gain[i] if flipped[i] else gain[i]
            if movable[i] and abs(current + delta - goal) < abs(current - goal) - 1e-12:
                current += delta
                flipped[i] = not flipped[i]
                changed = True
        if not changed:
            break
    pc.c_flip[cons[flipped]] = True
    pc.taken_step = float(np.abs(gain[movable]).max() / total) if movable.any() else 0.0
    pc.layout()
    return taken_rate(pc, block_weights(pc)[0])
