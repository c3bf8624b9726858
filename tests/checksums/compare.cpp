// Line-by-line comparison of checksum files: "name value..." lines; "#" lines are comments, except
// "# device-key: ..." (the GPU whose launch shapes the results depend on) and "# columns PREFIX
// LABEL..." (what each value of the lines whose name starts with PREFIX stands for).

#include "compare.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace checksums {

namespace {

struct Entry {
  std::string name;
  std::vector<std::string> values;
};

struct File {
  std::vector<Entry> entries;
  std::map<std::string, std::size_t> index;
  std::string device_key;
  std::vector<std::pair<std::string, std::vector<std::string>>> columns;
};

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

File load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  File f;
  int no = 0;
  for (std::string line; std::getline(in, line);) {
    ++no;
    const auto w = words(line);
    if (w.empty()) continue;
    if (w[0][0] == '#') {
      const std::string key = "# device-key:";
      if (line.rfind(key, 0) == 0) f.device_key = line.substr(line.find_first_not_of(' ', key.size()));
      if (w.size() > 2 && w[0] == "#" && w[1] == "columns")
        f.columns.emplace_back(w[2], std::vector<std::string>(w.begin() + 3, w.end()));
      continue;
    }
    if (w.size() < 2) throw std::runtime_error(path + ":" + std::to_string(no) + ": a name without a value");
    if (f.index.count(w[0]) != 0) throw std::runtime_error(path + ":" + std::to_string(no) + ": " + w[0] + " twice");
    f.index[w[0]] = f.entries.size();
    f.entries.push_back({w[0], std::vector<std::string>(w.begin() + 1, w.end())});
  }
  return f;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

bool not_run(const std::vector<std::string>& v) { return !v.empty() && v[0] == "n/a"; }

/// "gang, worker+vector" for the values that differ, where a "# columns" line names them.
std::string which(const File& f, const std::string& name, const std::vector<std::string>& a,
                  const std::vector<std::string>& b) {
  if (a.size() != b.size() || a.size() < 2) return "";
  const std::vector<std::string>* labels = nullptr;
  for (const auto& [prefix, l] : f.columns)
    if (name.rfind(prefix, 0) == 0 && l.size() == a.size()) labels = &l;
  std::string s;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) s += (s.empty() ? "" : ", ") + (labels ? (*labels)[i] : "value " + std::to_string(i + 1));
  return " (" + s + ")";
}

}  // namespace

int compare_files(const std::string& recorded_path, const std::string& current_path) {
  const File rec = load(recorded_path), cur = load(current_path);
  if (rec.device_key != cur.device_key) {
    std::printf(
        "recorded on %s, this is %s: launch shapes (and with them the bits of non-exact sums) may differ; "
        "record from the baseline on this kind of device\n",
        rec.device_key.empty() ? "no GPU" : rec.device_key.c_str(),
        cur.device_key.empty() ? "no GPU" : cur.device_key.c_str());
    return skip_code;
  }
  std::size_t same = 0, differ = 0, missing = 0, skipped = 0, added = 0;
  for (const Entry& e : rec.entries) {
    const auto it = cur.index.find(e.name);
    if (it == cur.index.end()) {
      std::printf("MISSING  %s (recorded, not produced now)\n", e.name.c_str());
      ++missing;
      continue;
    }
    const auto& now = cur.entries[it->second].values;
    if (not_run(now) || not_run(e.values)) {
      std::printf("NOT RUN  %s: %s\n", e.name.c_str(), join(not_run(now) ? now : e.values).c_str());
      ++skipped;
    } else if (now != e.values) {
      std::printf("DIFFERS  %s%s\n  recorded: %s\n  now:      %s\n", e.name.c_str(),
                  which(rec, e.name, e.values, now).c_str(), join(e.values).c_str(), join(now).c_str());
      ++differ;
    } else {
      ++same;
    }
  }
  for (const Entry& e : cur.entries)
    if (rec.index.count(e.name) == 0) {
      std::printf("NEW      %s (not in the recording: not compared)\n", e.name.c_str());
      ++added;
    }
  std::printf("checksums: %zu the same, %zu differ, %zu missing, %zu not run in this build, %zu new (%s against %s)\n",
              same, differ, missing, skipped, added, current_path.c_str(), recorded_path.c_str());
  return differ + missing == 0 ? 0 : 1;
}

}  // namespace checksums
