#include "tally/common/json.hpp"

#include <cmath>
#include <cstdio>

namespace tally {

std::string json_escape(std::string_view s) {
  std::string r;
  r.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '"': r += "\\\""; break;
      case '\\': r += "\\\\"; break;
      case '\n': r += "\\n"; break;
      case '\t': r += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += c;
        }
    }
  }
  return r;
}

JsonLine& JsonLine::raw(std::string_view key, const std::string& value) {
  if (!body_.empty()) body_ += ",";
  body_ += "\"" + json_escape(key) + "\":" + value;
  return *this;
}

JsonLine& JsonLine::add(std::string_view key, std::string_view value) {
  return raw(key, "\"" + json_escape(value) + "\"");
}
JsonLine& JsonLine::add(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
JsonLine& JsonLine::add(std::string_view key, double value) {
  if (!std::isfinite(value)) return raw(key, "null");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return raw(key, buf);
}

}  // namespace tally
