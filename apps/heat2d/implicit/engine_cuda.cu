// The CUDA engine (engine.hpp): the CPU engine's solvers with their scalars on the device and no
// host round trip per iteration. The host enqueues iterations in chunks and reads the solve's state
// one chunk late (a copy to pinned memory and an event): the iterations enqueued after the one that
// stopped the solve find `halt` set and do nothing. The host steps in once a solve where TeaLeaf's
// drivers need it: at the switch from CG to Chebyshev / PPCG (the eigenvalue bounds from the CG
// steps' alphas and betas, chebyshev.hpp, the same host code as the CPU engine's) and after
// Chebyshev's first step (its estimate of the iterations). A CG step's u += alpha p rides on the
// next step's first pass (cg_w); where the CG steps end (converged, diverged, max_iters or the
// switch) the host applies the last step's once (cg_u), before anything reads u.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cheby_blocked.cuh"
#include "engine.hpp"
#include "kernels.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/timing.hpp"

namespace tally::heat2d::implicit {

namespace {

using namespace gpu;

/// Iterations enqueued between two looks at the solve's state (tuning.hpp).
constexpr long long kChunk = tuning::implicit_chunk;

/// Pinned host memory for the state copies the host polls.
class PinnedStates {
 public:
  PinnedStates() { TALLY_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&p_), 2 * sizeof(DeviceState))); }
  ~PinnedStates() { cudaFreeHost(p_); }
  PinnedStates(const PinnedStates&) = delete;
  PinnedStates& operator=(const PinnedStates&) = delete;
  DeviceState& operator[](int k) { return p_[k]; }

 private:
  DeviceState* p_ = nullptr;
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(const Deck& d, const Grid& g, int device) : d_(d), g_(g) {
    TALLY_CUDA_TRY(cudaSetDevice(device));
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
    geo_ = {g.nx, g.rows, g.stride()};
    const auto n = static_cast<std::size_t>(g.size());
    for (DeviceBuffer<double>* f :
         {&density_, &energy_, &u_[0], &u_[1], &u0_, &p_[0], &p_[1], &r_, &w_, &z_, &sd_, &kx_, &ky_}) {
      *f = DeviceBuffer<double>(n);
      f->fill_bytes(0, s_);  // the halo stays zero
    }
    const auto blocks = static_cast<std::size_t>(sms_) * 8;  // at most 8 resident blocks of 256 threads an SM
    dot_partials_ = DeviceBuffer<reduce::exact::Accumulator<Products>>(blocks);
    sum_partials_ = DeviceBuffer<reduce::exact::Accumulator<double>>(blocks);
    plain_partials_ = DeviceBuffer<double>(blocks);
    tickets_ = DeviceBuffer<unsigned>(4);
    tickets_.fill_bytes(0, s_);
    max_cell_ = DeviceBuffer<unsigned long long>(1);
    max_cell_.fill_bytes(0, s_);
    st_ = DeviceBuffer<DeviceState>(1);
    sc_ = {dot_partials_.data(),   tickets_.data(),     sum_partials_.data(), tickets_.data() + 1,
           plain_partials_.data(), tickets_.data() + 2, max_cell_.data(),     tickets_.data() + 3};
    pinned_ = std::make_unique<PinnedStates>();  // on this device
    TALLY_CUDA_TRY(cudaEventCreateWithFlags(&ev_[0], cudaEventDisableTiming));
    TALLY_CUDA_TRY(cudaEventCreateWithFlags(&ev_[1], cudaEventDisableTiming));
  }
  ~CudaEngine() override {
    cudaEventDestroy(ev_[0]);
    cudaEventDestroy(ev_[1]);
    cudaStreamDestroy(s_);
  }
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  void set_state(std::span<const double> density, std::span<const double> energy) override {
    density_h_.assign(density.begin(), density.end());
    density_.upload(density, s_);
    energy_.upload(energy, s_);
    launch(set_u, geo_, energy_.data(), density_.data(), u_[0].data(), u0_.data());
    dt_ = -1.0;
    sync();
  }

  SolveStats step(double dt, const SolveOptions& o) override {
    if (o.solver == SolverKind::pipecg)
      throw InputError("--solver pipecg: the CUDA engine has no pipelined CG (use --backend cpu)");
    if (dt != dt_) {
      std::vector<double> kx(density_h_.size(), 0.0), ky(kx.size(), 0.0);
      face_coefficients(d_, g_, dt, density_h_, kx, ky);
      kx_.upload(kx, s_);
      ky_.upload(ky, s_);
      kx_h_ = std::move(kx), ky_h_ = std::move(ky);
      dt_ = dt;
      prec_ = Preconditioner::none;
      prec_ready_ = false;
    }
    if (o.preconditioner != prec_ || !prec_ready_) setup_preconditioner(o.preconditioner);
    o_ = o;
    HostTimer t;
    SolveStats s;
    launch(set_u, geo_, energy_.data(), density_.data(), u_[0].data(), u0_.data());
    TALLY_CUDA_TRY(cudaMemsetAsync(st_.data(), 0, sizeof(DeviceState), s_));
    if (o.solver == SolverKind::jacobi) jacobi_solve(s);
    else krylov(s);
    if (o.check_result) {
      with_exact([&]<bool E>() {
        launch(residual<E, true>, geo_, coeffs(), u_[0].data(), u0_.data(), nullptr, sc_, &st_.data()->scalar);
      });
      s.residual = std::sqrt(read_state().scalar);
    }
    launch(set_energy, geo_, u_[0].data(), density_.data(), energy_.data());
    sync();
    s.solve_s = t.seconds();
    return s;
  }

  Summary summary(bool reproducible) override {
    Summary s;
    const double vol = cell_volume(g_);
    s.volume = total_volume(g_);
    o_.reproducible = reproducible;
    double* out = &st_.data()->scalar;
    const auto sum = [&](const double* x) {
      with_exact([&]<bool E>() { launch(mass_sum<E>, geo_, density_.data(), vol, x, sc_, out); });
      return read_state().scalar;
    };
    s.mass = sum(nullptr);
    s.density = s.mass / s.volume;
    s.energy = sum(energy_.data());
    s.temperature = sum(u_[0].data());
    return s;
  }

  void fields(std::span<double> u, std::span<double> energy) override {
    u_[0].download(u, s_);
    energy_.download(energy, s_);
  }

 private:
  // ---- launching ----------------------------------------------------------------------------------
  /// Blocks for `kernel`, whose blocks stride over tiles of tx x ty cells: what fits on the device at
  /// once, at most the tiles and the partials' room.
  int grid_of(const void* kernel, long long tx, long long ty) {
    auto it = grid_.find(kernel);
    if (it == grid_.end()) {
      int per_sm = 0;
      TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kTileX * kWarps, 0));
      const long long tiles = (g_.nx + tx - 1) / tx * ((g_.rows + ty - 1) / ty);
      it = grid_
               .emplace(kernel, static_cast<int>(
                                    std::max(1LL, std::min<long long>({tiles, 1LL * sms_ * std::clamp(per_sm, 1, 8)}))))
               .first;
    }
    return it->second;
  }
  /// kernel<<<...>>>(args) on blocks of kTileX x kWarps threads that take tiles of tx x ty cells.
  template <class... K, class... A>
  void launch_tiles(long long tx, long long ty, void (*kernel)(K...), A... args) {
    kernel<<<grid_of(reinterpret_cast<const void*>(kernel), tx, ty), dim3(kTileX, kWarps), 0, s_>>>(args...);
    TALLY_CHECK_LAUNCH();
  }
  /// The same for kernels.cuh's kernels (tiles of kTileX x kTileY cells, for_strips).
  template <class... K, class... A>
  void launch(void (*kernel)(K...), A... args) {
    launch_tiles(kTileX, kTileY, kernel, args...);
  }
  /// f.template operator()<E>() with E = o_.reproducible.
  template <class F>
  void with_exact(F&& f) {
    if (o_.reproducible) f.template operator()<true>();
    else f.template operator()<false>();
  }
  /// f.template operator()<P>() with P the preconditioner in use.
  template <class F>
  void with_prec(F&& f) {
    switch (prec_) {
      case Preconditioner::none: f.template operator()<kNone>(); break;
      case Preconditioner::jac_diag: f.template operator()<kDiag>(); break;
      case Preconditioner::jac_block: f.template operator()<kBlock>(); break;
    }
  }
  void sync() { TALLY_CUDA_TRY(cudaStreamSynchronize(s_)); }
  DeviceState read_state() {
    DeviceState h;
    TALLY_CUDA_TRY(cudaMemcpyAsync(&h, st_.data(), sizeof h, cudaMemcpyDeviceToHost, s_));
    sync();
    return h;
  }
  Coeffs coeffs() const { return {kx_.data(), ky_.data()}; }
  PrecArrays prec_arrays() const { return {mi_.data(), cp_.data(), bfp_.data()}; }
  const double* zsrc() const { return prec_ == Preconditioner::none ? r_.data() : z_.data(); }
  TestParams test_params() const {
    return {o_.solver == SolverKind::cg ? 1 : 0,
            o_.norm == EpsNorm::max ? 1 : 0,
            o_.solver == SolverKind::chebyshev || o_.solver == SolverKind::ppcg ? 1 : 0,
            o_.error_switch ? 1 : 0,
            o_.eps,
            o_.eps_lim,
            static_cast<long long>(o_.presteps)};
  }

  void setup_preconditioner(Preconditioner p) {
    PreconditionerCoefficients pc = preconditioner_coefficients(g_, p, kx_h_, ky_h_);
    const auto put = [&](DeviceBuffer<double>& b, const std::vector<double>& h) {
      if (h.empty()) return;
      b = DeviceBuffer<double>(h.size());
      b.upload(h, s_);
    };
    put(mi_, pc.mi), put(cp_, pc.cp), put(bfp_, pc.bfp);
    sync();  // the host vectors go now
    prec_ = p;
    prec_ready_ = true;
  }

  /// The lazy look at the solve: after each chunk, the state is copied to pinned memory behind an
  /// event; the copy of the chunk before is read (by then this chunk is queued: the device stays
  /// busy). True when that copy shows the solve stopped (or, in_cg, the switch due).
  bool chunk_done(bool in_cg) {
    const int slot = chunks_ % 2;
    TALLY_CUDA_TRY(cudaMemcpyAsync(&(*pinned_)[slot], st_.data(), sizeof(DeviceState), cudaMemcpyDeviceToHost, s_));
    TALLY_CUDA_TRY(cudaEventRecord(ev_[slot], s_));
    ++chunks_;
    if (chunks_ < 2) return false;
    const int prev = 1 - slot;
    TALLY_CUDA_TRY(cudaEventSynchronize(ev_[prev]));
    interrupt::check("in a solve");
    const DeviceState& st = (*pinned_)[prev];
    return st.halt != 0 || (in_cg && st.cg_over != 0);
  }
  /// The history (the values tested, in order) of `its` iterations whose tests `tested` selects.
  template <class Tested>
  void history(SolveStats& s, long long its, Tested&& tested) {
    if (its <= 0) return;
    std::vector<double> h(static_cast<std::size_t>(its));
    TALLY_CUDA_TRY(cudaMemcpyAsync(h.data(), hist_.data(), h.size() * sizeof(double), cudaMemcpyDeviceToHost, s_));
    sync();
    for (long long k = 0; k < its; ++k)
      if (tested(k)) s.history_iteration.push_back(k), s.history_error.push_back(h[static_cast<std::size_t>(k)]);
    if (!s.history_error.empty()) s.error = s.history_error.back();
  }
  void ensure_iteration_arrays() {
    const auto n = static_cast<std::size_t>(o_.max_iters);
    if (hist_.size() < n)
      hist_ = DeviceBuffer<double>(n), alphas_ = DeviceBuffer<double>(n), betas_ = DeviceBuffer<double>(n);
  }
  /// Ends a solve: the status from the state, the iterations, and u back in u_[0] from `buf`.
  void conclude(SolveStats& s, const DeviceState& st, long long last_k, int buf) {
    if (st.halt != 0) {
      s.status = st.halt == 1 ? SolveStatus::converged : SolveStatus::diverged;
      s.iterations = st.k_halt + 1;
    } else {
      s.status = SolveStatus::max_iters;
      s.iterations = last_k;
    }
    if (buf != 0)
      TALLY_CUDA_TRY(cudaMemcpyAsync(u_[0].data(), u_[buf].data(), u_[0].bytes(), cudaMemcpyDeviceToDevice, s_));
  }

  // ---- CG, Chebyshev, PPCG ------------------------------------------------------------------------
  void krylov(SolveStats& s);
  /// The Lanczos bounds of the CG steps [0, k0), from their alphas and betas on the device.
  Eigenvalues cg_eigenvalues(long long k0);
  long long cg_phase(long long k_end);
  void cheby_phase(SolveStats& s, long long k0);
  /// Chebyshev's steps n..m (2 <= m - n + 1 <= kChebyDepthMax; m is iteration k) in one blocked pass:
  /// u from u_[ui] to u_[1 - ui], p from p_[pi] to p_[1 - pi]; tested: step m's test.
  void cheby_pass(const ChebyCoefficients& cc, long long n, long long m, long long k, bool tested, int ui, int pi);
  void ppcg_phase(SolveStats& s, long long k0);
  void jacobi_solve(SolveStats& s);

  Deck d_;
  Grid g_;
  cudaStream_t s_ = nullptr;
  int sms_ = 1;
  Layout geo_{};
  SolveOptions o_;
  double dt_ = -1.0;
  Preconditioner prec_ = Preconditioner::none;
  bool prec_ready_ = false;
  std::vector<double> density_h_, kx_h_, ky_h_;
  DeviceBuffer<double> density_, energy_, u_[2], u0_, p_[2], r_, w_, z_, sd_, kx_, ky_, mi_, cp_, bfp_;
  DeviceBuffer<double> hist_, alphas_, betas_;
  DeviceBuffer<reduce::exact::Accumulator<Products>> dot_partials_;
  DeviceBuffer<reduce::exact::Accumulator<double>> sum_partials_;
  DeviceBuffer<double> plain_partials_;
  DeviceBuffer<unsigned> tickets_;
  DeviceBuffer<unsigned long long> max_cell_;
  DeviceBuffer<DeviceState> st_;
  Scratch sc_{};
  std::unique_ptr<PinnedStates> pinned_;
  cudaEvent_t ev_[2] = {};
  long long chunks_ = 0;
  std::unordered_map<const void*, int> grid_;
};

/// CG iterations [k0, k_end) (iteration k's search direction in p_[k % 2]); returns the first
/// iteration not enqueued. Stops early when the state shows the solve stopped or the switch due.
long long CudaEngine::cg_phase(long long k_end) {
  const bool max = o_.norm == EpsNorm::max;
  const TestParams tp = test_params();
  chunks_ = 0;
  long long k = 0;
  for (; k < k_end;) {
    with_exact([&]<bool E>() {
      if (k == 0)
        launch(cg_w<E, false, true>, geo_, coeffs(), p_[0].data(), nullptr, zsrc(), w_.data(), u_[0].data(), sc_,
               st_.data(), alphas_.data(), k);
      else
        launch(cg_w<E, true, true>, geo_, coeffs(), p_[(k - 1) % 2].data(), p_[k % 2].data(), zsrc(), w_.data(),
               u_[0].data(), sc_, st_.data(), alphas_.data(), k);
      with_prec([&]<int P>() {
        if (max)
          launch(cg_ur<E, P, true>, geo_, coeffs(), prec_arrays(), r_.data(), w_.data(), z_.data(), sc_, st_.data(), tp,
                 betas_.data(), hist_.data(), k);
        else
          launch(cg_ur<E, P, false>, geo_, coeffs(), prec_arrays(), r_.data(), w_.data(), z_.data(), sc_, st_.data(),
                 tp, betas_.data(), hist_.data(), k);
      });
    });
    ++k;
    if (k % kChunk == 0 && chunk_done(true)) break;
  }
  return k;
}

void CudaEngine::krylov(SolveStats& s) {
  ensure_iteration_arrays();
  with_exact([&]<bool E>() {
    with_prec([&]<int P>() {
      launch(cg_init<E, P>, geo_, coeffs(), prec_arrays(), u_[0].data(), u0_.data(), r_.data(), z_.data(), p_[0].data(),
             sc_, st_.data());
    });
  });
  (void)cg_phase(o_.max_iters);
  const DeviceState st = read_state();
  // The last CG step's u += alpha p, which each step leaves to the next one's cg_w.
  const long long k_last = st.halt != 0 ? st.k_halt : st.cg_over != 0 ? st.k_switch - 1 : o_.max_iters - 1;
  if (k_last >= 0) launch(cg_u, geo_, u_[0].data(), p_[k_last % 2].data(), alphas_.data() + k_last);
  if (st.halt != 0 || st.cg_over == 0 || st.k_switch >= o_.max_iters) {
    conclude(s, st, o_.max_iters, 0);
    s.cg_iterations = s.iterations;
    history(s, s.iterations, [](long long) { return true; });
    return;
  }
  s.cg_iterations = st.k_switch;
  if (o_.solver == SolverKind::chebyshev) cheby_phase(s, st.k_switch);
  else ppcg_phase(s, st.k_switch);
}

Eigenvalues CudaEngine::cg_eigenvalues(long long k0) {
  std::vector<double> a(static_cast<std::size_t>(k0)), b(a.size());
  TALLY_CUDA_TRY(cudaMemcpyAsync(a.data(), alphas_.data(), a.size() * sizeof(double), cudaMemcpyDeviceToHost, s_));
  TALLY_CUDA_TRY(cudaMemcpyAsync(b.data(), betas_.data(), b.size() * sizeof(double), cudaMemcpyDeviceToHost, s_));
  sync();
  return lanczos_eigenvalues(a, b);
}

void CudaEngine::cheby_phase(SolveStats& s, long long k0) {
  s.eigenvalues = cg_eigenvalues(k0);
  const ChebyCoefficients cc = cheby_coefficients(s.eigenvalues, o_.max_iters - k0 + 1);
  const bool max = o_.norm == EpsNorm::max;
  const TestParams tp = test_params();
  // bb = u0.u0, then the first half-step (u_[0] -> u_[1]) and step 1 (u_[1] -> u_[0]).
  with_exact([&]<bool E>() { launch(dot<E>, geo_, u0_.data(), u0_.data(), sc_, &st_.data()->scalar); });
  with_prec([&]<int P>() {
    launch(cheby_init<P>, geo_, coeffs(), prec_arrays(), u_[0].data(), u_[1].data(), u0_.data(), p_[0].data(),
           cc.theta);
  });
  // Step n with `cheby`: u from u_[ui] to u_[1 - ui], p in place in p_[pi].
  const auto step = [&](long long n, bool tested, int ui, int pi) {
    const long long k = k0 + n - 1;
    const double* in = u_[ui].data();
    double* out = u_[1 - ui].data();
    double* p = p_[pi].data();
    const double an = cc.alpha[static_cast<std::size_t>(n)], bn = cc.beta[static_cast<std::size_t>(n)];
    with_exact([&]<bool E>() {
      with_prec([&]<int P>() {
        if (!tested)
          launch(cheby<E, P, false, false>, geo_, coeffs(), prec_arrays(), in, out, u0_.data(), p, an, bn, sc_,
                 st_.data(), tp, hist_.data(), k);
        else if (max)
          launch(cheby<E, P, true, true>, geo_, coeffs(), prec_arrays(), in, out, u0_.data(), p, an, bn, sc_,
                 st_.data(), tp, hist_.data(), k);
        else
          launch(cheby<E, P, true, false>, geo_, coeffs(), prec_arrays(), in, out, u0_.data(), p, an, bn, sc_,
                 st_.data(), tp, hist_.data(), k);
      });
    });
  };
  step(1, true, 1, 0);
  DeviceState st = read_state();
  const double bb = st.scalar;
  s.cheby_estimate = cheby_estimated_iterations(s.eigenvalues, bb, st.rr);
  const auto tested = [&](long long k) {
    const long long n = k - k0 + 1;
    return n <= 1 || (n >= s.cheby_estimate && (k + 1) % 10 == 0);
  };
  // Steps 2.. in passes of up to t steps (cheby_blocked.cuh; t = 1, and jac_block: one `cheby` a step).
  // A pass ends at every tested step (the only step of a pass whose residual is reduced), at
  // max_iters, and where k + 1 = 0 mod t, so that with t dividing 10 the tested steps fall on pass
  // ends without shortening the passes between them. Each pass swaps u's buffers; a blocked pass
  // also p's (its halo reads its neighbours' old p). ends: each pass's last step and u's buffer then.
  const int t = cheby_steps_per_pass(o_, true);
  const long long n_max = o_.max_iters - k0;
  std::vector<std::pair<long long, int>> ends{{1, 0}};
  int ui = 0, pi = 0;  // u after step 1 is in u_[0], p in p_[0]
  chunks_ = 0;
  if (st.halt == 0)
    for (long long n = 2; n <= n_max;) {
      long long m = n;
      while (m < n_max && !tested(k0 + m - 1) && (k0 + m) % t != 0 && m - n + 1 < t) ++m;
      if (m == n) step(n, tested(k0 + n - 1), ui, pi);
      else cheby_pass(cc, n, m, k0 + m - 1, tested(k0 + m - 1), ui, pi), pi = 1 - pi;
      ui = 1 - ui;
      ends.emplace_back(m, ui);
      const bool chunk = m / kChunk != (n - 1) / kChunk;
      n = m + 1;
      if (chunk && chunk_done(false)) break;
    }
  st = read_state();
  const long long last_n = st.halt != 0 ? st.k_halt - k0 + 1 : n_max;
  const auto end = std::find_if(ends.begin(), ends.end(), [&](const auto& e) { return e.first == last_n; });
  if (end == ends.end()) throw Error("heat2d: a Chebyshev solve stopped inside a pass (internal error)");
  conclude(s, st, o_.max_iters, end->second);
  history(s, s.iterations, tested);
}

void CudaEngine::cheby_pass(const ChebyCoefficients& cc, long long n, long long m, long long k, bool tested, int ui,
                            int pi) {
  ChebySteps cs{};
  cs.n = static_cast<int>(m - n + 1);
  if (cs.n < 2 || cs.n > kChebyDepthMax)
    throw Error("heat2d: a blocked Chebyshev pass of " + std::to_string(cs.n) + " steps (internal error)");
  for (int i = 0; i < cs.n; ++i)
    cs.a[i] = cc.alpha[static_cast<std::size_t>(n + i)], cs.b[i] = cc.beta[static_cast<std::size_t>(n + i)];
  const TestParams tp = test_params();
  const bool max = o_.norm == EpsNorm::max;
  const auto go = [&]<bool E, int P, int T>() {
    const auto args = [&](auto kernel) {
      launch_tiles(kCbOutX<T>, kCbOutY<T>, kernel, geo_, coeffs(), prec_arrays(), u_[ui].data(), u_[1 - ui].data(),
                   u0_.data(), p_[pi].data(), p_[1 - pi].data(), cs, sc_, st_.data(), tp, hist_.data(), k);
    };
    if (!tested) args(cheby_blocked<E, P, false, false, T>);
    else if (max) args(cheby_blocked<E, P, true, true, T>);
    else args(cheby_blocked<E, P, true, false, T>);
  };
  const auto depth = [&]<bool E, int P>() {
    if (cs.n <= 2) go.template operator()<E, P, 2>();
    else go.template operator()<E, P, kChebyDepthMax>();
  };
  with_exact([&]<bool E>() {
    if (prec_ == Preconditioner::jac_diag) depth.template operator()<E, kDiag>();
    else depth.template operator()<E, kNone>();
  });
}

void CudaEngine::ppcg_phase(SolveStats& s, long long k0) {
  s.eigenvalues = cg_eigenvalues(k0);
  const ChebyCoefficients cc = cheby_coefficients(s.eigenvalues, o_.inner_steps);
  const bool max = o_.norm == EpsNorm::max;
  const TestParams tp = test_params();
  // The last CG step's search direction, written out before r becomes the true residual.
  launch(set_p, geo_, p_[(k0 - 1) % 2].data(), zsrc(), p_[k0 % 2].data(), st_.data());
  with_exact(
      [&]<bool E>() { launch(residual<E, false>, geo_, coeffs(), u_[0].data(), u0_.data(), r_.data(), sc_, nullptr); });
  chunks_ = 0;
  for (long long k = k0; k < o_.max_iters; ++k) {
    with_exact([&]<bool E>() {
      if (k == k0)
        launch(cg_w<E, false, false>, geo_, coeffs(), p_[k % 2].data(), nullptr, zsrc(), w_.data(), nullptr, sc_,
               st_.data(), alphas_.data(), k);
      else
        launch(cg_w<E, true, false>, geo_, coeffs(), p_[(k - 1) % 2].data(), p_[k % 2].data(), zsrc(), w_.data(),
               nullptr, sc_, st_.data(), alphas_.data(), k);
      with_prec([&]<int P>() {
        launch(ppcg_ur<P>, geo_, coeffs(), prec_arrays(), u_[0].data(), p_[k % 2].data(), r_.data(), w_.data(),
               sd_.data(), cc.theta, st_.data());
        for (std::int64_t i = 0; i < o_.inner_steps; ++i) {
          launch(ppcg_inner, geo_, coeffs(), u_[0].data(), r_.data(), sd_.data(), st_.data());
          launch(ppcg_sd<P>, geo_, coeffs(), prec_arrays(), r_.data(), sd_.data(),
                 cc.alpha[static_cast<std::size_t>(i)], cc.beta[static_cast<std::size_t>(i)], st_.data());
        }
        if (max)
          launch(ppcg_end<E, P, true>, geo_, coeffs(), prec_arrays(), r_.data(), z_.data(), sc_, st_.data(), tp,
                 hist_.data(), k);
        else
          launch(ppcg_end<E, P, false>, geo_, coeffs(), prec_arrays(), r_.data(), z_.data(), sc_, st_.data(), tp,
                 hist_.data(), k);
      });
    });
    if ((k - k0 + 1) % kChunk == 0 && chunk_done(false)) break;
  }
  const DeviceState st = read_state();
  conclude(s, st, o_.max_iters, 0);
  s.inner_iterations = o_.inner_steps * (s.iterations - k0);
  history(s, s.iterations, [](long long) { return true; });
}

void CudaEngine::jacobi_solve(SolveStats& s) {
  ensure_iteration_arrays();
  const bool max = o_.norm == EpsNorm::max;
  const TestParams tp = test_params();
  chunks_ = 0;
  for (long long k = 0; k < o_.max_iters; ++k) {
    const double* in = u_[k % 2].data();
    double* out = u_[(k + 1) % 2].data();
    with_exact([&]<bool E>() {
      if (max)
        launch(jacobi<E, true, false>, geo_, coeffs(), in, out, u0_.data(), sc_, st_.data(), tp, hist_.data(), k);
      else if (k % 50 != 0)
        launch(jacobi<E, false, false>, geo_, coeffs(), in, out, u0_.data(), sc_, st_.data(), tp, hist_.data(), k);
      else {
        launch(jacobi<E, false, true>, geo_, coeffs(), in, out, u0_.data(), sc_, st_.data(), tp, hist_.data(), k);
        launch(jacobi_residual<E>, geo_, coeffs(), out, u0_.data(), sc_, st_.data(), tp, hist_.data(), k);
      }
    });
    if ((k + 1) % kChunk == 0 && chunk_done(false)) break;
  }
  const DeviceState st = read_state();
  const long long done = st.halt != 0 ? st.k_halt + 1 : o_.max_iters;
  conclude(s, st, o_.max_iters, static_cast<int>(done % 2));
  history(s, s.iterations, [](long long) { return true; });
}

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(const Deck& d, const Grid& g, int device) {
  return std::make_unique<CudaEngine>(d, g, device);
}

}  // namespace tally::heat2d::implicit
