#pragma once
// One machine-readable summary line: {"app":"heat2d","iterations":812,...}

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace tally {

class JsonLine {
 public:
  JsonLine& add(std::string_view key, std::string_view value);
  JsonLine& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  JsonLine& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
  JsonLine& add(std::string_view key, bool value);
  JsonLine& add(std::string_view key, double value);  ///< non-finite values become null
  template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) JsonLine& add(std::string_view key, I value) {
    return raw(key, std::to_string(value));
  }
  [[nodiscard]] std::string str() const { return "{" + body_ + "}"; }

 private:
  JsonLine& raw(std::string_view key, const std::string& value);
  std::string body_;
};

std::string json_escape(std::string_view s);

}  // namespace tally
