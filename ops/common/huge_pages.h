// Transparent huge pages for large CPU outputs.
#pragma once

#include <ATen/core/Tensor.h>

namespace convx {

// Asks Linux to back the 2 MiB-aligned interior of t's storage with transparent huge pages
// (madvise MADV_HUGEPAGE: THP is usually in "madvise" mode) when it spans at least two of them.
// Why: a fresh output of more than glibc's mmap threshold (at most 32 MiB) is new mmapped
// memory on every call, and its first write faults in one 4 KiB page at a time (the 38.5 MB
// data grad of the 3x3 stride-2 benchmark: ~9400 faults, ~11 ms of a 15 ms first write on
// one core of the development machine; ~0.7k faults and ~4.7 ms with this advice). Advice
// only: memory that is already resident keeps its pages, errors are ignored, and other
// systems do nothing.
void advise_huge_pages(const at::Tensor& t);

}  // namespace convx
