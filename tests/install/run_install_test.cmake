# Installs the build tree into a scratch prefix, then configures, builds and runs the consumer project.
# -DBUILD=<tally build dir> -DSRC=<consumer source> -DWORK=<scratch dir> -DGENERATOR=<generator>
file(REMOVE_RECURSE "${WORK}")
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD};--prefix;${WORK}/prefix"
    "${CMAKE_COMMAND};-S;${SRC};-B;${WORK}/build;-G;${GENERATOR};-DCMAKE_PREFIX_PATH=${WORK}/prefix"
    "${CMAKE_COMMAND};--build;${WORK}/build"
    "${WORK}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${step}\n${out}\n${err}")
  endif()
endforeach()
message(STATUS "${out}")
