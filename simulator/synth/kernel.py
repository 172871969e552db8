"""The numba walker: runs a static program and writes dynamic instructions into InstrBlock arrays.

Each static instruction has a *walk kind* (``K_*``) that says what the walker does
with it: plain instructions are copied; memory instructions take their address
from their stream; conditional branches decide their outcome from their
behaviour (Bernoulli, periodic pattern, fixed or variable loop trip count, phase
check); calls push the return index on the call stack and returns pop it.  All
mutable state (walker registers, call stack, per-branch counters, stream
positions, the splitmix64 generator) lives in arrays owned by the caller, so a
walk can stop after any instruction and resume: the concatenation of the blocks
does not depend on where the walk was cut.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.synth.streams import (C_BASE, C_BITS, C_CUR, C_ELEM, C_KIND, C_N, C_POS, C_SALT, C_SIZE, C_UNIT,
                                     C_RENEW, C_ZLEN, C_ZOFF, RENEW_ONE, S_CHASE, S_SEQ, S_STRIDED, next_u64, perm_walk,
                                     random_rank, uniform)

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




@njit(cache=True, inline="always")
def stream_address(t, k, off, ST, z_lo, z_width, z_prob, z_alias, rng):
    """Address of one access to stream ``t`` (``k``: K_MEM or K_ADV; ``off``: the instruction's
    offset within a node or block); advances the stream's state in ``ST``."""
    sk = ST[t, C_KIND]
    if sk == S_SEQ:
        a = ST[t, C_POS]
        nxt = a + ST[t, C_UNIT]
        ST[t, C_POS] = 0 if nxt >= ST[t, C_SIZE] else nxt
        return ST[t, C_BASE] + a
    if sk == S_STRIDED:
        a = ST[t, C_POS]
        nxt = a + ST[t, C_UNIT]
        if nxt >= ST[t, C_SIZE]:
            nxt = nxt - ST[t, C_SIZE] + ST[t, C_ELEM]
            if nxt >= ST[t, C_UNIT]:
                nxt = 0
        ST[t, C_POS] = nxt
        return ST[t, C_BASE] + a
    if sk == S_CHASE:
        node = ST[t, C_CUR]
        if k == K_ADV:
            c = ST[t, C_POS] + 1
            if c >= ST[t, C_N]:
                c = 0
            ST[t, C_POS] = c
            ST[t, C_CUR] = perm_walk(c, ST[t, C_N], ST[t, C_BITS], U64(ST[t, C_SALT]))
            return ST[t, C_BASE] + node * ST[t, C_UNIT]
        return ST[t, C_BASE] + node * ST[t, C_UNIT] + off
    # S_RANDOM: keep the current block, or (with probability C_RENEW / 2**53) choose a new one
    blk = ST[t, C_CUR]
    if blk < 0 or ST[t, C_RENEW] >= RENEW_ONE or np.int64(next_u64(rng) >> U64(11)) < ST[t, C_RENEW]:
        r = random_rank(ST[t, C_N], ST[t, C_ZOFF], ST[t, C_ZLEN], z_lo, z_width, z_prob, z_alias, rng)
        blk = perm_walk(r, ST[t, C_N], ST[t, C_BITS], U64(ST[t, C_SALT]))
        ST[t, C_CUR] = blk
    return ST[t, C_BASE] + blk * ST[t, C_UNIT] + off


@njit(cache=True)
def walk(n, o_pc, o_op, o_size, o_dst, o_src1, o_src2, o_areg, o_maddr, o_msize, o_taken, o_target, o_flags,
         s_pc, s_packed, s_kind, s_tgt, s_arg, s_arg2, s_prob, s_prob2, s_off, s_state,
         ic_target, ic_cdf, ST, z_lo, z_width, z_prob, z_alias, sched_len, sched_entry, W, stack, rng, log_at, log_phase, n_log):
    """Walk up to ``n`` instructions into the output arrays (InstrBlock fields).  ``s_packed`` holds
    the static byte fields of each instruction (see ``pack_static``).  Phase switches are logged in
    ``log_at`` (index of the first instruction of the new phase) / ``log_phase`` (schedule entry);
    ``n_log[0]`` counts them and the walk stops early when the log is full.  Returns the number of
    instructions walked."""
    cur = W[W_CUR]
    depth = W[W_DEPTH]
    count = W[W_COUNT]
    j = W[W_SCHED]
    boundary = W[W_BOUNDARY]
    cap = len(log_at)
    nsched = len(sched_len)
    i = 0
    while i < n:
        s = cur
        o_pc[i] = s_pc[s]
        row = s_packed[s]
        o_op[i] = row & MASK8
        o_size[i] = (row >> U64(8)) & MASK8
        o_dst[i] = (row >> U64(16)) & MASK8
        o_src1[i] = (row >> U64(24)) & MASK8
        o_src2[i] = (row >> U64(32)) & MASK8
        o_areg[i] = (row >> U64(40)) & MASK8
        o_msize[i] = (row >> U64(48)) & MASK8
        o_flags[i] = row >> U64(56)
        k = s_kind[s]
        nxt = s + 1
        maddr = 0
        taken = False
        target = U64(0)
        if k == K_PLAIN:
            pass
        elif k == K_MEM or k == K_ADV:
            maddr = stream_address(s_arg[s], k, s_off[s], ST, z_lo, z_width, z_prob, z_alias, rng)
        elif k == K_CALL:
            stack[depth] = s + 1
            depth += 1
            nxt = s_tgt[s]
            taken = True
            target = s_pc[nxt]
        elif k == K_RET:
            depth -= 1
            nxt = stack[depth]
            taken = True
            target = s_pc[nxt]
        elif k == K_ICALL:
            u = uniform(rng)
            base = s_arg[s]
            m = s_arg2[s]
            pick = m - 1
            for q in range(m):
                if u < ic_cdf[base + q]:
                    pick = q
                    break
            stack[depth] = s + 1
            depth += 1
            nxt = ic_target[base + pick]
            taken = True
            target = s_pc[nxt]
        elif k == K_JUMP:
            nxt = s_tgt[s]
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
            tgt = s_tgt[s]
            target = s_pc[tgt]
            if k == K_BERN:
                taken = uniform(rng) < s_prob[s]
            elif k == K_LOOP_FIXED:
                c = s_state[s] + 1
                if c < s_arg[s]:
                    taken = True
                    s_state[s] = c
                else:
                    s_state[s] = 0
            elif k == K_LOOP_VAR:
                rem = s_state[s]
                if rem == 0:
                    rem = np.int64(s_prob[s] + s_prob2[s] * uniform(rng))
                    if rem < 1:
                        rem = 1
                rem -= 1
                s_state[s] = rem
                taken = rem > 0
            elif k == K_PERIODIC:
                pos = s_state[s]
                taken = ((s_arg[s] >> pos) & 1) == 1
                pos += 1
                s_state[s] = 0 if pos >= s_arg2[s] else pos
            elif k == K_PH_EXIT:
                taken = count >= boundary
            elif k == K_PH_CONT:
                taken = count < boundary
            if taken:
                nxt = tgt
        o_maddr[i] = maddr
        o_taken[i] = taken
        o_target[i] = target
        count += 1
        cur = nxt
        i += 1
    W[W_CUR] = cur
    W[W_DEPTH] = depth
    W[W_COUNT] = count
    W[W_SCHED] = j
    W[W_BOUNDARY] = boundary
    return i


def pack_static(op, size, dst, src1, src2, areg, msize, flags) -> np.ndarray:
    """The byte fields of every static instruction packed into one uint64 (one load per instruction
    in the walker): op, size, dst, src1, src2, areg, mem_size, flags from the low byte up."""
    cols = [np.asarray(a).astype(np.int64) & 0xFF for a in (op, size, dst, src1, src2, areg, msize, flags)]
    out = np.zeros(len(op), dtype=np.uint64)
    for b, c in enumerate(cols):
        out |= c.astype(np.uint64) << np.uint64(8 * b)
    return out
