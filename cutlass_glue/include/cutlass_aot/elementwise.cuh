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
// where every extent, stride and address allows) and `<name>_scalar` one element at a time. The
// grid covers the view in one pass (the loop strides by the grid only past 2^31 blocks); each
// thread loads `Unroll` accesses before it computes and stores any. The generator picks Unroll
// by the activation's cost: 1 where it is a few compares and multiplies and the kernel is bound by
// memory alone, 2 for those of one exp or tanh (sigmoid, silu, tanh, the tanh GELU), 4 for erf's
// GELU, so loads stay in flight while it computes (on an H100, GELU in f16 at unroll 1 ran at 80 %
// of torch's speed and at 4 at 100-102 %; SiLU in bf16 was best at 2).
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
} cutlass_aot_elementwise_params;
}

static_assert(sizeof(cutlass_aot_elementwise_params) == 152,
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

// The body of both entries: V elements per access (1 for the scalar entry), Unroll accesses per
// thread; Linear where the view is one row (offsets are the element index itself), Scaled unless
// alpha, beta and scale are all 1.
template <class TX, class TY, class TD, class Compute, class Act, Combine C, int V, int Unroll,
          bool Linear, bool Scaled>
CUTLASS_DEVICE void run(const cutlass_aot_elementwise_params& p) {
  constexpr bool kHasY = C != Combine::None;
  using VecX = cutlass::AlignedArray<TX, V>;
  using VecY = cutlass::AlignedArray<TY, V>;
  using VecD = cutlass::AlignedArray<TD, V>;
  const Compute alpha = static_cast<Compute>(p.alpha);
  const Compute beta = static_cast<Compute>(p.beta);
  const Compute scale = static_cast<Compute>(p.scale);
  const Compute arg = static_cast<Compute>(p.activation_arg);
  const TX* x = static_cast<const TX*>(p.x);
  const TY* y = static_cast<const TY*>(p.y);
  TD* d = static_cast<TD*>(p.d);
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x * Unroll;
  for (uint64_t base = static_cast<uint64_t>(blockIdx.x) * blockDim.x * Unroll + threadIdx.x;
       base < p.vectors; base += step) {
    VecX xs[Unroll];
    VecY ys[Unroll];
    int64_t at_d[Unroll];
    CUTLASS_PRAGMA_UNROLL
    for (int u = 0; u < Unroll; ++u) {
      const uint64_t v = base + static_cast<uint64_t>(u) * blockDim.x;
      at_d[u] = -1;
      if (v < p.vectors) {
        if constexpr (Linear) {
          // One row: x and d have unit stride, y unit stride or none (a scalar).
          const int64_t at = static_cast<int64_t>(v) * V;
          xs[u] = *reinterpret_cast<const VecX*>(x + at);
          if constexpr (kHasY) {
            if (p.y_col_stride != 0) {
              ys[u] = *reinterpret_cast<const VecY*>(y + at * p.y_col_stride);
            } else {
              ys[u].fill(*y);
            }
          }
          at_d[u] = at;
        } else {
          const uint64_t q = divide(v, p.vectors_per_row);
          const int64_t col = static_cast<int64_t>(v - q * p.vectors_per_row.divisor) * V;
          const uint64_t b = divide(q, p.rows);
          const int64_t row = static_cast<int64_t>(q - b * p.rows.divisor);
          const int64_t batch = static_cast<int64_t>(b);
          xs[u] = *reinterpret_cast<const VecX*>(x + batch * p.x_batch_stride +
                                                 row * p.x_row_stride + col);
          if constexpr (kHasY) {
            const int64_t at_y = batch * p.y_batch_stride + row * p.y_row_stride;
            if (V == 1 || p.y_col_stride != 0) {
              // The vector entry runs only with y_col_stride 0 or 1.
              const int64_t offset = V == 1 ? col * p.y_col_stride : col;
              ys[u] = *reinterpret_cast<const VecY*>(y + at_y + offset);
            } else {
              ys[u].fill(y[at_y]);
            }
          }
          at_d[u] = batch * p.d_batch_stride + row * p.d_row_stride + col;
        }
      }
    }
    CUTLASS_PRAGMA_UNROLL
    for (int u = 0; u < Unroll; ++u) {
      if (at_d[u] >= 0) {
        const cutlass::Array<Compute, V> xv = load_array<Compute>(xs[u]);
        cutlass::Array<Compute, V> yv;
        if constexpr (kHasY) {
          yv = load_array<Compute>(ys[u]);
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
        VecD out;
        static_cast<cutlass::Array<TD, V>&>(out) = store_array<TD>(result);
        *reinterpret_cast<VecD*>(d + at_d[u]) = out;
      }
    }
  }
}

// The vector entry's bodies, by tests every thread of the grid answers alike: a one-row view with
// alpha, beta and scale all 1 (a plain activation, sum or conversion) skips their multiplies too.
template <class TX, class TY, class TD, class Compute, class Act, Combine C, int V, int Unroll>
CUTLASS_DEVICE void run_vector(const cutlass_aot_elementwise_params& p) {
  if (p.rows.divisor == 1 && p.vectors_per_row.divisor == p.vectors) {
    if (p.alpha == 1.0 && p.beta == 1.0 && p.scale == 1.0) {
      run<TX, TY, TD, Compute, Act, C, V, Unroll, true, false>(p);
    } else {
      run<TX, TY, TD, Compute, Act, C, V, Unroll, true, true>(p);
    }
  } else {
    run<TX, TY, TD, Compute, Act, C, V, Unroll, false, true>(p);
  }
}

}  // namespace elementwise
}  // namespace cutlass_aot

// The two entries of one kernel; UNROLL is the generator's (the runtime sizes the grid by it).
#define CUTLASS_AOT_ELEMENTWISE(NAME, TX, TY, TD, COMPUTE, ACT, COMBINE, UNROLL)                  \
  extern "C" __global__ void __launch_bounds__(cutlass_aot::elementwise::kThreads)               \
      NAME##_vector(const cutlass_aot_elementwise_params p) {                                    \
    constexpr int kBytes = sizeof(TX) > sizeof(TD) ? sizeof(TX) : sizeof(TD);                    \
    constexpr int kWidest = kBytes > sizeof(TY) ? kBytes : sizeof(TY);                           \
    cutlass_aot::elementwise::run_vector<TX, TY, TD, COMPUTE, ACT, COMBINE, 16 / kWidest, UNROLL>( \
        p);                                                                                      \
  }                                                                                              \
  extern "C" __global__ void __launch_bounds__(cutlass_aot::elementwise::kThreads)               \
      NAME##_scalar(const cutlass_aot_elementwise_params p) {                                    \
    cutlass_aot::elementwise::run<TX, TY, TD, COMPUTE, ACT, COMBINE, 1, UNROLL, false, true>(p); \
  }
