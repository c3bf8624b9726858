# Runs h5_collective_probe (h5_collective_probe.cpp) under the launcher: a good run leaves exactly
# the finished file; a rank failing during or after the collective write ends the job non-zero and
# leaves nothing (no file, no temporary).
# -DPROGRAM=<probe> -DLAUNCH=<launcher prefix up to the rank count, ;-list> -DN=<ranks> -DDIR=<scratch folder>
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
function(expect mode want_rc want_files)
  execute_process(COMMAND ${LAUNCH} ${N} ${PROGRAM} ${mode} ${DIR}/out.h5 RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 60)
  file(GLOB files RELATIVE ${DIR} ${DIR}/*)
  set(ok_rc FALSE)
  if(want_rc STREQUAL "nonzero" AND rc MATCHES "^[0-9]+$" AND NOT rc EQUAL 0)
    set(ok_rc TRUE)
  elseif(rc STREQUAL want_rc)
    set(ok_rc TRUE)
  endif()
  if(NOT ok_rc OR NOT "${files}" STREQUAL "${want_files}")
    message(FATAL_ERROR "${mode}: expected exit ${want_rc} and files '${want_files}', got exit ${rc} and '${files}'\n"
                        "stdout: ${out}\nstderr: ${err}")
  endif()
  message(STATUS "${mode}: exit ${rc}, files '${files}' as expected")
  file(REMOVE_RECURSE ${DIR})
  file(MAKE_DIRECTORY ${DIR})
endfunction()
expect(ok 0 "out.h5")
expect(throw-last nonzero "")
expect(agree-last 1 "")
file(REMOVE_RECURSE ${DIR})
