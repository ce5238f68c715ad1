//===- SymbolList.h - the symbols BPE merges edit in place -----*- C++ -*-===//
//
// The tokenizers merge the adjacent pairs of a piece from a priority queue
// of candidates; they differ only in how they rank the pairs. The list keeps
// the symbols linked, so a merge is O(1), and tells a stale candidate (one
// of its two symbols changed after it was queued) from a live one.
//
//===----------------------------------------------------------------------===//
#ifndef TLM_IO_SYMBOLLIST_H
#define TLM_IO_SYMBOLLIST_H

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace tlm::io {

class SymbolList {
public:
  explicit SymbolList(std::vector<int32_t> symbols)
      : symbols_(std::move(symbols)), next_(symbols_.size()),
        prev_(symbols_.size()), alive_(symbols_.size(), true) {
    int32_t n = symbols_.size();
    for (int32_t i = 0; i < n; ++i) {
      prev_[i] = i - 1;
      next_[i] = i + 1 < n ? i + 1 : -1;
    }
  }

  int32_t size() const { return symbols_.size(); }
  int32_t at(int32_t i) const { return symbols_[i]; }
  /// The node after / before `i`, or -1.
  int32_t next(int32_t i) const { return next_[i]; }
  int32_t prev(int32_t i) const { return prev_[i]; }
  bool alive(int32_t i) const { return alive_[i]; }

  /// Replaces the pair that starts at `left` by `merged` if it still is
  /// (leftId, rightId); returns whether it did.
  bool merge(int32_t left, int32_t leftId, int32_t rightId, int32_t merged) {
    int32_t right = next_[left];
    if (!alive_[left] || symbols_[left] != leftId || right < 0 ||
        symbols_[right] != rightId)
      return false;
    symbols_[left] = merged;
    alive_[right] = false;
    next_[left] = next_[right];
    if (next_[right] >= 0)
      prev_[next_[right]] = left;
    return true;
  }

  /// Appends the symbols still alive, in order.
  template <typename T> void appendTo(std::vector<T> &out) const {
    for (std::size_t i = 0; i < symbols_.size(); ++i)
      if (alive_[i])
        out.push_back(symbols_[i]);
  }

  /// Merges best first: every pair `consider(i)` can offer (it pushes a
  /// candidate with left, leftId, rightId and merged onto `heap` when the
  /// pair at node i has a merge), then the heap's best one at a time,
  /// skipping those an earlier merge made stale and offering each merge's
  /// new neighbours. llama2.c (by score) and tokenizer.json (by rank) only
  /// order their heaps differently.
  template <typename Heap, typename Consider>
  void mergeBestFirst(Heap &heap, Consider consider) {
    for (int32_t i = 0; i + 1 < size(); ++i)
      consider(i);
    while (!heap.empty()) {
      auto c = heap.top();
      heap.pop();
      if (!merge(c.left, c.leftId, c.rightId, c.merged))
        continue;
      consider(prev(c.left));
      consider(c.left);
    }
  }

private:
  std::vector<int32_t> symbols_, next_, prev_;
  std::vector<bool> alive_;
};

/// A candidate merge of the pair at node `left`, (leftId, rightId) into
/// `merged`, ranked by its place in a merges list (GPT-2's merges.txt,
/// tokenizer.json's `merges`).
struct RankedMerge {
  int32_t rank, left, leftId, rightId, merged;
};
/// The lowest rank first, the leftmost pair on ties.
struct LaterRankedMerge {
  bool operator()(const RankedMerge &a, const RankedMerge &b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};
using RankedMergeHeap =
    std::priority_queue<RankedMerge, std::vector<RankedMerge>,
                        LaterRankedMerge>;

} // namespace tlm::io

#endif // TLM_IO_SYMBOLLIST_H
