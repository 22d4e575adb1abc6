// Checking a FAISS index's bytes before FAISS reads them (see faiss_layout.hpp).
#include "embed/faiss_layout.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.hpp"

namespace fabtrain::embed {
namespace {

// Reads little-endian fields in order, refusing any that would run past the end.
class Cursor {
 public:
  Cursor(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  template <typename T>
  T read(const char* field) {
    need(sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string fourcc(const char* field) {
    need(4, field);
    at_ += 4;
    return std::string(bytes_.substr(at_ - 4, 4));
  }
  // Skips `count` items of `size` bytes each.
  void skip(std::uint64_t count, std::uint64_t size, const char* field) {
    if (count > remaining() / size)
      fail("{}: {} holds {} items of {} bytes, but only {} bytes remain: the index is corrupt",
           path_, field, count, size, remaining());
    at_ += std::size_t(count * size);
  }
  std::size_t remaining() const { return bytes_.size() - at_; }
  void need(std::size_t n, const char* field) const {
    if (n > remaining())
      fail("{}: ends inside {} (byte {}): the index is cut short", path_, field, at_);
  }
  [[noreturn]] void refuse(const std::string& why) const {
    fail("{}: {} (byte {}): not an index written by `fabtrain-exec embed`", path_, why, at_);
  }

 private:
  std::string_view bytes_;
  const std::string& path_;
  std::size_t at_ = 0;
};

struct Header {
  std::int64_t d = 0, ntotal = 0;
};

// FAISS's index header: d, ntotal, two unused 64-bit fields, is_trained, the metric.
Header read_header(Cursor& c) {
  Header h;
  h.d = c.read<std::int32_t>("the dimension");
  h.ntotal = c.read<std::int64_t>("the vector count");
  c.read<std::int64_t>("the header");
  c.read<std::int64_t>("the header");
  c.read<std::uint8_t>("is_trained");
  const auto metric = c.read<std::int32_t>("the metric");
  if (h.d < 1 || h.d > kMaxIndexDimension)
    c.refuse("dimension " + std::to_string(h.d) + " outside [1, " +
             std::to_string(kMaxIndexDimension) + "]");
  if (h.ntotal < 0) c.refuse("a negative vector count");
  if (metric != 0) c.refuse("metric " + std::to_string(metric) + " is not the inner product");
  return h;
}

Header read_flat(Cursor& c) {
  const Header h = read_header(c);
  const auto floats = c.read<std::uint64_t>("the vectors' size");
  if (floats / std::uint64_t(h.d) != std::uint64_t(h.ntotal) || floats % std::uint64_t(h.d) != 0)
    c.refuse("the vectors hold " + std::to_string(floats) + " floats, not " +
             std::to_string(h.ntotal) + " x " + std::to_string(h.d));
  c.skip(floats, 4, "the vectors");
  return h;
}

void read_inverted_lists(Cursor& c, std::uint64_t nlist, std::uint64_t code_size,
                         std::int64_t ntotal) {
  if (c.fourcc("the inverted lists") != "ilar") c.refuse("inverted lists other than arrays");
  if (c.read<std::uint64_t>("the list count") != nlist) c.refuse("a list count other than nlist");
  if (c.read<std::uint64_t>("the code size") != code_size) c.refuse("a code size other than d x 4");
  if (c.fourcc("the list sizes") != "full") c.refuse("list sizes other than 'full'");
  if (c.read<std::uint64_t>("the list sizes' count") != nlist)
    c.refuse("list sizes for other lists");
  c.need(std::size_t(nlist) * 8, "the list sizes");
  std::vector<std::uint64_t> sizes(nlist);
  for (auto& n : sizes) n = c.read<std::uint64_t>("a list size");
  std::uint64_t total = 0;
  for (const std::uint64_t n : sizes) {
    c.skip(n, code_size, "a list's vectors");
    c.skip(n, 8, "a list's ids");
    total += n;  // no overflow: each list fits in the file
  }
  if (total != std::uint64_t(ntotal))
    c.refuse("the lists hold " + std::to_string(total) + " vectors, the header " +
             std::to_string(ntotal));
}

}  // namespace

void check_faiss_layout(std::string_view bytes, const std::string& path) {
  Cursor c(bytes, path);
  const std::string kind = c.fourcc("the index kind");
  if (kind == "IxFI") {
    read_flat(c);
  } else if (kind == "IwFl") {
    const Header h = read_header(c);
    const auto nlist = c.read<std::uint64_t>("nlist");
    const auto nprobe = c.read<std::uint64_t>("nprobe");
    if (nlist < 1 || nlist > c.remaining() / 8) c.refuse("nlist " + std::to_string(nlist));
    if (nprobe < 1 || nprobe > nlist) c.refuse("nprobe " + std::to_string(nprobe));
    if (c.fourcc("the quantizer") != "IxFI") c.refuse("a quantizer other than a flat one");
    const Header q = read_flat(c);
    if (q.d != h.d || std::uint64_t(q.ntotal) != nlist)
      c.refuse("a quantizer of other dimensions or list count");
    if (c.read<std::uint8_t>("the direct map") != 0 || c.read<std::uint64_t>("the direct map") != 0)
      c.refuse("a direct map");
    read_inverted_lists(c, nlist, std::uint64_t(h.d) * 4, h.ntotal);
  } else {
    std::string shown = kind;
    for (char& ch : shown)
      if (ch < 0x20 || ch > 0x7e) ch = '?';
    c.refuse("index kind '" + shown + "'");
  }
  if (c.remaining() != 0) c.refuse(std::to_string(c.remaining()) + " bytes after the index");
}

}  // namespace fabtrain::embed
