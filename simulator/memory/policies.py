"""Name-keyed registries of the policies the memory-hierarchy kernel implements.

Platform files refer to policies by name; the kernel works on small integer ids.
An unknown name raises an error listing the names that exist (ChampSim style,
done better: no bare TypeError).
"""

from __future__ import annotations

from whatif.simulator.errors import SimulatorInputError

# Replacement policies.  "plru" is the binary-tree pseudo-LRU of the MPC7447A L1 and many Intel caches.
REPLACEMENT = {"lru": 0, "plru": 1, "fifo": 2, "random": 3}

# Prefetchers, attached to a cache level.  "none" is the do-nothing default.
#   next_line       on a demand miss of line X, fetch line X+1 (degree lines ahead) into this level
#   tagged_next_line  next_line that also fires on the first demand hit on a line a prefetch brought in, so a
#                   sequential stream stays ahead of its use until it leaves the page (Smith's tagged
#                   prefetch, A. J. Smith, "Cache memories", ACM Computing Surveys 14(3), 1982, §2.1.2)
#   adjacent_sector on a demand miss, fetch the other sectors of the same line (MPC7447A L2 prefetch engines)
#   adjacent_line   on a demand miss, fetch the buddy line of the aligned 128-byte pair (Intel "spatial" L2 prefetcher)
#   ip_stride       per load PC: when the same byte stride (at most 2 KB) is seen twice, fetch the line of
#                   addr + degree*stride (Intel IP prefetcher)
#   streamer        per 4 KB region, follows an ascending or descending sequence of the requests that reach this
#                   level from above (demand and prefetch): confirmed by two steps in one direction, it then
#                   fetches up to two lines a request, at most streamer_distance lines ahead (Intel L2 streamer)
PREFETCHERS = {"none": 0, "next_line": 1, "adjacent_sector": 2, "adjacent_line": 3, "ip_stride": 4,
               "tagged_next_line": 5, "streamer": 6}

# Page-walk kinds.  radix: x86-64 style multi-level tables; hashed: PowerPC hashed page table (HTAB);
# none: an ideal walk that issues no memory accesses.
WALKS = {"none": 0, "radix": 1, "hashed": 2}

# Virtual-to-physical page placement.  identity: physical = virtual;
# scattered: each virtual page gets a pseudo-random frame derived from (page, placement seed), modelling
# the OS handing out physical frames in no particular order (start-up placement varies with the seed).
PAGE_MAPPINGS = {"identity": 0, "scattered": 1}


def lookup(registry: dict[str, int], kind: str, name: str, where: str) -> int:
    try:
        return registry[name]
    except KeyError:
        raise SimulatorInputError(
            f"{where}: unknown {kind} {name!r}; known: {', '.join(sorted(registry))}") from None
