#pragma once
// An independent reference for exact dot products: big-integer arithmetic, no floating-point
// operation. Every product of two finite doubles (floats widen exactly) is the integer product of
// the 53-bit significands (u128) times 2^(ea + eb); products are added as sign and
// magnitude into two unsigned integers of 32-bit digits scaled by 2^-2200, subtracted once, and the
// difference rounded to nearest even to Out by its bits (subnormal results and overflow to Inf as
// IEEE rounds the exact value). NaN, Inf * 0 and +Inf with -Inf give NaN; an Inf otherwise wins;
// an exact zero is -0 only when every product is -0 (IEEE's sum of zeros). Also used by the
// matmul tests (and checked there against Python's fractions).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace tally::test {

__extension__ typedef unsigned __int128 u128;  // GCC and Clang: the 106-bit products of significands

class ExactDotReference {
 public:
  static constexpr int bias = 2200;  // bit 0 of the digits is 2^-bias
  static constexpr int ndigits = (bias + 2200) / 32;

  void add_product(double a, double b) {
    const double p = a * b;  // only for the sign of a zero and the IEEE special cases
    if (std::isnan(a) || std::isnan(b) || std::isnan(p)) return void(nan_ = true);
    if (std::isinf(p) && (std::isinf(a) || std::isinf(b))) return void(p > 0 ? pos_inf_ = true : neg_inf_ = true);
    std::uint64_t ma, mb;
    int ea, eb;
    const bool na = decompose(a, ma, ea), nb = decompose(b, mb, eb);
    if (ma == 0 || mb == 0) {
      if (!std::signbit(p)) all_negative_zero_ = false;
      return;
    }
    all_negative_zero_ = false;
    const u128 m = static_cast<u128>(ma) * mb;
    add_magnitude(na != nb ? neg_ : pos_, m, ea + eb + bias);
  }

  template <class Out>
  [[nodiscard]] Out round() const {
    using L = std::numeric_limits<Out>;
    if (nan_ || (pos_inf_ && neg_inf_)) return L::quiet_NaN();
    if (pos_inf_) return L::infinity();
    if (neg_inf_) return -L::infinity();
    bool negative = less(pos_, neg_);
    std::vector<std::uint32_t> d = negative ? sub(neg_, pos_) : sub(pos_, neg_);
    int top = ndigits - 1;
    while (top >= 0 && d[static_cast<std::size_t>(top)] == 0) --top;
    if (top < 0) return all_negative_zero_ ? Out(-0.0) : Out(0.0);
    const int msb =
        32 * top + 31 - std::countl_zero(d[static_cast<std::size_t>(top)]);  // value in [2^(msb-bias), 2^(msb-bias+1))
    constexpr int prec = L::digits;
    constexpr int qmin = L::min_exponent - L::digits;  // float -149, double -1074 (exponent of the smallest subnormal)
    const int lsb_exp = std::max(msb - bias - prec + 1, qmin);
    const int k0 = lsb_exp + bias;  // lowest kept bit index
    const auto bit = [&](int i) -> unsigned {
      return i < 0 ? 0u : (d[static_cast<std::size_t>(i / 32)] >> (i % 32)) & 1u;
    };
    std::uint64_t kept = 0;
    for (int i = msb; i >= k0; --i) kept = (kept << 1) | bit(i);
    if (bit(k0 - 1)) {
      bool sticky = false;
      for (int i = k0 - 2; i >= 0 && !sticky; --i) sticky = bit(i) != 0;
      if (sticky || (kept & 1u)) ++kept;
    }
    // kept 2^lsb_exp: kept < 2^(prec + 1), exact as long double multiplication by a power of two
    const long double v = std::ldexp(static_cast<long double>(kept), lsb_exp);
    const Out o = v > static_cast<long double>(L::max()) ? L::infinity() : static_cast<Out>(v);
    return negative ? -o : o;
  }

 private:
  // |x| = m 2^e with m an integer below 2^53; returns the sign.
  static bool decompose(double x, std::uint64_t& m, int& e) {
    std::uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    const int be = static_cast<int>((u >> 52) & 0x7ff);
    m = u & ((std::uint64_t{1} << 52) - 1);
    if (be == 0) e = -1074;
    else m |= std::uint64_t{1} << 52, e = be - 1075;
    return (u >> 63) != 0;
  }
  static void add_magnitude(std::vector<std::uint32_t>& d, u128 m, int pos) {
    // m 2^pos: shift into 32-bit digits, then add with carries
    int i = pos / 32;
    const int s = pos % 32;
    u128 lo = m << s;                                                                  // bits [0, 128) of m 2^s
    const std::uint64_t hi = s == 0 ? 0 : static_cast<std::uint64_t>(m >> (128 - s));  // bits 128.. (m < 2^106: none)
    std::uint64_t carry = 0;
    for (int k = 0; k < 5 || carry; ++k, ++i) {
      std::uint64_t add = k < 4 ? static_cast<std::uint32_t>(lo >> (32 * k)) : (k == 4 ? hi : 0);
      const std::uint64_t t = std::uint64_t{d[static_cast<std::size_t>(i)]} + add + carry;
      d[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(t);
      carry = t >> 32;
    }
  }
  static bool less(const std::vector<std::uint32_t>& x, const std::vector<std::uint32_t>& y) {
    for (int i = ndigits - 1; i >= 0; --i)
      if (x[static_cast<std::size_t>(i)] != y[static_cast<std::size_t>(i)])
        return x[static_cast<std::size_t>(i)] < y[static_cast<std::size_t>(i)];
    return false;
  }
  static std::vector<std::uint32_t> sub(const std::vector<std::uint32_t>& x,
                                        const std::vector<std::uint32_t>& y) {  // x >= y
    std::vector<std::uint32_t> r(x.size());
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::int64_t t = std::int64_t{x[i]} - y[i] - borrow;
      borrow = t < 0;
      r[i] = static_cast<std::uint32_t>(t + (borrow ? (std::int64_t{1} << 32) : 0));
    }
    return r;
  }
  std::vector<std::uint32_t> pos_ = std::vector<std::uint32_t>(ndigits, 0),
                             neg_ = std::vector<std::uint32_t>(ndigits, 0);
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false, all_negative_zero_ = true;
};

/// The reference dot product of a and b rounded to Out.
template <class Out, class T>
Out exact_dot_reference(const std::vector<T>& a, const std::vector<T>& b) {
  ExactDotReference r;
  for (std::size_t i = 0; i < a.size(); ++i) r.add_product(static_cast<double>(a[i]), static_cast<double>(b[i]));
  return r.round<Out>();
}

}  // namespace tally::test
