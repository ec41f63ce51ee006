"""The index trie as tensors, so a whole batch of beams is constrained and advanced at once.

Built from the CSR arrays of :class:`toolsense.index.trie.Trie` (the one trie; this is its view
for batched decoding). Edges are re-sorted by the key
``node * V + token`` so that the child reached from ``(node, token)`` is one ``searchsorted``
away, and the allowed-token mask of any set of nodes is one scatter.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from toolsense.index.trie import Trie

DEAD = -1  # node id of a beam that has left the trie (free-form text)


@dataclass
class TrieTensors:
    off: torch.Tensor  # [num_nodes + 1] edge offsets per node (edges sorted by token within a node)
    tok: torch.Tensor  # [E] token of each edge
    child: torch.Tensor  # [E] node each edge leads to
    key: torch.Tensor  # [E] node * vocab + token, ascending
    tool_of_node: torch.Tensor  # [num_nodes] index into ``tools`` of a terminal node, else -1
    tools: list[str]
    eos_id: int
    vocab: int

    @classmethod
    def from_trie(cls, trie: Trie, vocab: int, device: torch.device | str = "cpu") -> "TrieTensors":
        off = torch.as_tensor(trie.off, dtype=torch.long)
        tok = torch.as_tensor(trie.child_tok, dtype=torch.long)
        child = torch.as_tensor(trie.child_node, dtype=torch.long)
        if len(tok) and int(tok.max()) >= vocab:
            raise ValueError(f"trie token id {int(tok.max())} is outside the model's vocabulary of {vocab}")
        node_of_edge = torch.repeat_interleave(torch.arange(len(off) - 1), off[1:] - off[:-1])
        key = node_of_edge * vocab + tok
        order = torch.argsort(key)
        tools = list(dict.fromkeys(trie.tool_at.values()))  # first-appearance order, O(n) (sorted by .index was O(n^2))
        pos = {t: i for i, t in enumerate(tools)}
        tool_of_node = torch.full((len(off) - 1,), -1, dtype=torch.long)
        for node, name in trie.tool_at.items():
            tool_of_node[node] = pos[name]
        dev = torch.device(device)
        return cls(off.to(dev), tok[order].to(dev), child[order].to(dev), key[order].to(dev),
                   tool_of_node.to(dev), tools, trie.eos_id, vocab)

    def allowed_mask(self, nodes: torch.Tensor) -> torch.Tensor:
        """``[n, vocab]`` bool: the tokens that may follow each node (none for DEAD nodes)."""
        n = nodes.shape[0]
        mask = torch.zeros(n, self.vocab, dtype=torch.bool, device=nodes.device)
        live = nodes >= 0
        safe = nodes.clamp(min=0)
        starts = self.off[safe]
        counts = torch.where(live, self.off[safe + 1] - starts, torch.zeros_like(starts))
        total = int(counts.sum())
        if total == 0:
            return mask
        rows = torch.repeat_interleave(torch.arange(n, device=nodes.device), counts)
        first = torch.cumsum(counts, 0) - counts
        edge = torch.repeat_interleave(starts - first, counts) + torch.arange(total, device=nodes.device)
        mask[rows, self.tok[edge]] = True
        return mask

    def advance(self, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The node reached from each ``nodes[i]`` by ``tokens[i]``; DEAD when no such edge."""
        q = nodes.clamp(min=0) * self.vocab + tokens
        pos = torch.searchsorted(self.key, q).clamp(max=len(self.key) - 1)
        ok = (nodes >= 0) & (self.key[pos] == q) if len(self.key) else torch.zeros_like(nodes, dtype=torch.bool)
        return torch.where(ok, self.child[pos], torch.full_like(nodes, DEAD))

    def tool_index(self, nodes: torch.Tensor) -> torch.Tensor:
        """Index into ``tools`` of each node if it is terminal (id + EOS complete), else -1."""
        return torch.where(nodes >= 0, self.tool_of_node[nodes.clamp(min=0)], torch.full_like(nodes, -1))

    def root_tokens(self) -> torch.Tensor:
        return self.tok[self.off[0] : self.off[1]]
