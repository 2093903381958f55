// The operators that recorded their inputs' shapes (Kineto `record_shapes`), kept in the graph
// with the recorded operator around each one, for the GPU model's work per kernel
// (docs/gpu_model.md, "Work per kernel").
#include <algorithm>
#include <vector>

#include "graph/build_context.hpp"

namespace daydream {
namespace {

/// Parents before children: earlier start, then longer, then file order.
bool encloses_first(const TraceEvent& a, const TraceEvent& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.duration_ns != b.duration_ns) return a.duration_ns > b.duration_ns;
  return a.source_index < b.source_index;
}

/// Per recorded operator (index into trace.shapes), the innermost recorded operator that
/// encloses it on its thread, or -1.
std::vector<std::int32_t> parents(const Trace& trace) {
  const ShapeTable& shapes = trace.shapes;
  std::vector<std::uint32_t> order(shapes.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto event = [&](std::uint32_t op) -> const TraceEvent& {
    return trace.events[static_cast<std::size_t>(shapes.key(op))];
  };
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const TraceEvent &ea = event(a), &eb = event(b);
    return ea.lane != eb.lane ? ea.lane < eb.lane : encloses_first(ea, eb);
  });
  std::vector<std::int32_t> parent(shapes.size(), -1);
  std::vector<std::uint32_t> open;  // enclosing operators of the current lane, outermost first
  for (std::size_t k = 0; k < order.size(); ++k) {
    const TraceEvent& e = event(order[k]);
    if (k > 0 && event(order[k - 1]).lane != e.lane) open.clear();
    while (!open.empty() && event(open.back()).end_ns() <= e.start_ns) open.pop_back();
    if (!open.empty()) parent[order[k]] = static_cast<std::int32_t>(open.back());
    open.push_back(order[k]);
  }
  return parent;
}

/// The recorded operators worth keeping: those around a kernel's launch (and the operators
/// around them), and the autograd nodes that record a forward output's shape (docs/gpu_model.md).
/// The rest (views, allocations, operators on the CPU) cannot hold a kernel's work.
std::vector<std::uint8_t> needed(const BuildContext& ctx, const std::vector<std::int64_t>& source,
                                 const std::vector<std::int32_t>& parent) {
  std::vector<std::uint8_t> keep(source.size(), 0);
  const Graph& g = ctx.graph;
  for (TaskId t = 0; t < g.num_tasks(); ++t) {
    if (g.task(t).kind != TaskKind::kernel) continue;
    const auto it = std::lower_bound(source.begin(), source.end(), g.task(t).op_event);
    if (it == source.end() || *it != g.task(t).op_event) continue;
    for (auto op = static_cast<std::int32_t>(it - source.begin()); op >= 0 && !keep[static_cast<std::size_t>(op)];
         op = parent[static_cast<std::size_t>(op)])
      keep[static_cast<std::size_t>(op)] = 1;
  }
  for (std::size_t i = 0; i < source.size(); ++i) {
    const TraceEvent& e = ctx.trace.events[static_cast<std::size_t>(ctx.trace.shapes.key(i))];
    if (e.sequence_number != kNone && ctx.trace.name_of(e).find("Backward") != std::string_view::npos) keep[i] = 1;
  }
  return keep;
}

}  // namespace

void keep_operators(BuildContext& ctx) {
  const Trace& trace = ctx.trace;
  if (trace.shapes.empty()) return;
  const std::vector<std::int32_t> parent = parents(trace);
  std::vector<std::int64_t> source(trace.shapes.size());  // file index, ascending as positions are
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = trace.events[static_cast<std::size_t>(trace.shapes.key(i))].source_index;
  const std::vector<std::uint8_t> keep = needed(ctx, source, parent);
  std::vector<std::int32_t> index(source.size(), -1);  // in the kept records (a parent may come later in the file)
  std::int32_t kept = 0;
  for (std::size_t i = 0; i < source.size(); ++i)
    if (keep[i]) index[i] = kept++;
  std::vector<OperatorRecord> records;
  records.reserve(static_cast<std::size_t>(kept));
  ShapeTable shapes;
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (!keep[i]) continue;
    std::int32_t p = parent[i];
    while (p >= 0 && !keep[static_cast<std::size_t>(p)]) p = parent[static_cast<std::size_t>(p)];
    const TraceEvent& e = trace.events[static_cast<std::size_t>(trace.shapes.key(i))];
    records.push_back({source[i], ctx.name_of(e), p < 0 ? -1 : index[static_cast<std::size_t>(p)],
                       e.sequence_number, static_cast<std::uint32_t>(shapes.size())});
    shapes.append(trace.shapes, i, source[i]);
  }
  shapes.shrink_to_fit();  // kept with the graph
  ctx.graph.set_operators(std::move(records), std::move(shapes));
}

}  // namespace daydream
