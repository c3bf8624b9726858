# A build without MPI started by a launcher (its environment: OMPI_COMM_WORLD_SIZE=2) must say so and
# exit 2 instead of running the job twice. -DPROGRAM=<a run_ranks program>
execute_process(COMMAND ${CMAKE_COMMAND} -E env OMPI_COMM_WORLD_SIZE=2 ${PROGRAM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "started by an MPI launcher with 2 ranks, but this build has no MPI")
  message(FATAL_ERROR "expected exit 2 and the no-MPI message, got exit ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(out MATCHES "test cases")
  message(FATAL_ERROR "the program ran its body although it refused:\n${out}")
endif()
message(STATUS "refused as expected: ${err}")
