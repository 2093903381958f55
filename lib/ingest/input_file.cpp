// Reading an input file into memory, inflating gzip with libdeflate.
#include <libdeflate.h>

#include <cstdio>
#include <fstream>
#include <memory>

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
  std::string data;
  data.reserve(size + kInputPadding);
  data.resize(size);
  if (size > 0 && !in.read(data.data(), static_cast<std::streamsize>(size)))
    throw Error(path.string(), Error::kNoEvent, "", "read failed");
  return data;
}

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

// ISIZE (last 4 bytes, little endian) is the size of the last member modulo 2^32: a hint only.
std::size_t size_hint(const std::string& data) {
  if (data.size() < 18) return data.size() * 4;
  std::uint32_t isize = 0;
  for (int i = 3; i >= 0; --i) isize = (isize << 8) | static_cast<unsigned char>(data[data.size() - 4 + i]);
  return std::max<std::size_t>(isize, data.size());
}

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// Inflates every gzip member in turn (concatenated gzip files are valid gzip), straight into
// the output buffer, which keeps kInputPadding spare bytes for the JSON parser.
std::string gunzip(const std::string& data, const std::string& file) {
  std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> inflater(libdeflate_alloc_decompressor());
  std::string out;
  std::size_t capacity = size_hint(data);
  std::size_t in_pos = 0;
  while (in_pos < data.size()) {
    const std::size_t out_pos = out.size();
    for (;;) {
      out.reserve(out_pos + capacity + kInputPadding);
      out.resize(out_pos + capacity);
      std::size_t in_used = 0, out_size = 0;
      const auto result = libdeflate_gzip_decompress_ex(inflater.get(), data.data() + in_pos, data.size() - in_pos,
                                                        out.data() + out_pos, capacity, &in_used, &out_size);
      if (result == LIBDEFLATE_INSUFFICIENT_SPACE) {
        capacity *= 2;
        continue;
      }
      if (result != LIBDEFLATE_SUCCESS)
        throw Error(file, Error::kNoEvent, "",
                    "corrupt or truncated gzip stream (member at compressed byte " + std::to_string(in_pos) + ")");
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
