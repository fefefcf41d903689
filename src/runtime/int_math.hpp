// Integer arithmetic shared by the planners (internal): header-only, no GL.
#pragma once
#include <cstdint>

namespace gltensor::detail {

/// ceil(a / b) for a >= 0 and b > 0, as (a + b - 1) / b (a + b - 1 must not overflow): grid sizes,
/// chunk counts and loop trips. Two overloads, signed and unsigned: a call converts its arguments
/// to one of them (mixed signed and unsigned arguments name the type with a cast).
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace gltensor::detail
