// Tests of issue 4 (scenarios); filled in by its work.
#include <catch2/catch.hpp>
