// The implicit mode's ranks on tally's rank runtime (ranks.hpp). The only file of the implicit mode
// that names the runtime's communicator besides the command line (cli.cpp).
#include "ranks.hpp"

#include <string>

#include "tally/reduce/ranks.hpp"

namespace tally::heat2d::implicit {

namespace {

class CommLink final : public RankLink {
 public:
  explicit CommLink(const ranks::Comm& c) : c_(c) {}
  [[nodiscard]] int size() const override { return c_.size(); }
  [[nodiscard]] int rank() const override { return c_.rank(); }
  void exchange_rows(std::span<double> f, std::int64_t stride, std::int64_t rows) const override {
    const auto row = [&](std::int64_t j) {
      return f.subspan(static_cast<std::size_t>(j * stride), static_cast<std::size_t>(stride));
    };
    ranks::Comm::Exchange x = c_.start_exchange<double>(row(1), row(0), row(rows), row(rows + 1), ranks::Memory::host);
    x.wait();
  }
  [[nodiscard]] std::unique_ptr<Pending> start_add_words(std::span<std::int64_t> w) const override {
    struct Sum final : Pending {
      ranks::Comm::Exchange p;
      void wait() override { p.wait(); }
    };
    auto s = std::make_unique<Sum>();
    s->p = c_.start_sum(w);
    return s;
  }
  [[nodiscard]] double max(double v) const override {
    tally::reduce::allreduce<reduce::Max, double>(c_, std::span<const double>(&v, 1), std::span<double>(&v, 1),
                                                  ranks::Memory::host);
    return v;
  }
  void sums(std::span<double> v) const override {
    tally::reduce::allreduce<reduce::Sum, double>(c_, std::span<const double>(v.data(), v.size()), v,
                                                  ranks::Memory::host);
  }
  [[nodiscard]] std::vector<double> gather(std::span<const double> mine) const override {
    return c_.gather<double>(mine);
  }

 private:
  const ranks::Comm& c_;
};

}  // namespace

std::unique_ptr<RankLink> make_rank_link(const ranks::Comm& comm) { return std::make_unique<CommLink>(comm); }

}  // namespace tally::heat2d::implicit
