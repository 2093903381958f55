// load_job(): the trace files of a job (directories expanded), each loaded and built on a pool
// of threads, then merged; plus the shared helpers of job graphs (traffic, iteration groups).
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>

#include "common/parallel.hpp"
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
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.is_regular_file() && is_trace_file(entry.path())) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  if (found.empty()) throw Error(directory.string(), Error::kNoEvent, "", "no trace files (*.json, *.json.gz) in this directory");
  return found;
}

/// Builds every file's graph on `threads` threads; rethrows the first error by file order, so
/// the message does not depend on scheduling.
std::vector<Graph> build_all(const std::vector<std::filesystem::path>& files, const JobOptions& options) {
  std::vector<Graph> graphs(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  parallel::for_each_index(files.size(), options.threads, [&](std::size_t i) {
    try {
      graphs[i] = build_graph(load_trace(files[i]), options.graph);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const auto& error : errors)
    if (error) std::rethrow_exception(error);
  return graphs;
}

}  // namespace

std::vector<std::filesystem::path> expand_trace_inputs(const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> files;
  for (const auto& input : inputs) {
    if (!std::filesystem::exists(input)) throw Error(input.string(), Error::kNoEvent, "", "no such file or directory");
    if (!std::filesystem::is_directory(input)) {
      files.push_back(input);
      continue;
    }
    for (auto& file : traces_in(input)) files.push_back(std::move(file));
  }
  return files;
}

Graph load_job(const std::vector<std::filesystem::path>& inputs, const JobOptions& options) {
  const std::vector<std::filesystem::path> files = expand_trace_inputs(inputs);
  const std::vector<Graph> graphs = build_all(files, options);
  std::vector<const Graph*> ranks;
  for (const Graph& g : graphs) ranks.push_back(&g);
  return merge_ranks(ranks);
}

}  // namespace daydream
