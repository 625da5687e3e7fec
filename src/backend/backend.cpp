#include "backend/backend.h"

#include <vector>

namespace dcu {

void Backend::copy(void* dst, const void* src, size_t bytes) {
  std::vector<char> staging(bytes);
  download(staging.data(), src, bytes);
  upload(dst, staging.data(), bytes);
}

}  // namespace dcu
