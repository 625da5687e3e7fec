// libFuzzer target: arbitrary bytes as a safetensors file (8-byte header length, JSON header, data).
// Any input must end in tensors that lie inside the bytes with sizes matching their shapes, or a
// dcu::Error: no crash, no read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    for (const auto& [name, t] : dcu::parse_safetensors(data, size, "fuzz")) {
      const auto* begin = static_cast<const unsigned char*>(t.data);
      if (begin < data || begin + t.bytes > data + size) std::abort();
      volatile unsigned char sink = 0;  // ASan checks these reads: every byte of the tensor is inside the input
      for (size_t i = 0; i < t.bytes; i += 64) sink = sink ^ begin[i];
    }
  } catch (const dcu::Error&) {
  }
  return 0;
}
