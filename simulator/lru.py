"""``LruCache``: the last values built, by key (instruction blocks, static programs, block templates).

>>> blocks = LruCache(256)
>>> blk = blocks.get(("stat", 0), lambda: code.block("stat"))     # built once, then reused

Beyond ``capacity`` the least recently used value is dropped.  The values are shared, not copied: callers
must not modify what they get.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class LruCache(Generic[V]):
    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"LruCache: capacity must be at least 1, got {capacity}")
        self.capacity = int(capacity)
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value of ``key``, built by ``build()`` unless one of the last ``capacity`` used is it."""
        value = self._values.get(key)
        if value is None:
            value = self._values[key] = build()
            while len(self._values) > self.capacity:
                self._values.popitem(last=False)
        else:
            self._values.move_to_end(key)
        return value

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values
