// Compile-time checks of a user kernel's entry against the manifest's parameter list
// (`kind: custom`). The generated unit ends with one static_assert per parameter, so a mismatch
// stops nvcc with a message that names the parameter and what the manifest says it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

namespace cutlass_aot {
namespace custom {

template <class F>
struct entry_params;

template <class... A>
struct entry_params<void (*)(A...)> {
  using type = std::tuple<A...>;
  static constexpr std::size_t count = sizeof...(A);
};

// Parameter I of entry F, or void past its last one (so that a wrong count reports once).
template <class F, std::size_t I, bool = (I < entry_params<F>::count)>
struct param {
  using type = typename std::tuple_element<I, typename entry_params<F>::type>::type;
};

template <class F, std::size_t I>
struct param<F, I, false> {
  using type = void;
};

template <class F, std::size_t I>
using param_t = typename param<F, I>::type;

// A scalar parameter: exactly the manifest's type.
template <class P, class Expected>
constexpr bool is_scalar() {
  return std::is_same<P, Expected>::value;
}

// A buffer parameter: a pointer to elements of the manifest's size; `const` exactly when the
// kernel only reads it. The element type itself is the kernel's choice (`__half` or
// `cutlass::half_t` for f16, say): only its size is checked, and that it is not a pointer.
template <class P, std::size_t Bytes, bool ReadOnly>
constexpr bool is_buffer() {
  if constexpr (!std::is_pointer<P>::value) {
    return false;
  } else {
    using E = typename std::remove_pointer<P>::type;
    return sizeof(typename std::conditional<std::is_void<E>::value, char, E>::type) == Bytes &&
           !std::is_void<E>::value && !std::is_pointer<E>::value &&
           std::is_const<E>::value == ReadOnly;
  }
}

}  // namespace custom
}  // namespace cutlass_aot
