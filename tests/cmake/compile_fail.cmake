# Compiles tests/cmake/cpp_compile_fail.cpp once per case (cmake -P):
#   -DCXX=<compiler> -DSRC=<file> -DINCLUDE=<dir> -DSTD=<17|20> -DCASES=<n> [-DFLAGS=<;-list>]
# Case 0 must compile (the header and the safe spellings are fine); cases 1 .. CASES must
# each fail with a diagnostic naming a deleted function (and not some unrelated error).
foreach(_v CXX SRC INCLUDE STD CASES)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "compile_fail.cmake: -D${_v}=... is required")
  endif()
endforeach()
set(_failed 0)
foreach(_case RANGE 0 ${CASES})
  execute_process(
    COMMAND "${CXX}" -std=c++${STD} -fsyntax-only ${FLAGS} "-I${INCLUDE}"
            "-DNINFER_CASE=${_case}" "${SRC}"
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(_case EQUAL 0)
    if(NOT _rc EQUAL 0)
      message(SEND_ERROR "case 0 (safe calls) does not compile:\n${_err}")
      math(EXPR _failed "${_failed} + 1")
    endif()
  elseif(_rc EQUAL 0)
    message(SEND_ERROR "case ${_case} compiled, but it must be refused")
    math(EXPR _failed "${_failed} + 1")
  elseif(NOT _err MATCHES "deleted")
    message(SEND_ERROR "case ${_case} failed for another reason than a deleted function:\n${_err}")
    math(EXPR _failed "${_failed} + 1")
  endif()
endforeach()
if(_failed GREATER 0)
  message(FATAL_ERROR "${_failed} compile-fail case(s) wrong")
endif()
message(STATUS "compile-fail: case 0 compiles, cases 1..${CASES} refused as deleted")
