#pragma once
// The JSON object of an IterationRule, shared by `replay --json` and `validate --json`.

#include <string_view>

#include "daydream/graph.hpp"
#include "report/json_writer.hpp"

namespace daydream {

/// `"key": {"form", "measure", "thread", "description"}` (replay_report.cpp).
void write_iteration_rule(JsonWriter& w, std::string_view key, const IterationRule& rule);

}  // namespace daydream
