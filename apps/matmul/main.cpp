// matmul: C = A B with each element's dot product reduced at a chosen level. See README.md.
#include "matmul.hpp"
#include "tally/common/app.hpp"

int main(int argc, char** argv) {
  return tally::run_app("matmul", [&] { return tally::matmul::run(argc, argv); });
}
