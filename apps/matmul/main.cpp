// matmul: C = A B with each element's dot product reduced at a chosen level. See README.md.
#include "matmul.hpp"
#include "tally/reduce/rank.hpp"

int main(int argc, char** argv) {
  return tally::reduce::run_ranks("matmul", argc, argv, [&](tally::reduce::Comm& comm) { return tally::matmul::run(argc, argv, comm); });
}
