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
    # Headers by their path from the checkout's root ("core/rlp.hpp"); installed, from
    # include/headerd (cmake/export.cmake).
    target_include_directories(headerd_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
    target_compile_features(headerd_${name} PUBLIC cxx_std_20)
    target_link_libraries(headerd_${name} PUBLIC ${ARG_DEPS})

    # The link check: an empty program that links every object of the library (whole archive) and
    # nothing else but what DEPS names. It fails to link when the library uses a library it does not
    # name, which an ordinary program finds only when it happens not to get that library some other
    # way. Normal builds with tests only: the sanitizer and fuzz builds link the same DEPS.
    if(HEADERD_BUILD_TESTS AND NOT HEADERD_SANITIZE AND NOT HEADERD_FUZZ)
        if(NOT TARGET headerd_link_check_main)
            # The empty main, compiled once for every link check.
            add_library(headerd_link_check_main OBJECT ${PROJECT_SOURCE_DIR}/cmake/link_check_main.cpp)
        endif()
        add_executable(headerd_${name}_link_check $<TARGET_OBJECTS:headerd_link_check_main>)
        target_link_libraries(headerd_${name}_link_check PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,headerd_${name}>")
    endif()

    if(HEADERD_BUILD_TESTS)
        file(GLOB tests CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp")
        if(tests)
            add_executable(${name}_test ${tests})
            target_link_libraries(${name}_test PRIVATE headerd_${name} ${ARG_TEST_DEPS} GTest::gmock GTest::gtest_main)
            gtest_discover_tests(${name}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit ${HEADERD_TEST_ENV})
        endif()
    endif()
endfunction()

# headerd_unity_batches()
#
# With HEADERD_UNITY=ON (the sanitizer and fuzz presets, and scripts/test.sh on CI), every target's
# .cpp files are compiled in batches of 8, each batch one generated file that includes its sources,
# as CMAKE_UNITY_BUILD does, but by paths relative to the checkout (#include "core/rlp.cpp", found
# through -I of the checkout): CMake's own batches include absolute paths, which differ between two
# clones, so ccache could not reuse a batch compiled in another clone without preprocessing it
# first (docs/testing.md, "ccache"). A source with its own compile options or definitions is
# compiled alone, as CMake does. Called once, after every add_subdirectory().
function(headerd_unity_batches)
    set(batch_size 8)
    set(dirs ${PROJECT_SOURCE_DIR})
    while(dirs)
        list(POP_FRONT dirs dir)
        get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
        list(APPEND dirs ${subdirs})
        get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
        foreach(target ${targets})
            get_target_property(type ${target} TYPE)
            if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$")
                continue()
            endif()
            get_target_property(sources ${target} SOURCES)
            set(kept)
            set(batched)
            foreach(src ${sources})
                cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY ${dir} NORMALIZE OUTPUT_VARIABLE abs)
                cmake_path(IS_PREFIX PROJECT_SOURCE_DIR ${abs} NORMALIZE in_tree)
                cmake_path(IS_PREFIX PROJECT_BINARY_DIR ${abs} NORMALIZE in_build)
                set(own_flags)
                foreach(p COMPILE_OPTIONS COMPILE_DEFINITIONS COMPILE_FLAGS INCLUDE_DIRECTORIES)
                    get_source_file_property(v ${abs} DIRECTORY ${dir} ${p})
                    if(v)
                        set(own_flags 1)
                    endif()
                endforeach()
                if(abs MATCHES "\\.cpp$" AND in_tree AND NOT in_build AND NOT own_flags)
                    cmake_path(RELATIVE_PATH abs BASE_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE rel)
                    list(APPEND batched ${rel})
                else()
                    list(APPEND kept ${abs})
                endif()
            endforeach()
            list(LENGTH batched count)
            if(count LESS 2)
                continue()
            endif()
            set(index 0)
            while(batched)
                set(content "/* generated by headerd_unity_batches() (cmake/headerd.cmake) */\n")
                foreach(i RANGE 1 ${batch_size})
                    if(NOT batched)
                        break()
                    endif()
                    list(POP_FRONT batched rel)
                    string(APPEND content "#include \"${rel}\"\n")
                endforeach()
                set(batch ${PROJECT_BINARY_DIR}/unity/${target}_${index}.cpp)
                file(CONFIGURE OUTPUT ${batch} CONTENT "${content}" @ONLY)
                list(APPEND kept ${batch})
                math(EXPR index "${index} + 1")
            endwhile()
            set_property(TARGET ${target} PROPERTY SOURCES ${kept})
            target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
        endforeach()
    endwhile()
endfunction()
