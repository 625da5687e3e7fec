// The fibers and barriers of the GPU emulation (emulation.h).
//
// A block runs under a scheduler loop on the launching thread: it resumes every ready fiber once, in a
// shuffled order, until each has reached a barrier, a shuffle or its end, then releases the barriers that
// all their live threads have reached and completes the shuffles whose partners have arrived. A fiber switches only at barriers and shuffles, so everything in
// between is plain sequential code. On x86-64 a switch saves the callee-saved registers and the
// floating-point control words on the fiber's own stack and swaps stack pointers, telling
// AddressSanitizer about the new stack when it is on; elsewhere ucontext's swapcontext does it, with a
// system call per switch (the emulation tests ran 6x slower that way: 40 s instead of 6.4 s).

#include "backend/gpu/emulation.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define DCU_EMULATION_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DCU_EMULATION_ASAN 1
#endif
#endif
#if defined(DCU_EMULATION_ASAN)
// AddressSanitizer's fiber interface (sanitizer/common_interface_defs.h).
extern "C" void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old, size_t* size_old);
#endif

namespace dcu::gpu::emulation {
namespace {

// ---- execution contexts ------------------------------------------------------------------------------
#if defined(__x86_64__)
// Saves rbp, rbx, r12-r15 and the MXCSR / x87 control words on the current stack, stores the stack
// pointer in *save, and resumes the context whose stack pointer is `load` (System V ABI: the other
// registers are the caller's to save).
extern "C" void dcu_emulation_switch(void** save, void* load);
asm(R"(
  .pushsection .text
  .globl dcu_emulation_switch
  .type dcu_emulation_switch, @function
dcu_emulation_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size dcu_emulation_switch, .-dcu_emulation_switch
  .popsection
)");
struct Context {
  void* stack_pointer = nullptr;
  const void* stack = nullptr;  // the stack's lowest address and size, for AddressSanitizer
  size_t stack_bytes = 0;
};
// A fresh stack that the first switch to it "returns" into entry with the ABI's alignment.
void prepare(Context& c, char* stack, size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15));
  uint64_t* sp = top;
  *--sp = 0;                                   // entry's return address: it never returns
  *--sp = reinterpret_cast<uintptr_t>(entry);  // popped by the switch's ret
  for (int r = 0; r < 6; ++r) *--sp = 0;       // rbp, rbx, r12-r15
  *--sp = 0x037Full << 32 | 0x1F80;            // x87 control word, MXCSR: the defaults
  c.stack_pointer = sp, c.stack = stack, c.stack_bytes = bytes;
}
// `from` finished: AddressSanitizer may drop its stack's state.
void switch_context(Context& from, Context& to, bool from_finished = false) {
#if defined(DCU_EMULATION_ASAN)
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(from_finished ? nullptr : &fake_stack, to.stack, to.stack_bytes);
  dcu_emulation_switch(&from.stack_pointer, to.stack_pointer);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
  (void)from_finished;
  dcu_emulation_switch(&from.stack_pointer, to.stack_pointer);
#endif
}
// The first code a fiber runs: the arrival half of the switch that started it, which also tells the
// stack it came from (the launching thread's, the scheduler's).
void arrive(Context& from) {
#if defined(DCU_EMULATION_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &from.stack, &from.stack_bytes);
#else
  (void)from;
#endif
}
#else
struct Context {
  ucontext_t context;
};
void prepare(Context& c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;
  makecontext(&c.context, entry, 0);
}
void switch_context(Context& from, Context& to, bool = false) { swapcontext(&from.context, &to.context); }
void arrive(Context&) {}
#endif

// ---- blocks ------------------------------------------------------------------------------------------
enum class Wait { None, Block, Warp, Shuffle, Done };
struct Fiber {
  Context context;
  uint3 index;
  Wait wait = Wait::None;
  // The shuffle it waits at: the value it sends, the lane offset, and (once completed) the value it reads.
  float sent = 0.0f, received = 0.0f;
  int shuffle_offset = 0;
  bool completing = false;  // complete_shuffles' mark between its two passes
};
struct Block {
  std::vector<Fiber> fibers;
  int running = 0;
  Context scheduler;
  const std::function<void()>* kernel = nullptr;
  std::vector<float4> dynamic_shared;
  std::mt19937 order;
};
Block* current = nullptr;

Fiber& self() { return current->fibers[size_t(current->running)]; }

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "GPU emulation: %s (block %u, %u, %u)\n", what, block_index.x, block_index.y, block_index.z);
  std::abort();
}

// Back to the scheduler, waiting as told.
void suspend(Wait wait) {
  Fiber& f = self();
  f.wait = wait;
  switch_context(f.context, current->scheduler);
}
[[noreturn]] void fiber_main() {
  arrive(current->scheduler);
  (*current->kernel)();
  Fiber& f = self();
  f.wait = Wait::Done;
  switch_context(f.context, current->scheduler, true);
  fail("a finished fiber was resumed");
}

// Completes shuffles of the warp [begin, end): a lane at one reads its partner's value once the partner
// waits at a shuffle of the same offset, the same instruction (lanes elsewhere have diverged and are
// inactive for it, as on hardware; lanes that ran ahead to a later shuffle wait there for their
// partners). `unpaired`: every lane at a shuffle reads, NaN where its partner is at none or another
// (undefined on hardware). False when none completes.
bool complete_shuffles(Block& b, int begin, int end, bool unpaired) {
  bool any = false;
  for (int i = begin; i < end; ++i) {  // every read before any lane is released
    Fiber& f = b.fibers[size_t(i)];
    if (f.wait != Wait::Shuffle) continue;
    const int p = begin + ((i - begin) ^ f.shuffle_offset);
    const Fiber* partner = p < end ? &b.fibers[size_t(p)] : nullptr;
    const bool paired = partner && partner->wait == Wait::Shuffle && partner->shuffle_offset == f.shuffle_offset;
    f.received = paired ? partner->sent : NAN;
    f.completing = paired || unpaired;
    any = any || f.completing;
  }
  for (int i = begin; i < end; ++i) {
    Fiber& f = b.fibers[size_t(i)];
    if (f.completing) f.completing = false, f.wait = Wait::None;
  }
  return any;
}

// Frees the threads of every barrier that all its live threads have reached, and completes the warps'
// paired shuffles (`unpaired`: their unpaired ones too); false when nothing was freed.
bool release_barriers(Block& b, bool unpaired) {
  const int n = int(b.fibers.size());
  bool released = false;
  auto release = [&](int begin, int end, Wait kind) {
    int live = 0, waiting = 0;
    for (int i = begin; i < end; ++i)
      live += b.fibers[size_t(i)].wait != Wait::Done, waiting += b.fibers[size_t(i)].wait == kind;
    if (live == 0 || waiting < live) return;
    for (int i = begin; i < end; ++i)
      if (b.fibers[size_t(i)].wait == kind) b.fibers[size_t(i)].wait = Wait::None;
    released = true;
  };
  release(0, n, Wait::Block);
  for (int w = 0; w < n; w += DCUSERVE_EMULATED_WARP_SIZE) {
    const int end = std::min(n, w + DCUSERVE_EMULATED_WARP_SIZE);
    release(w, end, Wait::Warp);
    released = complete_shuffles(b, w, end, unpaired) || released;
  }
  return released;
}

void run_block(Block& b) {
  std::vector<int> order(b.fibers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  for (;;) {
    bool ran = false, done = true;
    std::shuffle(order.begin(), order.end(), b.order);
    for (int i : order) {
      if (b.fibers[size_t(i)].wait != Wait::None) continue;
      b.running = i;
      switch_context(b.scheduler, b.fibers[size_t(i)].context);
      ran = true;
    }
    for (const Fiber& f : b.fibers) done = done && f.wait == Wait::Done;
    if (done) return;
    // Shuffles whose partners never come complete only when nothing else can move.
    if (!release_barriers(b, false) && !ran && !release_barriers(b, true))
      fail("deadlock: threads wait at a barrier that others of their block or warp never reach");
  }
}

}  // namespace

void run_grid(dim3 grid, dim3 block, size_t smem, const std::function<void()>& kernel) {
  constexpr size_t kStackBytes = 128 * 1024;  // pages a fiber never touches are never committed
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > 1024) fail("block size must be 1..1024 threads");
  std::unique_ptr<char[]> stacks(new char[threads * kStackBytes]);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        Block b;
        b.order.seed(x + 65536u * (y + 4096u * z));
        b.fibers.resize(threads);
        b.dynamic_shared.assign(smem / sizeof(float4) + 1, float4{NAN, NAN, NAN, NAN});
        b.kernel = &kernel;
        current = &b, block_index = {x, y, z}, block_dim = block, grid_dim = grid;
        for (unsigned i = 0; i < threads; ++i) {
          Fiber& f = b.fibers[i];
          f.index = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
          prepare(f.context, stacks.get() + i * kStackBytes, kStackBytes, fiber_main);
        }
        run_block(b);
        current = nullptr;
      }
}

uint3 thread_index() { return self().index; }
void* dynamic_shared() { return current->dynamic_shared.data(); }
void sync_block() { suspend(Wait::Block); }
void sync_warp() { suspend(Wait::Warp); }

float shuffle_xor(float v, int offset, int width) {
  if (offset <= 0 || offset >= width || width > DCUSERVE_EMULATED_WARP_SIZE) fail("shuffle offset outside its segment");
  Fiber& f = self();
  f.sent = v, f.shuffle_offset = offset;
  suspend(Wait::Shuffle);
  return f.received;
}

}  // namespace dcu::gpu::emulation
