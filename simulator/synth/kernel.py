"""The numba walker: runs a static program and writes dynamic instructions into InstrBlock arrays.

Each static instruction has a *walk kind* (``K_*``) that says what the walker does
with it: plain instructions are copied; memory instructions take their address
from their stream; conditional branches decide their outcome from their
behaviour (Bernoulli, periodic pattern, fixed or variable loop trip count, phase
check; every loop exits at its back edge once its phase has run its length, so that
phases keep their lengths at any scale); calls push the return index on the call
stack and returns pop it.  All mutable state (walker registers, call stack,
per-branch counters, stream positions, the splitmix64 generator) lives in arrays
owned by the caller, so a walk can stop after any instruction and resume: the concatenation of the blocks
does not depend on where the walk was cut.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator.synth import streams as streams_module
from whatif.simulator.synth.streams import (C_BASE, C_BITS, C_CUR, C_ELEM, C_KIND, C_N, C_POS, C_RENEW, C_SALT, C_SIZE,
                                     C_UNIT, C_ZLEN, C_ZOFF, M1, RENEW_ONE, S_CHASE, S_SEQ, S_STRIDED, mix64,
                                     perm_walk, to_unit)

(K_PLAIN, K_MEM, K_ADV, K_BERN, K_PERIODIC, K_LOOP_FIXED, K_LOOP_VAR, K_JUMP, K_CALL, K_ICALL, K_RET,
 K_PH_EXIT, K_PH_CONT, K_PH_SWITCH) = range(14)
KIND_NAMES = ("plain", "mem", "advance", "bernoulli", "periodic", "loop_fixed", "loop_var", "jump", "call",
              "icall", "ret", "phase_exit", "phase_continue", "phase_switch")
# walker state (int64 array)
W_CUR, W_DEPTH, W_COUNT, W_SCHED, W_BOUNDARY = range(5)
W_SIZE = 5
STACK_SIZE = 64

U64 = np.uint64
MASK8 = U64(0xFF)


def _walker(emit: bool):
    """The walker, compiled writing its instructions out (``emit``) or not (to fast-forward the program):
    one source, and ``emit`` a constant of each compiled copy, so neither pays for the other's test."""

    @njit(cache=True, nogil=True)
    def walk(n, o_pc, o_op, o_size, o_dst, o_src1, o_src2, o_areg, o_maddr, o_msize, o_taken, o_target, o_flags,
             s_pc, s_packed, s_run, s_kind, s_tgt, s_arg, s_arg2, s_prob, s_prob2, s_off, s_state,
             ic_target, ic_cdf, ST, z_lo, z_width, z_prob, z_alias, sched_len, sched_entry, W, stack, rng,
             log_at, log_phase, n_log):
        """Walk up to ``n`` instructions into the output arrays (InstrBlock fields; with ``emit`` false, left
        unwritten: the walk's state moves on as if they had been).  ``s_packed``
        holds the static byte fields of each instruction (see ``pack_static``), ``s_run`` the length of
        the straight-line run starting there (see ``straight_runs``).  Phase switches are logged in
        ``log_at`` (index of the first instruction of the new phase) / ``log_phase`` (schedule entry);
        ``n_log[0]`` counts them and the walk stops early when the log is full.  Returns the number of
        instructions walked.  (Everything is written out in this one function and the generator state
        is a local scalar: numba calls that pass arrays cost more than the work done here.)"""
        cur = W[W_CUR]
        depth = W[W_DEPTH]
        count = W[W_COUNT]
        j = W[W_SCHED]
        boundary = W[W_BOUNDARY]
        rs = rng[0]
        cap = len(log_at)
        nsched = len(sched_len)
        i = 0
        while i < n:
            s = cur
            # ---- the straight-line run of non-control instructions from s, in a tight loop
            run = s_run[s]
            if run > 0:
                m = run if run < n - i else n - i
                for q in range(m):
                    t = U64(s + q)              # unsigned indices: no wraparound code
                    o = U64(i + q)
                    if emit:
                        o_pc[o] = s_pc[t]
                        row = s_packed[t]
                        o_op[o] = row & MASK8
                        o_size[o] = (row >> U64(8)) & MASK8
                        o_dst[o] = (row >> U64(16)) & MASK8
                        o_src1[o] = (row >> U64(24)) & MASK8
                        o_src2[o] = (row >> U64(32)) & MASK8
                        o_areg[o] = (row >> U64(40)) & MASK8
                        o_msize[o] = (row >> U64(48)) & MASK8
                        o_flags[o] = row >> U64(56)
                        o_taken[o] = 0
                        o_target[o] = 0
                    kk = s_kind[t]
                    if kk == K_PLAIN:
                        if emit:
                            o_maddr[o] = 0
                        continue
                    # ---- a memory access: its stream's next address
                    st = U64(s_arg[t])
                    sk = ST[st, C_KIND]
                    if sk == S_SEQ:
                        a = ST[st, C_POS]
                        nx = a + ST[st, C_UNIT]
                        ST[st, C_POS] = 0 if nx >= ST[st, C_SIZE] else nx
                        addr = ST[st, C_BASE] + a
                    elif sk == S_CHASE:
                        node = ST[st, C_CUR]
                        if kk == K_ADV:
                            c = ST[st, C_POS] + 1
                            if c >= ST[st, C_N]:
                                c = 0
                            ST[st, C_POS] = c
                            ST[st, C_CUR] = perm_walk(c, ST[st, C_N], ST[st, C_BITS], U64(ST[st, C_SALT]))
                            addr = ST[st, C_BASE] + node * ST[st, C_UNIT]
                        else:
                            addr = ST[st, C_BASE] + node * ST[st, C_UNIT] + s_off[t]
                    elif sk == S_STRIDED:
                        a = ST[st, C_POS]
                        nx = a + ST[st, C_UNIT]
                        if nx >= ST[st, C_SIZE]:
                            nx = nx - ST[st, C_SIZE] + ST[st, C_ELEM]
                            if nx >= ST[st, C_UNIT]:
                                nx = 0
                        ST[st, C_POS] = nx
                        addr = ST[st, C_BASE] + a
                    else:
                        # random: keep the block, or (probability C_RENEW / 2**53) choose a new one
                        blk = ST[st, C_CUR]
                        renew = blk < 0 or ST[st, C_RENEW] >= RENEW_ONE
                        if not renew:
                            rs = rs + M1
                            renew = np.int64(mix64(rs) >> U64(11)) < ST[st, C_RENEW]
                        if renew:
                            nn = ST[st, C_N]
                            rs = rs + M1
                            u = to_unit(mix64(rs))
                            zoff = ST[st, C_ZOFF]
                            if zoff < 0:
                                r = np.int64(u * nn)
                                if r >= nn:
                                    r = nn - 1
                            else:
                                zlen = ST[st, C_ZLEN]
                                x = u * zlen
                                zi = np.int64(x)
                                if zi >= zlen:
                                    zi = zlen - 1
                                b = zoff + zi
                                if x - zi >= z_prob[b]:
                                    b = z_alias[b]
                                w = z_width[b]
                                r = z_lo[b]
                                if w != 1:
                                    rs = rs + M1
                                    r += np.int64(((mix64(rs) >> U64(32)) * U64(w)) >> U64(32))
                            blk = perm_walk(r, nn, ST[st, C_BITS], U64(ST[st, C_SALT]))
                            ST[st, C_CUR] = blk
                        addr = ST[st, C_BASE] + blk * ST[st, C_UNIT] + s_off[t]
                    if emit:
                        o_maddr[o] = addr
                i += m
                count += m
                cur = s + m
                if m < run:
                    break
                continue
            # ---- a control transfer
            us = U64(s)
            ui = U64(i)
            if emit:
                o_pc[ui] = s_pc[us]
                row = s_packed[us]
                o_op[ui] = row & MASK8
                o_size[ui] = (row >> U64(8)) & MASK8
                o_dst[ui] = (row >> U64(16)) & MASK8
                o_src1[ui] = (row >> U64(24)) & MASK8
                o_src2[ui] = (row >> U64(32)) & MASK8
                o_areg[ui] = (row >> U64(40)) & MASK8
                o_msize[ui] = (row >> U64(48)) & MASK8
                o_flags[ui] = row >> U64(56)
                o_maddr[ui] = 0
            k = s_kind[us]
            nxt = s + 1
            taken = False
            target = U64(0)
            if k == K_CALL:
                stack[depth] = s + 1
                depth += 1
                nxt = s_tgt[us]
                taken = True
                target = s_pc[nxt]
            elif k == K_RET:
                depth -= 1
                nxt = stack[depth]
                taken = True
                target = s_pc[nxt]
            elif k == K_ICALL:
                rs = rs + M1
                u = to_unit(mix64(rs))
                base = s_arg[us]
                mt = s_arg2[us]
                pick = mt - 1
                for q in range(mt):
                    if u < ic_cdf[base + q]:
                        pick = q
                        break
                stack[depth] = s + 1
                depth += 1
                nxt = ic_target[base + pick]
                taken = True
                target = s_pc[nxt]
            elif k == K_JUMP:
                nxt = s_tgt[us]
                taken = True
                target = s_pc[nxt]
            elif k == K_PH_SWITCH:
                if n_log[0] >= cap:
                    break
                j += 1
                if j >= nsched:
                    j = 0
                boundary += sched_len[j]
                nxt = sched_entry[j]
                taken = True
                target = s_pc[nxt]
                log_at[n_log[0]] = count + 1
                log_phase[n_log[0]] = j
                n_log[0] += 1
            else:
                # conditional branches
                tgt = s_tgt[us]
                target = s_pc[tgt]
                if k == K_BERN:
                    rs = rs + M1
                    taken = to_unit(mix64(rs)) < s_prob[us]
                elif k == K_LOOP_FIXED:
                    # a loop exits at its back edge once its phase has run its length (so the phase ends within
                    # one pass through the code on the call stack, not one call from the driver later)
                    c = s_state[us] + 1
                    if c < s_arg[us] and count < boundary:
                        taken = True
                        s_state[us] = c
                    else:
                        s_state[us] = 0
                elif k == K_LOOP_VAR:
                    rem = s_state[us]
                    if count >= boundary:
                        rem = 1                     # the last trip: the phase has run its length
                    elif rem == 0:
                        rs = rs + M1
                        rem = np.int64(s_prob[us] + s_prob2[us] * to_unit(mix64(rs)))
                        if rem < 1:
                            rem = 1
                    rem -= 1
                    s_state[us] = rem
                    taken = rem > 0
                elif k == K_PERIODIC:
                    pos = s_state[us]
                    taken = ((s_arg[us] >> pos) & 1) == 1
                    pos += 1
                    s_state[us] = 0 if pos >= s_arg2[us] else pos
                elif k == K_PH_EXIT:
                    taken = count >= boundary
                elif k == K_PH_CONT:
                    taken = count < boundary
                if taken:
                    nxt = tgt
            if emit:
                o_taken[ui] = taken
                o_target[ui] = target
            count += 1
            cur = nxt
            i += 1
        W[W_CUR] = cur
        W[W_DEPTH] = depth
        W[W_COUNT] = count
        W[W_SCHED] = j
        W[W_BOUNDARY] = boundary
        rng[0] = rs
        return i

    return walk


walk = _walker(True)
skip_walk = _walker(False)


def straight_runs(kind: np.ndarray) -> np.ndarray:
    """For every static instruction, how many non-control instructions (plain or memory) start
    there before the next control transfer (0 for a control transfer).  Functions end in a
    return or jump, so runs never cross them."""
    plain = (kind == K_PLAIN) | (kind == K_MEM) | (kind == K_ADV)
    out = np.zeros(len(kind), dtype=np.int64)
    _runs(plain, out)
    return out


@njit(cache=True)
def _runs(plain, out):
    acc = 0
    for s in range(len(plain) - 1, -1, -1):
        acc = acc + 1 if plain[s] else 0
        out[s] = acc


def pack_static(op, size, dst, src1, src2, areg, msize, flags) -> np.ndarray:
    """The byte fields of every static instruction packed into one uint64 (one load per instruction
    in the walker): op, size, dst, src1, src2, areg, mem_size, flags from the low byte up."""
    cols = [np.asarray(a).astype(np.int64) & 0xFF for a in (op, size, dst, src1, src2, areg, msize, flags)]
    out = np.zeros(len(op), dtype=np.uint64)
    for b, c in enumerate(cols):
        out |= c.astype(np.uint64) << np.uint64(8 * b)
    return out


# the walker's and the register draws' kernels inline the splitmix64 helpers of streams.py: an edit there
# must drop their cached machine code too
drop_stale_caches("synth_walk", (streams_module, sys.modules[__name__]))
