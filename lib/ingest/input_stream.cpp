// InputStream: a file's decoded bytes in blocks, inflating gzip as it goes (ISA-L, else zlib).
#include "ingest/input_stream.hpp"

#if DAYDREAM_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <new>

#include "daydream/error.hpp"
#include "daydream/ingest.hpp"

namespace daydream {
namespace {

constexpr std::size_t kCompressedBlock = std::size_t{1} << 20;  // bytes read from a gzip file at a time
/// The first read of a gzip file is shorter: a reader that looks at a file's first few KiB decoded
/// (reader_of_head) then reads and inflates that much, not a whole block.
constexpr std::size_t kFirstCompressedBlock = std::size_t{64} << 10;

/// What the first and last bytes of a file say before it is read: gzip or not, and for gzip
/// ISIZE (the last 4 bytes, little endian: the last member's decoded size modulo 2^32; 0 unread).
struct FileHead {
  std::uint64_t size = 0;  ///< on disk; 0 when unknown
  bool gzip = false;
  std::uint64_t gzip_trailer = 0;
};

// Reads the head of an open file and rewinds it.
FileHead probe(std::FILE* file, const std::filesystem::path& path) {
  FileHead head;
  std::error_code ec;
  head.size = std::filesystem::file_size(path, ec);
  if (ec) head.size = 0;
  unsigned char magic[2] = {0, 0};
  head.gzip = std::fread(magic, 1, 2, file) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  unsigned char trailer[4] = {0, 0, 0, 0};
  if (head.gzip && head.size >= 18 && std::fseek(file, -4, SEEK_END) == 0 && std::fread(trailer, 1, 4, file) == 4)
    head.gzip_trailer = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) | (std::uint64_t{trailer[3]} << 24);
  std::rewind(file);
  return head;
}

// worth_streaming's rule.
bool is_large(const FileHead& head) {
  if (!head.gzip) return head.size >= kStreamFromBytes;
  // The trailer holds the last member's size modulo 2^32: past 4 GiB only the compressed size
  // tells (traces compress 10-30x; a 64 MiB gzip file inflates to far more than the threshold).
  return head.gzip_trailer >= kStreamFromBytes || head.size >= kStreamFromBytes / 4;
}

}  // namespace

#if DAYDREAM_HAVE_ISAL
// ISA-L's inflate: three times zlib's speed here (a 15 MB trace in 5.3 ms against 17-19 ms), so
// that the reading thread keeps ahead of the parse.
struct InputStream::Inflater {
  inflate_state state{};
  bool in_member = false;  // input was given to a member that has not finished
  Inflater() {
    isal_inflate_init(&state);
    start_member();
  }
  void start_member() {
    isal_inflate_reset(&state);
    state.crc_flag = ISAL_GZIP;  // the gzip header and trailer are read, the CRC checked
    in_member = false;
  }
  void give(unsigned char* data, std::size_t n) {
    state.next_in = data;
    state.avail_in = static_cast<std::uint32_t>(n);
  }
  std::size_t input_left() const { return state.avail_in; }
};
#else
struct InputStream::Inflater {
  z_stream z{};
  Inflater() {
    if (inflateInit2(&z, 15 + 16) != Z_OK) throw std::bad_alloc();  // 15 + 16: gzip framing
  }
  ~Inflater() { inflateEnd(&z); }
  void give(unsigned char* data, std::size_t n) {
    z.next_in = data;
    z.avail_in = static_cast<uInt>(n);
  }
  std::size_t input_left() const { return z.avail_in; }
};
#endif

InputStream::InputStream(const std::filesystem::path& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) throw Error(path.string(), Error::kNoEvent, "", "cannot open file");
  const FileHead head = probe(file_, path);
  gzip_ = head.gzip;
  large_ = is_large(head);
  if (!gzip_) size_hint_ = head.size;
  else if (head.size < (std::uint64_t{1} << 32) / 1032)  // deflate expands at most 1032:1
    size_hint_ = head.gzip_trailer;
  if (!gzip_) return;
  inflater_ = std::make_unique<Inflater>();
  compressed_ = std::make_unique_for_overwrite<unsigned char[]>(kCompressedBlock);
}

InputStream::~InputStream() {
  if (file_) std::fclose(file_);
}

std::size_t InputStream::read(char* out, std::size_t max) {
  if (at_end_ || max == 0) return 0;
  const std::size_t n = gzip_ ? inflate_some(out, max) : read_plain(out, max);
  decoded_ += n;
  if (decoded_ > kMaxDecodedBytes)
    throw Error(path_.string(), Error::kNoEvent, "",
                fmt::format("more than {} bytes, the most daydream reads (kMaxDecodedBytes)", kMaxDecodedBytes));
  return n;
}

std::size_t InputStream::read_plain(char* out, std::size_t max) {
  const std::size_t n = std::fread(out, 1, max, file_);
  if (n < max) {
    if (std::ferror(file_)) throw Error(path_.string(), Error::kNoEvent, "", "read failed");
    at_end_ = n == 0;
  }
  return n;
}

// Reads the next compressed block; false at the end of the file.
bool InputStream::refill() {
  const std::size_t block = compressed_read_ == 0 ? kFirstCompressedBlock : kCompressedBlock;
  const std::size_t n = std::fread(compressed_.get(), 1, block, file_);
  if (n == 0 && std::ferror(file_)) throw Error(path_.string(), Error::kNoEvent, "", "read failed");
  inflater_->give(compressed_.get(), n);
  compressed_read_ += n;
  return n > 0;
}

Error InputStream::corrupt() const {
  return Error(path_.string(), Error::kNoEvent, "",
               fmt::format("corrupt or truncated gzip stream (member at compressed byte {})", member_start_));
}

// Inflates until `out` holds something or the stream ends. Concatenated gzip members are one
// stream (as gzip itself reads them); anything else after a member is corruption.
#if DAYDREAM_HAVE_ISAL
std::size_t InputStream::inflate_some(char* out, std::size_t max) {
  inflate_state& state = inflater_->state;
  state.next_out = reinterpret_cast<std::uint8_t*>(out);
  state.avail_out = static_cast<std::uint32_t>(std::min<std::size_t>(max, 1u << 30));
  const std::uint32_t wanted = state.avail_out;
  while (state.avail_out == wanted) {
    if (state.block_state == ISAL_BLOCK_FINISH) {  // a member ended, trailer read: another may follow
      member_start_ = compressed_read_ - inflater_->input_left();
      inflater_->start_member();
    }
    if (inflater_->input_left() == 0 && !refill()) {
      if (inflater_->in_member) throw corrupt();  // the file ends inside a member
      at_end_ = true;
      break;
    }
    inflater_->in_member = true;
    const int status = isal_inflate(&state);
    if (status != ISAL_DECOMP_OK) throw corrupt();
    if (state.block_state == ISAL_BLOCK_FINISH) inflater_->in_member = false;
  }
  return wanted - state.avail_out;
}
#else
std::size_t InputStream::inflate_some(char* out, std::size_t max) {
  z_stream& z = inflater_->z;
  z.next_out = reinterpret_cast<Bytef*>(out);
  z.avail_out = static_cast<uInt>(std::min<std::size_t>(max, 1u << 30));
  const uInt wanted = z.avail_out;
  while (z.avail_out == wanted) {
    if (z.avail_in == 0 && !refill()) {
      if (z.total_in != 0) throw corrupt();  // the file ends inside a member
      at_end_ = true;
      break;
    }
    const int status = inflate(&z, Z_NO_FLUSH);
    if (status == Z_STREAM_END) {
      member_start_ = compressed_read_ - z.avail_in;
      inflateReset(&z);  // total_in/out back to 0: a member may follow
      continue;
    }
    if (status != Z_OK && status != Z_BUF_ERROR) throw corrupt();
  }
  return wanted - z.avail_out;
}
#endif

bool worth_streaming(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return false;  // the whole-file path names the problem
  const FileHead head = probe(file, path);
  std::fclose(file);
  return is_large(head);
}

}  // namespace daydream
