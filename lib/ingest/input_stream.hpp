#pragma once
// A file's decoded bytes in blocks, gzip inflated as it goes (ISA-L where the build has it, else
// zlib: libdeflate inflates only whole buffers), for readers that stream: a multi-GB trace never
// sits whole in memory.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

namespace daydream {

class Error;

class InputStream {
 public:
  /// Opens the file and tells gzip from plain by its magic number. Throws Error naming the file.
  explicit InputStream(const std::filesystem::path& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  /// Up to `max` decoded bytes into `out`; 0 only at the end. Throws Error naming the file on a
  /// read error, a corrupt or truncated gzip stream, or past kMaxDecodedBytes.
  std::size_t read(char* out, std::size_t max);
  std::uint64_t decoded_bytes() const { return decoded_; }
  /// The decoded size when the file tells it (plain: its size; gzip: the trailer, where the
  /// compressed size keeps the decoded one below 4 GiB), else 0.
  std::uint64_t size_hint() const { return size_hint_; }
  bool gzip() const { return gzip_; }
  /// worth_streaming() of this file, from the look its opening took.
  bool large() const { return large_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::size_t read_plain(char* out, std::size_t max);
  std::size_t inflate_some(char* out, std::size_t max);
  Error corrupt() const;  // naming the file and the member being inflated
  bool refill();

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  bool gzip_ = false;
  bool large_ = false;
  struct Inflater;  // the inflater's stream state
  std::unique_ptr<Inflater> inflater_;
  std::unique_ptr<unsigned char[]> compressed_;  // the block of the file being inflated (not zeroed: read into)
  std::uint64_t compressed_read_ = 0;      // bytes of the file read so far
  std::uint64_t member_start_ = 0;         // where the gzip member being inflated starts
  std::uint64_t decoded_ = 0;
  std::uint64_t size_hint_ = 0;
  bool at_end_ = false;
};

/// Whether load_trace streams this file (docs/formats.md, "Sizes daydream accepts"): a plain file
/// of at least kStreamFromBytes, or a gzip file whose trailer or compressed size says it inflates
/// to about that much.
inline constexpr std::uint64_t kStreamFromBytes = std::uint64_t{256} << 20;
bool worth_streaming(const std::filesystem::path& path);

}  // namespace daydream
