// The deck parser (deck.hpp): tokens, keywords, states, and the checks made once every line is read.
#include "deck.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <system_error>

#include "tally/common/error.hpp"

namespace tally::heat2d::implicit {

std::string to_string(SolverKind s) {
  switch (s) {
    case SolverKind::cg: return "cg";
    case SolverKind::chebyshev: return "cheby";
    case SolverKind::ppcg: return "ppcg";
    case SolverKind::jacobi: return "jacobi";
    case SolverKind::pipecg: return "pipecg";
  }
  return "?";
}
std::string to_string(Preconditioner p) {
  switch (p) {
    case Preconditioner::none: return "none";
    case Preconditioner::jac_diag: return "jac_diag";
    case Preconditioner::jac_block: return "jac_block";
  }
  return "?";
}
std::string to_string(Coefficient c) { return c == Coefficient::density ? "density" : "inverse_density"; }
std::string to_string(Geometry g) {
  switch (g) {
    case Geometry::rectangle: return "rectangle";
    case Geometry::circle: return "circle";
    case Geometry::point: return "point";
  }
  return "?";
}

namespace {

/// Most states a deck may define (TeaLeaf's decks use five).
constexpr std::int64_t kMaxStates = 1000;

/// A token as the messages quote it: printable ASCII, at most 40 characters.
std::string quoted(std::string_view t) {
  std::string s = "'";
  for (std::size_t i = 0; i < t.size() && i < 40; ++i) {
    const char c = t[i];
    s += (c >= 32 && c < 127) ? c : '?';
  }
  if (t.size() > 40) s += "...";
  return s + "'";
}

std::string lower(std::string_view t) {
  std::string s(t);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

/// A line's tokens: separated by blanks, '=' and ',' (as TeaLeaf's parser separates them), up to a
/// '!' or '#' comment.
std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  const auto is_sep = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '=' || c == ',';
  };
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == '!' || line[i] == '#') break;
    if (is_sep(line[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < line.size() && !is_sep(line[j]) && line[j] != '!' && line[j] != '#') ++j;
    out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

class Parser {
 public:
  Parser(Deck& d, std::string where) : d_(d), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw InputError(where_ + ": " + msg); }

  /// A finite number: decimal or exponent form (Fortran's 'd' exponent too), optional sign.
  double number(std::string_view key, std::string_view t) const {
    std::string s(t);
    for (char& c : s)
      if (c == 'd' || c == 'D') c = 'e';
    const char* b = s.data();
    const char* e = s.data() + s.size();
    if (b != e && *b == '+') ++b;
    double v = 0.0;
    const auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e || b == e || !std::isfinite(v))
      fail(std::string(key) + ": expected a finite number, got " + quoted(t));
    return v;
  }
  std::int64_t integer(std::string_view key, std::string_view t) const {
    const char* b = t.data();
    const char* e = t.data() + t.size();
    if (b != e && *b == '+') ++b;
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e || b == e) fail(std::string(key) + ": expected an integer, got " + quoted(t));
    return v;
  }

  void line(std::string_view text, int lineno) {
    line_ = lineno;
    const std::vector<std::string_view> t = tokens(text);
    if (t.empty()) return;
    std::string key = lower(t[0]);
    if (key.rfind("tl_", 0) == 0) key = key.substr(3);
    const std::vector<std::string_view> args(t.begin() + 1, t.end());
    if (key == "state") return state(args);

    const auto one = [&]() -> std::string_view {
      if (args.size() != 1) fail(std::string(t[0]) + ": expected one value, got " + std::to_string(args.size()));
      return args[0];
    };
    const auto flag = [&] {
      if (!args.empty()) fail(std::string(t[0]) + ": takes no value (got " + quoted(args[0]) + ")");
    };
    const auto real = [&](double& v) { v = number(t[0], one()); };
    const auto whole = [&](std::int64_t& v) { v = integer(t[0], one()); };
    const auto not_applied = [&] { d_.not_applied.push_back("line " + std::to_string(lineno) + ": " + key); };

    if (key == "initial_timestep") return real(d_.initial_timestep);
    if (key == "end_time") return real(d_.end_time);
    if (key == "end_step") return whole(d_.end_step);
    if (key == "xmin") return real(d_.xmin);
    if (key == "xmax") return real(d_.xmax);
    if (key == "ymin") return real(d_.ymin);
    if (key == "ymax") return real(d_.ymax);
    if (key == "x_cells") return whole(d_.x_cells);
    if (key == "y_cells") return whole(d_.y_cells);
    if (key == "max_iters") return whole(d_.max_iters);
    if (key == "eps") return real(d_.eps);
    if (key == "ppcg_inner_steps") return whole(d_.ppcg_inner_steps);
    if (key == "presteps" || key == "ch_cg_presteps") return whole(d_.presteps);
    if (key == "epslim" || key == "ch_cg_epslim") return real(d_.eps_lim);
    if (key == "summary_frequency") return whole(d_.summary_frequency);
    if (key == "visit_frequency") return whole(d_.visit_frequency);
    if (key == "halo_depth") return whole(d_.halo_depth);
    if (key == "test_problem") return whole(d_.test_problem);
    if (key == "use_cg") return flag(), void(d_.solver = SolverKind::cg);
    if (key == "use_chebyshev") return flag(), void(d_.solver = SolverKind::chebyshev);
    if (key == "use_ppcg") return flag(), void(d_.solver = SolverKind::ppcg);
    if (key == "use_jacobi") return flag(), void(d_.solver = SolverKind::jacobi);
    if (key == "use_pipecg") return flag(), void(d_.solver = SolverKind::pipecg);  // tally's: TeaLeaf has none
    if (key == "errswitch") return flag(), void(d_.error_switch = true);
    if (key == "check_result") return flag(), void(d_.check_result = true);
    if (key == "coefficient_density") return flag(), void(d_.coefficient = Coefficient::density);
    if (key == "coefficient_inverse_density") return flag(), void(d_.coefficient = Coefficient::inverse_density);
    if (key == "preconditioner_on") return flag(), void(preconditioner_on_ = true);
    if (key == "preconditioner_type") {
      const std::string v = lower(one());
      if (v == "none") d_.preconditioner = Preconditioner::none;
      else if (v == "jac_diag") d_.preconditioner = Preconditioner::jac_diag;
      else if (v == "jac_block") d_.preconditioner = Preconditioner::jac_block;
      else fail("preconditioner_type: expected none, jac_diag or jac_block, got " + quoted(args[0]));
      type_given_ = true;
      return;
    }
    // TeaLeaf's boundaries are always reflective here (zero flux through the domain's faces).
    if (key == "reflective_boundary") return flag(), not_applied();
    if (key == "profiler_on" || key == "use_c_kernels" || key == "use_fortran_kernels" || key == "verbose_on")
      return flag(), not_applied();
    if (key == "num_chunks_per_rank" || key == "tiles_per_task" || key == "sub_tiles_per_tile" ||
        key == "tiles_per_problem") {
      if (integer(t[0], one()) < 1) fail(std::string(t[0]) + ": must be at least 1");
      return not_applied();
    }
    fail("unknown keyword " + quoted(t[0]));
  }

  /// `state N key=value ...`
  void state(const std::vector<std::string_view>& a) {
    if (a.empty()) fail("state: expected its number");
    const std::int64_t n = integer("state", a[0]);
    if (n < 1 || n > kMaxStates)
      fail("state: the number must be in [1, " + std::to_string(kMaxStates) + "] (got " + quoted(a[0]) + ")");
    const auto k = static_cast<std::size_t>(n - 1);
    if (d_.states.size() <= k) d_.states.resize(k + 1), defined_.resize(k + 1, false);
    if (defined_[k])
      fail("state " + std::to_string(n) + " defined twice (first " +
           (d_.states[k].line > 0 ? "on line " + std::to_string(d_.states[k].line) : std::string("by --set")) + ")");
    State s;
    s.line = line_;
    std::optional<double> density, energy, xmin, xmax, ymin, ymax, radius;
    std::optional<Geometry> geometry;
    for (std::size_t i = 1; i < a.size(); i += 2) {
      const std::string key = lower(a[i]);
      if (i + 1 >= a.size()) fail("state " + std::to_string(n) + ": " + quoted(a[i]) + " has no value");
      const std::string_view v = a[i + 1];
      const auto set = [&](std::optional<double>& o) {
        if (o) fail("state " + std::to_string(n) + ": " + key + " given twice");
        o = number(key, v);
      };
      if (key == "density") set(density);
      else if (key == "energy") set(energy);
      else if (key == "xmin") set(xmin);
      else if (key == "xmax") set(xmax);
      else if (key == "ymin") set(ymin);
      else if (key == "ymax") set(ymax);
      else if (key == "radius") set(radius);
      else if (key == "geometry") {
        if (geometry) fail("state " + std::to_string(n) + ": geometry given twice");
        const std::string g = lower(v);
        if (g == "rectangle") geometry = Geometry::rectangle;
        else if (g == "circle" || g == "circular") geometry = Geometry::circle;
        else if (g == "point") geometry = Geometry::point;
        else
          fail("state " + std::to_string(n) + ": geometry must be rectangle, circle or point (got " + quoted(v) + ")");
      } else {
        fail("state " + std::to_string(n) + ": unknown key " + quoted(a[i]));
      }
    }
    const std::string name = "state " + std::to_string(n);
    if (!density) fail(name + ": density is missing");
    if (!energy) fail(name + ": energy is missing");
    if (!(*density > 0.0)) fail(name + ": density must be > 0 (got " + std::to_string(*density) + ")");
    s.density = *density;
    s.energy = *energy;
    if (n == 1) {
      if (geometry || xmin || xmax || ymin || ymax || radius)
        fail("state 1 is the background, everywhere: it takes no geometry or coordinates");
    } else {
      if (!geometry) fail(name + ": geometry is missing (rectangle, circle or point)");
      s.geometry = *geometry;
      const auto need = [&](const std::optional<double>& o, const char* what) {
        if (!o) fail(name + ": a " + to_string(s.geometry) + " needs " + what);
        return *o;
      };
      const auto refuse = [&](const std::optional<double>& o, const char* what) {
        if (o) fail(name + ": a " + to_string(s.geometry) + " takes no " + what);
      };
      s.xmin = need(xmin, "xmin");
      s.ymin = need(ymin, "ymin");
      if (s.geometry == Geometry::rectangle) {
        s.xmax = need(xmax, "xmax");
        s.ymax = need(ymax, "ymax");
        refuse(radius, "radius");
        if (!(s.xmax > s.xmin) || !(s.ymax > s.ymin)) fail(name + ": needs xmin < xmax and ymin < ymax");
      } else {
        refuse(xmax, "xmax (its centre is xmin, ymin)");
        refuse(ymax, "ymax (its centre is xmin, ymin)");
        if (s.geometry == Geometry::circle) {
          s.radius = need(radius, "radius");
          if (!(s.radius > 0.0)) fail(name + ": radius must be > 0");
        } else {
          refuse(radius, "radius");
        }
      }
    }
    d_.states[k] = s;
    defined_[k] = true;
  }

  void set_where(std::string w) { where_ = std::move(w); }

  /// The checks that need every line.
  void finish() {
    where_ = d_.name;
    if (preconditioner_on_ && !type_given_) d_.preconditioner = Preconditioner::jac_diag;
    if (d_.x_cells < 1 || d_.y_cells < 1)
      fail("x_cells and y_cells must be at least 1 (got " + std::to_string(d_.x_cells) + " x " +
           std::to_string(d_.y_cells) + ")");
    // Every field holds (x_cells + 2) (y_cells + 2) doubles; the product must fit comfortably.
    if (d_.x_cells > (std::int64_t{1} << 30) || d_.y_cells > (std::int64_t{1} << 30) ||
        (d_.x_cells + 2) * (d_.y_cells + 2) > (std::int64_t{1} << 40))
      fail("x_cells x y_cells is too large (" + std::to_string(d_.x_cells) + " x " + std::to_string(d_.y_cells) + ")");
    if (!(d_.xmax > d_.xmin)) fail("needs xmin < xmax");
    if (!(d_.ymax > d_.ymin)) fail("needs ymin < ymax");
    if (!std::isfinite(d_.dx()) || !std::isfinite(d_.dy()) || !(d_.dx() > 0.0) || !(d_.dy() > 0.0))
      fail("the cell size (xmax - xmin) / x_cells, (ymax - ymin) / y_cells must be a positive finite number");
    if (!(d_.initial_timestep > 0.0)) fail("initial_timestep must be > 0");
    if (!(d_.end_time > 0.0)) fail("end_time must be > 0");
    if (d_.end_step < 1) fail("end_step must be at least 1");
    if (d_.max_iters < 1 || d_.max_iters > (std::int64_t{1} << 31)) fail("max_iters must be in [1, 2^31]");
    if (!(d_.eps > 0.0)) fail("eps must be > 0");
    if (d_.ppcg_inner_steps < 1 || d_.ppcg_inner_steps > 100000) fail("ppcg_inner_steps must be in [1, 100000]");
    if (d_.presteps < 0) fail("presteps must be >= 0");
    if (!(d_.eps_lim > 0.0)) fail("epslim must be > 0");
    if (d_.summary_frequency < 0) fail("summary_frequency must be >= 0 (0: first and last only)");
    if (d_.visit_frequency < 0) fail("visit_frequency must be >= 0");
    if (d_.halo_depth < 1) fail("halo_depth must be at least 1");
    if (d_.states.empty()) fail("no states: at least 'state 1 density=.. energy=..' (the background)");
    for (std::size_t k = 0; k < d_.states.size(); ++k)
      if (!defined_[k])
        fail("state " + std::to_string(k + 1) + " is missing (states 1 to " + std::to_string(d_.states.size()) +
             " are used)");
    for (std::size_t k = 1; k < d_.states.size(); ++k) {
      const State& s = d_.states[k];
      const bool inside = s.xmin >= d_.xmin && s.ymin >= d_.ymin &&
                          (s.geometry == Geometry::rectangle ? s.xmax <= d_.xmax && s.ymax <= d_.ymax
                                                             : s.xmin <= d_.xmax && s.ymin <= d_.ymax);
      if (!inside) {
        where_ = s.line > 0 ? d_.name + ":" + std::to_string(s.line) : std::string("--set");
        fail("state " + std::to_string(k + 1) + " lies outside the domain [" + std::to_string(d_.xmin) + ", " +
             std::to_string(d_.xmax) + "] x [" + std::to_string(d_.ymin) + ", " + std::to_string(d_.ymax) + "]" +
             (s.geometry == Geometry::rectangle ? "" : " (its centre)"));
      }
    }
  }

 private:
  Deck& d_;
  std::string where_;
  int line_ = 0;
  std::vector<bool> defined_;  ///< whether each state has been defined
  bool preconditioner_on_ = false, type_given_ = false;
};

}  // namespace

Deck parse_deck(std::string_view text, const std::string& name, const std::vector<std::string>& overrides) {
  Deck d;
  d.name = name;
  Parser p(d, name);
  // The lines, and where the *tea block lies: a deck without the markers is all one block.
  std::vector<std::string_view> lines;
  for (std::size_t i = 0; i <= text.size();) {
    std::size_t j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    lines.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  std::size_t begin = 0, end = lines.size();
  std::optional<std::size_t> open, close;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::vector<std::string_view> t = tokens(lines[k]);
    if (t.empty()) continue;
    const std::string w = lower(t[0]);
    const auto at = [&] { return name + ":" + std::to_string(k + 1); };
    if (w == "*tea" || w == "*endtea") {
      if (t.size() > 1) p.set_where(at()), p.fail(w + ": nothing may follow it on its line");
      if (w == "*tea") {
        if (open) p.set_where(at()), p.fail("a second *tea (the first on line " + std::to_string(*open + 1) + ")");
        open = k;
      } else {
        if (!open) p.set_where(at()), p.fail("*endtea without *tea");
        if (close) p.set_where(at()), p.fail("a second *endtea");
        close = k;
      }
    } else if (!open || close) {
      if (open || close)
        p.set_where(at()), p.fail("outside *tea ... *endtea: " + quoted(t[0]) + " (only comments may stand there)");
    }
  }
  if (open && !close) p.set_where(name), p.fail("*tea without *endtea");
  if (open) {
    // Lines before *tea hold nothing but comments (checked above only once a marker was seen).
    for (std::size_t k = 0; k < *open; ++k)
      if (!tokens(lines[k]).empty())
        p.set_where(name + ":" + std::to_string(k + 1)),
            p.fail("outside *tea ... *endtea: only comments may stand there");
    begin = *open + 1;
    end = *close;
  }
  for (std::size_t k = begin; k < end; ++k) {
    p.set_where(name + ":" + std::to_string(k + 1));
    p.line(lines[k], static_cast<int>(k + 1));
  }
  for (const std::string& o : overrides) {
    p.set_where("--set " + quoted(o));
    p.line(o, 0);
  }
  p.finish();
  return d;
}

Deck read_deck(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("--deck " + path + ": cannot be read");
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw InputError("--deck " + path + ": cannot be read");
  return parse_deck(s.str(), path, overrides);
}

std::string deck_text(const Deck& d) {
  std::ostringstream o;
  o.precision(17);
  o << "*tea\n";
  for (std::size_t k = 0; k < d.states.size(); ++k) {
    const State& s = d.states[k];
    o << "state " << k + 1 << " density=" << s.density << " energy=" << s.energy;
    if (k > 0) {
      o << " geometry=" << to_string(s.geometry) << " xmin=" << s.xmin << " ymin=" << s.ymin;
      if (s.geometry == Geometry::rectangle) o << " xmax=" << s.xmax << " ymax=" << s.ymax;
      if (s.geometry == Geometry::circle) o << " radius=" << s.radius;
    }
    o << "\n";
  }
  o << "x_cells=" << d.x_cells << "\ny_cells=" << d.y_cells << "\nxmin=" << d.xmin << "\nymin=" << d.ymin
    << "\nxmax=" << d.xmax << "\nymax=" << d.ymax << "\ninitial_timestep=" << d.initial_timestep
    << "\nend_time=" << d.end_time << "\nend_step=" << d.end_step << "\nmax_iters=" << d.max_iters << "\neps=" << d.eps;
  o << "\nuse_" << (d.solver == SolverKind::chebyshev ? "chebyshev" : to_string(d.solver));
  o << "\nppcg_inner_steps=" << d.ppcg_inner_steps << "\npresteps=" << d.presteps << "\nepslim=" << d.eps_lim;
  if (d.error_switch) o << "\nerrswitch";
  o << "\npreconditioner_type " << to_string(d.preconditioner) << "\ncoefficient_" << to_string(d.coefficient);
  o << "\nsummary_frequency=" << d.summary_frequency << "\nvisit_frequency=" << d.visit_frequency
    << "\nhalo_depth=" << d.halo_depth;
  if (d.check_result) o << "\ncheck_result";
  if (d.test_problem != 0) o << "\ntest_problem " << d.test_problem;
  o << "\n*endtea\n";
  return o.str();
}

}  // namespace tally::heat2d::implicit
