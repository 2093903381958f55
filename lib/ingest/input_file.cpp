// Reading an input file into memory, inflating gzip with libdeflate.
#include <libdeflate.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>

#include "common/huge_pages.hpp"
#include "common/paths.hpp"
#include "daydream/error.hpp"
#include "daydream/ingest.hpp"
#include "ingest/padding.hpp"

namespace daydream {
namespace {

std::string read_raw(const std::filesystem::path& path) {
  if (path_kind(path) == PathKind::directory)
    throw Error(path.string(), Error::kNoEvent, "", "a directory, not a trace file (give one of its traces)");
  std::error_code ec;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string(), Error::kNoEvent, "", "cannot open file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path.string(), Error::kNoEvent, "", "cannot read its size: " + ec.message());
  if (size > kMaxDecodedBytes)
    throw Error(path.string(), Error::kNoEvent, "",
                fmt::format("{} bytes: more than the {} daydream reads (kMaxDecodedBytes)", size, kMaxDecodedBytes));
  std::string data;
  data.reserve(size + kInputPadding);
  advise_huge_pages(data.data(), data.capacity());
  data.resize(size);
  if (size > 0 && !in.read(data.data(), static_cast<std::streamsize>(size)))
    throw Error(path.string(), Error::kNoEvent, "", "read failed");
  return data;
}

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// Deflate never expands more than 1032 to 1 (a 258-byte match per 2 bits, at best).
constexpr std::size_t kMaxDeflateRatio = 1032;

// The first output buffer. ISIZE (last 4 bytes, little endian) is the size of the last member
// modulo 2^32 and anyone can write it, so it is only believed up to what the input could inflate
// to and up to the cap: a 39-byte file claiming 4 GiB gets 40 KB, then grows as it really inflates.
std::size_t first_capacity(const std::string& data) {
  std::size_t isize = data.size() * 4;
  if (data.size() >= 18) {
    std::uint32_t trailer = 0;
    for (int i = 3; i >= 0; --i) trailer = (trailer << 8) | static_cast<unsigned char>(data[data.size() - 4 + i]);
    isize = trailer;
  }
  return std::clamp<std::size_t>(isize, std::min<std::size_t>(data.size(), 1 << 20),
                                 std::min(data.size() * kMaxDeflateRatio, kMaxDecodedBytes));
}

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

[[noreturn]] void corrupt(const std::string& file, std::size_t member) {
  throw Error(file, Error::kNoEvent, "",
              fmt::format("corrupt or truncated gzip stream (member at compressed byte {})", member));
}

[[noreturn]] void too_big(const std::string& file) {
  throw Error(file, Error::kNoEvent, "",
              fmt::format("inflates to more than {} bytes, the most daydream reads (kMaxDecodedBytes)", kMaxDecodedBytes));
}

// Inflates every gzip member in turn (concatenated gzip files are valid gzip), straight into
// the output buffer, which keeps kInputPadding spare bytes for the JSON parser. The buffer grows
// (doubling) only as far as the data really inflates, and never past kMaxDecodedBytes.
std::string gunzip(const std::string& data, const std::string& file) {
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> inflater(libdeflate_alloc_decompressor());
  if (!inflater) throw std::bad_alloc();
  std::string out;
  std::size_t capacity = first_capacity(data);
  std::size_t in_pos = 0;
  while (in_pos < data.size()) {
    const std::size_t out_pos = out.size();
    for (;;) {
      out.reserve(out_pos + capacity + kInputPadding);
      advise_huge_pages(out.data(), out.capacity());
      out.resize(out_pos + capacity);
      std::size_t in_used = 0, out_size = 0;
      const auto result = libdeflate_gzip_decompress_ex(inflater.get(), data.data() + in_pos, data.size() - in_pos,
                                                        out.data() + out_pos, capacity, &in_used, &out_size);
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (out_pos + capacity >= kMaxDecodedBytes) too_big(file);
        const std::size_t possible = (data.size() - in_pos) * kMaxDeflateRatio;  // what the rest can inflate to
        if (capacity >= possible) corrupt(file, in_pos);
        capacity = std::min({capacity * 2, kMaxDecodedBytes - out_pos, possible});
        continue;
      }
      if (result != LIBDEFLATE_SUCCESS) corrupt(file, in_pos);
      out.resize(out_pos + out_size);
      in_pos += in_used;
      break;
    }
  }
  return out;
}

}  // namespace

InputFile read_input_file(const std::filesystem::path& path) {
  InputFile file{path, read_raw(path)};
  if (file.contents.empty()) throw Error(path.string(), Error::kNoEvent, "", "empty file (0 bytes)");
  if (is_gzip(file.contents)) {
    file.contents = gunzip(file.contents, path.string());
    if (file.contents.empty()) throw Error(path.string(), Error::kNoEvent, "", "empty file (gzip stream inflates to 0 bytes)");
  }
  return file;
}

}  // namespace daydream
