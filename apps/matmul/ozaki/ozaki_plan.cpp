// The Ozaki level's plan (ozaki.hpp): the moduli, Q, the CRT tables in 40-bit limbs, the
// certificate's threshold, and the number of moduli auto picks. Host only; P (up to 2^160) in a
// small multi-word integer.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "ozaki.hpp"
#include "tally/common/error.hpp"

namespace tally::matmul::ozaki {
namespace {

// Pairwise coprime, at most 256 so that their symmetric residues fit INT8: 2^8, 3 5 17, 11 23,
// 13 19, 7 31 and primes. Largest first: each modulus adds log2(m) bits to P.
constexpr std::array<int, kMaxModuli> kModuli{256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                                              223, 217, 211, 199, 197, 193, 191, 181, 179, 173};

/// An unsigned integer below 2^192 (little-endian 32-bit words).
struct Big {
  static constexpr int words = 6;
  std::array<std::uint32_t, words> w{};
  static Big one() {
    Big b;
    b.w[0] = 1;
    return b;
  }
  void mul(std::uint32_t x) {
    std::uint64_t carry = 0;
    for (auto& v : w) {
      const std::uint64_t t = std::uint64_t{v} * x + carry;
      v = static_cast<std::uint32_t>(t), carry = t >> 32;
    }
    if (carry) throw Error("ozaki plan: product of the moduli beyond 2^192");
  }
  /// Divides by x, returns the remainder.
  std::uint32_t div(std::uint32_t x) {
    std::uint64_t rem = 0;
    for (int i = words - 1; i >= 0; --i) {
      const std::uint64_t t = (rem << 32) | w[static_cast<std::size_t>(i)];
      w[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(t / x), rem = t % x;
    }
    return static_cast<std::uint32_t>(rem);
  }
  [[nodiscard]] int bit(int i) const {
    return i < 0 ? 0 : static_cast<int>((w[static_cast<std::size_t>(i / 32)] >> (i % 32)) & 1u);
  }
  [[nodiscard]] int bit_length() const {
    for (int i = 32 * words - 1; i >= 0; --i)
      if (bit(i)) return i + 1;
    return 0;
  }
  /// Bits [lo, lo + n) (n <= 53) as an integer.
  [[nodiscard]] std::uint64_t bits(int lo, int n) const {
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 1) | static_cast<std::uint64_t>(bit(lo + i));
    return v;
  }
  /// The largest double not above the value.
  [[nodiscard]] double to_double_down() const {
    const int b = bit_length();
    if (b <= 53) return static_cast<double>(bits(0, 53));
    return std::ldexp(static_cast<double>(bits(b - 53, 53)), b - 53);
  }
  /// The limb of bits [max(lo, 0), lo + kLimbBits) as a double (exact: at most 40 bits).
  [[nodiscard]] double limb(int lo) const {
    const int from = std::max(lo, 0), n = lo + kLimbBits - from;
    return n <= 0 ? 0.0 : std::ldexp(static_cast<double>(bits(from, n)), from);
  }
};

Big product_of(int moduli) {
  Big p = Big::one();
  for (int l = 0; l < moduli; ++l) p.mul(static_cast<std::uint32_t>(kModuli[static_cast<std::size_t>(l)]));
  return p;
}

int inverse_mod(int x, int m) {
  for (int y = 1; y < m; ++y)
    if ((x * y) % m == 1) return y;
  throw Error("ozaki plan: no inverse of " + std::to_string(x) + " modulo " + std::to_string(m));
}

std::uint64_t q_of(const Big& p, std::int64_t k) {
  // Every step rounds by at most 2^-53 relative; 1 - 2^-30 under the square root leaves
  // K Q^2 <= P (1/2 - 2^-20) whatever they did (Q <= 2^52 is exact).
  const double x = p.to_double_down() * (0.5 - 0x1p-20) / static_cast<double>(k);
  const double r = std::floor(std::sqrt(x) * (1 - 0x1p-30));
  return r >= static_cast<double>(kMaxQ) ? kMaxQ : static_cast<std::uint64_t>(r);
}

}  // namespace

std::span<const int> moduli_table() { return kModuli; }

std::uint64_t q_bound(int moduli, std::int64_t k) { return q_of(product_of(moduli), k); }

// With the error bound of ozaki.hpp, |C - AB| <= E + (E + |A||B|) u' + the rounding to T, where E is
// the truncation and reconstruction terms the certificate bounds by theta |A||B| and u' = u_d (1 +
// 2^-50) the reconstruction's relative error. Double: C is the reconstruction scaled by a power of
// two (exact in the normal range), so theta = (tol - u') / (1 + u') with tol the promise. Float: one
// more rounding, |C - Z| <= u_f |Z|, so theta = (tol - u_f - u' (1 + u_f)) / ((1 + u_f)(1 + u')). The factor 1 -
// 2^-30 covers the certificate's own rounding (sums of at most 33 x 33 terms). Results in the
// subnormal range carry the usual absolute error of half their spacing besides.
template <class T>
double certificate_threshold(std::int64_t k) {
  const double tol = promise<T>(k), ud = 0x1p-53 * (1 + 0x1p-50);
  double theta;
  if constexpr (sizeof(T) == 8) {
    theta = (tol - ud) / (1 + ud);
  } else {
    const double uf = 0x1p-24;
    theta = (tol - uf - ud * (1 + uf)) / ((1 + uf) * (1 + ud));
  }
  return theta * (1 - 0x1p-30);
}

template <class T>
int auto_moduli(std::int64_t k) {
  const double want = kAutoKappa / certificate_threshold<T>(k);
  for (int n = 1; n <= kMaxModuli; ++n) {
    const std::uint64_t q = q_bound(n, k);
    if (static_cast<double>(q) >= want || q == kMaxQ) return n;
  }
  return kMaxModuli;
}

template <class T>
Plan make_plan(std::int64_t k, int moduli) {
  if (moduli < 0 || moduli > kMaxModuli)
    throw InputError("--ozaki-moduli: " + std::to_string(moduli) + " is not between 1 and " +
                     std::to_string(kMaxModuli) + " (or auto)");
  if (k < 1) throw InputError("ozaki: K must be positive");
  // The exact fallback's accumulators take fewer than 2^31 additions per limb (matmul --exact's limit).
  if (k >= (std::int64_t{1} << 28))
    throw InputError("--k: the ozaki level takes K below 2^28 (got " + std::to_string(k) + ")");
  const int n = moduli == 0 ? auto_moduli<T>(k) : moduli;
  const Big p = product_of(n);
  Plan plan;
  plan.k = k;
  plan.chunks = (k + kChunkK - 1) / kChunkK;
  Tables& t = plan.tables;
  t.moduli = n;
  t.q = q_of(p, k);
  if (t.q == 0) {
    int need = n;
    while (need < kMaxModuli && q_bound(need, k) == 0) ++need;
    throw InputError("--ozaki-moduli " + std::to_string(n) + ": the product of " + std::to_string(n) +
                     " moduli must exceed 2 K = " + std::to_string(2 * k) +
                     " to keep one bit per element; use at least " + std::to_string(need));
  }
  plan.bits_kept = 63 - __builtin_clzll(t.q);
  plan.log2_p = 0;
  t.bits = p.bit_length();
  t.limbs = (t.bits + kLimbBits - 1) / kLimbBits;
  if (t.limbs > kMaxLimbs) throw Error("ozaki plan: P needs more than " + std::to_string(kMaxLimbs) + " limbs");
  for (int l = 0; l < n; ++l) {
    const int m = kModuli[static_cast<std::size_t>(l)];
    plan.log2_p += std::log2(static_cast<double>(m));
    Big ml = p;
    ml.div(static_cast<std::uint32_t>(m));  // P / m_l, exactly
    Big rem = ml;
    const int r = static_cast<int>(rem.div(static_cast<std::uint32_t>(m)));
    t.m_int[l] = m;
    t.m[l] = m;
    t.rm[l] = 1.0 / m;
    t.inv[l] = inverse_mod(r, m);
    for (int j = 0; j < t.limbs; ++j) t.ml[l][j] = ml.limb(t.bits - kLimbBits * (j + 1));
  }
  for (int j = 0; j < t.limbs; ++j) t.p[j] = p.limb(t.bits - kLimbBits * (j + 1));
  t.inv_p = 1.0 / p.to_double_down();
  t.theta = certificate_threshold<T>(k);
  return plan;
}

std::string note(const Stats& s, const Plan& p) {
  if (s.exact_elements == 0) return "";
  std::string out = "level ozaki (" + std::to_string(p.tables.moduli) + " moduli, " + std::to_string(p.bits_kept) +
                    " bits a line): " + std::to_string(s.exact_elements) + " elements by exact dot products";
  if (s.exact_tiles > 0)
    out += ", " + std::to_string(s.exact_tiles) + " of " + std::to_string(s.tiles) +
           " tiles beyond what the INT8 products can certify (wide exponent range within rows or columns)";
  if (s.special_tiles > 0)
    out += ", " + std::to_string(s.special_tiles) + " tiles with Inf or NaN in their rows or columns";
  return out;
}

void note_once(const Stats& s, const Plan& p, bool& noted) {
  if (noted) return;
  const std::string text = note(s, p);
  if (text.empty()) return;
  std::fprintf(stderr, "matmul: %s\n", text.c_str());
  noted = true;
}

std::string moduli_problem(const std::string& text) {
  if (text == "auto") return {};
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == text.size() && used > 0 && v >= 1 && v <= kMaxModuli) return {};
  return "must be auto or an integer in [1, " + std::to_string(kMaxModuli) + "] (got '" + text + "')";
}

int parse_moduli(const std::string& text) {
  if (const std::string why = moduli_problem(text); !why.empty()) throw InputError("--ozaki-moduli: " + why);
  return text == "auto" ? 0 : std::stoi(text);
}

template int auto_moduli<float>(std::int64_t);
template int auto_moduli<double>(std::int64_t);
template Plan make_plan<float>(std::int64_t, int);
template Plan make_plan<double>(std::int64_t, int);
template double certificate_threshold<float>(std::int64_t);
template double certificate_threshold<double>(std::int64_t);

}  // namespace tally::matmul::ozaki
