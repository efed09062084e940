// What this x86 CPU and its OS can run, read from CPUID and XCR0 once.
//
// One implementation for every compiler and OS: __builtin_cpu_supports needs
// compiler-rt's __cpu_model, which clang-cl's link on Windows does not bring.
// Vector state must be enabled by the OS too (XCR0), as __builtin_cpu_supports
// checks. tests/cxx/widths.cpp compares these answers with GCC's builtin.
#pragma once
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#if defined(_MSC_VER)
#include <intrin.h>  // first: clang's cpuid.h defines a __cpuid macro that MSVC's intrin.h declaration trips on
#endif
#include <cpuid.h>
#include <cstdint>

namespace tmcpu {

struct X86 {
  bool popcnt = false, avx2 = false, avx512 = false;  // avx512: F, BW, DQ and VL
};

static inline uint64_t xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static inline X86 detect() {
  X86 f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.popcnt = (c >> 23) & 1;
  if (!((c >> 27) & 1) || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;  // no OSXSAVE: no AVX state
  const uint64_t x = xcr0();
  const bool ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;  // SSE+AVX; and opmask, ZMM_Hi256, Hi16_ZMM
  f.avx2 = ymm && ((b >> 5) & 1);
  f.avx512 = zmm && ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
  return f;
}

static inline const X86& features() {
  static const X86 f = detect();
  return f;
}

}  // namespace tmcpu
#endif
