// load_job(): the trace files of a job (directories expanded), each loaded and built on a pool
// of threads, then merged; plus the shared helpers of job graphs (traffic, iteration groups).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <map>
#include <optional>

#include "common/parallel.hpp"
#include "common/paths.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "job/match.hpp"

namespace daydream {
namespace {

bool is_trace_file(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".json") || ends_with(".json.gz");
}

std::vector<std::filesystem::path> traces_in(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> found = files_in(directory, is_trace_file);
  if (found.empty()) throw Error(directory.string(), Error::kNoEvent, "", "no trace files (*.json, *.json.gz) in this directory");
  return found;
}

/// A file the loader met that is JSON but no Chrome trace (no traceEvents: a PyTorch execution
/// trace, a config): skipped when a directory listing brought it in.
bool not_a_chrome_trace(const Error& e) { return e.field() == "traceEvents"; }

/// Builds every file's graph on `threads` threads; rethrows the first error by file order, so
/// the message does not depend on scheduling. A file `listed` from a directory that is no Chrome
/// trace gets no graph (nullopt).
std::vector<std::optional<Graph>> build_all(const std::vector<std::filesystem::path>& files,
                                            const std::vector<bool>& listed, const JobOptions& options) {
  std::vector<std::optional<Graph>> graphs(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  parallel::for_each_index(files.size(), options.threads, [&](std::size_t i) {
    try {
      graphs[i] = build_graph(load_trace(files[i]), options.graph);
    } catch (const Error& e) {
      if (!listed[i] || !not_a_chrome_trace(e)) errors[i] = std::current_exception();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  return graphs;
}

/// The files of `inputs` (directories listed), and whether each came from a directory listing.
std::pair<std::vector<std::filesystem::path>, std::vector<bool>> expand_listed(
    const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> files;
  std::vector<bool> listed;
  for (const auto& input : inputs) {
    if (path_kind(input) == PathKind::file) {
      files.push_back(input), listed.push_back(false);
      continue;
    }
    for (auto& file : traces_in(input)) files.push_back(std::move(file)), listed.push_back(true);
  }
  return {std::move(files), std::move(listed)};
}

}  // namespace

std::vector<std::filesystem::path> expand_trace_inputs(const std::vector<std::filesystem::path>& inputs) {
  return expand_listed(inputs).first;
}

Graph load_job(const std::vector<std::filesystem::path>& inputs, const JobOptions& options) {
  const auto [files, listed] = expand_listed(inputs);
  std::vector<std::optional<Graph>> graphs = build_all(files, listed, options);
  std::vector<std::size_t> traces;  // the files that are Chrome traces
  std::vector<std::string> skipped;
  for (std::size_t i = 0; i < files.size(); ++i)
    graphs[i] ? traces.push_back(i) : skipped.push_back(files[i].string());
  if (options.skipped) *options.skipped = skipped;
  if (traces.empty()) {
    std::vector<std::string> named;
    for (const auto& input : inputs) named.push_back(input.string());
    throw Error(fmt::format("no Chrome trace in {}: no JSON file listed has traceEvents ({})", fmt::join(named, ", "),
                            fmt::join(skipped, ", ")));
  }
  if (traces.size() == 1 && graphs[traces.front()]->rank == kNone) return std::move(*graphs[traces.front()]);  // no job
  std::vector<const Graph*> ranks;
  for (std::size_t i : traces) ranks.push_back(&*graphs[i]);
  Graph job = merge_ranks(ranks);
  if (skipped.empty()) return job;
  JobLayout layout = job.job() ? *job.job() : JobLayout{};
  layout.skipped_files = skipped;
  layout.warnings.push_back(fmt::format("skipped {} JSON files of the directory that are no Chrome trace (no "
                                        "traceEvents: execution traces, configs): {}",
                                        skipped.size(), fmt::join(skipped, ", ")));
  job.set_job(std::move(layout));
  return job;
}

}  // namespace daydream
