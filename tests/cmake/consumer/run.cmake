# cmake -DNINFER_BUILD_DIR= -DCONSUMER_SRC= -DWORK_DIR= -DPKG_CONFIG= -DCC= -DCXX= -DGENERATOR= -P
#
# Installs the built package into WORK_DIR/installed, MOVES it to WORK_DIR/moved (so any
# absolute path to the first prefix would break), then:
#  1. configures and builds CONSUMER_SRC with find_package(ninfer CONFIG REQUIRED) against
#     the moved prefix and runs its shared and static programs;
#  2. compiles main.c with `pkg-config --cflags --libs ninfer` (shared) and with
#     `pkg-config --static --cflags --libs ninfer-static` (static) and runs them.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(first "${WORK_DIR}/installed")
set(prefix "${WORK_DIR}/moved")
run("${CMAKE_COMMAND}" --install "${NINFER_BUILD_DIR}" --prefix "${first}")
file(RENAME "${first}" "${prefix}")
if(EXISTS "${first}")
  message(FATAL_ERROR "move failed")
endif()

# Nothing installed may name the first prefix.
file(GLOB_RECURSE text_files "${prefix}/*.cmake" "${prefix}/*.pc" "${prefix}/*.h" "${prefix}/*.hpp")
foreach(f IN LISTS text_files)
  file(READ "${f}" content)
  string(FIND "${content}" "${first}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${f} names the install prefix ${first}: not relocatable")
  endif()
endforeach()
file(GLOB libdirs LIST_DIRECTORIES true "${prefix}/lib*")
list(GET libdirs 0 libdir)
foreach(f libninfer.so libninfer.a cmake/ninfer/ninferConfig.cmake
          cmake/ninfer/ninferConfigVersion.cmake pkgconfig/ninfer.pc pkgconfig/ninfer-static.pc)
  if(NOT EXISTS "${libdir}/${f}")
    message(FATAL_ERROR "not installed: ${libdir}/${f}")
  endif()
endforeach()

# The installed libraries carry no debug information (NINFER_INSTALL_STRIP, the default);
# with NINFER_INSTALL_DEBUG_INFO it sits in a separate .debug file.
find_program(READELF readelf REQUIRED)
file(GLOB installed_objects "${libdir}/libninfer.so.*.*.*" "${libdir}/libninfer.a")
list(FILTER installed_objects EXCLUDE REGEX "\\.debug$")
list(LENGTH installed_objects n_objects)
if(NOT n_objects EQUAL 2)
  message(FATAL_ERROR "expected libninfer.so.X.Y.Z and libninfer.a, found: ${installed_objects}")
endif()
foreach(obj IN LISTS installed_objects)
  execute_process(COMMAND "${READELF}" -S -W "${obj}" OUTPUT_VARIABLE sections)
  if(sections MATCHES "\\.debug_(line|info)")
    message(FATAL_ERROR "${obj} carries debug information (NINFER_INSTALL_STRIP)")
  endif()
endforeach()

# 1. find_package
set(build "${WORK_DIR}/build")
run("${CMAKE_COMMAND}" -S "${CONSUMER_SRC}" -B "${build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_CXX_COMPILER=${CXX}"
    -DCMAKE_BUILD_TYPE=Release)
string(REGEX MATCH "found ninfer[^\n]*" found "${last_out}")
message(STATUS "consumer configured: ${found}")
run("${CMAKE_COMMAND}" --build "${build}")
foreach(exe consumer_c_shared consumer_c_static consumer_cxx_shared consumer_cxx_static)
  run("${build}/${exe}")
  message(STATUS "${exe}: ${last_out}")
  if(NOT last_out MATCHES ": ok")
    message(FATAL_ERROR "${exe} printed: ${last_out}")
  endif()
endforeach()
execute_process(COMMAND readelf -d "${build}/consumer_c_static" OUTPUT_VARIABLE dyn)
if(dyn MATCHES "libninfer")
  message(FATAL_ERROR "consumer_c_static links a shared libninfer")
endif()

# The version file refuses an incompatible request (0.x: only the same minor version).
set(probe "${WORK_DIR}/version-probe")
file(WRITE "${probe}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)\nproject(p NONE)\nfind_package(ninfer 999.0 CONFIG REQUIRED)\n")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${probe}" -B "${probe}/build" "-DCMAKE_PREFIX_PATH=${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "version")
  message(FATAL_ERROR "find_package(ninfer 999.0) should fail on a version mismatch (rc ${rc}):\n${err}")
endif()
message(STATUS "find_package(ninfer 999.0) refused as expected")

# 2. pkg-config
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (apt-get install pkg-config)")
endif()
set(ENV{PKG_CONFIG_PATH} "${libdir}/pkgconfig")
run("${PKG_CONFIG}" --modversion ninfer)
message(STATUS "pkg-config ninfer --modversion: ${last_out}")
run("${PKG_CONFIG}" --cflags --libs ninfer)
separate_arguments(shared_flags UNIX_COMMAND "${last_out}")
run("${PKG_CONFIG}" --static --cflags --libs ninfer-static)
separate_arguments(static_flags UNIX_COMMAND "${last_out}")
message(STATUS "pkg-config --static ninfer-static: ${last_out}")
run("${CC}" -std=c99 -pedantic -Wall -Werror "${CONSUMER_SRC}/main.c" -o "${WORK_DIR}/pc_shared"
    ${shared_flags})
run("${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${libdir}" "${WORK_DIR}/pc_shared")
message(STATUS "pkg-config shared: ${last_out}")
run("${CC}" -std=c99 -pedantic -Wall -Werror "${CONSUMER_SRC}/main.c" -o "${WORK_DIR}/pc_static"
    ${static_flags})
run("${WORK_DIR}/pc_static")
message(STATUS "pkg-config static: ${last_out}")
execute_process(COMMAND readelf -d "${WORK_DIR}/pc_static" OUTPUT_VARIABLE dyn)
if(dyn MATCHES "libninfer")
  message(FATAL_ERROR "pc_static links a shared libninfer")
endif()
message(STATUS "consumer: find_package (shared, static) and pkg-config (shared, static) all ok")
