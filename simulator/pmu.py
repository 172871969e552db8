"""The performance-monitoring unit: which events a run can count, and how several runs are merged.

A PMU has a few physical counters (six on the MPC7447A, two or four general
plus three fixed on the Xeons), so collecting a platform's whole event list
takes several runs, as on the real machine (seed 000 §III-A).  Each run counts
its group of events; runs differ by the run-to-run variation the simulator
models (OS timer interrupts, physical page placement), so the merged totals
carry measurement noise of the same kind as real multi-run collections.

Grouping: fixed-counter events are counted in every run for free; the
programmable counters take the other events in list order.  Without fixed
counters the first event of the list (``cycles``) is counted in every run so
that each run can be normalised, which leaves ``physical_counters - 1``
programmable counters per run for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from whatif.simulator.errors import SimulatorInputError


@dataclass(frozen=True)
class EventGroup:
    index: int
    events: tuple[str, ...]       # everything this run counts (fixed or anchor events included)
    programmed: tuple[str, ...]   # the events this run is responsible for


def event_groups(events: list[str], physical_counters: int, fixed_events: list[str] = ()) -> list[EventGroup]:
    """Split ``events`` into the runs a PMU with ``physical_counters`` programmable counters needs."""
    if physical_counters < 1:
        raise SimulatorInputError(f"a PMU needs at least one programmable counter, got {physical_counters}")
    fixed = [e for e in events if e in fixed_events]
    rest = [e for e in events if e not in fixed_events]
    anchor: list[str] = []
    per_run = physical_counters
    if not fixed and rest and physical_counters > 1:
        anchor, rest = [rest[0]], rest[1:]
        per_run = physical_counters - 1
    if not rest:
        return [EventGroup(0, tuple(fixed + anchor), tuple(fixed + anchor))]
    groups = []
    for i in range(0, len(rest), per_run):
        chunk = rest[i:i + per_run]
        owned = tuple((fixed + anchor if i == 0 else []) + chunk)
        groups.append(EventGroup(len(groups), tuple(fixed + anchor + chunk), owned))
    return groups


def merge_groups(groups: list[EventGroup], runs: list[dict[str, float]]) -> dict[str, float]:
    """One totals row from the runs of the groups: every event from the run that programmed it."""
    if len(groups) != len(runs):
        raise ValueError(f"{len(groups)} event groups but {len(runs)} runs")
    merged: dict[str, float] = {}
    for group, run in zip(groups, runs):
        for event in group.programmed:
            merged[event] = run[event]
    return merged


def evaluate(sources: dict[str, str], counters: dict[str, float], events: list[str] | None = None) -> dict[str, float]:
    """The value of each event from the model's counters: ``sources`` maps an event to a sum or difference
    of counter names (``"stall_load_queue_full + stall_store_queue_full"``, ``"L2.misses"``)."""
    import re

    out: dict[str, float] = {}
    for event in (events if events is not None else list(sources)):
        if event not in sources:
            raise SimulatorInputError(f"pmu.sources: event {event!r} has no source formula")
        total = 0.0
        sign = 1.0
        for token in re.findall(r"[-+]|[A-Za-z_][\w.]*", sources[event]):
            if token in "+-":
                sign = 1.0 if token == "+" else -1.0
                continue
            if token not in counters:
                raise SimulatorInputError(f"pmu.sources.{event}: the model has no counter {token!r}")
            total += sign * counters[token]
        out[event] = total
    return out
