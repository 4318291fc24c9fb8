# Fails when a committed generated file differs from what its command prints now.
#   cmake -DGENERATE="build/servesim;list;keys" -DFILE=docs/scenario-keys.md -P scripts/check_generated_doc.cmake
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ${GENERATE} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GENERATE} failed (exit ${rc})")
endif()
file(READ "${FILE}" committed)
if(NOT generated STREQUAL committed)
  list(JOIN GENERATE " " command)
  message(FATAL_ERROR "${FILE} is stale: regenerate it with `${command} > ${FILE}`")
endif()
message(STATUS "${FILE} is current")
