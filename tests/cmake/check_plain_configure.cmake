# cmake -DSOURCE_DIR= -DWORK_DIR= -DNATIVE_LIBS_FILE= -DGENERATOR= -P
# A plain configure (no options) of the project builds the library only: no test
# executables, no ctest files. The recorded native-libs list is copied in first so that the
# configure step does not build the Rust library again.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(COPY "${NATIVE_LIBS_FILE}" DESTINATION "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}" -G "${GENERATOR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "plain configure failed:\n${out}\n${err}")
endif()
if(EXISTS "${WORK_DIR}/tests/cmake" OR EXISTS "${WORK_DIR}/CTestTestfile.cmake")
  message(FATAL_ERROR "a plain configure set up the test executables (NINFER_BUILD_TESTS must default to OFF)")
endif()
file(READ "${WORK_DIR}/CMakeCache.txt" cache)
if(NOT cache MATCHES "NINFER_INSTALL_STRIP:BOOL=ON")
  message(FATAL_ERROR "NINFER_INSTALL_STRIP does not default to ON")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "plain configure: library only, stripped install")
