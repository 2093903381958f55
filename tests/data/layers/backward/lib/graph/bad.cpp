// A graph-stage file that reaches forward into predict: CheckLayers.cmake must refuse it.
#include "daydream/graph.hpp"
#include "daydream/predict.hpp"
#include "report/json_writer.hpp"
