"""A radix-style prefix cache: a trie of fixed-size token blocks, each node holding its block's KV."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Node:
    kv: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    """Per layer (keys, values) for this block's tokens only."""
    children: dict[tuple[int, ...], _Node] = field(default_factory=dict)
    parent: _Node | None = None
    key: tuple[int, ...] = ()
    last_used: int = 0


class PrefixCache:
    """Block-aligned prefix reuse; least recently used leaves go first when over capacity."""

    def __init__(self, block_size: int = 16, capacity_blocks: int = 8192):
        self.block_size = block_size
        self.capacity_blocks = capacity_blocks
        self.root = _Node()
        self.blocks = 0
        self._clock = 0
        self._lock = threading.Lock()

    def match(self, tokens: list[int]) -> tuple[int, list[tuple[np.ndarray, np.ndarray]]]:
        """Longest cached block-aligned prefix, leaving at least one token to compute.

        Returns (cached token count, per-layer concatenated (keys, values)).
        """
        usable = (len(tokens) - 1) // self.block_size
        with self._lock:
            self._clock += 1
            node, path = self.root, []
            for b in range(usable):
                node = node.children.get(tuple(tokens[b * self.block_size:(b + 1) * self.block_size]))
                if node is None:
                    break
                node.last_used = self._clock
                path.append(node)
        if not path:
            return 0, []
        layers = len(path[0].kv)
        kv = [(np.concatenate([n.kv[i][0] for n in path]), np.concatenate([n.kv[i][1] for n in path]))
              for i in range(layers)]
        return len(path) * self.block_size, kv

    def insert(self, tokens: list[int], kv: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Cache every full block of `tokens`; kv[i] = (keys, values) of layer i covering at least them."""
        full = min(len(tokens), kv[0][0].shape[0] if kv else 0) // self.block_size
        with self._lock:
            self._clock += 1
            node = self.root
            for b in range(full):
                lo, hi = b * self.block_size, (b + 1) * self.block_size
                key = tuple(tokens[lo:hi])
                child = node.children.get(key)
                if child is None:
                    child = _Node([(k[lo:hi].copy(), v[lo:hi].copy()) for k, v in kv], parent=node, key=key)
                    node.children[key] = child
                    self.blocks += 1
                child.last_used = self._clock
                node = child
            self._evict()

    def _evict(self) -> None:
        while self.blocks > self.capacity_blocks:
            leaves, stack = [], [self.root]
            while stack:
                n = stack.pop()
                stack.extend(n.children.values())
                if not n.children and n is not self.root:
                    leaves.append(n)
            victim = min(leaves, key=lambda n: n.last_used)
            del victim.parent.children[victim.key]
            self.blocks -= 1
