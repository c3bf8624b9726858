// matmul: C = A B with each element's dot product reduced at a chosen level. See README.md.
#include "matmul.hpp"
#include "tally/ranks/session.hpp"

int main(int argc, char** argv) {
  return tally::ranks::run_ranks("matmul", argc, argv, [&](tally::ranks::Comm& comm) { return tally::matmul::run(argc, argv, comm); });
}
