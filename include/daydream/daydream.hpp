#pragma once
/// @file daydream.hpp
/// @brief The whole public API in one include: traces (ingest), graphs and their edits
/// (graph, transform), simulation, scenarios and predictions, multi-rank jobs, the collector.
///
/// @code
///   #include <daydream/daydream.hpp>
///
///   const daydream::Predictor predictor(daydream::build_graph(daydream::load_trace("trace.json.gz")));
///   const auto p = predictor.predict(daydream::parse_scenario_spec("amp"));
/// @endcode
///
/// Link daydream::daydream (CMake, find_package(daydream)) or `pkg-config --libs daydream`.

#include "daydream/analyze.hpp"
#include "daydream/collector.hpp"
#include "daydream/error.hpp"
#include "daydream/graph.hpp"
#include "daydream/import_stats.hpp"
#include "daydream/ingest.hpp"
#include "daydream/job.hpp"
#include "daydream/layers.hpp"
#include "daydream/device.hpp"
#include "daydream/model.hpp"
#include "daydream/predict.hpp"
#include "daydream/roofline.hpp"
#include "daydream/report/chrome_trace.hpp"
#include "daydream/report/layers.hpp"
#include "daydream/report/replay.hpp"
#include "daydream/report/stats.hpp"
#include "daydream/scenario.hpp"
#include "daydream/simulate.hpp"
#include "daydream/trace.hpp"
#include "daydream/transform.hpp"
#include "daydream/validate.hpp"
