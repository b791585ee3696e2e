// The problem description shared by the tiled depthwise kernels (nc_tiled.cuh, cl_tiled.cuh).
//
// Forward and data-grad are both "phased correlations": for every phase p (one per residue of
// the output position modulo os, per spatial dim) the written tensor at  q*os + r[p]  is
//     sum_t  read[q*S - pad[p] + t] * wsub[p][t]       (t < k, out-of-range reads are zero)
//   forward:      one phase, os = 1, S = stride, pad = padding, wsub = the filter;
//   data-grad:    os = stride, S = 1; phase r keeps the taps k with (r + padding - k) % stride == 0,
//                 flipped, zero-padded to k = ceil(K / stride) (a sub-pixel decomposition: no
//                 thread tests divisibility per tap, and stride 1 is the forward with the
//                 filter rotated 180 degrees).
// Channels: written channel co reads channel (co / in_div) * J + j for j < J with weight row
// co * J + j (forward: in_div = m, J = 1; data-grad: in_div = 1, J = m).
#pragma once

#include <algorithm>
#include <cstdint>

namespace convx::cuda {

constexpr int kMaxPhases = 4;  // per spatial dim: strides up to 4 take the tiled paths

struct Plan {
  int64_t N, out_c, in_c, in_div, J, wrows;
  int64_t in[3], out[3];       // spatial sizes of the tensor read / written
  int64_t q[3];                // per dim: the largest number of outputs of one phase
  int k[3], S[3], os[3];       // sub-filter taps, read stride, write stride (= phases)
  int pad[3][kMaxPhases];      // per dim and phase
  int r[3][kMaxPhases];        // first written position of the phase
  int64_t qn[3][kMaxPhases];   // outputs of the phase
  int64_t wphase;              // elements per phase of the prepared weights
  int phases;                  // os[0] * os[1] * os[2]
};

// Exact integer ceiling for non-negative a, positive b.
__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The filters the depth-streaming 3-D kernels (nc_depth3d, cl_depth3d, and their weight-grads) are
// specialised for, as X(KD, KH, KW, S) at depth stride 1: the forward and data-grad list includes
// the stride-2 data-grad's 2 x 2 sub-filters; the weight-grads take the full filters only.
#define CONVX_DEPTH3D_FILTERS(X) X(3, 3, 3, 1) X(3, 3, 3, 2) X(3, 2, 2, 1) X(5, 3, 3, 1) X(5, 3, 3, 2) X(5, 2, 2, 1)
#define CONVX_DEPTH3D_WGRAD_FILTERS(X) X(3, 3, 3, 1) X(3, 3, 3, 2) X(5, 3, 3, 1) X(5, 3, 3, 2)

// The depth-streaming kernels' columns of output depths (NCDHW: one sample and channel;
// channels-last: one sample, row and strip) cut into `segs` segments of `dl` planes: the fewest
// segments that give `target` work items, each at least 2*KD planes deep while the depth allows
// (the KD - 1 re-read planes per segment stay a small share).
inline void depth_segments(int64_t QD, int KD, int64_t per_segment, int64_t target, int64_t& segs, int64_t& dl) {
  segs = std::clamp<int64_t>(ceil_div(target, std::max<int64_t>(per_segment, 1)), 1,
                             std::max<int64_t>(1, QD / (2 * KD)));
  dl = ceil_div(QD, segs);
  segs = ceil_div(QD, dl);
}

}  // namespace convx::cuda
