#pragma once
// A read-only memory-mapped file.

#include <cstddef>
#include <string>

namespace dcu {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws dcu::Error with the path and the reason
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// Reads one byte of every page of [data, data + bytes), so that the kernel reads a mapped file now
// rather than page by page on first use.
void touch_pages(const void* data, size_t bytes);

}  // namespace dcu
