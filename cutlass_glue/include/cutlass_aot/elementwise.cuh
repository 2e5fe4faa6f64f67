// Elementwise kernels (`kind: elementwise`):
//
//   d = convert_d( scale · act( alpha·x ⊕ beta·y ) )      (binary: ⊕ is add, sub, mul, min or max)
//   d = convert_d( scale · act( alpha·x ) )                (unary: activations, scaling, conversion)
//
// over a [batch, rows, cols] view: x and d have unit column stride and their own row and batch
// strides; y has all three strides, any of which may be 0 (a row vector, a column vector or a
// scalar broadcast). Arithmetic is in the compute type (f32, or f64 where an operand is f64 or
// s32); activations are CUTLASS's functors (cutlass::epilogue::thread), conversions CUTLASS's
// NumericConverter (round to nearest; 8-bit floats saturate to their largest finite value, as
// `cvt.rn.satfinite`), integers are clamped to their range.
//
// Each manifest kernel has two entries: `<name>_vector` moves 16-byte vectors (the host chooses it
// where every extent, stride and address allows; a one-row view whose length is not a multiple of
// the vector width has its last `tail` elements done one at a time by the grid's last block) and
// `<name>_scalar` one element at a time (unaligned addresses, ragged rows). The
// grid covers the view in one pass (the loop strides by the grid only past 2^31 blocks); each
// thread loads `Unroll` accesses before it computes and stores any. The generator picks Unroll
// by the activation's cost: 1 where it is a few compares and multiplies and the kernel is bound by
// memory alone, 2 for those of one exp or tanh (sigmoid, silu, tanh, the tanh GELU), 4 for erf's
// GELU, so loads stay in flight while it computes (on an H100, GELU in f16 at unroll 1 ran at 80 %
// of torch's speed and at 4 at 100-102 %; SiLU in bf16 was best at 2). The scalar entry moves one
// element per access, so it unrolls further (4 light, 8 heavy) to keep as many bytes in flight:
// ReLU over a misaligned contiguous f16 tensor ran at 1360 GB/s at 1 and 2700 at 4 (torch 2540).
//
// On the H100 these kernels issue nearly as many instructions as the memory allows, so the hot
// path keeps them few: a view the host merged into one row (every contiguous tensor) is indexed
// linearly, without the divisions the strided path needs; alpha, beta and scale are not applied
// where all are 1; and 16- and 8-bit floats convert two or four at a time (CUTLASS's
// NumericArrayConverter: cvt.rn.f16x2.f32 and its kin).
#pragma once

#include <cstdint>

#include "cutlass/array.h"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/numeric_conversion.h"
#include "cutlass/numeric_types.h"

extern "C" {

// Division by a run-time divisor without a division instruction: q = umulhi(n, magic), exact for
// n · divisor < 2^64 (the host checks). divisor 1 is handled apart (its magic would be 2^64).
typedef struct cutlass_aot_fast_div {
  uint64_t magic;
  uint64_t divisor;
} cutlass_aot_fast_div;

// The one parameter of every elementwise entry (the runtime's `elementwise::Params` mirrors it).
typedef struct cutlass_aot_elementwise_params {
  const void* x;
  const void* y;
  void* d;
  int64_t x_batch_stride, x_row_stride;
  int64_t y_batch_stride, y_row_stride, y_col_stride;
  int64_t d_batch_stride, d_row_stride;
  // Vectors (or elements, for the scalar entry) in the whole view.
  uint64_t vectors;
  cutlass_aot_fast_div vectors_per_row;
  cutlass_aot_fast_div rows;
  double alpha, beta, scale, activation_arg;
  // Elements after the last whole vector of a one-row view (vector entry only; below the width).
  uint64_t tail;
} cutlass_aot_elementwise_params;
}

static_assert(sizeof(cutlass_aot_elementwise_params) == 160,
              "cutlass_aot_elementwise_params changed: update the runtime's elementwise::Params");

namespace cutlass_aot {
namespace elementwise {

constexpr int kThreads = 256;

enum class Combine { None, Add, Sub, Mul, Min, Max };

CUTLASS_DEVICE uint64_t divide(uint64_t n, cutlass_aot_fast_div d) {
  return d.divisor == 1 ? n : __umul64hi(n, d.magic);
}

// CUTLASS's activation functors; LeakyReLU takes its slope as an argument.
template <class Act, class T>
struct Activate {
  CUTLASS_DEVICE T operator()(T v, T) const { return Act()(v); }
};
template <class T>
struct Activate<cutlass::epilogue::thread::LeakyReLU<T>, T> {
  CUTLASS_DEVICE T operator()(T v, T slope) const {
    return cutlass::epilogue::thread::LeakyReLU<T>()(v, slope);
  }
};

template <Combine C, class T>
CUTLASS_DEVICE T combine(T a, T b) {
  if constexpr (C == Combine::Add) {
    return a + b;
  } else if constexpr (C == Combine::Sub) {
    return a - b;
  } else if constexpr (C == Combine::Mul) {
    return a * b;
  } else if constexpr (C == Combine::Min) {
    return a < b ? a : b;
  } else if constexpr (C == Combine::Max) {
    return a > b ? a : b;
  } else {
    return a;
  }
}

// Storage → compute type.
template <class Compute, class T>
CUTLASS_DEVICE Compute load_as(T v) {
  if constexpr (std::is_integral<T>::value || std::is_same<T, Compute>::value) {
    return static_cast<Compute>(v);
  } else if constexpr (std::is_same<Compute, double>::value) {
    return static_cast<double>(cutlass::NumericConverter<float, T>()(v));
  } else {
    return cutlass::NumericConverter<Compute, T>()(v);
  }
}

// Compute → storage type: integers clamped and rounded to nearest (even); floats through
// CUTLASS's round-to-nearest converters (via f32 for the 16- and 8-bit ones).
template <class T, class Compute>
CUTLASS_DEVICE T store_as(Compute v) {
  if constexpr (std::is_integral<T>::value) {
    Compute lo = static_cast<Compute>(cutlass::platform::numeric_limits<T>::lowest());
    Compute hi = static_cast<Compute>(cutlass::platform::numeric_limits<T>::max());
    Compute r = rint(v);
    r = r != r ? Compute(0) : (r < lo ? lo : (r > hi ? hi : r));
    return static_cast<T>(r);
  } else if constexpr (std::is_same<T, Compute>::value) {
    return v;
  } else if constexpr (std::is_same<T, double>::value || std::is_same<T, float>::value) {
    return static_cast<T>(v);
  } else {
    return cutlass::NumericConverter<T, float, cutlass::FloatRoundStyle::round_to_nearest>()(
        static_cast<float>(v));
  }
}

// The 16- and 8-bit floating-point types, which CUTLASS converts from and to f32 in pairs.
template <class T>
constexpr bool kPackedFloat = std::is_same<T, cutlass::half_t>::value ||
                              std::is_same<T, cutlass::bfloat16_t>::value ||
                              std::is_same<T, cutlass::float_e4m3_t>::value ||
                              std::is_same<T, cutlass::float_e5m2_t>::value;

// A loaded access → compute type: packed conversions where CUTLASS has them, else load_as.
template <class Compute, class T, int V>
CUTLASS_DEVICE cutlass::Array<Compute, V> load_array(const cutlass::Array<T, V>& v) {
  if constexpr (std::is_same<Compute, float>::value && kPackedFloat<T>) {
    return cutlass::NumericArrayConverter<float, T, V>()(v);
  } else {
    cutlass::Array<Compute, V> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < V; ++i) {
      r[i] = load_as<Compute>(v[i]);
    }
    return r;
  }
}

// Results → the stored access, with the same rounding (and fp8 saturation) as store_as.
template <class T, class Compute, int V>
CUTLASS_DEVICE cutlass::Array<T, V> store_array(const cutlass::Array<Compute, V>& v) {
  if constexpr (std::is_same<Compute, float>::value && kPackedFloat<T>) {
    return cutlass::NumericArrayConverter<T, float, V, cutlass::FloatRoundStyle::round_to_nearest>()(v);
  } else {
    cutlass::Array<T, V> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < V; ++i) {
      r[i] = store_as<T>(v[i]);
    }
    return r;
  }
}

// d = scale · act(alpha·x ⊕ beta·y) for one access of V elements (y unused without a combine).
template <class TD, class Compute, class Act, Combine C, bool Scaled, class TX, class TY, int V>
CUTLASS_DEVICE cutlass::Array<TD, V> apply(const cutlass::Array<TX, V>& xs,
                                           const cutlass::Array<TY, V>& ys,
                                           const cutlass_aot_elementwise_params& p) {
  constexpr bool kHasY = C != Combine::None;
  const Compute alpha = static_cast<Compute>(p.alpha);
  const Compute beta = static_cast<Compute>(p.beta);
  const Compute scale = static_cast<Compute>(p.scale);
  const Compute arg = static_cast<Compute>(p.activation_arg);
  const cutlass::Array<Compute, V> xv = load_array<Compute>(xs);
  cutlass::Array<Compute, V> yv;
  if constexpr (kHasY) {
    yv = load_array<Compute>(ys);
  }
  cutlass::Array<Compute, V> result;
  CUTLASS_PRAGMA_UNROLL
  for (int i = 0; i < V; ++i) {
    Compute value = Scaled ? alpha * xv[i] : xv[i];
    if constexpr (kHasY) {
      value = combine<C>(value, Scaled ? beta * yv[i] : yv[i]);
    }
    const Compute activated = Activate<Act, Compute>()(value, arg);
    result[i] = Scaled ? scale * activated : activated;
  }
  return store_array<TD>(result);
}

// How a thread finds its accesses. Linear: the view is one row, so an access's offset is its index
// (every contiguous tensor). Rows (the scalar entry, rows at least two blocks wide): the grid's y
// dimension walks the view's rows and its x dimension covers one row's columns, so a row's base
// offsets cost one division per row and thread, not two per access. Flat: the view is numbered as
// one sequence and each access divides its index into batch, row and column (the vector entry,
// which divides once per 16 bytes, and narrow rows, on which Rows would leave most of each block
// idle). On an H100, f16 x + row-bias over 32743 rows of 4099 (the scalar entry) ran at 710 GB/s
// Flat and 1690 GB/s Rows, torch 1580. Blocks are kThreads wide (the host launches them so): in
// a tuning harness, a compile-time width saved a fifth of the Rows walk's time over blockDim.x.
enum class Walk { Linear, Rows, Flat };

// The body of both entries: V elements per access (1 for the scalar entry), Unroll accesses per
// thread, Scaled unless alpha, beta and scale are all 1.
template <class TX, class TY, class TD, class Compute, class Act, Combine C, int V, int Unroll,
          Walk W, bool Scaled>
CUTLASS_DEVICE void run(const cutlass_aot_elementwise_params& p) {
  constexpr bool kHasY = C != Combine::None;
  using VecX = cutlass::AlignedArray<TX, V>;
  using VecY = cutlass::AlignedArray<TY, V>;
  using VecD = cutlass::AlignedArray<TD, V>;
  const TX* x = static_cast<const TX*>(p.x);
  const TY* y = static_cast<const TY*>(p.y);
  TD* d = static_cast<TD*>(p.d);
  // The vector entry runs only with y's column stride 0 (y[at_y] broadcast) or 1.
  const int64_t y_col_stride = p.y_col_stride;
  VecX xs[Unroll];
  VecY ys[Unroll];
  // Access u: x at element offset at_x, y at at_y.
  auto load = [&](int u, int64_t at_x, int64_t at_y) {
    xs[u] = *reinterpret_cast<const VecX*>(x + at_x);
    if constexpr (kHasY) {
      if (V == 1 || y_col_stride != 0) {
        ys[u] = *reinterpret_cast<const VecY*>(y + at_y);
      } else {
        ys[u].fill(y[at_y]);
      }
    }
  };
  // Every loaded access computed and stored at d + at_d_of(u) (negative: none), after all were
  // loaded (their loads overlap).
  auto store = [&](auto&& at_d_of) {
    CUTLASS_PRAGMA_UNROLL
    for (int u = 0; u < Unroll; ++u) {
      const int64_t at_d = at_d_of(u);
      if (at_d >= 0) {
        VecD out;
        static_cast<cutlass::Array<TD, V>&>(out) =
            apply<TD, Compute, Act, C, Scaled>(xs[u], ys[u], p);
        *reinterpret_cast<VecD*>(d + at_d) = out;
      }
    }
  };
  if constexpr (W == Walk::Rows) {
    // The grid's x dimension covers a row (the host checks), so a thread's columns are fixed.
    const uint64_t per_row = p.vectors_per_row.divisor;
    const uint64_t base = static_cast<uint64_t>(blockIdx.x) * kThreads * Unroll + threadIdx.x;
    if (base >= per_row) {
      return;
    }
    const uint64_t lines = divide(p.vectors, p.vectors_per_row);  // batch × rows
    for (uint64_t line = blockIdx.y; line < lines; line += gridDim.y) {
      const uint64_t b = divide(line, p.rows);
      const int64_t row = static_cast<int64_t>(line - b * p.rows.divisor);
      const int64_t batch = static_cast<int64_t>(b);
      const int64_t row_x = batch * p.x_batch_stride + row * p.x_row_stride;
      const int64_t row_y = batch * p.y_batch_stride + row * p.y_row_stride;
      CUTLASS_PRAGMA_UNROLL
      for (int u = 0; u < Unroll; ++u) {
        const uint64_t v = base + static_cast<uint64_t>(u) * kThreads;
        if (v < per_row) {
          const int64_t col = static_cast<int64_t>(v) * V;
          load(u, row_x + col, row_y + col * y_col_stride);
        }
      }
      // d's offsets recomputed, not kept: registers are this walk's limit on occupancy.
      const int64_t row_d = batch * p.d_batch_stride + row * p.d_row_stride;
      store([&](int u) -> int64_t {
        const uint64_t v = base + static_cast<uint64_t>(u) * kThreads;
        return v < per_row ? row_d + static_cast<int64_t>(v) * V : -1;
      });
    }
  } else {
    const uint64_t step = static_cast<uint64_t>(gridDim.x) * kThreads * Unroll;
    for (uint64_t base = static_cast<uint64_t>(blockIdx.x) * kThreads * Unroll + threadIdx.x;
         base < p.vectors; base += step) {
      int64_t at_d[Unroll];
      CUTLASS_PRAGMA_UNROLL
      for (int u = 0; u < Unroll; ++u) {
        const uint64_t v = base + static_cast<uint64_t>(u) * kThreads;
        at_d[u] = -1;
        if (v < p.vectors) {
          if constexpr (W == Walk::Linear) {
            const int64_t at = static_cast<int64_t>(v) * V;
            load(u, at, at * y_col_stride);
            at_d[u] = at;
          } else {
            const uint64_t q = divide(v, p.vectors_per_row);
            const int64_t col = static_cast<int64_t>(v - q * p.vectors_per_row.divisor) * V;
            const uint64_t b = divide(q, p.rows);
            const int64_t row = static_cast<int64_t>(q - b * p.rows.divisor);
            const int64_t batch = static_cast<int64_t>(b);
            load(u, batch * p.x_batch_stride + row * p.x_row_stride + col,
                 batch * p.y_batch_stride + row * p.y_row_stride + col * y_col_stride);
            at_d[u] = batch * p.d_batch_stride + row * p.d_row_stride + col;
          }
        }
      }
      store([&](int u) { return at_d[u]; });
    }
  }
  if constexpr (W == Walk::Linear && V > 1) {
    // A one-row view's last (< V) elements, one per thread of the last block.
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x < p.tail) {
      const uint64_t at = p.vectors * V + threadIdx.x;
      cutlass::Array<TX, 1> xe;
      cutlass::Array<TY, 1> ye;
      xe[0] = x[at];
      if constexpr (kHasY) {
        ye[0] = y[at * y_col_stride];
      }
      d[at] = apply<TD, Compute, Act, C, Scaled>(xe, ye, p)[0];
    }
  }
}

// Both entries' bodies, by tests every thread of the grid answers alike: the host launches a grid
// of several rows of blocks for the Rows walk (the scalar entry's only: the vector entry runs at
// the copy's speed without it, and a walk it does not need would cost it registers, so
// occupancy), and a one-row view with alpha, beta and scale all 1 (a plain activation, sum or
// conversion) skips their multiplies too.
template <class TX, class TY, class TD, class Compute, class Act, Combine C, int V, int Unroll>
CUTLASS_DEVICE void run_entry(const cutlass_aot_elementwise_params& p) {
  if (p.rows.divisor == 1 && p.vectors_per_row.divisor == p.vectors) {
    if (p.alpha == 1.0 && p.beta == 1.0 && p.scale == 1.0) {
      run<TX, TY, TD, Compute, Act, C, V, Unroll, Walk::Linear, false>(p);
    } else {
      run<TX, TY, TD, Compute, Act, C, V, Unroll, Walk::Linear, true>(p);
    }
  } else if (V == 1 && gridDim.y > 1) {
    run<TX, TY, TD, Compute, Act, C, V, Unroll, Walk::Rows, true>(p);
  } else {
    // The scalar entry's Flat walk (narrow ragged rows) takes one access per thread: its two 64-bit
    // divisions per access would otherwise set the registers, so the occupancy, of every walk.
    run<TX, TY, TD, Compute, Act, C, V, V == 1 ? 1 : Unroll, Walk::Flat, true>(p);
  }
}

}  // namespace elementwise
}  // namespace cutlass_aot

// The two entries of one kernel; UNROLL and SCALAR_UNROLL (accesses per thread of the vector and
// the scalar entry) are the generator's, and the runtime sizes the grid by them.
#define CUTLASS_AOT_ELEMENTWISE(NAME, TX, TY, TD, COMPUTE, ACT, COMBINE, UNROLL, SCALAR_UNROLL)   \
  extern "C" __global__ void __launch_bounds__(cutlass_aot::elementwise::kThreads)               \
      NAME##_vector(const cutlass_aot_elementwise_params p) {                                    \
    constexpr int kBytes = sizeof(TX) > sizeof(TD) ? sizeof(TX) : sizeof(TD);                    \
    constexpr int kWidest = kBytes > sizeof(TY) ? kBytes : sizeof(TY);                           \
    cutlass_aot::elementwise::run_entry<TX, TY, TD, COMPUTE, ACT, COMBINE, 16 / kWidest, UNROLL>( \
        p);                                                                                      \
  }                                                                                              \
  extern "C" __global__ void __launch_bounds__(cutlass_aot::elementwise::kThreads)               \
      NAME##_scalar(const cutlass_aot_elementwise_params p) {                                    \
    cutlass_aot::elementwise::run_entry<TX, TY, TD, COMPUTE, ACT, COMBINE, 1, SCALAR_UNROLL>(p);  \
  }
