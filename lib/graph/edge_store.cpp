// EdgeStore: edge records with tombstones, rows of edge ids in flat arenas (edge_store.hpp).
#include "graph/edge_store.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/huge_pages.hpp"
#include "daydream/error.hpp"

namespace daydream {
namespace {

/// Below this many tombstones neither a row nor the pool is worth compacting.
constexpr std::uint32_t kRowSlack = 8;
constexpr std::size_t kPoolSlack = 4096;

}  // namespace

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
    const std::uint32_t capacity = std::max<std::uint32_t>(4, row.capacity * 2);
    if (slots.size() + capacity >= kNoEdge) throw Error("a graph holds at most 2^32 edge slots");
    if (std::size_t{row.begin} + row.capacity == slots.size()) {  // the last row grows in place
      slots.resize(slots.size() + capacity - row.capacity);
    } else {
      const auto begin = static_cast<std::uint32_t>(slots.size());
      slots.resize(slots.size() + capacity);
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
  push(out_, from, id);
  push(in_, to, id);
  return id;
}

void EdgeStore::push(Rows& rows, TaskId v, EdgeId id) {
  const Rows::Row& row = rows.rows[v];
  if (row.size == row.capacity && row.live < row.size) compact_row(rows, v);
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

}  // namespace daydream
