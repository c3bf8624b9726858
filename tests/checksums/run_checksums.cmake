# Checksums of fixed problems (cmake -P): the library's cases (tally-checksums library), then each app
# run with fixed options into WORK and its results hashed (tally-checksums hash); then either compared
# with the recording (MODE=check) or written as the recording (MODE=record). Only the apps' documented
# CLI options and HDF5 layout are used, so that a restructured tree is held to the same results.
#
#   -DMODE=check|record -DBACKEND=cpu|cuda -DTOOL=<tally-checksums> -DREFERENCE=<data/checksums_*.txt>
#   -DWORK=<scratch folder> [-DHEAT2D=<exe>] [-DMATMUL=<exe>] [-DMCPI=<exe>] [-DCURAND_HOST=ON|OFF]
#   [-DSOURCE_DIR=<tree, for the commit named in a recording>] [-DRELEASE_BUILD=1|0 (Release, no sanitizers)]
#
# A skip (no GPU, no GPU recording of this kind of GPU) prints a line starting "CHECKSUMS SKIPPED"
# (the test's SKIP_REGULAR_EXPRESSION) and ends normally; a difference ends with an error.
cmake_minimum_required(VERSION 3.25)

foreach(v MODE BACKEND TOOL REFERENCE WORK)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_checksums.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT MODE MATCHES "^(check|record)$" OR NOT BACKEND MATCHES "^(cpu|cuda)$")
  message(FATAL_ERROR "run_checksums.cmake: MODE is check or record, BACKEND cpu or cuda")
endif()

# matmul's CPU worker level splits K by thread (its bits depend on the thread count): every run has two
# threads. Passive waiting keeps OpenMP's spinning threads from starving each other on a loaded machine.
set(ENV{OMP_NUM_THREADS} 2)
set(ENV{OMP_WAIT_POLICY} PASSIVE)

# matmul's CPU vector, worker+vector and gang levels fold each dot product by an `omp simd` reduction,
# whose order the compiler picks: their bits are the recording's only in a build like the recording's
# (Release, no sanitizers). Other builds (the asan preset, Debug) leave them out.
set(simd_order "")
if(NOT RELEASE_BUILD)
  if(MODE STREQUAL "record")
    message(FATAL_ERROR "record from a Release build without sanitizers (the build a recording is held to)")
  endif()
  set(simd_order "the compiler's omp simd order, compared in Release builds only")
endif()

# GPU recordings: REFERENCE and, for other kinds of GPU, <REFERENCE without .txt>-<device key>.txt
# beside it; the one whose "# device-key:" is this GPU's is compared.
get_filename_component(ref_dir "${REFERENCE}" DIRECTORY)
get_filename_component(ref_stem "${REFERENCE}" NAME_WLE)
function(device_key_of text out)
  string(REGEX MATCH "# device-key: ([^\n]*)" m "${text}")
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()
if(MODE STREQUAL "check" AND BACKEND STREQUAL "cpu" AND NOT EXISTS "${REFERENCE}")
  message(FATAL_ERROR "no recording ${REFERENCE}")
endif()
if(MODE STREQUAL "check" AND BACKEND STREQUAL "cuda")
  file(GLOB recordings "${ref_dir}/${ref_stem}.txt" "${ref_dir}/${ref_stem}-*.txt")
  if(NOT recordings)
    message("CHECKSUMS SKIPPED: no GPU recording (${REFERENCE}); record it from the baseline: see tests/checksums/README.md")
    return()
  endif()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# ---- the library ---------------------------------------------------------------------------------
execute_process(COMMAND "${TOOL}" library --backend ${BACKEND} RESULT_VARIABLE rc OUTPUT_VARIABLE lines ERROR_VARIABLE err)
if(rc EQUAL 77 AND MODE STREQUAL "record")
  message(FATAL_ERROR "cannot record: ${lines}")
elseif(rc EQUAL 77)
  message("CHECKSUMS SKIPPED: ${lines}")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "tally-checksums library --backend ${BACKEND} failed (${rc}): ${err}")
endif()
set_property(GLOBAL PROPERTY checksum_lines "${lines}")
set_property(GLOBAL PROPERTY checksum_runs 0)
if(BACKEND STREQUAL "cuda")
  device_key_of("${lines}" key)
  string(REGEX REPLACE "[^A-Za-z0-9_]+" "-" key_slug "${key}")
  set(matching "")
  set(keys "")
  foreach(f IN LISTS recordings)  # check: the recording of this kind of GPU
    file(READ "${f}" text)
    device_key_of("${text}" k)
    list(APPEND keys "${k}")
    if(k STREQUAL key)
      set(matching "${f}")
    endif()
  endforeach()
  if(MODE STREQUAL "check" AND matching STREQUAL "")
    list(JOIN keys "; " keys)
    message("CHECKSUMS SKIPPED: the GPU recordings are of ${keys}; this GPU is ${key}: record from the baseline on it "
            "(tests/checksums/README.md)")
    return()
  elseif(MODE STREQUAL "check")
    set(REFERENCE "${matching}")
  elseif(EXISTS "${REFERENCE}")  # record: beside a recording of another kind of GPU, not over it
    file(READ "${REFERENCE}" text)
    device_key_of("${text}" k)
    if(NOT k STREQUAL key)
      set(REFERENCE "${ref_dir}/${ref_stem}-${key_slug}.txt")
    endif()
  endif()
endif()

# ---- the apps ------------------------------------------------------------------------------------
# app_case(<name> EXE <path> [UNAVAILABLE <why>] ARGS <options...> HASH <datasets and @attributes...>)
# Runs the app with ARGS --out <file> --quiet and records "<name>/exit-code <rc>"; its HASH items are
# hashed at the end, all files in one call, as "<name><item> <hash>". An app or a mode this build
# lacks records "n/a" (not compared) under the same names.
function(app_case name)
  cmake_parse_arguments(arg "" "EXE;UNAVAILABLE" "ARGS;HASH" ${ARGN})
  set(out "")
  if("${arg_EXE}" STREQUAL "" OR NOT "${arg_UNAVAILABLE}" STREQUAL "")
    set(why "${arg_UNAVAILABLE}")
    if(why STREQUAL "")
      set(why "the app is not built")
    endif()
    string(APPEND out "${name}/exit-code n/a ${why}\n")
    foreach(item IN LISTS arg_HASH)
      string(APPEND out "${name}${item} n/a ${why}\n")
    endforeach()
  else()
    string(REPLACE "/" "_" file "${name}")
    set(file "${WORK}/${file}.h5")
    execute_process(COMMAND "${arg_EXE}" ${arg_ARGS} --out "${file}" --quiet RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
    string(APPEND out "${name}/exit-code ${rc}\n")
    if(NOT rc EQUAL 0)
      message("${name}: ${arg_EXE} ${arg_ARGS} exited ${rc}:\n${o}${e}")
    endif()
    set_property(GLOBAL APPEND PROPERTY checksum_hash_args --prefix "${name}" "${file}" ${arg_HASH})
    get_property(runs GLOBAL PROPERTY checksum_runs)
    math(EXPR runs "${runs} + 1")
    set_property(GLOBAL PROPERTY checksum_runs ${runs})
  endif()
  set_property(GLOBAL APPEND_STRING PROPERTY checksum_app_lines "${out}")
endfunction()

set(heat2d_hash /field /residual/iteration /residual/value @iterations @status @final_residual @sweeps_per_pass)
set(matmul_hash /C @status)
set(mcpi_hash @hits /batches/n /batches/hits)
set(levels vector worker worker+vector gang tiled)
set(mm_common --repeats 1 --warmup 0 --no-eigen --write-c --seed 11)

if(BACKEND STREQUAL "cpu")
  # heat2d: steady (a few hundred sweeps on non-square grids, checked every 6 or 8: temporal blocking
  # at the automatic depth and at fixed ones), a converging run, a diverging one (NaN: exit 1, status
  # diverged), transient runs.
  foreach(p double float)
    set(g --backend cpu --precision ${p} --mode steady --tol 1e-12 --check-every 6 --max-iter 300 --nx 67 --ny 45)
    app_case(heat2d/steady-${p}-67x45 EXE "${HEAT2D}" ARGS ${g} HASH ${heat2d_hash})
    app_case(heat2d/steady-${p}-67x45-t1 EXE "${HEAT2D}" ARGS ${g} --sweeps-per-pass 1 HASH ${heat2d_hash})
    app_case(heat2d/steady-${p}-67x45-t3 EXE "${HEAT2D}" ARGS ${g} --sweeps-per-pass 3 HASH ${heat2d_hash})
    app_case(heat2d/steady-${p}-515x389 EXE "${HEAT2D}"
             ARGS --backend cpu --precision ${p} --tol 1e-12 --check-every 8 --max-iter 200 --nx 515 --ny 389 HASH ${heat2d_hash})
    app_case(heat2d/converging-${p}-33x50 EXE "${HEAT2D}"
             ARGS --backend cpu --precision ${p} --nx 33 --ny 50 --tol 1e-5 --check-every 4 --init sin --bc-left 0.5
             HASH ${heat2d_hash})
    app_case(heat2d/diverging-${p}-35x21 EXE "${HEAT2D}"
             ARGS --backend cpu --precision ${p} --nx 35 --ny 21 --init nan --check-every 4 --max-iter 100 HASH ${heat2d_hash})
    app_case(heat2d/transient-${p}-41x57 EXE "${HEAT2D}"
             ARGS --backend cpu --precision ${p} --mode transient --nx 41 --ny 57 --bc-top 0 --bc-right sin --init sin
                  --alpha 0.5 --t-end 0.01 --check-every 5
             HASH ${heat2d_hash} @sim_time @dt)
  endforeach()
  # matmul: every CPU level on a small odd shape; the levels that split K (worker by thread, gang by
  # 1024-element chunks, and an explicit split) with K = 3001; the exact dot products.
  foreach(p double float)
    foreach(level IN LISTS levels)
      set(na "")
      if(level MATCHES "^(vector|worker\\+vector|gang)$")
        set(na "${simd_order}")
      endif()
      app_case(matmul/${p}-37x29x53/${level} EXE "${MATMUL}" UNAVAILABLE "${na}"
               ARGS --backend cpu --precision ${p} --m 37 --n 29 --k 53 --level ${level} ${mm_common} HASH ${matmul_hash})
    endforeach()
    app_case(matmul/${p}-13x11x3001/worker EXE "${MATMUL}"
             ARGS --backend cpu --precision ${p} --m 13 --n 11 --k 3001 --level worker ${mm_common} HASH ${matmul_hash})
    app_case(matmul/${p}-13x11x3001/gang EXE "${MATMUL}" UNAVAILABLE "${simd_order}"
             ARGS --backend cpu --precision ${p} --m 13 --n 11 --k 3001 --level gang ${mm_common} HASH ${matmul_hash})
    app_case(matmul/${p}-13x11x3001/gang-split3 EXE "${MATMUL}" UNAVAILABLE "${simd_order}"
             ARGS --backend cpu --precision ${p} --m 13 --n 11 --k 3001 --level gang --split-k 3 ${mm_common} HASH ${matmul_hash})
    foreach(level IN LISTS levels)
      app_case(matmul/${p}-37x29x53-exact/${level} EXE "${MATMUL}"
               ARGS --backend cpu --precision ${p} --m 37 --n 29 --k 53 --level ${level} --exact ${mm_common} HASH ${matmul_hash})
    endforeach()
  endforeach()
  # mcpi: the CPU's own Philox (every build), a continued stream, and cuRAND's host generators
  # (builds with the CUDA toolkit: they run on the CPU; not mrg32k3a, whose set-up takes most of a
  # second there: the GPU checksums have it).
  set(mc --backend cpu --n 1000003 --batch 262144 --seed 7)
  app_case(mcpi/philox-device EXE "${MCPI}" ARGS ${mc} --generator philox --api device HASH ${mcpi_hash})
  app_case(mcpi/philox-device-offset EXE "${MCPI}"
           ARGS --backend cpu --n 500000 --offset 123456789 --seed 7 --generator philox HASH ${mcpi_hash})
  set(no_curand "")
  if(NOT CURAND_HOST)
    set(no_curand "no CUDA toolkit in this build")
  endif()
  foreach(gen_api philox:host xorwow:host sobol:device sobol:host scrambled-sobol:device scrambled-sobol:host)
    string(REPLACE ":" ";" ga "${gen_api}")
    list(GET ga 0 gen)
    list(GET ga 1 api)
    app_case(mcpi/${gen}-${api} EXE "${MCPI}" UNAVAILABLE "${no_curand}"
             ARGS --backend cpu --n 200003 --batch 65536 --seed 7 --generator ${gen} --api ${api} HASH ${mcpi_hash})
  endforeach()
else()
  # heat2d on the GPU: each CUDA kernel (persistent, registers, async) one sweep a pass, and the
  # temporally blocked kernel at the automatic depth.
  foreach(p double float)
    set(g --backend cuda --precision ${p} --mode steady --tol 1e-12 --check-every 6 --max-iter 300 --nx 67 --ny 45)
    set(big --backend cuda --precision ${p} --tol 1e-12 --check-every 8 --max-iter 200 --nx 515 --ny 389)
    set(conv --backend cuda --precision ${p} --nx 33 --ny 50 --tol 1e-5 --check-every 4 --init sin --bc-left 0.5)
    set(trans --backend cuda --precision ${p} --mode transient --nx 41 --ny 57 --bc-top 0 --bc-right sin --init sin
              --alpha 0.5 --t-end 0.01 --check-every 5)
    foreach(kernel persistent registers async)
      app_case(heat2d/steady-${p}-67x45/${kernel}-t1 EXE "${HEAT2D}" ARGS ${g} --cuda-kernel ${kernel} --sweeps-per-pass 1
               HASH ${heat2d_hash})
      app_case(heat2d/steady-${p}-515x389/${kernel}-t1 EXE "${HEAT2D}" ARGS ${big} --cuda-kernel ${kernel} --sweeps-per-pass 1
               HASH ${heat2d_hash})
      app_case(heat2d/converging-${p}-33x50/${kernel}-t1 EXE "${HEAT2D}" ARGS ${conv} --cuda-kernel ${kernel}
               --sweeps-per-pass 1 HASH ${heat2d_hash})
      app_case(heat2d/transient-${p}-41x57/${kernel}-t1 EXE "${HEAT2D}" ARGS ${trans} --cuda-kernel ${kernel}
               --sweeps-per-pass 1 HASH ${heat2d_hash} @sim_time @dt)
    endforeach()
    app_case(heat2d/diverging-${p}-35x21/persistent-t1 EXE "${HEAT2D}"
             ARGS --backend cuda --precision ${p} --nx 35 --ny 21 --init nan --check-every 4 --max-iter 100
                  --cuda-kernel persistent --sweeps-per-pass 1 HASH ${heat2d_hash})
    app_case(heat2d/diverging-${p}-35x21/auto EXE "${HEAT2D}"
             ARGS --backend cuda --precision ${p} --nx 35 --ny 21 --init nan --check-every 4 --max-iter 100 HASH ${heat2d_hash})
    app_case(heat2d/steady-${p}-67x45/auto EXE "${HEAT2D}" ARGS ${g} HASH ${heat2d_hash})
    app_case(heat2d/steady-${p}-515x389/auto EXE "${HEAT2D}" ARGS ${big} HASH ${heat2d_hash})
    app_case(heat2d/converging-${p}-33x50/auto EXE "${HEAT2D}" ARGS ${conv} HASH ${heat2d_hash})
    app_case(heat2d/transient-${p}-41x57/auto EXE "${HEAT2D}" ARGS ${trans} HASH ${heat2d_hash} @sim_time @dt)
  endforeach()
  # matmul on the GPU: every CUDA level on an odd shape (tiled-tc on mma.sync) and on one whose K and
  # N are multiples of 4 (float tiled-tc on warpgroup MMAs); the gang level's Gram paths (C up to
  # 64 x 64 on the tensor cores, C up to 16 x 16 in float, and in double with K and N even); --exact.
  foreach(p double float)
    foreach(shape 37x29x203 129x132x204)
      string(REPLACE "x" ";" mnk "${shape}")
      list(GET mnk 0 m)
      list(GET mnk 1 n)
      list(GET mnk 2 k)
      foreach(level IN LISTS levels ITEMS tiled-tc)
        app_case(matmul/${p}-${shape}/${level} EXE "${MATMUL}"
                 ARGS --backend cuda --precision ${p} --m ${m} --n ${n} --k ${k} --level ${level} ${mm_common}
                 HASH ${matmul_hash})
      endforeach()
    endforeach()
    foreach(shape 45x37x3000 13x11x2049 14x12x2048)
      string(REPLACE "x" ";" mnk "${shape}")
      list(GET mnk 0 m)
      list(GET mnk 1 n)
      list(GET mnk 2 k)
      app_case(matmul/${p}-${shape}/gang EXE "${MATMUL}"
               ARGS --backend cuda --precision ${p} --m ${m} --n ${n} --k ${k} --level gang ${mm_common} HASH ${matmul_hash})
    endforeach()
    foreach(level IN LISTS levels)
      app_case(matmul/${p}-37x29x203-exact/${level} EXE "${MATMUL}"
               ARGS --backend cuda --precision ${p} --m 37 --n 29 --k 203 --level ${level} --exact ${mm_common}
               HASH ${matmul_hash})
    endforeach()
  endforeach()
  # mcpi on the GPU: every generator through both APIs, several batches; a continued stream.
  set(mc --backend cuda --n 10000019 --batch 4194304 --seed 7)
  foreach(gen philox xorwow mrg32k3a sobol scrambled-sobol)
    foreach(api device host)
      app_case(mcpi/${gen}-${api} EXE "${MCPI}" ARGS ${mc} --generator ${gen} --api ${api} HASH ${mcpi_hash})
    endforeach()
  endforeach()
  app_case(mcpi/philox-device-offset EXE "${MCPI}"
           ARGS --backend cuda --n 500000 --offset 123456789 --seed 7 --generator philox HASH ${mcpi_hash})
endif()

# ---- hash, then record or compare ----------------------------------------------------------------
get_property(hash_args GLOBAL PROPERTY checksum_hash_args)
get_property(app_lines GLOBAL PROPERTY checksum_app_lines)
if(hash_args)
  execute_process(COMMAND "${TOOL}" hash ${hash_args} RESULT_VARIABLE rc OUTPUT_VARIABLE h ERROR_VARIABLE he)
  if(NOT rc EQUAL 0)
    message("${he}")  # the items it could not read are recorded as such, and compare names them
  endif()
  string(APPEND app_lines "${h}")
endif()
# The app lines sorted by name, so that each case's lines stand together.
string(REGEX REPLACE "\n$" "" app_lines "${app_lines}")
string(REPLACE "\n" ";" app_lines "${app_lines}")
list(SORT app_lines)
list(JOIN app_lines "\n" app_lines)
get_property(lines GLOBAL PROPERTY checksum_lines)
if(NOT app_lines STREQUAL "")
  string(APPEND lines "${app_lines}\n")
endif()
get_property(runs GLOBAL PROPERTY checksum_runs)
set(current "${WORK}/checksums_${BACKEND}.txt")
file(WRITE "${current}" "${lines}")
if(MODE STREQUAL "record")
  set(commit "")
  if(DEFINED SOURCE_DIR)
    execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short HEAD OUTPUT_VARIABLE commit ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    # The sources whose results are recorded: everything but the tests and the data.
    execute_process(COMMAND git -C "${SOURCE_DIR}" log -1 --format=%h -- . ":(exclude)tests" ":(exclude)data"
                    OUTPUT_VARIABLE sources ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(APPEND commit ", whose sources outside tests/ and data/ are those of ${sources}")
    execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no -- . ":(exclude)tests"
                            ":(exclude)data" OUTPUT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty STREQUAL "")
      string(APPEND commit " with local changes")
    endif()
  endif()
  file(WRITE "${REFERENCE}"
       "# tally's results on fixed problems, backend ${BACKEND}: tests/checksums/README.md says how they are made and checked.\n"
       "# Recorded from commit ${commit}.\n${lines}")
  message("recorded ${REFERENCE} (the library's cases and ${runs} app runs)")
  return()
endif()
execute_process(COMMAND "${TOOL}" compare "${REFERENCE}" "${current}" RESULT_VARIABLE rc OUTPUT_VARIABLE report)
message("${report}")
if(rc EQUAL 77)
  message("CHECKSUMS SKIPPED: the recording's GPU is not this one (above)")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "results differ from the recording ${REFERENCE} (cases above; this run: ${current})")
endif()
