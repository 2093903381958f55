// EdgeStore: edge records with tombstones, rows of edge ids in flat arenas (edge_store.hpp).
#include "graph/edge_store.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/huge_pages.hpp"
#include "daydream/error.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {
namespace {

/// Below this many tombstones neither a row nor the pool is worth compacting.
constexpr std::uint32_t kRowSlack = 8;
constexpr std::size_t kPoolSlack = 4096;

}  // namespace

EdgeStore::EdgeStore(const EdgeStore& other)
    : records_(other.records_), dead_(other.dead_), out_(other.out_), in_(other.in_), copied_(true) {}

EdgeStore& EdgeStore::operator=(const EdgeStore& other) {
  if (this == &other) return *this;
  records_ = other.records_;
  dead_ = other.dead_;
  out_ = other.out_;
  in_ = other.in_;
  changed_.clear();
  changed_count_ = 0;
  copied_ = true;
  return *this;
}

TaskId EdgeStore::add_vertex() {
  out_.rows.emplace_back();
  in_.rows.emplace_back();
  return static_cast<TaskId>(out_.rows.size() - 1);
}

void EdgeStore::reserve(std::size_t vertices, std::size_t edges) {
  reserve_dense(records_, edges);
  for (Rows* rows : {&out_, &in_}) {
    reserve_dense(rows->rows, vertices);
    reserve_dense(rows->slots, edges + edges / 2);  // rows that outgrow their room leave slots behind
  }
}

void EdgeStore::Rows::push(TaskId v, EdgeId id) {
  Row& row = rows[v];
  if (row.size == row.capacity) {
    const std::uint32_t capacity = std::max<std::uint32_t>(2, row.capacity * 2);
    if (slots.size() + capacity >= kNoEdge) throw Error("a graph holds at most 2^32 edge slots");
    if (std::size_t{row.begin} + row.capacity == slots.size()) {  // the last row grows in place
      append_free_slots(capacity - row.capacity);
    } else {
      const auto begin = static_cast<std::uint32_t>(slots.size());
      append_free_slots(capacity);
      std::copy_n(slots.begin() + row.begin, row.size, slots.begin() + begin);
      unused += row.capacity;
      row.begin = begin;
    }
    row.capacity = capacity;
  }
  slots[std::size_t{row.begin} + row.size++] = id;
  ++row.live;
}

EdgeId EdgeStore::add(TaskId from, TaskId to, const Edge& edge) {
  if (dead_ > kPoolSlack && dead_ > 2 * num_edges()) compact_pool();
  for (Rows* rows : {&out_, &in_})
    if (rows->unused > kPoolSlack && rows->unused * 2 > rows->slots.size()) compact_arena(*rows);
  if (records_.size() + 1 >= kNoEdge) throw Error("a graph holds at most 2^32 - 2 edges");
  const auto id = static_cast<EdgeId>(records_.size());
  records_.push_back({from, to, edge});
  mark_changed(from);
  mark_changed(to);
  push(out_, from, id);
  push(in_, to, id);
  return id;
}

void EdgeStore::push(Rows& rows, TaskId v, EdgeId id) {
  const Rows::Row& row = rows.rows[v];
  // A full row is compacted rather than grown when a quarter of it is dead: compacting for fewer
  // would repeat every few pushes on a long row that keeps a few dead ids (quadratic), where
  // growing is amortized O(1).
  if (row.size == row.capacity && row.size != row.live && (row.size - row.live) * 4 >= row.size) compact_row(rows, v);
  rows.push(v, id);
}

void EdgeStore::drop_from_row(Rows& rows, TaskId v) {
  Rows::Row& row = rows.rows[v];
  --row.live;
  if (row.size >= kRowSlack && row.live * 2 < row.size) compact_row(rows, v);
}

void EdgeStore::compact_row(Rows& rows, TaskId v) {
  Rows::Row& row = rows.rows[v];
  EdgeId* ids = rows.slots.data() + row.begin;
  const auto end = std::remove_if(ids, ids + row.size, [&](EdgeId id) { return dead(id); });
  row.size = static_cast<std::uint32_t>(end - ids);
}

void EdgeStore::remove(EdgeId id) {
  Record& record = records_[id];
  const TaskId from = record.from;
  mark_changed(from);
  mark_changed(record.to);
  record.from = kNoTask;
  ++dead_;
  drop_from_row(out_, from);
  drop_from_row(in_, record.to);
}

void EdgeStore::remove_all(TaskId from, TaskId to) {
  std::vector<EdgeId> ids;
  each_out(from, [&](EdgeId id) {
    if (records_[id].to == to) ids.push_back(id);
    return true;
  });
  for (EdgeId id : ids) remove(id);
}

void EdgeStore::clear_vertex(TaskId v) {
  std::vector<EdgeId>& ids = scratch_ids_;
  ids.clear();
  const auto collect = [&](EdgeId id) {
    ids.push_back(id);
    return true;
  };
  each_out(v, collect);
  each_in(v, collect);
  for (EdgeId id : ids) {
    if (dead(id)) continue;  // an edge v -> v is in both rows
    Record& record = records_[id];
    const TaskId other_end_out = record.from, other_end_in = record.to;
    mark_changed(other_end_out);
    mark_changed(other_end_in);
    record.from = kNoTask;
    ++dead_;
    if (other_end_out != v) drop_from_row(out_, other_end_out);
    if (other_end_in != v) drop_from_row(in_, other_end_in);
  }
  for (Rows* rows : {&out_, &in_}) rows->rows[v].size = rows->rows[v].live = 0;
}

void EdgeStore::bypass_vertex(TaskId v, Edge (*bridge)(const Edge& in, const Edge& out)) {
  scratch_in_.clear();
  scratch_out_.clear();
  each_in(v, [&](EdgeId id) { return scratch_in_.push_back(records_[id]), true; });
  each_out(v, [&](EdgeId id) { return scratch_out_.push_back(records_[id]), true; });
  clear_vertex(v);
  for (const Record& in : scratch_in_)
    for (const Record& out : scratch_out_)
      if (in.from != out.to) add(in.from, out.to, bridge(in.edge, out.edge));
}

namespace {

/// An edge of bypass_vertices' side lists: a store edge that touches the vertices going, or a
/// bridge made on the way. It lies in the out-list of its source and the in-list of its target
/// where those are going (singly linked, in row order).
struct SideEdge {
  TaskId from, to;
  Edge edge;
  std::uint32_t next_out, next_in;
  bool dead;
};

constexpr std::uint32_t kNoSide = 0xffffffffu;

/// bypass_vertices' working memory, kept per thread between calls. `position` (by vertex) and
/// `side_of` (by store edge) are reset to kNoSide after each call, so that a call costs its
/// block's size, not the graph's.
struct BypassScratch {
  std::vector<std::uint32_t> position;  // the vertex's index in the order, or kNoSide
  std::vector<std::uint32_t> side_of;   // the store edge's side edge, or kNoSide
  std::vector<SideEdge> edges;
  std::vector<std::uint32_t> out_head, out_tail, in_head, in_tail;  // by position
  std::vector<std::uint32_t> ins, outs;
  std::vector<SideEdge> bridges;  // between two vertices that stay, in the order made

  /// Numbers the vertices going; false, numbering none, when one is named twice.
  bool claim(const std::vector<TaskId>& order, std::size_t vertices, std::size_t edge_ids) {
    if (position.size() < vertices) position.resize(vertices, kNoSide);
    if (side_of.size() < edge_ids) side_of.resize(edge_ids, kNoSide);
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (position[order[i]] != kNoSide) {
        for (std::size_t k = 0; k < i; ++k) position[order[k]] = kNoSide;
        return false;
      }
      position[order[i]] = static_cast<std::uint32_t>(i);
    }
    edges.clear();
    bridges.clear();
    for (auto* list : {&out_head, &out_tail, &in_head, &in_tail}) list->assign(order.size(), kNoSide);
    return true;
  }

  void link(std::uint32_t& head, std::uint32_t& tail, std::uint32_t id, std::uint32_t SideEdge::*next) {
    if (tail == kNoSide) head = id;
    else edges[tail].*next = id;
    tail = id;
  }

  /// A new side edge, in no list yet.
  std::uint32_t make(TaskId from, TaskId to, const Edge& edge) {
    edges.push_back({from, to, edge, kNoSide, kNoSide, false});
    return static_cast<std::uint32_t>(edges.size() - 1);
  }

  /// A new side edge, at the end of the lists of its ends that are going.
  std::uint32_t add(TaskId from, TaskId to, const Edge& edge) {
    const std::uint32_t id = make(from, to, edge);
    if (const std::uint32_t p = position[from]; p != kNoSide) link(out_head[p], out_tail[p], id, &SideEdge::next_out);
    if (const std::uint32_t p = position[to]; p != kNoSide) link(in_head[p], in_tail[p], id, &SideEdge::next_in);
    return id;
  }

  /// The live entries of one list, in order, into `out`.
  void live(std::uint32_t head, std::uint32_t SideEdge::*next, std::vector<std::uint32_t>& out) const {
    out.clear();
    for (std::uint32_t id = head; id != kNoSide; id = edges[id].*next)
      if (!edges[id].dead) out.push_back(id);
  }

  /// bypass_vertex on the vertex at `at`, on the side lists.
  void bypass(std::size_t at, Edge (*bridge)(const Edge& in, const Edge& out)) {
    live(in_head[at], &SideEdge::next_in, ins);
    live(out_head[at], &SideEdge::next_out, outs);
    for (std::uint32_t id : ins) edges[id].dead = true;
    for (std::uint32_t id : outs) edges[id].dead = true;
    for (std::uint32_t in : ins)
      for (std::uint32_t out : outs) {
        const TaskId from = edges[in].from, to = edges[out].to;
        if (from == to) continue;
        const Edge bridged = bridge(edges[in].edge, edges[out].edge);
        if (position[from] == kNoSide && position[to] == kNoSide) bridges.push_back({from, to, bridged, 0, 0, false});
        else add(from, to, bridged);
      }
  }
};

/// The store's edges of the vertices going, each once, into the side lists in row order: the
/// out-rows first, so that an edge between two of them has its side edge when its target's
/// in-row is read.
void read_side_lists(const EdgeStore& store, const std::vector<TaskId>& order, bool zero_inner, BypassScratch& s) {
  for (std::size_t i = 0; i < order.size(); ++i)
    store.each_out(order[i], [&](EdgeId e) {
      Edge edge = store.edge(e);
      if (zero_inner && s.position[store.target(e)] != kNoSide) edge.delay_ns = 0;
      s.side_of[e] = s.make(order[i], store.target(e), edge);
      s.link(s.out_head[i], s.out_tail[i], s.side_of[e], &SideEdge::next_out);
      return true;
    });
  for (std::size_t i = 0; i < order.size(); ++i)
    store.each_in(order[i], [&](EdgeId e) {
      if (s.side_of[e] == kNoSide) s.side_of[e] = s.make(store.source(e), order[i], store.edge(e));
      s.link(s.in_head[i], s.in_tail[i], s.side_of[e], &SideEdge::next_in);
      return true;
    });
}

/// Resets what claim() and read_side_lists() set, before the store's rows change.
void release(const EdgeStore& store, const std::vector<TaskId>& order, BypassScratch& s) {
  const auto reset = [&](EdgeId e) { return s.side_of[e] = kNoSide, true; };
  for (TaskId v : order) store.each_out(v, reset), store.each_in(v, reset), s.position[v] = kNoSide;
}

}  // namespace

bool EdgeStore::bypass_vertices(const std::vector<TaskId>& order, Edge (*bridge)(const Edge& in, const Edge& out),
                                bool zero_inner) {
  thread_local BypassScratch s;
  if (!s.claim(order, num_vertices(), records_.size())) return false;
  try {
    read_side_lists(*this, order, zero_inner, s);
    for (std::size_t i = 0; i < order.size(); ++i) s.bypass(i, bridge);
  } catch (...) {
    release(*this, order, s);
    throw;
  }
  release(*this, order, s);
  for (TaskId v : order) clear_vertex(v);
  for (const SideEdge& b : s.bridges) add(b.from, b.to, b.edge);
  return true;
}

namespace {
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {  // splitmix64's finaliser over h ^ v
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::uint64_t EdgeStore::layout_key() const {
  // Every record, cheaply (one multiply per field; about 1 ns a record): a key that saw only some
  // records would make stores that differ elsewhere candidates, each costing a full comparison.
  std::uint64_t h = mix(mix(mix(0, num_vertices()), records_.size()), dead_);
  std::uint64_t a = 0, b = 0;
  for (const Record& r : records_) {
    a = (a ^ ((std::uint64_t{r.from} << 32) | r.to)) * 0x100000001b3ull;
    b = (b ^ (static_cast<std::uint64_t>(r.edge.delay_ns) << 1 ^ static_cast<std::uint64_t>(r.edge.timing))) *
        0x9e3779b97f4a7c15ull;
  }
  return mix(mix(h, a), b);
}

EdgeId EdgeStore::find(TaskId from, TaskId to) const {
  EdgeId found = kNoEdge;
  each_out(from, [&](EdgeId id) {
    if (records_[id].to != to) return true;
    found = id;
    return false;
  });
  return found;
}

void EdgeStore::compact_arena(Rows& rows) {
  RoomyVector<EdgeId> slots;
  slots.reserve(rows.slots.size() - rows.unused);
  for (auto& row : rows.rows) {
    const auto begin = static_cast<std::uint32_t>(slots.size());
    for (std::uint32_t i = 0; i < row.size; ++i)
      if (const EdgeId id = rows.slots[std::size_t{row.begin} + i]; !dead(id)) slots.push_back(id);
    row = {begin, static_cast<std::uint32_t>(slots.size()) - begin, static_cast<std::uint32_t>(slots.size()) - begin,
           row.live};
  }
  rows.slots = std::move(slots);
  rows.unused = 0;
}

// Renumbers the live edges (in the order of their sources' rows) and packs both arenas.
void EdgeStore::compact_pool() {
  std::vector<EdgeId> renumbered(records_.size(), kNoEdge);
  RoomyVector<Record> records;
  records.reserve(num_edges());
  for (TaskId v = 0; v < num_vertices(); ++v)
    each_out(v, [&](EdgeId id) {
      renumbered[id] = static_cast<EdgeId>(records.size());
      records.push_back(records_[id]);
      return true;
    });
  for (Rows* rows : {&out_, &in_}) {
    compact_arena(*rows);
    for (EdgeId& id : rows->slots) id = renumbered[id];
  }
  records_ = std::move(records);
  dead_ = 0;
}

// Two edges with the same ends lie in the same order in both their rows (each is appended to
// both; removal, compaction and moves keep order), so the table's reverse rows, by source and
// then by the source's row, hold the edges of a target in an order these rows give.
bool EdgeStore::predecessor_order(const EdgeTable& table, std::vector<std::uint32_t>& in_order) const {
  const std::size_t n = num_vertices();
  if (table.first.size() != n + 1 || table.in_first.size() != n + 1 || table.target.size() != num_edges() ||
      table.kind.size() != num_edges() || table.in_edges.size() != num_edges())
    return false;
  // Per edge id, where the table's reverse rows hold it: the counting walk of their construction.
  std::vector<std::uint32_t> reverse(records_.size());
  std::vector<std::uint32_t> next(table.in_first.begin(), table.in_first.end() - 1);
  std::uint32_t at = 0;
  for (TaskId v = 0; v < n; ++v) {
    const bool same = each_out(v, [&](EdgeId e) {
      const Record& r = records_[e];
      const bool equal = table.target[at] == r.to && table.kind[at] == pack_edge_kind(r.edge) &&
                         table.delay_ns[at] == r.edge.delay_ns &&
                         table.start_to_start[at] == (r.edge.timing == Timing::start_to_start ? 1 : 0);
      reverse[e] = next[r.to]++;
      ++at;
      return equal;
    });
    if (!same || table.first[v + 1] != at) return false;
  }
  in_order.resize(num_edges());
  for (TaskId w = 0; w < n; ++w) {
    std::uint32_t slot = table.in_first[w];
    if (table.in_first[w + 1] - slot != in_degree(w)) return false;
    const bool same = each_in(w, [&](EdgeId e) {
      in_order[slot++] = reverse[e];
      return table.in_edges[reverse[e]].source == records_[e].from;
    });
    if (!same) return false;
  }
  return true;
}

void EdgeStore::thaw(const EdgeTable& table, const std::vector<std::uint32_t>& in_order) {
  const std::size_t n = table.first.size() - 1, m = table.target.size();
  records_.resize(m);
  out_.rows.resize(n);
  out_.slots.resize(m);
  for (TaskId v = 0; v < n; ++v) {
    const std::uint32_t begin = table.first[v], size = table.first[v + 1] - begin;
    out_.rows[v] = {begin, size, size, size};
    for (std::uint32_t i = begin; i < begin + size; ++i) {
      records_[i] = {v, table.target[i], unpack_edge(table.kind[i], table.delay_ns[i], table.start_to_start[i])};
      out_.slots[i] = i;
    }
  }
  // Per reverse-row entry, the edge (table entry) it mirrors: the counting walk of the reverse
  // rows' construction (each target's predecessors by source, then in its sources' row order).
  std::vector<EdgeId> mirrored(m);
  std::vector<std::uint32_t> next(table.in_first.begin(), table.in_first.end() - 1);
  for (std::uint32_t i = 0; i < m; ++i) mirrored[next[table.target[i]]++] = i;
  in_.rows.resize(n);
  in_.slots.resize(m);
  for (TaskId w = 0; w < n; ++w) {
    const std::uint32_t begin = table.in_first[w], size = table.in_first[w + 1] - begin;
    in_.rows[w] = {begin, size, size, size};
    for (std::uint32_t k = begin; k < begin + size; ++k) in_.slots[k] = mirrored[in_order[k]];
  }
  dead_ = 0;
  out_.unused = in_.unused = 0;
  changed_.clear();
  changed_count_ = 0;
  copied_ = true;
}

}  // namespace daydream
