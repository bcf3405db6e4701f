# Run with `cmake -P` (from the top-level CMakeLists.txt): builds the library with cargo,
# records rustc's native static libraries, and stages the artifacts with their SONAME links.
# Inputs: CARGO MANIFEST TARGET_DIR PROFILE NATIVE_LIBS_FILE STAGE_DIR SO_REAL SO_SONAME;
# FEATURES (optional): cargo features of the ninfer crate, e.g. "cuda".
foreach(_v CARGO MANIFEST TARGET_DIR PROFILE NATIVE_LIBS_FILE STAGE_DIR SO_REAL SO_SONAME)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "ninferCargoBuild.cmake: ${_v} not set")
  endif()
endforeach()

if(PROFILE STREQUAL "dev" OR PROFILE STREQUAL "debug")
  set(_profile_dir debug)
else()
  set(_profile_dir "${PROFILE}")
endif()

# The extra rustc argument is part of cargo's fingerprint, so a new build directory (a new
# file path) recompiles the crate (not its dependencies) and the list is always written.
set(_features "")
if(FEATURES)
  set(_features --features "${FEATURES}")
endif()
set(_cmd "${CARGO}" rustc --manifest-path "${MANIFEST}" --profile "${PROFILE}" -p ninfer --lib
    ${_features} -- "--print=native-static-libs=${NATIVE_LIBS_FILE}.new")
function(_ninfer_run)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "CARGO_TARGET_DIR=${TARGET_DIR}" ${_cmd}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ninfer: cargo failed (${rc})")
  endif()
endfunction()
_ninfer_run()
if(NOT EXISTS "${NATIVE_LIBS_FILE}.new" AND NOT EXISTS "${NATIVE_LIBS_FILE}")
  # Fresh for cargo but the record was deleted: rebuild only this crate.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "CARGO_TARGET_DIR=${TARGET_DIR}"
                  "${CARGO}" clean --manifest-path "${MANIFEST}" --profile "${PROFILE}" -p ninfer)
  _ninfer_run()
endif()
if(EXISTS "${NATIVE_LIBS_FILE}.new")
  # Only a changed list touches the recorded file (it is a configure dependency).
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
                  "${NATIVE_LIBS_FILE}.new" "${NATIVE_LIBS_FILE}")
  file(REMOVE "${NATIVE_LIBS_FILE}.new")
endif()
if(NOT EXISTS "${NATIVE_LIBS_FILE}")
  message(FATAL_ERROR "ninfer: rustc did not report the native static libraries")
endif()

set(_out "${TARGET_DIR}/${_profile_dir}")
file(MAKE_DIRECTORY "${STAGE_DIR}/lib")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
                "${_out}/libninfer.so" "${STAGE_DIR}/lib/${SO_REAL}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
                "${_out}/libninfer.a" "${STAGE_DIR}/lib/libninfer.a")
execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink "${SO_REAL}" "${STAGE_DIR}/lib/${SO_SONAME}")
execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink "${SO_SONAME}" "${STAGE_DIR}/lib/libninfer.so")
