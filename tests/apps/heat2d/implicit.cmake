# heat2d's implicit mode (apps/heat2d/implicit, TeaLeaf's decks and solvers), included by this
# folder's CMakeLists.txt.
set(tea_data ${PROJECT_SOURCE_DIR}/data/tealeaf)

# The deck parser, and a thousand mutated decks fed to it (run under the sanitizers by the CI's asan build).
ConfigureTest(tea_deck_test SOURCES test_tea_deck.cpp test_tea_deck_fuzz.cpp LIBS heat2d_implicit)
target_compile_definitions(tea_deck_test PRIVATE TEA_DATA_DIR="${tea_data}")

# The CPU engine: TeaLeaf's published temperatures, the exact field summary, thread-count independence.
ConfigureTest(tea_solve_test SOURCES test_tea_solve.cpp LIBS heat2d_implicit OpenMP::OpenMP_CXX)
target_compile_definitions(tea_solve_test PRIVATE TEA_DATA_DIR="${tea_data}")

# heat2d --deck: exit codes, the JSON line, the result file.
ConfigureTest(tea_cli_test SOURCES test_tea_cli.cpp LIBS heat2d_implicit heat2d_core)
target_compile_definitions(tea_cli_test PRIVATE TEA_DATA_DIR="${tea_data}" HEAT2D_EXE="$<TARGET_FILE:heat2d>")
add_dependencies(tea_cli_test heat2d)

# CUDA against the CPU engine, bit for bit (GPU: skipped without a usable GPU).
ConfigureTest(tea_gpu_test GPU SOURCES test_tea_gpu.cpp LIBS heat2d_implicit)
if(TARGET tea_gpu_test)
  target_compile_definitions(tea_gpu_test PRIVATE TEA_DATA_DIR="${tea_data}")
endif()

# Across ranks (CPU): the executable under the MPI launcher with 1, 2, 3 ranks against one process,
# bitwise; bad input on several ranks. Without MPI the launcher is missing: not built.
if(TALLY_HAS_MPI)
  ConfigureTest(tea_ranks_test SOURCES test_tea_ranks.cpp LIBS heat2d_implicit heat2d_core tally_test_mpiexec LABELS ranks)
  target_compile_definitions(tea_ranks_test PRIVATE TEA_DATA_DIR="${tea_data}" HEAT2D_EXE="$<TARGET_FILE:heat2d>")
  add_dependencies(tea_ranks_test heat2d)
endif()
