#pragma once
#include <string>

namespace checksums {

inline constexpr int skip_code = 77;  ///< CTest's SKIP_RETURN_CODE: no GPU, or not this kind of GPU

/// Compares a recorded checksum file with a current one, case by case; prints every case that differs
/// or is missing, then a summary. 0: every recorded case the same; 1: some differ or are missing;
/// skip_code: the files come from devices whose launch shapes differ (their "# device-key:" lines).
int compare_files(const std::string& recorded, const std::string& current);

}  // namespace checksums
