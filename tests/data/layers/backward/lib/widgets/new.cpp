// A folder no stage owns: CheckLayers.cmake must name it.
#include "daydream/error.hpp"
