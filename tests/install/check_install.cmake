# ctest install_consumers: installs the build into a fresh prefix, then builds and runs a consumer
# through find_package (CMAKE_PREFIX_PATH) and one through pkg-config (PKG_CONFIG_PATH), each from
# that prefix only. Variables: BUILD_DIR, SOURCE_DIR (tests/install), WORK_DIR, CXX, CXX_FLAGS
# (the sanitizer flags of a sanitizer build), PKG_CONFIG.
cmake_minimum_required(VERSION 3.25)
set(prefix "${WORK_DIR}/prefix dir")  # a space in the path, as users' prefixes may have
file(REMOVE_RECURSE "${WORK_DIR}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
file(GLOB_RECURSE pcfile "${prefix}/*/gltensor.pc")
file(GLOB_RECURSE libfile "${prefix}/*/libgltensor.*")
list(GET pcfile 0 pcfile)
list(GET libfile 0 libfile)
get_filename_component(pcdir "${pcfile}" DIRECTORY)
get_filename_component(libdir "${libfile}" DIRECTORY)
# The prefix's library first; what the environment had stays after it (e.g. another Mesa's
# libraries, which its EGL vendor file needs: Mesa 25 from /opt/mesa25, bench/RESULTS.md).
if(DEFINED ENV{LD_LIBRARY_PATH} AND NOT "$ENV{LD_LIBRARY_PATH}" STREQUAL "")
  set(ENV{LD_LIBRARY_PATH} "${libdir}:$ENV{LD_LIBRARY_PATH}")
else()
  set(ENV{LD_LIBRARY_PATH} "${libdir}")
endif()

# find_package
run("configure the find_package consumer" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/consumer" -B "${WORK_DIR}/cmake-build"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run("build the find_package consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/cmake-build")
run("run the find_package consumer" "${WORK_DIR}/cmake-build/consumer")
message(STATUS "find_package: ${last_output}")

# pkg-config, plain --libs (no --static)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
run("pkg-config" ${PKG_CONFIG} --cflags --libs gltensor)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(extra UNIX_COMMAND "${CXX_FLAGS}")
run("build the pkg-config consumer" ${CXX} -std=c++20 ${extra} "${SOURCE_DIR}/consumer/main.cpp" ${flags} -o
    "${WORK_DIR}/consumer-pc")
run("run the pkg-config consumer" "${WORK_DIR}/consumer-pc")
message(STATUS "pkg-config: ${last_output}")
