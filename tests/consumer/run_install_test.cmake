# Installs the build tree into a scratch prefix and builds the consumer project against it.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${WORK_DIR}/prefix"
  RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()
foreach(step
    "-S;${SOURCE_DIR}/tests/consumer;-B;${WORK_DIR}/build;-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix"
    "--build;${WORK_DIR}/build")
  execute_process(COMMAND "${CMAKE_COMMAND}" ${step} RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "consumer step '${step}' failed: ${rc}")
  endif()
endforeach()
execute_process(COMMAND "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer program failed: ${rc}")
endif()
