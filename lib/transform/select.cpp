// Select and bulk changes: TaskFilter, TaskSet, Graph::select.
//
// Regular expressions are matched once per distinct name (names are interned), so selecting
// over millions of tasks costs a few comparisons per task.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "common/pattern.hpp"
#include "common/text.hpp"
#include "daydream/error.hpp"
#include "daydream/transform.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"  // TaskColumns

namespace daydream {

TaskFilter& TaskFilter::kind(TaskKind k) { return kinds_.push_back(k), *this; }
TaskFilter& TaskFilter::unit(UnitId u) { return units_.push_back(u), *this; }
TaskFilter& TaskFilter::unit_kind(UnitKind k) { return unit_kinds_.push_back(k), *this; }
TaskFilter& TaskFilter::name(std::string pattern) { return names_.push_back(std::move(pattern)), *this; }
TaskFilter& TaskFilter::name_not(std::string pattern) { return names_not_.push_back(std::move(pattern)), *this; }
TaskFilter& TaskFilter::op(std::string pattern) { return ops_.push_back(std::move(pattern)), *this; }
TaskFilter& TaskFilter::layer(std::string pattern) { return layers_.push_back(std::move(pattern)), *this; }
TaskFilter& TaskFilter::within(std::string pattern) { return within_.push_back(std::move(pattern)), *this; }
TaskFilter& TaskFilter::phase(Phase p) { return phases_.push_back(p), *this; }
TaskFilter& TaskFilter::iteration(std::int32_t index) { return iterations_.push_back(index), *this; }
TaskFilter& TaskFilter::rank(std::int64_t rank) { return ranks_.push_back(rank), *this; }
TaskFilter& TaskFilter::where(std::function<bool(const Graph&, TaskId)> predicate) {
  if (!predicate) throw Error("TaskFilter::where: empty predicate");
  return predicates_.push_back(std::move(predicate)), *this;
}

namespace {

template <class T> bool allowed(const std::vector<T>& set, const T& value) {
  return set.empty() || std::find(set.begin(), set.end(), value) != set.end();
}

std::vector<Pattern> compile(const std::vector<std::string>& patterns, std::string_view what) {
  std::vector<Pattern> out;
  for (const auto& p : patterns) out.emplace_back(p, what);
  return out;
}

}  // namespace

void check_pattern(const std::string& pattern, std::string_view what) { (void)Pattern(pattern, what); }

namespace {

/// Caches "does string #i match any of these patterns" per interned string.
class PatternCache {
 public:
  PatternCache(const Graph& graph, const std::vector<std::string>& patterns, std::string_view what)
      : graph_(graph), regexes_(compile(patterns, what)) {}
  bool active() const { return !regexes_.empty(); }
  bool any(std::uint32_t string) {
    if (string >= cache_.size()) cache_.resize(string + 1, kUnknown);
    if (cache_[string] == kUnknown) {
      const std::string_view text = graph_.string(string);
      bool hit = false;
      for (const auto& re : regexes_) hit = hit || re.search(text);
      cache_[string] = hit ? kYes : kNo;
    }
    return cache_[string] == kYes;
  }

 private:
  static constexpr std::uint8_t kUnknown = 0, kYes = 1, kNo = 2;
  const Graph& graph_;
  std::vector<Pattern> regexes_;
  std::vector<std::uint8_t> cache_;
};

/// The intervals of matching CPU ranges per unit (merged, sorted): "is time t of unit u inside one?".
class RangeIndex {
 public:
  RangeIndex(const Graph& graph, const std::vector<std::string>& patterns) : active_(!patterns.empty()) {
    if (!active_) return;
    PatternCache names(graph, patterns, "within");
    intervals_.resize(graph.units().size());
    for (const CpuRange& r : graph.ranges()) {  // sorted by unit, then start
      if (!names.any(r.name)) continue;
      auto& list = intervals_[r.unit];
      if (!list.empty() && r.start_ns <= list.back().second) list.back().second = std::max(list.back().second, r.end_ns);
      else list.emplace_back(r.start_ns, r.end_ns);
    }
  }
  bool active() const { return active_; }

  bool contains(const Graph& graph, TaskId id) const {
    const Task& t = graph.task(id);
    if (t.source_event == kNone) return false;  // inserted by a transformation
    if (graph.units()[t.unit].kind == UnitKind::cpu_thread) return inside(t.unit, t.recorded_start_ns);
    for (const auto& p : graph.predecessors(id))
      if (p.edge.type == EdgeType::launch) return contains(graph, p.task);
    return false;
  }

 private:
  bool inside(UnitId unit, TimeNs time) const {
    const auto& list = intervals_[unit];
    auto it = std::upper_bound(list.begin(), list.end(), time, [](TimeNs v, const auto& iv) { return v < iv.first; });
    return it != list.begin() && time < std::prev(it)->second;
  }
  bool active_;
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> intervals_;
};

}  // namespace

/// A filter compiled against one graph.
class TaskSelector {
 public:
  TaskSelector(const Graph& graph, const TaskFilter& f)
      : graph_(graph), f_(f), names_(graph, f.names_, "name"), names_not_(graph, f.names_not_, "name"),
        ops_(graph, f.ops_, "op"), layers_(graph, f.layers_, "layer"), within_(graph, f.within_) {
    for (std::size_t k = 0; k < kTaskKindCount; ++k)
      kinds_[k] = allowed(f.kinds_, static_cast<TaskKind>(k));
  }

  /// Whether a live task of this kind may pass: what select() asks of the task columns before
  /// reading a task's record (an 80-byte read per task, where most filters want one kind).
  bool may_pass(TaskKind kind) const { return kinds_[static_cast<std::size_t>(kind)]; }
  /// Whether may_pass decides alone: the filter names kinds and nothing else (faster_gpu's, amp's).
  bool kinds_decide() const {
    return f_.units_.empty() && f_.unit_kinds_.empty() && f_.names_.empty() && f_.names_not_.empty() &&
           f_.ops_.empty() && f_.layers_.empty() && f_.within_.empty() && f_.phases_.empty() &&
           f_.iterations_.empty() && f_.ranks_.empty() && f_.predicates_.empty();
  }

  bool operator()(TaskId id) {
    const Task& t = graph_.task(id);
    if (t.removed || !allowed(f_.kinds_, t.kind) || !allowed(f_.units_, t.unit)) return false;
    if (!allowed(f_.unit_kinds_, graph_.units()[t.unit].kind) || !allowed(f_.phases_, t.phase)) return false;
    if (!allowed(f_.iterations_, t.iteration) || !allowed(f_.ranks_, graph_.units()[t.unit].rank)) return false;
    if (names_.active() && !names_.any(t.name)) return false;
    if (names_not_.active() && names_not_.any(t.name)) return false;
    if (ops_.active() && (t.op_name == 0 || !ops_.any(t.op_name))) return false;
    if (layers_.active() && (t.layer == 0 || !layers_.any(t.layer))) return false;
    if (within_.active() && !within_.contains(graph_, id)) return false;
    for (const auto& predicate : f_.predicates_)
      if (!predicate(graph_, id)) return false;
    return true;
  }

 private:
  const Graph& graph_;
  const TaskFilter& f_;
  std::array<bool, kTaskKindCount> kinds_{};
  PatternCache names_, names_not_, ops_, layers_;
  RangeIndex within_;
};

bool TaskFilter::matches(const Graph& graph, TaskId task) const { return TaskSelector(graph, *this)(task); }

TaskSet Graph::select(const TaskFilter& filter) {
  TaskSelector selector(*this, filter);
  const auto columns = task_columns();
  std::vector<TaskId> ids;
  if (selector.kinds_decide()) {  // the columns alone: no record read
    for (TaskId t = 0; t < num_tasks(); ++t)
      if (!columns->removed[t] && selector.may_pass(columns->kind[t])) ids.push_back(t);
    return TaskSet(*this, std::move(ids));
  }
  for (TaskId t = 0; t < num_tasks(); ++t)
    if (!columns->removed[t] && selector.may_pass(columns->kind[t]) && selector(t)) ids.push_back(t);
  return TaskSet(*this, std::move(ids));
}

TaskSet Graph::select() { return select(TaskFilter{}); }

TaskSet& TaskSet::scale(double factor) {
  if (!std::isfinite(factor) || factor < 0)
    throw Error(fmt::format("scale: the factor must be a finite number >= 0, got {}", factor));
  std::vector<TimeNs> durations(ids_.size());
  for (std::size_t i = 0; i < ids_.size(); ++i) {
    const TaskId t = ids_[i];
    const double scaled = static_cast<double>(graph_->duration_ns(t)) * factor;
    if (scaled > static_cast<double>(kMaxTaskDurationNs))  // checked before rounding, which would overflow
      throw Error(fmt::format("scale: task {} '{}' would last {:.4g} ns ({} ns x {:g}), longer than one day, the "
                              "longest daydream accepts",
                              t, graph_->name(t), scaled, graph_->duration_ns(t), factor));
    durations[i] = std::llround(scaled);
  }
  GraphAccess::set_durations(*graph_, ids_, durations);
  return *this;
}

TaskSet& TaskSet::set_duration(TimeNs duration_ns) {
  if (duration_ns < 0) throw Error(fmt::format("set_duration: negative duration {} ns", duration_ns));
  GraphAccess::set_durations(*graph_, ids_, std::vector<TimeNs>(ids_.size(), duration_ns));
  return *this;
}

TaskSet& TaskSet::shrink(TimeNs by_ns) {
  if (by_ns < 0) throw Error(fmt::format("shrink: negative amount {} ns", by_ns));
  std::vector<TimeNs> durations(ids_.size());
  for (std::size_t i = 0; i < ids_.size(); ++i) durations[i] = std::max<TimeNs>(0, graph_->duration_ns(ids_[i]) - by_ns);
  GraphAccess::set_durations(*graph_, ids_, durations);
  return *this;
}

TaskSet TaskSet::filter(const TaskFilter& f) const {
  TaskSelector selector(*graph_, f);
  std::vector<TaskId> kept;
  for (TaskId t : ids_)
    if (selector(t)) kept.push_back(t);
  return TaskSet(*graph_, std::move(kept));
}

void TaskSet::remove() { graph_->remove_all(ids_); }

TimeNs TaskSet::total_duration_ns() const {
  TimeNs total = 0;
  for (TaskId t : ids_) total += graph_->duration_ns(t);
  return total;
}

TimeNs TaskSet::median_duration_ns() const {
  std::vector<TimeNs> durations;
  durations.reserve(ids_.size());
  for (TaskId t : ids_) durations.push_back(graph_->duration_ns(t));
  return text::median(std::move(durations), text::EvenCount::upper);
}

}  // namespace daydream
