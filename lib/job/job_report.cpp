// The job replay report: measured vs simulated per rank and for the job, who waited for whom
// at each collective (straggler) and the critical path by rank; and its --json form.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/job.hpp"
#include "daydream/report/replay.hpp"
#include "report/json_writer.hpp"

namespace daydream {
namespace {

std::int64_t rank_of(const Graph& graph, TaskId task) { return graph.units()[graph.task(task).unit].rank; }

/// The report's entry of each rank, looked up once per task or participant.
class RankIndex {
 public:
  explicit RankIndex(JobReport& report) : report_(report) {
    for (std::size_t i = 0; i < report.ranks.size(); ++i) position_[report.ranks[i].rank] = i;
  }
  RankReport* find(std::int64_t rank) const {
    const auto found = position_.find(rank);
    return found == position_.end() ? nullptr : &report_.ranks[found->second];
  }

 private:
  JobReport& report_;
  std::unordered_map<std::int64_t, std::size_t> position_;
};

void add_rank_iterations(const Graph& graph, const std::vector<IterationSpan>& spans, const RankIndex& ranks) {
  for (const IterationSpan& span : spans) {
    const Iteration& it = graph.iterations()[span.index];
    RankReport* r = ranks.find(rank_of(graph, it.first_task));
    if (!r) continue;
    if (r->iterations.empty()) r->step_start_ns = span.start_ns;
    r->iterations.push_back({it.name, it.measured_ns, span.end_ns - span.start_ns});
  }
}

/// Job iteration k: the slowest rank's k-th step, measured and simulated.
void add_job_iterations(const Graph& graph, const std::vector<TimeNs>& spans, JobReport& report) {
  for (const auto& group : job_iteration_groups(graph)) {
    JobIterationTime job;
    job.name = graph.iterations()[group.front()].name;
    for (std::size_t i : group) {
      if (spans[i] < 0) continue;
      const Iteration& it = graph.iterations()[i];
      const std::int64_t rank = rank_of(graph, it.first_task);
      if (it.measured_ns > job.measured_ns) job.measured_ns = it.measured_ns, job.measured_slowest_rank = rank;
      if (spans[i] > job.simulated_ns) job.simulated_ns = spans[i], job.simulated_slowest_rank = rank;
    }
    if (job.simulated_slowest_rank != kNone) report.iterations.push_back(std::move(job));
  }
}

void add_collectives(const JobLayout& layout, const SimulationResult& result, const RankIndex& ranks,
                     JobReport& report) {
  const std::unordered_set<TaskId> on_path(result.critical_path.begin(), result.critical_path.end());
  for (std::size_t c = 0; c < layout.collectives.size(); ++c) {
    const MatchedCollective& m = layout.collectives[c];
    if (result.end_ns[m.barrier] < 0) continue;  // removed by a transformation
    CollectiveTiming timing;
    timing.index = c;
    timing.group = m.process_group, timing.name = m.name, timing.sequence = m.sequence, timing.bytes = m.bytes;
    TimeNs last_arrival = -1;
    for (std::size_t i = 0; i < m.arrivals.size(); ++i) {
      if (result.end_ns[m.arrivals[i]] > last_arrival) last_arrival = result.end_ns[m.arrivals[i]], timing.last_rank = m.ranks[i];
    }
    std::vector<TimeNs> transfers;
    for (std::size_t i = 0; i < m.arrivals.size(); ++i) {
      const TimeNs wait = last_arrival - result.end_ns[m.arrivals[i]];
      timing.wait_ns += wait;
      timing.max_wait_ns = std::max(timing.max_wait_ns, wait);
      transfers.push_back(result.end_ns[m.transfers[i]] - result.start_ns[m.transfers[i]]);
      if (RankReport* r = ranks.find(m.ranks[i])) r->waited_ns += wait;
    }
    timing.transfer_ns = text::median(transfers);
    timing.on_critical_path = on_path.count(m.barrier) > 0;
    if (RankReport* last = ranks.find(timing.last_rank); last && timing.wait_ns > 0) {
      last->held_back_ns += timing.wait_ns;
      ++last->last_arrivals;
    }
    report.collectives.push_back(timing);
  }
}

void add_critical_path(const Graph& graph, const SimulationResult& result, const RankIndex& ranks, JobReport& report) {
  if (result.critical_path.empty()) return;
  const TaskId first = result.critical_path.front(), last = result.critical_path.back();
  report.critical_path_start_ns = result.start_ns[first];
  report.critical_path_end_ns = result.end_ns[last];
  report.critical_path_ns = report.critical_path_end_ns - report.critical_path_start_ns;
  report.critical_path_first_rank = rank_of(graph, first);
  report.critical_path_last_rank = rank_of(graph, last);
  for (TaskId t : result.critical_path)
    if (RankReport* r = ranks.find(rank_of(graph, t))) r->critical_path_ns += result.end_ns[t] - result.start_ns[t];
}

std::int64_t most_often_slowest(const JobReport& report) {
  std::map<std::int64_t, std::size_t> count;
  for (const auto& it : report.iterations) ++count[it.simulated_slowest_rank];
  if (count.empty()) return kNone;
  return std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

TimeNs median_step(const RankReport& rank) {
  std::vector<TimeNs> steps;
  for (const auto& it : rank.iterations) steps.push_back(it.simulated_ns);
  return steps.empty() ? 0 : text::median(steps);
}

/// Why the slowest rank is not the straggler: a rank that reaches the collectives last waits
/// least, so its own step is short; the ranks that wait for it carry the wait in theirs.
std::optional<std::string> explain_straggler(const JobReport& report, const RankIndex& ranks) {
  const RankReport* straggler = ranks.find(report.straggler);
  const RankReport* slowest = ranks.find(report.slowest_rank);
  if (!straggler || !slowest || straggler == slowest) return std::nullopt;
  std::string text = fmt::format(
      "rank {} has the slowest step ({} ms, median) but is not the straggler: it waited {} ms at collectives. "
      "Rank {} is the straggler: the others waited {} ms for it, last at {} collectives, so it waits least "
      "({} ms) and its own step is short ({} ms)",
      slowest->rank, format_ms_us(median_step(*slowest)), format_ms_us(slowest->waited_ns), straggler->rank,
      format_ms_us(straggler->held_back_ns), straggler->last_arrivals, format_ms_us(straggler->waited_ns),
      format_ms_us(median_step(*straggler)));
  if (straggler->step_start_ns >= 0 && slowest->step_start_ns >= 0 && straggler->step_start_ns > slowest->step_start_ns)
    text += fmt::format("; it starts its first step {} ms after rank {}", format_ms_us(straggler->step_start_ns - slowest->step_start_ns),
                        slowest->rank);
  return text;
}

/// What the critical path covers: its window, and that a rank's step is longer where it starts
/// before the path does.
std::string explain_critical_path(const JobReport& report) {
  return fmt::format("the critical path ({} ms) runs from {} to {} ms of the simulated job, from a task of rank {} to "
                     "one of rank {}; a step that starts before it (a rank that reached its step early and then "
                     "waited) is longer than the path",
                     format_ms_us(report.critical_path_ns), format_ms_us(report.critical_path_start_ns),
                     format_ms_us(report.critical_path_end_ns), report.critical_path_first_rank,
                     report.critical_path_last_rank);
}

std::vector<std::string> explain_job(const JobReport& report, const RankIndex& ranks) {
  std::vector<std::string> out;
  if (auto straggler = explain_straggler(report, ranks)) out.push_back(std::move(*straggler));
  if (report.critical_path_ns > 0) out.push_back(explain_critical_path(report));
  return out;
}

}  // namespace

JobReport make_job_report(const Graph& graph, const SimulationResult& result) {
  const JobLayout* layout = graph.job();
  if (!layout) throw Error(graph.source_path, Error::kNoEvent, "", "not a multi-rank job graph (load every rank's trace)");
  JobReport report;
  report.world_size = layout->world_size;
  report.missing_ranks = layout->missing_ranks;
  report.warnings = layout->warnings;
  for (const RankInfo& r : layout->ranks) {
    report.ranks.push_back({r.rank, r.trace, r.clock_offset_ns, {}, 0, 0, 0, 0});
    report.max_clock_skew_ns = std::max(report.max_clock_skew_ns, std::abs(r.clock_offset_ns));
  }
  const std::vector<IterationSpan> spans = simulated_iteration_spans(graph, result);
  const RankIndex ranks(report);
  add_rank_iterations(graph, spans, ranks);
  add_job_iterations(graph, iteration_durations(graph, spans), report);
  add_collectives(*layout, result, ranks, report);
  add_critical_path(graph, result, ranks, report);
  TimeNs worst = 0;
  for (const auto& r : report.ranks)
    if (r.held_back_ns > worst) worst = r.held_back_ns, report.straggler = r.rank;
  report.slowest_rank = most_often_slowest(report);
  report.explanations = explain_job(report, ranks);
  return report;
}

namespace {

void write_iteration(JsonWriter& w, std::string_view name, TimeNs measured, TimeNs simulated, double error) {
  w.key("name").value(name).key("measured_ms").milliseconds(measured).key("simulated_ms").milliseconds(simulated);
  w.key("error").ratio(error);
}

void write_job(JsonWriter& w, const JobReport& r) {
  w.key("job").begin_object().key("world_size").value(r.world_size);
  w.key("partial").value(!r.missing_ranks.empty()).key("missing_ranks").begin_array();
  for (auto rank : r.missing_ranks) w.value(rank);
  w.end_array().key("iterations").begin_array();
  for (const auto& it : r.iterations) {
    w.begin_object();
    write_iteration(w, it.name, it.measured_ns, it.simulated_ns, it.error());
    w.key("measured_slowest_rank").value(it.measured_slowest_rank);
    w.key("simulated_slowest_rank").value(it.simulated_slowest_rank).end_object();
  }
  w.end_array().key("straggler").value(r.straggler).key("slowest_rank").value(r.slowest_rank);
  w.key("max_clock_skew_ms").milliseconds(r.max_clock_skew_ns);
  w.key("critical_path_ms").milliseconds(r.critical_path_ns);
  w.key("critical_path_window_ms").begin_array().milliseconds(r.critical_path_start_ns);
  w.milliseconds(r.critical_path_end_ns).end_array();
  w.key("critical_path_ranks").begin_array().value(r.critical_path_first_rank).value(r.critical_path_last_rank).end_array();
  w.key("explanations").begin_array();
  for (const auto& line : r.explanations) w.value(line);
  w.end_array().key("collectives").begin_array();
  for (const auto& c : r.collectives) {
    w.begin_object().key("group").value(c.group).key("name").value(c.name).key("sequence").value(c.sequence);
    w.key("bytes").value(c.bytes).key("last_rank").value(c.last_rank).key("wait_ms").milliseconds(c.wait_ns);
    w.key("max_wait_ms").milliseconds(c.max_wait_ns).key("transfer_ms").milliseconds(c.transfer_ns);
    w.key("on_critical_path").value(c.on_critical_path).end_object();
  }
  w.end_array().key("warnings").begin_array();
  for (const auto& warning : r.warnings) w.value(warning);
  w.end_array().end_object();
}

}  // namespace

std::string to_json(const JobReport& r) {
  JsonWriter w;
  w.begin_object();
  write_job(w, r);
  w.key("ranks").begin_array();
  for (const auto& rank : r.ranks) {
    w.begin_object().key("rank").value(rank.rank).key("trace").value(rank.trace);
    w.key("clock_offset_ms").milliseconds(rank.clock_offset_ns).key("iterations").begin_array();
    for (const auto& it : rank.iterations) {
      w.begin_object();
      write_iteration(w, it.name, it.measured_ns, it.simulated_ns, it.error());
      w.end_object();
    }
    w.end_array().key("waited_ms").milliseconds(rank.waited_ns).key("held_back_ms").milliseconds(rank.held_back_ns);
    w.key("last_arrivals").value(rank.last_arrivals).key("critical_path_ms").milliseconds(rank.critical_path_ns);
    w.key("step_start_ms");
    if (rank.step_start_ns >= 0) w.milliseconds(rank.step_start_ns);
    else w.null();
    w.end_object();
  }
  w.end_array();
  return w.end_object().str();
}

}  // namespace daydream
