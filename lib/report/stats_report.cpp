#include "daydream/report/stats.hpp"
#include "report/json_writer.hpp"

namespace daydream {

GraphStats make_stats(const Trace& trace, const Graph& graph) {
  GraphStats s;
  s.trace = trace.path;
  s.format = trace.metadata.format;
  s.events = static_cast<std::int64_t>(trace.events.size());
  s.bytes = trace.bytes_read;
  s.iterations = static_cast<std::int64_t>(graph.iterations().size());
  s.tasks_by_kind = graph.task_counts();
  s.edges_by_type = graph.edge_counts();
  for (const auto& e : graph.edges()) s.inferred_edges += e.edge.inferred ? 1 : 0;
  for (const Unit& u : graph.units()) {
    if (u.kind == UnitKind::cpu_thread) ++s.cpu_threads;
    else if (u.kind == UnitKind::gpu_stream) ++s.gpu_streams;
    else ++s.comm_channels;
  }
  s.calibration = graph.calibration();
  s.report = graph.report().stats();
  return s;
}

std::string to_json(const GraphStats& s) {
  JsonWriter w;
  w.begin_object().key("trace").value(s.trace).key("format").value(s.format);
  w.key("events").value(s.events).key("bytes").value(static_cast<std::int64_t>(s.bytes));
  w.key("iterations").value(s.iterations);
  w.key("units").begin_object().key("cpu_thread").value(s.cpu_threads).key("gpu_stream").value(s.gpu_streams);
  w.key("comm_channel").value(s.comm_channels).end_object();
  w.key("tasks").begin_object();
  for (std::size_t k = 0; k < kTaskKindCount; ++k) w.key(to_string(static_cast<TaskKind>(k))).value(s.tasks_by_kind[k]);
  w.end_object().key("edges").begin_object();
  for (std::size_t k = 0; k < kEdgeTypeCount; ++k) w.key(to_string(static_cast<EdgeType>(k))).value(s.edges_by_type[k]);
  w.end_object().key("inferred_edges").value(s.inferred_edges);
  w.key("calibration").begin_object().key("launch_latency_ms").begin_object();
  for (std::size_t k = 0; k < kTaskKindCount; ++k) {
    const auto kind = static_cast<TaskKind>(k);
    if (is_gpu(kind) || kind == TaskKind::communication) w.key(to_string(kind)).milliseconds(s.calibration.launch_latency_ns[k]);
  }
  w.end_object().key("gpu_gap_ms").milliseconds(s.calibration.gpu_gap_ns);
  w.key("launch_samples").value(s.calibration.launch_samples).key("gap_samples").value(s.calibration.gap_samples);
  w.key("occupancy_holders").value(s.calibration.occupancy_holders);
  w.key("occupancy_let_in_waves").ratio(s.calibration.occupancy_let_in_waves);
  w.end_object().key("import_report").begin_array();
  for (const auto& stat : s.report) {
    w.begin_object().key("key").value(stat.key).key("severity").value(to_string(stat.severity));
    w.key("count").value(stat.count).key("first_event").value(stat.first_event);
    if (stat.total_ns > 0) w.key("total_ms").milliseconds(stat.total_ns);
    w.key("description").value(stat.description).end_object();
  }
  return w.end_array().end_object().str();
}

std::string catalogue_json() {
  JsonWriter w;
  w.begin_object().key("catalogue").begin_array();
  for (const stats::Stat& stat : stats::catalogue()) {
    w.begin_object().key("key").value(stat.key).key("keyed").value(stat.keyed()).key("suffix").value(stat.suffix);
    w.key("severity").value(to_string(stat.severity)).key("stage").value(to_string(stat.stage));
    w.key("description").value(stat.description).end_object();
  }
  return w.end_array().end_object().str();
}

}  // namespace daydream
