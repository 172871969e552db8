"""JIT-compiled methods: interpreter entries, prologues, inlining annotations and the code cache's layout
laid over a synthesized program (a workload's ``jit`` table, :class:`simulator.workload.Jit`).

Applied after the program is built, calibrated and filled: per method (every function but the request
drivers) ``interpreter_entry_instructions`` stub instructions and ``prologue_instructions`` prologue
instructions are inserted before its first instruction, every call is redirected from the method's first
instruction to its JIT entry (the first prologue instruction), and the methods are laid out again in the
same order with the code cache's gaps.  Layout of one method (z/Architecture mnemonics)::

    offset 0   interpreter entry   LG  Rn,d(R15) ...  arguments from the Java stack (not executed when
                                   LGR ...            every caller is compiled); falls through
    JIT entry  prologue            STMG R14,R?,d(R15) callee-saved registers into the frame (``stack_stream``)
                                   AGHI R15,-frame    stack pointer down
                                   CLG  R15,limit     stack overflow?
                                   BRC  ...           to the overflow handler: never taken
                                   STG  ...           further instructions store arguments into the frame
               body                the synthesized function, unchanged

The inserted instructions are plain static instructions: the walker executes the prologue on every call
(its weight is the method's), the memory model sees its stores, the core its dependences (the stack
pointer it writes is the base register of the frame's stores and of small streams).  Draws come from a
stream of their own, so the rest of the program is the one built without the table.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_CALL, OP_LOAD, OP_STORE
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.streams import S_CHASE

JIT_SEED = 0x717            # the stream of this module's draws: SeedSequence([seed, JIT_SEED])
FUNC_ALIGN = 16             # bytes: the code cache aligns method starts
FRAME_STORE_BYTES = 16      # the store multiple's access (modelled as one 16-byte access)

# (op, size in bytes) of the inserted instructions
_STUB = ((OP_LOAD, 6), (OP_LOAD, 6), (OP_ALU, 4))                       # LG, LG, LGR, repeating
_PROLOGUE = ((OP_STORE, 6), (OP_ALU, 4), (OP_ALU, 6), (OP_BRANCH, 4))   # STMG, AGHI, CLG, BRC
_FRAME_STORE = (OP_STORE, 6)                                           # STG of an argument


def _inserted(m: int, k: int) -> list[tuple[int, int, str]]:
    """(op, size, role) of the stub then the prologue of one method."""
    out = [(*_STUB[i % len(_STUB)], "stub") for i in range(m)]
    if k:
        out += [(*x, "prologue") for x in _PROLOGUE]
        out += [(*_FRAME_STORE, "prologue")] * (k - len(_PROLOGUE))
    return out


def apply_jit(prog, jit, seed: int):
    """``prog`` (a ``StaticProgram``) with the JIT's method structure of ``jit`` (a ``Jit``)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), JIT_SEED]))
    n = len(prog)
    gprs = prog.isa.gprs
    sp, ret = gprs - 1, gprs - 2                           # stack pointer, return-address register
    drivers = np.array([code.n_functions for code in prog.codes])
    key = prog.phase * (int(prog.func.max()) + 2) + prog.func
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], n]
    is_method = prog.func[starts] != drivers[prog.phase[starts]]
    m, k = jit.interpreter_entry_instructions, jit.prologue_instructions
    extra = _inserted(m, k)
    stack = prog.streams.names.index(jit.stack_stream) if k else -1
    # new position of every old instruction, and where each method's inserted instructions go
    shift = np.zeros(n, np.int64)
    added = np.where(is_method, len(extra), 0)
    shift_per_func = np.cumsum(added)
    for f, (a, b) in enumerate(zip(starts, ends)):
        shift[a:b] = shift_per_func[f]
    new_of_old = np.arange(n) + shift
    total = n + int(added.sum())
    fields = {name: getattr(prog, name) for name in ("op", "size", "dst", "src1", "src2", "areg", "msize", "flags",
                                                      "kind", "tgt", "arg", "arg2", "prob", "prob2", "off", "phase",
                                                      "weight", "func", "block")}
    out = {name: np.zeros(total, a.dtype) for name, a in fields.items()}
    for name, a in fields.items():
        out[name][new_of_old] = a
    # targets and entries: old indices -> new; calls enter at the JIT entry
    tgt = out["tgt"]
    has = tgt >= 0
    tgt[has] = new_of_old[tgt[has]]
    jit_entry_of_old_first = {int(a): int(new_of_old[a]) - (k and len(_inserted(0, k))) for a in starts[is_method]}
    ic_target = new_of_old[prog.ic_target] if len(prog.ic_target) else prog.ic_target.copy()
    calls = np.flatnonzero(np.isin(out["op"], (OP_CALL,)) & has)
    old_first = {int(new_of_old[a]): a for a in starts[is_method]}
    for i in calls:
        a = old_first.get(int(tgt[i]))
        if a is not None:
            tgt[i] = jit_entry_of_old_first[a]
    ic_target = np.array([jit_entry_of_old_first.get(old_first.get(int(t), -1), int(t)) for t in ic_target],
                         dtype=np.int64)
    driver_entry = new_of_old[prog.driver_entry]
    # the inserted instructions
    next_block = {p: int(prog.block[prog.phase == p].max()) + 1 for p in range(len(prog.codes))}
    role = np.full(total, "", dtype=object)
    for f in np.flatnonzero(is_method):
        a = int(starts[f])
        first_new = int(new_of_old[a]) - len(extra)
        p, fn = int(prog.phase[a]), int(prog.func[a])
        w_entry = float(prog.weight[a])
        stub_block, pro_block = next_block[p], next_block[p] + 1
        next_block[p] += 2
        for j, (op, size, r) in enumerate(extra):
            i = first_new + j
            out["op"][i], out["size"][i], out["phase"][i], out["func"][i] = op, size, p, fn
            out["kind"][i], out["tgt"][i], out["dst"][i], out["src1"][i], out["src2"][i], out["areg"][i] = \
                K.K_PLAIN, -1, -1, -1, -1, -1
            role[i] = r
            if r == "stub":
                out["weight"][i], out["block"][i] = 0.0, stub_block
                if op == OP_LOAD:
                    out["dst"][i], out["areg"][i], out["src1"][i], out["msize"][i] = j % (gprs - 3), sp, sp, 8
                else:
                    out["dst"][i], out["src1"][i] = j % (gprs - 3), (j + 1) % (gprs - 3)
                continue
            out["weight"][i], out["block"][i] = w_entry, pro_block
            q = j - m
            if op == OP_STORE:                 # STMG / STG into the frame, based on the stack pointer
                out["kind"][i], out["arg"][i] = K.K_MEM, stack
                out["areg"][i], out["src1"][i] = sp, sp
                out["src2"][i] = ret if q == 0 else (q % (gprs - 3))
                out["msize"][i] = FRAME_STORE_BYTES if q == 0 else 8
            elif q == 1:                       # AGHI R15,-frame
                out["dst"][i], out["src1"][i] = sp, sp
            elif q == 2:                       # CLG R15,limit: sets the condition code
                out["src1"][i] = sp
            else:                              # BRC to the overflow handler: never taken
                out["kind"][i], out["prob"][i], out["tgt"][i] = K.K_BERN, 0.0, first_new
    # inlining annotations on runs of blocks of the original code
    inline = np.zeros(total, np.uint8)
    shares = list(jit.inlined)
    for f in np.flatnonzero(is_method):
        a, b = int(new_of_old[starts[f]]), int(new_of_old[ends[f] - 1]) + 1
        blocks = np.unique(out["block"][a:b][role[a:b] == ""])
        lo, hi = 0, len(blocks)
        for level, share in enumerate(shares, start=1):
            parent = shares[level - 2] if level > 1 else 1.0
            if share <= 0 or parent <= 0 or hi - lo < 1:
                break
            # a run of about share / parent of the enclosing run, at a random place in it
            want = (hi - lo) * min(1.0, share / parent) * rng.uniform(0.5, 1.5)
            length = int(min(hi - lo, np.floor(want + rng.random())))
            if length <= 0:
                break
            lo = lo + int(rng.integers(0, hi - lo - length + 1))
            hi = lo + length
            sel = np.isin(out["block"][a:b], blocks[lo:hi]) & (role[a:b] == "")
            inline[a:b][sel] = level
    # layout: methods in the same order, aligned, with the code cache's gaps
    pcs = np.zeros(total, np.uint64)
    new_starts = np.r_[new_of_old[starts] - np.where(is_method, len(extra), 0), total]
    addr = int(prog.pc[0])
    spacing = jit.method_spacing_bytes
    for f, (a, b) in enumerate(zip(new_starts[:-1], new_starts[1:])):
        seg = out["size"][a:b].astype(np.int64)
        pcs[a:b] = np.uint64(addr) + np.concatenate([[0], np.cumsum(seg[:-1])]).astype(np.uint64)
        gap = int(rng.integers(0, 2 * spacing + 1)) if spacing else 0
        addr = (addr + int(seg.sum()) + gap + FUNC_ALIGN - 1) // FUNC_ALIGN * FUNC_ALIGN
    jit_entry = np.zeros(total, bool)
    jit_entry[[v for v in jit_entry_of_old_first.values()]] = True
    planted = _plant_agi(out, role, new_starts, is_method, jit.agi_methods, prog.streams.kind == S_CHASE)
    return dataclasses.replace(prog, pc=pcs, ic_target=ic_target, driver_entry=driver_entry, inline_level=inline,
                               jit_entry=jit_entry, jit_inserted=role != "", agi_planted=planted, **out)


def _plant_agi(out: dict, role: np.ndarray, starts: np.ndarray, is_method: np.ndarray, n_methods: int,
               chase_stream: np.ndarray) -> np.ndarray:
    """In the ``n_methods`` methods with the most expected executions, every body load or store whose
    predecessor in its block is an ALU op takes its base register from it (no draw: a pathology).
    Pointer-chasing accesses keep their pointer register."""
    planted = np.zeros(len(role), bool)
    if n_methods <= 0:
        return planted
    weight = np.add.reduceat(out["weight"], starts[:-1])
    hottest = [f for f in np.argsort(-np.where(is_method, weight, -1.0), kind="stable")[:n_methods] if is_method[f]]
    for f in hottest:
        for i in range(int(starts[f]) + 1, int(starts[f + 1])):
            j = i - 1
            if (out["op"][i] in (OP_LOAD, OP_STORE) and role[i] == "" and out["kind"][i] == K.K_MEM
                    and not chase_stream[out["arg"][i]] and out["op"][j] == OP_ALU and out["block"][j] == out["block"][i] and out["dst"][j] >= 0):
                out["areg"][i] = out["src1"][i] = out["dst"][j]
                planted[i] = True
    return planted
