# headerd_library(NAME DEPS dep...)
#
# One library per folder: every *.cpp in the calling folder except *_test.cpp and *_benchmark.cpp
# (minus EXCLUDE) becomes the static library headerd_NAME (alias headerd::NAME). The folder's *_test.cpp files
# become the test binary NAME_test, registered with CTest.
function(headerd_library name)
    cmake_parse_arguments(ARG "" "" "DEPS;TEST_DEPS;EXCLUDE" ${ARGN})
    file(GLOB srcs CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.cpp")
    list(FILTER srcs EXCLUDE REGEX "_(test|benchmark)\\.cpp$")
    foreach(excluded ${ARG_EXCLUDE})
        list(REMOVE_ITEM srcs "${CMAKE_CURRENT_SOURCE_DIR}/${excluded}")
    endforeach()
    add_library(headerd_${name} STATIC ${srcs})
    add_library(headerd::${name} ALIAS headerd_${name})
    target_include_directories(headerd_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(headerd_${name} PUBLIC ${ARG_DEPS})

    if(HEADERD_BUILD_TESTS)
        file(GLOB tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp")
        if(tests)
            add_executable(${name}_test ${tests})
            target_link_libraries(${name}_test PRIVATE headerd_${name} ${ARG_TEST_DEPS} GTest::gmock GTest::gtest_main)
            target_compile_definitions(${name}_test PRIVATE HEADERD_TEST_DATA_DIR="${PROJECT_SOURCE_DIR}/tests/data")
            gtest_discover_tests(${name}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
        endif()
    endif()
endfunction()
