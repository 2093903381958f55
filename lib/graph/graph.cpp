// daydream::Graph: tasks, units and typed edges (the edges in an EdgeStore, graph/edge_store.hpp).
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <tuple>

#include "common/huge_pages.hpp"
#include "common/nearly_sorted.hpp"
#include "daydream/error.hpp"
#include "graph/edge_table_cache.hpp"
#include "graph/graph_access.hpp"
#include "graph/graph_storage.hpp"

namespace daydream {

std::string_view to_string(UnitKind kind) {
  switch (kind) {
    case UnitKind::cpu_thread: return "cpu_thread";
    case UnitKind::gpu_stream: return "gpu_stream";
    case UnitKind::comm_channel: return "comm_channel";
  }
  return "?";
}

std::string_view to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::cpu: return "cpu";
    case TaskKind::runtime: return "runtime";
    case TaskKind::kernel: return "kernel";
    case TaskKind::memcpy: return "memcpy";
    case TaskKind::memset: return "memset";
    case TaskKind::communication: return "communication";
  }
  return "?";
}

bool is_gpu(TaskKind kind) {
  return kind == TaskKind::kernel || kind == TaskKind::memcpy || kind == TaskKind::memset;
}

std::string_view to_string(EdgeType type) {
  switch (type) {
    case EdgeType::cpu_sequential: return "cpu_sequential";
    case EdgeType::gpu_sequential: return "gpu_sequential";
    case EdgeType::launch: return "launch";
    case EdgeType::sync: return "sync";
    case EdgeType::communication: return "communication";
    case EdgeType::cross_thread: return "cross_thread";
    case EdgeType::cross_stream: return "cross_stream";
  }
  return "?";
}

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::unknown: return "unknown";
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::update: return "update";
    case Phase::data_loading: return "data_loading";
  }
  return "?";
}

namespace detail {

namespace {
/// Taken by copies of records whose source owns pages: copying clears the source's own_ (both
/// then share every page), and copies of one graph may be made on several threads.
std::mutex& copy_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::atomic<std::uint64_t> table_patches{0};
}  // namespace

namespace {

constexpr std::size_t kPageBytes = TaskRecords::kPageRecords * sizeof(TaskRecord);
static_assert(std::is_trivially_copyable_v<TaskRecord> && std::is_trivially_destructible_v<TaskRecord>,
              "pages are copied with memcpy and never destroyed record by record");

/// Frees raw page memory. Two types, so that std::get_deleter tells a page allocated alone (which
/// may serve again as a spare) from one of a reserved block (which would keep the block alive).
template <bool kBlock>
struct PageMemoryDeleter {
  void operator()(TaskRecord* pages) const { ::operator delete(pages, std::align_val_t{64}); }
};

/// `count` pages of records in one allocation (raw: records are placed as they are appended).
template <bool kBlock>
std::shared_ptr<TaskRecord> allocate_pages(std::size_t count) {
  void* memory = ::operator new(count * kPageBytes, std::align_val_t{64});
  return {static_cast<TaskRecord*>(memory), PageMemoryDeleter<kBlock>{}};
}

}  // namespace

struct TaskRecords::Snapshot {
  std::vector<std::shared_ptr<TaskRecord>> pages;
  std::vector<TaskRecord*> data;
  std::size_t size = 0;
};

TaskRecords::Snapshot TaskRecords::snapshot() const {
  if (owns_any_.load(std::memory_order_acquire)) {  // from now on both holders share every page
    std::lock_guard lock(copy_mutex());
    if (owns_any_.load(std::memory_order_relaxed)) {
      std::fill(own_.begin(), own_.end(), std::uint8_t{0});
      owns_any_.store(false, std::memory_order_release);
    }
  }
  return {pages_, data_, size_};
}

void TaskRecords::adopt(Snapshot snapshot) {
  let_go_of_pages();
  pages_ = std::move(snapshot.pages);
  data_ = std::move(snapshot.data);
  own_.assign(pages_.size(), 0);
  owns_any_.store(false, std::memory_order_release);
  size_ = snapshot.size;
  block_.reset();  // the source appends into its block; a copy takes pages of its own
  block_pages_ = 0;
}

TaskRecords::TaskRecords(const TaskRecords& other) { adopt(other.snapshot()); }

TaskRecords& TaskRecords::operator=(const TaskRecords& other) {
  if (this != &other) adopt(other.snapshot());
  return *this;
}

TaskRecords::TaskRecords(TaskRecords&& other) noexcept
    : pages_(std::move(other.pages_)), data_(std::move(other.data_)), own_(std::move(other.own_)),
      owns_any_(other.owns_any_.load(std::memory_order_relaxed)), size_(other.size_), block_(std::move(other.block_)),
      block_pages_(other.block_pages_), spare_(std::move(other.spare_)) {
  other.size_ = 0;
  other.block_pages_ = 0;
}

TaskRecords& TaskRecords::operator=(TaskRecords&& other) noexcept {
  if (this == &other) return *this;
  pages_ = std::move(other.pages_);
  data_ = std::move(other.data_);
  own_ = std::move(other.own_);
  owns_any_.store(other.owns_any_.load(std::memory_order_relaxed), std::memory_order_release);
  size_ = other.size_;
  block_ = std::move(other.block_);
  block_pages_ = other.block_pages_;
  spare_ = std::move(other.spare_);
  other.size_ = 0;
  other.block_pages_ = 0;
  return *this;
}

void TaskRecords::let_go_of_pages() {
  // Pages of its own that nothing else holds serve the next copies of pages (a sweep assigns the
  // base over its last what-if's graph once per scenario).
  for (std::size_t p = 0; p < pages_.size(); ++p)
    if (own_[p] && pages_[p].use_count() == 1 && std::get_deleter<PageMemoryDeleter<false>>(pages_[p]))
      spare_.push_back(std::move(pages_[p]));
  if (spare_.size() > pages_.size()) spare_.resize(pages_.size());
}

std::shared_ptr<TaskRecord> TaskRecords::fresh_page() {
  if (spare_.empty()) return allocate_pages<false>(1);
  std::shared_ptr<TaskRecord> page = std::move(spare_.back());
  spare_.pop_back();
  return page;
}

void TaskRecords::own_page(std::size_t page) {
  if (own_[page]) return;
  std::shared_ptr<TaskRecord> copy = fresh_page();
  std::memcpy(static_cast<void*>(copy.get()), data_[page], records_on(page) * sizeof(TaskRecord));
  pages_[page] = std::move(copy);
  data_[page] = pages_[page].get();
  own_[page] = 1;
  owns_any_.store(true, std::memory_order_release);
}

std::size_t TaskRecords::own_pages() const { return static_cast<std::size_t>(std::count(own_.begin(), own_.end(), 1)); }

TaskRecord& TaskRecords::for_change(TaskId id) {
  // The owner's change: no reader runs meanwhile.
  const std::size_t page = id >> kPageBits;
  own_page(page);
  return data_[page][id & kPageMask];
}

void TaskRecords::append_on_new_or_shared_page(const TaskRecord& record) {
  const std::size_t page = size_ >> kPageBits;
  if ((size_ & kPageMask) == 0) {  // a new page: from the block while it lasts
    std::shared_ptr<TaskRecord> memory =
        page < block_pages_ ? std::shared_ptr<TaskRecord>(block_, block_.get() + (page << kPageBits)) : fresh_page();
    pages_.push_back(std::move(memory));
    data_.push_back(pages_.back().get());
    own_.push_back(1);
    owns_any_.store(true, std::memory_order_release);
  } else {
    own_page(page);  // the last page, this holder's own
  }
  new (data_[page] + (size_ & kPageMask)) TaskRecord(record);
  ++size_;
}

void TaskRecords::reserve(std::size_t count) {
  if (size_ != 0 || block_ || count == 0) return;
  block_pages_ = (count + kPageMask) >> kPageBits;
  block_ = allocate_pages<true>(block_pages_);
  advise_huge_pages(block_.get(), block_pages_ * kPageBytes);
  pages_.reserve(block_pages_);
  data_.reserve(block_pages_);
  own_.reserve(block_pages_);
}

}  // namespace detail

std::uint64_t GraphAccess::edge_table_patches() { return detail::table_patches.load(std::memory_order_relaxed); }


Graph::Graph() : storage_(std::make_shared<GraphStorage>()), columns_(std::make_shared<TaskColumns>()) {
  strings_.emplace_back();
  string_index_.emplace(std::string(), 0);
}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
Graph::Graph(const Graph&) = default;
Graph& Graph::operator=(const Graph&) = default;

const std::vector<CpuRange>& Graph::ranges() const {
  static const std::vector<CpuRange> none;
  return ranges_ ? *ranges_ : none;
}

void Graph::set_ranges(std::vector<CpuRange> ranges) {
  // Outer first; ranges of one extent by file index, then name (a total order, so the order is
  // the input's business nowhere). A build hands them over almost in this order already.
  sort_nearly_sorted(ranges, [](const CpuRange& a, const CpuRange& b) {
    return std::tie(a.unit, a.start_ns, b.end_ns, a.event, a.name) < std::tie(b.unit, b.start_ns, a.end_ns, b.event, b.name);
  });
  ranges.shrink_to_fit();  // kept with the graph
  ranges_ = std::make_shared<const std::vector<CpuRange>>(std::move(ranges));
}

const TaskHolds& Graph::holds(TaskId id) const {
  static const TaskHolds none;
  check_task(id);
  if (!holds_) return none;
  const auto it = holds_->find(id);
  return it == holds_->end() ? none : it->second;
}

const std::map<TaskId, TaskHolds>& Graph::held_tasks() const {
  static const std::map<TaskId, TaskHolds> none;
  return holds_ ? *holds_ : none;
}

void GraphAccess::set_holds(Graph& graph, TaskId id, const TaskHolds& holds) {
  graph.check_task(id);
  auto& table = graph.holds_;
  if (!table) table = std::make_shared<std::map<TaskId, TaskHolds>>();
  else if (table.use_count() > 1) table = std::make_shared<std::map<TaskId, TaskHolds>>(*table);
  if (holds.any()) (*table)[id] = holds;
  else table->erase(id);
  if (table->empty()) table.reset();
}

const std::vector<CollectiveRecord>& Graph::collectives() const {
  static const std::vector<CollectiveRecord> none;
  return collectives_ ? *collectives_ : none;
}

void Graph::set_collectives(std::vector<CollectiveRecord> collectives) {
  collectives_ = std::make_shared<const std::vector<CollectiveRecord>>(std::move(collectives));
}

const std::vector<GpuResources>& Graph::gpus() const {
  static const std::vector<GpuResources> none;
  return gpus_ ? *gpus_ : none;
}

void Graph::set_gpus(std::vector<GpuResources> gpus) {
  gpus_ = std::make_shared<const std::vector<GpuResources>>(std::move(gpus));
}

const std::vector<LaunchConfig>& Graph::launch_configs() const {
  static const std::vector<LaunchConfig> none;
  return launch_configs_ ? *launch_configs_ : none;
}

void Graph::set_launch_configs(std::vector<LaunchConfig> launches) {
  launch_configs_ = std::make_shared<const std::vector<LaunchConfig>>(std::move(launches));
}

const LaunchConfig* Graph::launch_config(TaskId id) const {
  const std::int32_t index = task(id).launch;
  const auto& launches = launch_configs();
  return index >= 0 && static_cast<std::size_t>(index) < launches.size() ? &launches[static_cast<std::size_t>(index)]
                                                                          : nullptr;
}

struct Graph::Operators {
  std::vector<OperatorRecord> records;  // by event
  ShapeTable shapes;
};

const std::vector<OperatorRecord>& Graph::operators() const {
  static const std::vector<OperatorRecord> none;
  return operators_ ? operators_->records : none;
}

const ShapeTable& Graph::operator_shapes() const {
  static const ShapeTable none;
  return operators_ ? operators_->shapes : none;
}

void Graph::set_operators(std::vector<OperatorRecord> operators, ShapeTable shapes) {
  for (const OperatorRecord& op : operators)
    if (op.shapes >= shapes.size()) throw Error(fmt::format("operator record #{} names no shapes", op.event));
  if (!std::is_sorted(operators.begin(), operators.end(),
                      [](const OperatorRecord& a, const OperatorRecord& b) { return a.event < b.event; }))
    throw Error("operator records must be sorted by event");
  operators_ = std::make_shared<const Operators>(Operators{std::move(operators), std::move(shapes)});
}

const OperatorRecord* Graph::find_operator(std::int64_t event) const {
  const auto& records = operators();
  const auto it = std::lower_bound(records.begin(), records.end(), event,
                                   [](const OperatorRecord& r, std::int64_t e) { return r.event < e; });
  return it != records.end() && it->event == event ? &*it : nullptr;
}

TaskId launching_call(const Graph& graph, TaskId gpu_task) {
  for (const auto& p : graph.predecessors(gpu_task)) {
    const bool from_cpu = graph.units()[graph.task(p.task).unit].kind == UnitKind::cpu_thread;
    if (from_cpu && (p.edge.type == EdgeType::launch || p.edge.type == EdgeType::communication)) return p.task;
  }
  return kNoTask;
}

GraphStorage& Graph::structure() {
  GraphStorage& storage = storage_.unshared();
  storage.thaw();
  storage.drop_table();  // the caller may change edges
  return storage;
}

namespace {

/// The predecessor rows of a table whose successor rows are set: a counting sort by target,
/// which keeps each target's sources in id order.
/// Where each of the table's n tasks' reverse row starts (in_first: its in-degrees counted from
/// the successor columns, then summed); in_edges sized for them, its entries left to the caller.
void size_reverse_rows(EdgeTable& table, std::size_t n) {
  table.in_first.assign(n + 1, 0);
  for (const TaskId w : table.target) ++table.in_first[std::size_t{w} + 1];
  for (std::size_t t = 0; t < n; ++t) table.in_first[t + 1] += table.in_first[t];
  table.in_edges.resize(table.target.size());
}

/// size_reverse_rows, then every reverse row, its predecessors in id order.
void add_reverse_rows(EdgeTable& table, std::size_t n) {
  size_reverse_rows(table, n);
  std::vector<std::uint32_t> next(table.in_first.begin(), table.in_first.end() - 1);
  for (TaskId source = 0; source < n; ++source)
    for (auto i = table.first[source]; i < table.first[source + 1]; ++i)
      table.in_edges[next[table.target[i]]++] = InEdge{table.delay_ns[i], source, table.start_to_start[i], table.kind[i]};
}

/// EdgeTable::unchained_units of a table whose order is set (read from the task columns: the
/// walk in topological order would otherwise miss the cache on every task record).
std::vector<UnitId> unchained_units(const EdgeTable& table, const TaskColumns& tasks) {
  std::vector<TaskId> last;  // per unit: its last live task so far
  std::vector<std::uint8_t> unchained;
  for (const TaskId t : table.topological) {
    if (tasks.removed[t]) continue;
    const UnitId unit = tasks.unit[t];
    if (unit >= last.size()) last.resize(unit + 1, kNoTask), unchained.resize(unit + 1, 0);
    const TaskId before = last[unit];
    last[unit] = t;
    if (before == kNoTask || unchained[unit]) continue;
    bool joined = false;
    for (auto i = table.in_first[t]; i < table.in_first[t + 1] && !joined; ++i)
      joined = table.in_edges[i].source == before;
    unchained[unit] = !joined;
  }
  std::vector<UnitId> units;
  for (UnitId u = 0; u < unchained.size(); ++u)
    if (unchained[u]) units.push_back(u);
  return units;
}

}  // namespace

namespace {

/// Kahn's ready tasks below its scan, lowest id first. On a trace's graph there are one or two
/// at a time (a thread's chain going on after a sync, a stream's next kernel): a short array kept
/// sorted, highest first so that the lowest comes off the end, serves them without a heap's
/// sifting or a vector's bookkeeping; past kSortedMost they move to a binary heap until it empties.
class ReadyIds {
 public:
  bool empty() const { return sorted_size_ == 0 && heap_.empty(); }
  TaskId lowest() const { return heap_.empty() ? sorted_[sorted_size_ - 1] : heap_.front(); }
  void push(TaskId id) {
    if (heap_.empty()) {
      if (sorted_size_ < kSortedMost) {
        std::size_t i = sorted_size_++;
        for (; i > 0 && sorted_[i - 1] < id; --i) sorted_[i] = sorted_[i - 1];
        sorted_[i] = id;
        return;
      }
      heap_.assign(sorted_, sorted_ + sorted_size_);
      std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
      sorted_size_ = 0;
    }
    heap_.push_back(id);
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  void pop() {
    if (heap_.empty()) {
      --sorted_size_;
      return;
    }
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
  }

 private:
  static constexpr std::size_t kSortedMost = 32;
  TaskId sorted_[kSortedMost];
  std::size_t sorted_size_ = 0;
  std::vector<TaskId> heap_;  // every ready id while it holds any
};

}  // namespace

std::vector<TaskId> kahn_order(const EdgeTable& table, const std::vector<TaskId>* next_in_chain) {
  const auto n = static_cast<TaskId>(table.num_tasks());
  std::vector<std::uint32_t> remaining = table.in_degrees();
  if (next_in_chain)
    for (const TaskId next : *next_in_chain)
      if (next != kNoTask) ++remaining[next];
  std::vector<TaskId> order(n);
  TaskId taken = 0;
  ReadyIds ready;   // ids below `scan` only
  TaskId scan = 0;  // tasks from here on are taken in id order once ready
  const auto release = [&](TaskId next) {
    if (--remaining[next] == 0 && next < scan) ready.push(next);
  };
  while (taken < n) {
    TaskId t;
    if (!ready.empty()) {  // below the scan, so lower than any task it will take
      t = ready.lowest();
      ready.pop();
    } else {
      while (scan < n && remaining[scan] != 0) ++scan;
      if (scan >= n) break;
      t = scan++;
    }
    order[taken++] = t;
    for (auto i = table.first[t]; i < table.first[t + 1]; ++i) release(table.target[i]);
    if (next_in_chain && (*next_in_chain)[t] != kNoTask) release((*next_in_chain)[t]);
  }
  order.resize(taken);
  return order;
}

namespace {

/// Appends vertex v's out-edges in row order to the table's successor columns; returns whether
/// one is a launch edge.
bool append_store_row(const EdgeStore& edges, TaskId v, EdgeTable& table) {
  bool launches = false;
  edges.each_out(v, [&](EdgeId e) {
    const Edge& edge = edges.edge(e);
    table.target.push_back(edges.target(e));
    table.delay_ns.push_back(edge.delay_ns);
    table.start_to_start.push_back(edge.timing == Timing::start_to_start ? 1 : 0);
    table.kind.push_back(pack_edge_kind(edge));
    launches |= edge.type == EdgeType::launch;
    return true;
  });
  return launches;
}

/// Empties the successor columns, keeping room for `edges` entries (a dropped table's memory).
void clear_successor_columns(EdgeTable& table, std::size_t n, std::size_t edges) {
  table.first.assign(n + 1, 0);
  table.launches.assign(n, 0);
  const auto empty_with_room = [&](auto& column) { column.clear(), column.reserve(edges); };
  empty_with_room(table.target);
  empty_with_room(table.delay_ns);
  empty_with_room(table.start_to_start);
  empty_with_room(table.kind);
}

/// What follows from the successor columns: in-degrees, the first unusable delay, the reverse
/// rows (unless `reverse_rows_set`), the order, the units that are not chains and those that
/// launch GPU work.
void complete_edge_table(const TaskColumns& columns, EdgeTable& table, bool reverse_rows_set) {
  const std::size_t n = table.first.size() - 1;
  if (!reverse_rows_set) add_reverse_rows(table, n);
  const auto unusable = std::find_if(table.delay_ns.begin(), table.delay_ns.end(),
                                     [](TimeNs d) { return d < 0 || d > kMaxDelayNs; });
  table.first_unusable_delay = static_cast<std::size_t>(unusable - table.delay_ns.begin());
  table.topological = kahn_order(table);
  table.unchained_units = unchained_units(table, columns);
  table.launching_units.clear();
  for (TaskId v = 0; v < n; ++v)
    if (table.launches[v]) mark_launching(table.launching_units, columns.unit[v]);
}

/// The simulator's table of `edges` (n tasks), written into `table`'s memory: every field is
/// refilled, so the memory of a dropped table serves.
void fill_edge_table(const EdgeStore& edges, std::size_t n, const TaskColumns& columns, EdgeTable& table) {
  clear_successor_columns(table, n, edges.num_edges());
  for (TaskId v = 0; v < n; ++v) {
    table.launches[v] = append_store_row(edges, v, table) ? 1 : 0;
    table.first[v + 1] = static_cast<std::uint32_t>(table.target.size());
  }
  complete_edge_table(columns, table, false);
}

/// Whether patch_edge_table pays: the copy's changed rows are a small part of its source's.
bool worth_patching(const EdgeStore& edges, const EdgeTable& source, std::size_t n) {
  const std::size_t source_tasks = source.first.size() - 1;
  return source_tasks <= n && edges.changed_count() * 4 < source_tasks;
}

/// fill_edge_table's table, from `source`, the table of the structure `edges` was copied from:
/// the rows (both ways) of tasks whose edges did not change since are source's, copied in runs;
/// the others are read from the store, their predecessors in source id order as a counting sort
/// by source leaves them (the order two edges between the same tasks were added keeps in both
/// rows).
void patch_edge_table(const EdgeStore& edges, std::size_t n, const TaskColumns& columns, const EdgeTable& source,
                      EdgeTable& table) {
  const std::size_t source_tasks = source.first.size() - 1;
  const auto changed = [&](TaskId v) { return v >= source_tasks || edges.changed_since_copy(v); };
  const auto unchanged_run_end = [&](TaskId v) {
    while (v < n && !changed(v)) ++v;
    return v;
  };
  clear_successor_columns(table, n, edges.num_edges());
  for (TaskId v = 0; v < n;) {
    if (changed(v)) {
      table.launches[v] = append_store_row(edges, v, table) ? 1 : 0;
      table.first[v + 1] = static_cast<std::uint32_t>(table.target.size());
      ++v;
      continue;
    }
    const TaskId end = unchanged_run_end(v);
    const std::uint32_t from = source.first[v], to = source.first[end];
    const auto shift = static_cast<std::uint32_t>(table.target.size()) - from;  // modulo 2^32, undone below
    table.target.insert(table.target.end(), source.target.begin() + from, source.target.begin() + to);
    table.delay_ns.insert(table.delay_ns.end(), source.delay_ns.begin() + from, source.delay_ns.begin() + to);
    table.start_to_start.insert(table.start_to_start.end(), source.start_to_start.begin() + from,
                                source.start_to_start.begin() + to);
    table.kind.insert(table.kind.end(), source.kind.begin() + from, source.kind.begin() + to);
    std::copy(source.launches.begin() + v, source.launches.begin() + end, table.launches.begin() + v);
    for (TaskId u = v; u < end; ++u) table.first[u + 1] = source.first[u + 1] + shift;
    v = end;
  }
  size_reverse_rows(table, n);
  std::vector<InEdge> gathered;
  for (TaskId w = 0; w < n;) {
    if (changed(w)) {
      gathered.clear();
      edges.each_in(w, [&](EdgeId e) {
        const Edge& edge = edges.edge(e);
        gathered.push_back({edge.delay_ns, edges.source(e), static_cast<std::uint8_t>(edge.timing == Timing::start_to_start),
                            pack_edge_kind(edge)});
        return true;
      });
      std::stable_sort(gathered.begin(), gathered.end(), [](const InEdge& a, const InEdge& b) { return a.source < b.source; });
      std::copy(gathered.begin(), gathered.end(), table.in_edges.begin() + table.in_first[w]);
      ++w;
      continue;
    }
    const TaskId end = unchanged_run_end(w);
    std::copy(source.in_edges.begin() + source.in_first[w], source.in_edges.begin() + source.in_first[end],
              table.in_edges.begin() + table.in_first[w]);
    w = end;
  }
  complete_edge_table(columns, table, true);
  detail::table_patches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

std::shared_ptr<const EdgeTable> Graph::edge_table() const {
  std::lock_guard lock(storage_->table_mutex);
  if (storage_->table) return storage_->table;  // always, for frozen edges
  const EdgeStore& edges = structure().edges;
  const std::shared_ptr<const TaskColumns> columns = task_columns();
  // A Predictor's what-ifs: the table of a structure built before (edge_table_cache.hpp).
  const std::uint64_t key = table_cache_ ? EdgeTableCache::key(edges, *columns) : 0;
  if (table_cache_)
    if (auto cached = table_cache_->find(key, edges, *columns)) return storage_->table = std::move(cached);
  // The memory of a table the structure dropped, where there is one.
  std::shared_ptr<EdgeTable> table = storage_->spare_table ? std::move(storage_->spare_table) : std::make_shared<EdgeTable>();
  const auto& source = storage_->copied_table;
  if (source && worth_patching(edges, *source, num_tasks())) patch_edge_table(edges, num_tasks(), *columns, *source, *table);
  else fill_edge_table(edges, num_tasks(), *columns, *table);
  storage_->table = table;
  if (table_cache_)
    if (auto freed = table_cache_->offer(key, *columns, table); freed && !storage_->spare_table)
      storage_->spare_table = std::move(freed);
  return table;
}

bool GraphAccess::ranks_valid(const Graph& graph) { return graph.structure().ranks.valid; }

void GraphAccess::share_edge_tables(Graph& graph) { graph.table_cache_ = std::make_shared<EdgeTableCache>(); }

std::shared_ptr<const EdgeTable> GraphAccess::edge_table_from_rows(const Graph& graph) {
  auto table = std::make_shared<EdgeTable>();
  const GraphStorage& storage = graph.structure();
  EdgeStore thawed;
  if (storage.frozen) thawed.thaw(*storage.frozen->table, storage.frozen->order.expand(*storage.frozen->table));
  fill_edge_table(storage.frozen ? thawed : storage.edges, graph.num_tasks(), *graph.task_columns(), *table);
  return table;
}

bool GraphAccess::edges_frozen(const Graph& graph) { return graph.structure().frozen != nullptr; }

void GraphAccess::freeze_edges(Graph& graph) { graph.freeze_edges(); }

void GraphAccess::settle(Graph& graph) {
  graph.freeze_edges();
  if (!graph.columns_.shared()) graph.task_columns_for_change().shrink_to_fit();
}

PredecessorOrder::PredecessorOrder(const EdgeTable& table, const std::vector<std::uint32_t>& in_order)
    : num_tasks_(table.num_tasks()), reordered_((num_tasks_ + 63) / 64, 0) {
  first_.push_back(0);
  for (TaskId v = 0; v < num_tasks_; ++v) {
    const std::uint32_t begin = table.in_first[v], end = table.in_first[v + 1];
    bool same = true;
    for (std::uint32_t k = begin; k < end && same; ++k) same = in_order[k] == k;
    if (same) continue;
    reordered_[v >> 6] |= std::uint64_t{1} << (v & 63);
    tasks_.push_back(v);
    rows_.insert(rows_.end(), in_order.begin() + begin, in_order.begin() + end);
    first_.push_back(static_cast<std::uint32_t>(rows_.size()));
  }
  tasks_.shrink_to_fit();
  first_.shrink_to_fit();
  rows_.shrink_to_fit();
}

const std::uint32_t* PredecessorOrder::row(TaskId v) const {
  const auto at = static_cast<std::size_t>(std::lower_bound(tasks_.begin(), tasks_.end(), v) - tasks_.begin());
  return rows_.data() + first_[at];
}

std::vector<std::uint32_t> PredecessorOrder::expand(const EdgeTable& table) const {
  std::vector<std::uint32_t> in_order(table.in_edges.size());
  std::iota(in_order.begin(), in_order.end(), 0u);
  for (std::size_t r = 0; r < tasks_.size(); ++r)
    std::copy(rows_.begin() + first_[r], rows_.begin() + first_[r + 1], in_order.begin() + table.in_first[tasks_[r]]);
  return in_order;
}

void Graph::freeze_edges() {
  if (storage_->frozen || storage_.shared()) return;
  auto frozen = std::make_shared<FrozenEdges>();
  frozen->table = edge_table();
  GraphStorage& storage = storage_.unshared();  // its own already: the table stays
  std::vector<std::uint32_t> in_order;
  if (!storage.edges.predecessor_order(*frozen->table, in_order)) return;
  frozen->order = PredecessorOrder(*frozen->table, in_order);
  storage.frozen = std::move(frozen);
  storage.edges = EdgeStore();  // its memory goes
  storage.spare_table.reset();
  storage.copied_table.reset();
}

std::shared_ptr<const TaskColumns> Graph::task_columns() const {
  if (std::shared_ptr<const TaskColumns> columns = columns_.held()) return columns;
  static const auto none = std::make_shared<const TaskColumns>();  // a graph moved from
  return none;
}

std::shared_ptr<const std::vector<TaskId>> Graph::recorded_order() const {
  return recorded_order_.get_or_make([this] {
    // Bucketed by unit (ids ascending within each), then each unit sorted by recorded start,
    // ties by id: the order of a sort by (unit, start, id). A builder adds most units' tasks
    // in recorded order already, so most buckets pass the check and are never sorted.
    const std::vector<UnitId>& unit = columns_->unit;
    const std::size_t n = num_tasks();
    std::vector<std::uint32_t> first(units_.size() + 1, 0);
    for (std::size_t t = 0; t < n; ++t) ++first[std::size_t{unit[t]} + 1];
    std::partial_sum(first.begin(), first.end(), first.begin());
    auto order = std::make_shared<std::vector<TaskId>>(n);
    std::vector<std::uint32_t> next(first.begin(), first.end() - 1);
    for (TaskId t = 0; t < n; ++t) (*order)[next[unit[t]]++] = t;
    const auto by_start = [this](TaskId a, TaskId b) {
      return std::tie(records_.at(a).recorded_start_ns, a) < std::tie(records_.at(b).recorded_start_ns, b);
    };
    for (std::size_t u = 0; u + 1 < first.size(); ++u) {
      const auto begin = order->begin() + first[u], end = order->begin() + first[u + 1];
      if (!std::is_sorted(begin, end, by_start)) std::sort(begin, end, by_start);
    }
    return std::shared_ptr<const std::vector<TaskId>>(std::move(order));
  });
}

TaskColumns& Graph::task_columns_for_change() {
  if (!columns_.get()) columns_ = CowPtr<TaskColumns>(std::make_shared<TaskColumns>());  // a graph moved from
  return columns_.unshared();
}
const GraphStorage& Graph::structure() const { return *storage_; }

void Graph::reserve(std::size_t tasks, std::size_t records, std::size_t edges) {
  records_.reserve(records);
  task_columns_for_change().reserve(tasks);
  structure().edges.reserve(tasks, edges);
}

UnitId Graph::add_unit(Unit unit) {
  units_.push_back(std::move(unit));
  return static_cast<UnitId>(units_.size() - 1);
}

TaskId Graph::add_task(const Task& task) {
  if (task.unit >= units_.size()) throw Error(fmt::format("add_task: unknown unit {}", task.unit));
  if (num_tasks() >= kMaxGraphTasks) throw Error(fmt::format("add_task: a graph holds at most {} tasks", kMaxGraphTasks));
  const TaskId id = structure().edges.add_vertex();
  records_.append(detail::TaskRecord(task));
  forget_task_derived();
  task_columns_for_change().append(task);
  if (task.bytes != kNone) set_bytes(id, task.bytes);
  TopologicalRanks& ranks = storage_->ranks;  // unshared by structure() above
  if (ranks.valid) ranks.rank.push_back(ranks.next), ranks.next += TopologicalRanks::kSpacing;
  return id;
}

namespace {

/// Task `id`'s entry in a graph's list of sizes by id, or where it would go.
template <class Entries>
auto bytes_entry(Entries& all, TaskId id) {
  return std::lower_bound(all.begin(), all.end(), id, [](const detail::TaskBytes& b, TaskId t) { return b.task < t; });
}

}  // namespace

std::int64_t Graph::bytes_of(TaskId id) const {
  return bytes_entry(*task_bytes_, id)->bytes;  // the record has_bytes: it is there
}

void Graph::set_bytes(TaskId id, std::int64_t bytes) {
  // Ids come in order while a graph is built: most changes append.
  std::shared_ptr<std::vector<detail::TaskBytes>> all;
  if (!task_bytes_) all = std::make_shared<std::vector<detail::TaskBytes>>();
  else if (task_bytes_.use_count() == 1)  // the graph's own (made here, not const)
    all = std::const_pointer_cast<std::vector<detail::TaskBytes>>(std::move(task_bytes_));
  else all = std::make_shared<std::vector<detail::TaskBytes>>(*task_bytes_);
  const auto it = bytes_entry(*all, id);
  const bool found = it != all->end() && it->task == id;
  if (bytes == kNone) {
    if (found) all->erase(it);
  } else if (found) {
    it->bytes = bytes;
  } else {
    all->insert(it, {id, bytes});
  }
  if (records_.at(id).has_bytes != (bytes != kNone)) record_for_change(id).has_bytes = bytes != kNone;
  task_bytes_ = std::move(all);
}

void Graph::add_edge(TaskId from, TaskId to, Edge edge) {
  const auto n = num_tasks();
  if (from >= n || to >= n) throw Error(fmt::format("add_edge: unknown task ({} -> {}, {} tasks)", from, to, n));
  if (from == to) throw Error(fmt::format("add_edge: task {} '{}' cannot depend on itself", from, name(from)));
  for (TaskId t : {from, to})
    if (removed(t)) throw Error(fmt::format("add_edge: task {} '{}' was removed", t, name(t)));
  structure().edges.add(from, to, edge);
  storage_->ranks.valid = false;
}

std::uint32_t Graph::intern(std::string_view text) {
  if (auto it = string_index_.find(text); it != string_index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.emplace_back(text);
  string_index_.emplace(std::string(text), id);
  return id;
}

std::size_t Graph::num_edges() const { return structure().num_edges(); }


void Graph::check_duration(TaskId id, TimeNs duration_ns) const {
  check_task(id);
  if (duration_ns < 0) throw Error(fmt::format("task {}: negative duration {} ns", id, duration_ns));
  if (duration_ns > kMaxTaskDurationNs)
    throw Error(fmt::format("task {} '{}': duration {} ns is longer than one day, the longest daydream accepts", id,
                            name(id), duration_ns));
}

void Graph::set_duration(TaskId id, TimeNs duration_ns) {
  check_duration(id, duration_ns);
  set_times(id, duration_ns, release_ns(id));
}

void Graph::set_durations(const std::vector<TaskId>& ids, const std::vector<TimeNs>& durations) {
  if (ids.size() != durations.size())
    throw Error(fmt::format("set_durations: {} tasks but {} durations", ids.size(), durations.size()));
  for (std::size_t i = 0; i < ids.size(); ++i) check_duration(ids[i], durations[i]);  // all, before any change
  if (ids.empty()) return;
  // set_times for each, with what it finds out once here: the derived values dropped, the columns.
  forget_task_derived();
  TaskColumns& columns = task_columns_for_change();
  for (std::size_t i = 0; i < ids.size(); ++i) columns.set_times(ids[i], durations[i], columns.release_ns[ids[i]]);
}

void Graph::set_release(TaskId id, TimeNs release_ns) {
  check_task(id);
  set_times(id, duration_ns(id), release_ns);
}

void Graph::refuse_task(TaskId id) const {
  throw Error(fmt::format("no task {} (the graph has {})", id, num_tasks()));
}

void Graph::set_times(TaskId id, TimeNs duration_ns, TimeNs release_ns) {
  forget_task_derived();
  task_columns_for_change().set_times(id, duration_ns, release_ns);
}

void Graph::rename(TaskId id, std::string_view name) {
  check_task(id);
  record_for_change(id).name = intern(name);
  // a runtime call's name decides whether it waits for the GPU, and so its category on a path
  if (ReportColumns::category_reads_name(task(id))) report_columns_.slot().reset();
  forget_task_derived();
}

void Graph::set_blocking(TaskId id, bool blocking) {
  check_task(id);
  record_for_change(id).blocking = blocking;
  report_columns_.slot().reset();
}

std::vector<Graph::Neighbor> Graph::successors(TaskId id) const {
  std::vector<Neighbor> out;
  const GraphStorage& storage = structure();
  out.reserve(storage.out_degree(id));
  storage.each_out(id, [&](TaskId target, const Edge& edge) {
    out.push_back({target, edge});
    return true;
  });
  return out;
}

std::vector<Graph::Neighbor> Graph::predecessors(TaskId id) const {
  std::vector<Neighbor> out;
  const GraphStorage& storage = structure();
  out.reserve(storage.in_degree(id));
  storage.each_in(id, [&](TaskId source, const Edge& edge) {
    out.push_back({source, edge});
    return true;
  });
  return out;
}

bool Graph::visit_successors(TaskId id, NeighborVisitor visit) const { return structure().each_out(id, visit); }

bool Graph::update_successors(TaskId id, EdgeUpdater visit) {
  EdgeStore& edges = structure().edges;
  return edges.each_out(id, [&](EdgeId e) { return visit(edges.target(e), edges.edge(e)); });
}

bool Graph::visit_predecessors(TaskId id, NeighborVisitor visit) const { return structure().each_in(id, visit); }

Edge& Graph::edge(TaskId from, TaskId to) {
  EdgeStore& edges = structure().edges;
  const EdgeId e = from < num_tasks() && to < num_tasks() ? edges.find(from, to) : kNoEdge;
  if (e == kNoEdge) throw Error(fmt::format("no edge {} -> {}", from, to));
  return edges.edge(e);
}

std::size_t Graph::in_degree(TaskId id) const { return structure().in_degree(id); }
std::size_t Graph::out_degree(TaskId id) const { return structure().out_degree(id); }

std::vector<Graph::EdgeRecord> Graph::edges() const {
  std::vector<EdgeRecord> out;
  out.reserve(num_edges());
  const GraphStorage& storage = structure();
  for (TaskId v = 0; v < num_tasks(); ++v)
    storage.each_out(v, [&](TaskId target, const Edge& edge) {
      out.push_back({v, target, edge});
      return true;
    });
  return out;
}

std::array<std::int64_t, kEdgeTypeCount> Graph::edge_counts() const {
  std::array<std::int64_t, kEdgeTypeCount> counts{};
  const GraphStorage& storage = structure();
  for (TaskId v = 0; v < num_tasks(); ++v)
    storage.each_out(v, [&](TaskId, const Edge& edge) {
      ++counts[static_cast<std::size_t>(edge.type)];
      return true;
    });
  return counts;
}

std::array<std::int64_t, kTaskKindCount> Graph::task_counts() const {
  std::array<std::int64_t, kTaskKindCount> counts{};
  for (TaskId v = 0; v < num_tasks(); ++v)
    if (!task(v).removed) ++counts[static_cast<std::size_t>(task(v).kind)];
  return counts;
}

namespace {

/// The live edges as a Boost.Graph adjacency list (each task's out-edges in order), for the
/// algorithms Boost.Graph has and daydream needs rarely.
boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> boost_view(const Graph& graph) {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> view(graph.num_tasks());
  for (TaskId v = 0; v < graph.num_tasks(); ++v)
    graph.visit_successors(v, [&](TaskId w, const Edge&) {
      boost::add_edge(v, w, view);
      return true;
    });
  return view;
}

// Records DFS tree parents and stops at the first back edge (u -> v closes a cycle).
struct CycleFinder : boost::default_dfs_visitor {
  std::vector<TaskId>* parent;
  std::pair<TaskId, TaskId>* found_edge;
  struct Found {};
  template <class E, class G> void tree_edge(E e, const G& g) {
    (*parent)[boost::target(e, g)] = static_cast<TaskId>(boost::source(e, g));
  }
  template <class E, class G> void back_edge(E e, const G& g) {
    *found_edge = {static_cast<TaskId>(boost::source(e, g)), static_cast<TaskId>(boost::target(e, g))};
    throw Found{};
  }
};

}  // namespace

std::vector<TaskId> Graph::find_cycle() const {
  // Kahn's order (the edge table's, which the simulator then reuses) proves most graphs acyclic
  // in one pass; only a graph with a cycle needs the search that names it.
  if (edge_table()->topological.size() == num_tasks()) return {};
  std::vector<TaskId> parent(num_tasks(), kNoTask);
  std::pair<TaskId, TaskId> back{kNoTask, kNoTask};
  try {
    CycleFinder finder;
    finder.parent = &parent;
    finder.found_edge = &back;
    boost::depth_first_search(boost_view(*this), boost::visitor(finder));
    return {};
  } catch (const CycleFinder::Found&) {
  }
  std::vector<TaskId> cycle;
  for (TaskId v = back.first; v != back.second && v != kNoTask; v = parent[v]) cycle.push_back(v);
  cycle.push_back(back.second);
  std::reverse(cycle.begin(), cycle.end());
  return cycle;
}

std::vector<TaskId> Graph::topological_order() const {
  const auto table = edge_table();  // its order is the simulator's, computed once per structure
  if (table->topological.size() == num_tasks()) return table->topological;
  const auto cycle = find_cycle();
  std::string names;
  for (TaskId t : cycle) names += fmt::format("{}{} '{}'", names.empty() ? "" : " -> ", t, name(t));
  throw Error("the graph has a cycle: " + names);
}

}  // namespace daydream
