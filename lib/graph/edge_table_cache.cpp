#include "graph/edge_table_cache.hpp"

#include <algorithm>
#include <cstring>

namespace daydream {
namespace {

/// Whether `edges` has exactly the table's live out-edges: per task, in row order, the same
/// target, delay, timing and kind (what the whole table is computed from, with the task columns), and
/// the same units launch GPU work (`columns` holds the table's units).
bool same_rows(const EdgeStore& edges, const TaskColumns& columns, const EdgeTable& table) {
  const std::size_t n = edges.num_vertices();
  if (table.first.size() != n + 1 || table.target.size() != edges.num_edges()) return false;
  std::size_t at = 0;
  std::vector<std::uint8_t> launching_units;
  for (TaskId v = 0; v < n; ++v) {
    bool launches = false;
    const bool same = edges.each_out(v, [&](EdgeId e) {
      const Edge& edge = edges.edge(e);
      const bool equal = at < table.target.size() && table.target[at] == edges.target(e) &&
                         table.delay_ns[at] == edge.delay_ns &&
                         table.start_to_start[at] == (edge.timing == Timing::start_to_start ? 1 : 0) &&
                         table.kind[at] == pack_edge_kind(edge);
      launches |= edge.type == EdgeType::launch;
      ++at;
      return equal;
    });
    if (!same || table.first[v + 1] != at) return false;
    if (launches) mark_launching(launching_units, columns.unit[v]);
  }
  return at == table.target.size() && launching_units == table.launching_units;
}

template <class A, class B>
bool same_column(const A& cached, const B& column) {
  return cached.size() == column.size() &&
         (cached.empty() || std::memcmp(cached.data(), column.data(), cached.size() * sizeof(cached[0])) == 0);
}

std::size_t table_bytes(const EdgeTable& t) {
  return t.first.size() * 4 + t.target.size() * 4 + t.delay_ns.size() * 8 + t.start_to_start.size() + t.kind.size() +
         t.in_first.size() * 4 + t.in_edges.size() * sizeof(InEdge) + t.topological.size() * 4 +
         t.launches.size() + t.launching_units.size();
}

}  // namespace

std::uint64_t EdgeTableCache::key(const EdgeStore& edges, const TaskColumns& columns) {
  return edges.layout_key() ^ (columns.unit.size() * 0x9e3779b97f4a7c15ull);
}

bool EdgeTableCache::matches(const Entry& entry, const EdgeStore& edges, const TaskColumns& columns) {
  return same_column(entry.unit, columns.unit) && same_column(entry.removed, columns.removed) &&
         same_rows(edges, columns, *entry.table);
}

std::shared_ptr<const EdgeTable> EdgeTableCache::find(std::uint64_t key, const EdgeStore& edges,
                                                      const TaskColumns& columns) {
  std::vector<std::shared_ptr<const Entry>> candidates;
  {
    std::lock_guard lock(mutex_);
    for (const Slot& slot : slots_)
      if (slot.entry->key == key) candidates.push_back(slot.entry);
  }
  for (const auto& entry : candidates) {  // compared outside the lock: sweep threads check at once
    if (!matches(*entry, edges, columns)) continue;
    std::lock_guard lock(mutex_);
    for (Slot& slot : slots_)
      if (slot.entry == entry) slot.used = ++clock_;
    return entry->table;
  }
  return nullptr;
}

std::shared_ptr<EdgeTable> EdgeTableCache::offer(std::uint64_t key, const TaskColumns& columns,
                                                  std::shared_ptr<EdgeTable> table) {
  const std::size_t bytes = table_bytes(*table) + columns.unit.size() * (sizeof(UnitId) + 1);
  std::lock_guard lock(mutex_);
  const bool seen = std::find(built_keys_.begin(), built_keys_.end(), key) != built_keys_.end();
  if (!seen) {
    built_keys_.push_back(key);
    if (built_keys_.size() > 4 * kMaxEntries) built_keys_.erase(built_keys_.begin());
    return nullptr;
  }
  if (bytes > kMaxBytes) return nullptr;
  auto entry = std::make_shared<Entry>();
  entry->key = key;
  entry->table = std::move(table);
  entry->unit.assign(columns.unit.begin(), columns.unit.end());
  entry->removed.assign(columns.removed.begin(), columns.removed.end());
  entry->bytes = bytes;
  const auto total = [&] {
    std::size_t sum = bytes;
    for (const Slot& slot : slots_) sum += slot.entry->bytes;
    return sum;
  };
  std::shared_ptr<EdgeTable> freed;
  while (!slots_.empty() && (slots_.size() >= kMaxEntries || total() > kMaxBytes)) {
    const auto oldest = std::min_element(slots_.begin(), slots_.end(),
                                         [](const Slot& a, const Slot& b) { return a.used < b.used; });
    // Only the cache holds it: candidates of a find() are copied under this lock, and a graph
    // that adopted the table holds its own reference.
    if (oldest->entry.use_count() == 1 && oldest->entry->table.use_count() == 1) freed = oldest->entry->table;
    slots_.erase(oldest);
  }
  slots_.push_back({std::move(entry), ++clock_});
  return freed;
}

}  // namespace daydream
