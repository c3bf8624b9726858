#pragma once
// The Mean operator on TestBackend, included after reduce_checks.hpp by each backend's test source
// (its inputs, naive reference and tolerances): the sum's bits divided once by the count, on every
// level set, and a sum's NaN/Inf rules.

namespace tally::test::reduce_checks {

TEST_CASE(TALLY_TEST_BACKEND ": mean is the sum's result divided once by the count; NaN and infinities as in a sum",
          "[reduce][mean]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 6500;
  const auto same_as_sum = [&]<class T, class Acc>(Extents e) {
    const auto host = make_input<Mean, T, Acc>(static_cast<std::size_t>(e.size()), e.size(), ++salt);
    auto d_in = TestBackend::upload(host);
    const auto in = View<const T>::contiguous(d_in.data(), e.ng, e.nw, e.nv);
    for (Levels lv : Levels::all_sets()) {
      const std::vector<Acc> sum = run_once<TestBackend, Sum, T, Acc>(ws, in, lv),
                             mean = run_once<TestBackend, Mean, T, Acc>(ws, in, lv);
      std::vector<Acc> want(sum.size());
      const auto count = static_cast<Acc>(e.size() / output_shape(e, lv).size());
      for (std::size_t o = 0; o < sum.size(); ++o) want[o] = sum[o] / count;
      INFO((case_name<Mean, T, Acc>()) << " over " << lv.to_string() << " of " << shape_name(e, false) << " vs sum / "
                                       << count);
      CHECK(bitwise_equal(mean, want));
    }
  };
  for (const Extents& e :
       {Extents{1, 1, (int64_t{1} << 20) + 7}, Extents{31, 33, 1025}, Extents{1025, 31, 2}, Extents{3, 1, 1}}) {
    same_as_sum.template operator()<float, float>(e);
    same_as_sum.template operator()<float, double>(e);
    same_as_sum.template operator()<double, double>(e);
  }
  // Rows of a (4, 1000) array: row 0 has a NaN, row 1 a +inf, row 2 +inf and -inf, row 3 nothing odd.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = make_input<Mean, float, float>(4000, 1000, ++salt);
  x[17] = std::numeric_limits<float>::quiet_NaN(), x[1000 + 999] = inf, x[2000] = inf, x[2500] = -inf;
  auto d_x = TestBackend::upload(x);
  const auto rows = run_once<TestBackend, Mean, float, float>(ws, View<const float>::contiguous(d_x.data(), 1, 4, 1000),
                                                              Level::vector);
  REQUIRE(rows.size() == 4);
  CHECK(std::isnan(rows[0]));
  CHECK(rows[1] == inf);
  CHECK(std::isnan(rows[2]));
  const auto ref = reference<Mean, float, float>(x.data() + 3000, {1, 1, 1000}, 1000, 1000, Levels::all());
  CHECK(matches<Mean>(rows[3], ref.value[0], ref.abs_sum[0], 1000));
  // The scalar on the host, and the mean of nothing.
  const auto full = reference<Mean, float, double>(x.data() + 3000, {1, 1, 1000}, 1000, 1000, Levels::all());
  CHECK(matches<Mean>(
      reduce_to_host<Mean, float, double>(TestBackend::backend, View<const float>::flat(d_x.data() + 3000, 1000), ws,
                                          TestBackend::stream()),
      full.value[0], full.abs_sum[0], 1000));
  CHECK(std::isnan(reduce_to_host<Mean, float, float>(TestBackend::backend, View<const float>::flat(d_x.data(), 0), ws,
                                                      TestBackend::stream())));
}

}  // namespace tally::test::reduce_checks
