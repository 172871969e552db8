"""A JVMPI-style profiler (seed 003 §4.2.1) and the JIT-overhead model J(N, S) (§4.1.3).

Attached to a :class:`~simulator.jvm.vm.JavaVM`, the profiler receives the JVM's events -- every method
entry (with its argument units, as the JVMDI tracer records arguments), every object allocation, every
compilation -- and counts them.  The *application vector* is what the application asked of the JVM:
the primitives' methods it called itself (depth 0: the caller is a user class) -- calls, or units
(chars, bytes) for per-unit primitives -- its own bytecodes and method invocations, and the objects it
allocated.  ``N`` and ``S`` are every method's invocation count and static bytecode size, whatever called
it: the inputs of J.

J(N, S) is the JVM's compilation policy applied to them: the bytecodes it compiles.  A first-call JIT
compiles every method invoked at least once, J = Σ s_i over n_i ≥ 1 (the seed's example); a threshold
(adaptive) JIT the methods invoked at least ``threshold`` times; an interpreter none.  Native methods
and the methods a JIT never compiles do not count.

Where a primitive's cost depends on a size, :meth:`JvmpiProfiler.size_distribution` gives N(s): the
per-unit primitives' calls by their units (the seed's JVMDI argument tracer), the class-loading calls
by the bytes of the class each defined (JVMPI's class-load event carries the class data), and the
application's own bytecodes at its code working set (Σ S of the user methods that ran).

For an adaptive JIT the application vector is split (:meth:`JvmpiProfiler.split_at_threshold`): the
profiler logs each call from user code with its method's invocation count at that moment, so the calls
made once the method had reached the threshold -- compiled by then -- are counted apart, to be priced at
the primitive's compiled cost.  That is the use the seed proposes for JVMPI compile events (§4.2.3).
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

USER_PREFIX = "user."             # the application's own classes
COMPILED = " [compiled]"          # suffix of a primitive's cost (and calls) once an adaptive JIT compiled it
USER_BYTECODE = "bytecode (user classes)"
USER_INVOKE = "invoke (user classes)"
JIT_COMPILE = "JIT compile (per bytecode)"


class JvmpiProfiler:
    def __init__(self):
        self.entries: dict[str, int] = defaultdict(int)          # N: every invocation
        self.top_calls: dict[str, int] = defaultdict(int)        # invocations from user code
        self.top_units: dict[str, int] = defaultdict(int)
        # per method, each call from user code: (the method's invocation count then, units)
        self.top_log: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.allocations_in_user = 0
        self.allocations = 0
        self.compilations: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.natives: set[str] = set()
        self.user_bytecodes = 0
        self.user_log: list[tuple[int, int]] = []     # per user-code run: (its method's count then, bytecodes)
        self._user_depth = 0
        self._last_top = 0                            # the invocation count of the last call from user code
        self._last_top_method = ""

    def entry(self, name: str, units: int, depth: int) -> None:
        self.entries[name] += 1
        if depth == 0:
            self.top_calls[name] += 1
            self.top_units[name] += int(units)
            self.top_log[name].append((self.entries[name], int(units)))
            self._last_top = self.entries[name]
            self._last_top_method = name

    def class_loaded(self, nbytes: int) -> None:
        """A class of ``nbytes`` was defined (JVMPI's class-load event carries the class data): its size
        is logged against the call from user code that caused it, the size of a class-loading call."""
        log = self.top_log.get(self._last_top_method)
        if log:
            n, units = log[-1]
            log[-1] = (n, units + int(nbytes))

    def allocated(self, payload: int, depth: int) -> None:
        self.allocations += 1

    def compiled(self, name: str, size: int) -> None:
        self.compilations[name] = size

    def user_code(self, bytecodes: int) -> None:
        """The user-class method just called from user code ran ``bytecodes`` bytecodes."""
        self.user_bytecodes += int(bytecodes)
        self.user_log.append((self._last_top, int(bytecodes)))

    def application_vector(self, application: str, primitives: dict) -> pd.DataFrame:
        """``primitives``: label -> (method, unit).  Rows (application, primitive, count)."""
        rows = []
        for label, (method, unit) in primitives.items():
            n = self.top_units[method] if unit in ("char", "byte") else self.top_calls[method]
            if n:
                rows.append({"application": application, "primitive": label, "count": float(n)})
        user_calls = sum(v for k, v in self.top_calls.items() if k.startswith(USER_PREFIX))
        if self.user_bytecodes:
            rows.append({"application": application, "primitive": USER_BYTECODE, "count": float(self.user_bytecodes)})
        if user_calls:
            rows.append({"application": application, "primitive": USER_INVOKE, "count": float(user_calls)})
        return pd.DataFrame(rows, columns=["application", "primitive", "count"])

    def size_distribution(self, application: str, primitives: dict, threshold: int | None = None,
                          class_loading: tuple[str, ...] = (), user_footprint: int = 0) -> pd.DataFrame:
        """N(s) of every per-unit primitive the application called (§3.1.1, the seed's argument tracer), of
        the ``class_loading`` primitives by the bytes of the classes each call loaded, and (with
        ``user_footprint``, the static bytecodes of the user methods it ran: Σ S over N ≥ 1) of its own
        bytecodes at that code working set: rows (application, primitive, size, count), ``count`` the calls
        (bytecodes) of ``size``.  With an adaptive JIT's ``threshold``, the calls made once the method had
        been invoked ``threshold`` times go to ``label + COMPILED`` (as :meth:`split_at_threshold`)."""
        rows: dict[tuple[str, int], int] = defaultdict(int)
        if user_footprint and self.user_bytecodes:
            compiled = sum(b for n, b in self.user_log if threshold is not None and n >= threshold)
            rows[(USER_BYTECODE, int(user_footprint))] += self.user_bytecodes - compiled
            if compiled:
                rows[(USER_BYTECODE + COMPILED, int(user_footprint))] += compiled
        for label, (method, unit) in primitives.items():
            if unit not in ("char", "byte") and label not in class_loading:
                continue
            for n, units in self.top_log.get(method, ()):
                compiled = threshold is not None and n >= threshold
                rows[(label + COMPILED if compiled else label, units)] += 1
        return pd.DataFrame([{"application": application, "primitive": p, "size": float(s), "count": float(c)}
                             for (p, s), c in rows.items() if c], columns=["application", "primitive", "size", "count"])

    def split_at_threshold(self, vector: pd.DataFrame, primitives: dict, threshold: int) -> pd.DataFrame:
        """``vector`` (from :meth:`application_vector`) for an adaptive JIT of ``threshold``: a primitive's
        calls (or units) made once its method had been invoked ``threshold`` times -- compiled then, as the
        seed's proposed JVMPI compile events would show (§4.2.3) -- move to ``label + COMPILED``."""
        rows = []
        user_calls = [n for m, log in self.top_log.items() if m.startswith(USER_PREFIX) for n, _ in log]
        for r in vector.itertuples(index=False):
            if r.primitive == USER_BYTECODE:          # the application's own methods compile the same way
                compiled = float(sum(b for n, b in self.user_log if n >= threshold))
            elif r.primitive == USER_INVOKE:
                compiled = float(sum(1 for n in user_calls if n >= threshold))
            elif r.primitive in primitives:
                method, unit = primitives[r.primitive]
                compiled = float(sum(u if unit in ("char", "byte") else 1
                                     for n, u in self.top_log[method] if n >= threshold))
            else:
                rows.append(r._asdict())
                continue
            if r.count - compiled > 0:
                rows.append({"application": r.application, "primitive": r.primitive, "count": r.count - compiled})
            if compiled > 0:
                rows.append({"application": r.application, "primitive": r.primitive + COMPILED, "count": compiled})
        return pd.DataFrame(rows, columns=["application", "primitive", "count"])

    def method_table(self, sizes: dict[str, int], natives: set[str]) -> pd.DataFrame:
        """N and S: method, invocations, size, native."""
        return pd.DataFrame([{"method": m, "invocations": n, "size": int(sizes[m]), "native": m in natives}
                             for m, n in self.entries.items()])


def user_footprint(methods: pd.DataFrame) -> int:
    """The static bytecodes of the application's own methods that ran (Σ S over user methods with N ≥ 1),
    from the method table: its code working set."""
    if not len(methods):
        return 0
    mine = methods["method"].str.startswith(USER_PREFIX) & (methods["invocations"] >= 1)
    return int(methods.loc[mine, "size"].sum())


def jit_bytecodes(methods: pd.DataFrame, policy: str, threshold: int = 1, never: tuple[str, ...] = ()) -> int:
    """J(N, S): the bytecodes a JIT of ``policy`` compiles, from the method table (method, invocations,
    size, native)."""
    if policy == "none" or not len(methods):
        return 0
    need = 1 if policy == "first-call" else int(threshold)
    sel = (methods["invocations"] >= need) & ~methods["native"].astype(bool) & ~methods["method"].isin(list(never))
    return int(methods.loc[sel, "size"].sum())
