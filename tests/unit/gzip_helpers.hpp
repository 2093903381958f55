#pragma once
// Writing gzip in tests (zlib), for inputs the reader must inflate: one member per call, so that
// concatenating two calls gives a two-member stream, as gzip itself writes with `cat a.gz b.gz`.
#include <zlib.h>

#include <catch2/catch.hpp>

#include <string>

namespace daydream::test {

/// `text` as one gzip member (windowBits 31: gzip framing).
inline std::string gzip_member(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace daydream::test
