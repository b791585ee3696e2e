#include "ops/common/huge_pages.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <cstdint>

namespace convx {

void advise_huge_pages(const at::Tensor& t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  if (!t.defined() || !t.device().is_cpu() || !t.has_storage()) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(t.storage().data());
  if (begin == 0) return;
  const std::uintptr_t lo = (begin + kHuge - 1) / kHuge * kHuge;
  const std::uintptr_t hi = (begin + t.storage().nbytes()) / kHuge * kHuge;
  if (hi < lo + 2 * kHuge) return;
  madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)t;
#endif
}

}  // namespace convx
