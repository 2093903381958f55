// EdgeStore (lib/graph/edge_store.hpp) against the simplest model of what it must give: every
// edge ever added, in order, with a removed flag. A task's out-edges (in-edges) are then the live
// ones leaving (reaching) it in the order they were added: the order Boost's adjacency list gave,
// which every simulation and report of daydream depends on (edge order decides ties).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "graph/edge_store.hpp"

using namespace daydream;

namespace {

struct ModelEdge {
  TaskId from, to;
  TimeNs delay;
  bool live;
};

std::vector<std::pair<TaskId, TimeNs>> model_row(const std::vector<ModelEdge>& model, TaskId v, bool out) {
  std::vector<std::pair<TaskId, TimeNs>> row;
  for (const ModelEdge& e : model)
    if (e.live && (out ? e.from : e.to) == v) row.emplace_back(out ? e.to : e.from, e.delay);
  return row;
}

std::vector<std::pair<TaskId, TimeNs>> store_row(const EdgeStore& store, TaskId v, bool out) {
  std::vector<std::pair<TaskId, TimeNs>> row;
  const auto take = [&](EdgeId id) {
    row.emplace_back(out ? store.target(id) : store.source(id), store.edge(id).delay_ns);
    return true;
  };
  out ? store.each_out(v, take) : store.each_in(v, take);
  return row;
}

Edge with_delay(TimeNs delay) { return {EdgeType::cpu_sequential, Timing::finish_to_start, delay, false}; }

Edge sum_of_delays(const Edge& in, const Edge& out) { return with_delay(in.delay_ns + out.delay_ns); }

}  // namespace

TEST_CASE("edge store: rows keep insertion order through removals, bypasses and compactions", "[edge_store]") {
  constexpr TaskId kTasks = 40;
  std::mt19937 rng(7);
  EdgeStore store;
  std::vector<ModelEdge> model;
  for (TaskId v = 0; v < kTasks; ++v) REQUIRE(store.add_vertex() == v);
  auto pick = [&](TaskId n) { return static_cast<TaskId>(rng() % n); };
  TimeNs next_delay = 1;
  std::size_t bypasses = 0, clears = 0, removals = 0, killed = 0;  // killed: edges removed in all
  for (int step = 0; step < 30'000; ++step) {
    const auto op = static_cast<unsigned>(rng() % 10);
    const TaskId a = pick(kTasks), b = pick(kTasks);
    if (op < 5 && a != b) {  // add
      store.add(a, b, with_delay(next_delay));
      model.push_back({a, b, next_delay++, true});
    } else if (op < 8 && !model.empty()) {  // remove the first a -> b of an edge of the model
      const ModelEdge& chosen = model[rng() % model.size()];
      if (!chosen.live) continue;
      const TaskId from = chosen.from, to = chosen.to;
      const EdgeId id = store.find(from, to);
      auto it = std::find_if(model.begin(), model.end(),
                             [&](const ModelEdge& e) { return e.live && e.from == from && e.to == to; });
      REQUIRE((id == kNoEdge) == (it == model.end()));
      if (id != kNoEdge) {
        CHECK(store.edge(id).delay_ns == it->delay);
        store.remove(id), it->live = false, ++removals;
      }
    } else if (op == 8) {  // remove every a -> b
      store.remove_all(a, b);
      for (ModelEdge& e : model)
        if (e.from == a && e.to == b) e.live = false;
    } else {  // bypass a (predecessors x successors), or clear it where that would add many edges
      const auto in = model_row(model, a, false), out = model_row(model, a, true);
      for (ModelEdge& e : model)
        if (e.from == a || e.to == a) e.live = false;
      if (in.size() * out.size() > 16) {
        store.clear_vertex(a), ++clears;
      } else {
        for (const auto& [p, din] : in)
          for (const auto& [s, dout] : out)
            if (p != s) model.push_back({p, s, din + dout, true});
        store.bypass_vertex(a, sum_of_delays), ++bypasses;
      }
    }
    if (step % 499 == 0 || step == 29'999) {
      for (const ModelEdge& e : model) killed += !e.live;
      model.erase(std::remove_if(model.begin(), model.end(), [](const ModelEdge& e) { return !e.live; }), model.end());
      REQUIRE(store.num_edges() == model.size());
      for (TaskId v = 0; v < kTasks; ++v) {
        REQUIRE(store_row(store, v, true) == model_row(model, v, true));
        REQUIRE(store_row(store, v, false) == model_row(model, v, false));
        REQUIRE(store.out_degree(v) == model_row(model, v, true).size());
        REQUIRE(store.in_degree(v) == model_row(model, v, false).size());
      }
    }
  }
  CHECK(bypasses > 1000);
  CHECK(clears > 100);
  CHECK(removals > 3000);
  CHECK(killed > 4 * 4096);  // the pool was compacted (more than 4,096 tombstones, over half of it)
  // A copy is independent of the original.
  EdgeStore copy = store;
  copy.clear_vertex(0);
  CHECK(store_row(store, 0, true) == model_row(model, 0, true));
  CHECK(copy.out_degree(0) == 0);
}

TEST_CASE("edge store: bypass_vertices leaves every row as bypass_vertex one by one does", "[edge_store]") {
  // Random stores (parallel edges, cycles: the store does not care), random sets of vertices in
  // random orders. Every out- and in-row must match the one-by-one bypasses exactly, edge by edge
  // and in order; with zero_inner, after zeroing the edges between two vertices of the set first.
  constexpr TaskId kTasks = 30;
  std::mt19937 rng(23);
  auto pick = [&](TaskId n) { return static_cast<TaskId>(rng() % n); };
  std::size_t bridges = 0;
  for (int round = 0; round < 400; ++round) {
    EdgeStore base;
    for (TaskId v = 0; v < kTasks; ++v) base.add_vertex();
    const int edges = 20 + static_cast<int>(rng() % 60);
    for (int e = 0; e < edges; ++e) {
      const TaskId a = pick(kTasks), b = pick(kTasks);
      if (a != b) base.add(a, b, with_delay(1 + pick(9)));
    }
    for (int e = 0; e < 5; ++e)  // tombstones in the rows read
      if (const EdgeId id = base.find(pick(kTasks), pick(kTasks)); id != kNoEdge) base.remove(id);
    std::vector<TaskId> order(kTasks);
    for (TaskId v = 0; v < kTasks; ++v) order[v] = v;
    std::shuffle(order.begin(), order.end(), rng);
    order.resize(1 + pick(12));
    const bool zero_inner = round % 2 == 1;

    EdgeStore expected = base;
    if (zero_inner) {
      std::vector<char> going(kTasks, 0);
      for (TaskId v : order) going[v] = 1;
      for (TaskId v : order)
        expected.each_out(v, [&](EdgeId id) {
          if (going[expected.target(id)]) expected.edge(id).delay_ns = 0;
          return true;
        });
    }
    for (TaskId v : order) expected.bypass_vertex(v, sum_of_delays);
    EdgeStore at_once = base;
    REQUIRE(at_once.bypass_vertices(order, sum_of_delays, zero_inner));
    INFO("round " << round << ", " << order.size() << " vertices");
    REQUIRE(at_once.num_edges() == expected.num_edges());
    for (TaskId v = 0; v < kTasks; ++v) {
      REQUIRE(store_row(at_once, v, true) == store_row(expected, v, true));
      REQUIRE(store_row(at_once, v, false) == store_row(expected, v, false));
    }
    bridges += expected.num_edges();
  }
  CHECK(bridges > 5000);

  // A vertex named twice: refused, nothing changed, and the next call works.
  EdgeStore store;
  for (TaskId v = 0; v < 4; ++v) store.add_vertex();
  store.add(0, 1, with_delay(1)), store.add(1, 2, with_delay(2)), store.add(2, 3, with_delay(3));
  CHECK_FALSE(store.bypass_vertices({1, 2, 1}, sum_of_delays, false));
  CHECK(store.num_edges() == 3);
  CHECK(store_row(store, 1, true) == std::vector<std::pair<TaskId, TimeNs>>{{2, 2}});
  REQUIRE(store.bypass_vertices({1, 2}, sum_of_delays, false));
  CHECK(store_row(store, 0, true) == std::vector<std::pair<TaskId, TimeNs>>{{3, 6}});
}

namespace {

/// p -> c1 -> c2 -> ... -> cn -> end, each ci -> ki: the pattern of a step's launch calls.
struct LaunchChain {
  static constexpr TaskId n = 20'000;
  EdgeStore store;
  TaskId p = store.add_vertex();
  std::vector<TaskId> calls, kernels;
  TaskId end = kNoTask;

  LaunchChain() {
    for (TaskId i = 0; i < n; ++i) calls.push_back(store.add_vertex()), kernels.push_back(store.add_vertex());
    end = store.add_vertex();
    store.add(p, calls[0], with_delay(1));
    for (TaskId i = 0; i < n; ++i) {
      store.add(calls[i], kernels[i], with_delay(0));
      store.add(calls[i], i + 1 < n ? calls[i + 1] : end, with_delay(1));
    }
  }
  /// With c1..cn bypassed in order: p -> k1..kn, then cn's successor, and no other edge.
  void check_bridged() const {
    const auto row = store_row(store, p, true);
    REQUIRE(row.size() == n + 1);
    for (TaskId i = 0; i < n; ++i) REQUIRE(row[i] == std::pair(kernels[i], TimeNs(i + 1)));
    CHECK(row.back() == std::pair(end, TimeNs(n + 1)));
    CHECK(store.num_edges() == n + 1);
  }
};

}  // namespace

TEST_CASE("edge store: removing a chain bridged onto one task costs its own edges", "[edge_store]") {
  // One by one, each bypass bridges onto p (the pattern of a step's launch calls removed one after
  // another); at once, the bridges between two calls never enter the store.
  LaunchChain one_by_one;
  for (TaskId c : one_by_one.calls) one_by_one.store.bypass_vertex(c, sum_of_delays);
  one_by_one.check_bridged();
  LaunchChain at_once;
  REQUIRE(at_once.store.bypass_vertices(at_once.calls, sum_of_delays, false));
  at_once.check_bridged();
}
