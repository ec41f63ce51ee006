"""A prefix trie over token ids of every tool id followed by EOS, for constrained decoding.

Stored as flat arrays (CSR): node ``n``'s children are ``child_tok[off[n]:off[n+1]]`` leading to
``child_node[off[n]:off[n+1]]``. Node 0 is the root. A node reached by EOS is terminal and
``tool_at[node]`` names its tool.

This is THE trie: :func:`build_trie` makes it from an index and a tokenizer. Its tensor form
for batched beam search (allowed-token masks, one-``searchsorted`` advance) is derived from these
arrays in :mod:`toolsense.decoding.trie_tensors`, beside the search that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolsense.index.tool_index import ToolIndex
from toolsense.index.vocabulary import tool_token_ids
from toolsense.utils.progress import progress


@dataclass
class Trie:
    off: np.ndarray  # int64 [num_nodes + 1]
    child_tok: np.ndarray  # int64 [num_edges]
    child_node: np.ndarray  # int64 [num_edges]
    tool_at: dict[int, str]  # terminal node -> tool name
    eos_id: int

    @classmethod
    def build(cls, sequences: dict[str, list[int]], eos_id: int) -> "Trie":
        """``sequences[tool]`` is the tool's id as token ids, without EOS."""
        children: list[dict[int, int]] = [{}]
        tool_at: dict[int, str] = {}
        for name, seq in progress(sequences.items(), desc="trie", unit="tool", min_total=10_000):
            node = 0
            for tok in list(seq) + [eos_id]:
                nxt = children[node].get(tok)
                if nxt is None:
                    nxt = len(children)
                    children[node][tok] = nxt
                    children.append({})
                node = nxt
            if node in tool_at:
                raise ValueError(f"tools {tool_at[node]!r} and {name!r} have the same token ids")
            tool_at[node] = name
        off = np.zeros(len(children) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(c) for c in children])
        child_tok = np.fromiter((t for c in children for t in c), dtype=np.int64, count=int(off[-1]))
        child_node = np.fromiter((n for c in children for n in c.values()), dtype=np.int64, count=int(off[-1]))
        return cls(off, child_tok, child_node, tool_at, eos_id)

    @property
    def num_nodes(self) -> int:
        return len(self.off) - 1

    def children(self, node: int) -> dict[int, int]:
        a, b = self.off[node], self.off[node + 1]
        return dict(zip(self.child_tok[a:b].tolist(), self.child_node[a:b].tolist()))

    def walk(self, prefix: list[int]) -> int | None:
        """The node reached by ``prefix`` from the root, or None if it leaves the trie."""
        node = 0
        for tok in prefix:
            a, b = self.off[node], self.off[node + 1]
            hit = np.nonzero(self.child_tok[a:b] == tok)[0]
            if len(hit) == 0:
                return None
            node = int(self.child_node[a + hit[0]])
        return node

    def allowed(self, prefix: list[int]) -> list[int]:
        """Token ids that may follow ``prefix`` (empty when the prefix is invalid or complete)."""
        node = self.walk(prefix)
        if node is None:
            return []
        return self.child_tok[self.off[node] : self.off[node + 1]].tolist()

    def lookup(self, seq: list[int]) -> str | None:
        """The tool whose id followed by EOS is exactly ``seq``; anything else is no tool."""
        if not seq or seq[-1] != self.eos_id:
            return None
        node = self.walk(seq)
        return None if node is None else self.tool_at.get(node)


def build_trie(index: ToolIndex, tokenizer) -> Trie:
    """The constrained-decoding trie: each tool's token ids followed by the tokenizer's EOS
    (the index's tokens must already be in the tokenizer: :func:`add_index_tokens`)."""
    return Trie.build(tool_token_ids(index, tokenizer), tokenizer.eos_token_id)
