# The serving component as an installed CMake package (docs/embedding.md):
#
#   cmake --install build --prefix P --component dev
#   find_package(headerd CONFIG REQUIRED)              # with P in CMAKE_PREFIX_PATH
#   target_link_libraries(app PRIVATE headerd::server)
#
# headerd::server is the header server and the client side beside it: the p2p library and what it
# stands on (eth, wire, rlpx, enode, tracker, metrics, core), static, with their headers under
# include/headerd/ (included as "p2p/server.hpp", as inside this tree). LevelDB, the freezer and
# the rest of the node (db, ancient, sync, load, disc, node) are not part of it: the server reads
# headers through core/header_source.hpp. The third-party libraries those link are found again by
# headerdConfig.cmake (cmake/headerdConfig.cmake.in). Every rule here is in the component "dev",
# which the .deb (component "headerd", cmake/install.cmake) leaves out.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HEADERD_EXPORTED_LIBRARIES core wire eth rlpx enode tracker metrics p2p)
add_library(headerd_server INTERFACE)
target_link_libraries(headerd_server INTERFACE headerd_p2p)
add_library(headerd::server ALIAS headerd_server)
set_target_properties(headerd_server PROPERTIES EXPORT_NAME server)
set(HEADERD_EXPORTED_TARGETS headerd_server)
foreach(lib ${HEADERD_EXPORTED_LIBRARIES})
    set_target_properties(headerd_${lib} PROPERTIES EXPORT_NAME ${lib})
    list(APPEND HEADERD_EXPORTED_TARGETS headerd_${lib})
endforeach()

set(HEADERD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/headerd)
install(TARGETS ${HEADERD_EXPORTED_TARGETS} EXPORT headerdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/headerd)
# The folders of those libraries, headers only (no test helpers): p2p/ holds eth, wire, rlpx and
# tracker.
install(DIRECTORY core p2p metrics DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/headerd COMPONENT dev
        FILES_MATCHING PATTERN "*.hpp" PATTERN "test_*.hpp" EXCLUDE PATTERN "*test_util.hpp" EXCLUDE)
install(EXPORT headerdTargets NAMESPACE headerd:: DESTINATION ${HEADERD_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(cmake/headerdConfig.cmake.in ${PROJECT_BINARY_DIR}/headerdConfig.cmake
                              INSTALL_DESTINATION ${HEADERD_CMAKE_DIR})
# 0.x: a minor version may change the interface (docs/embedding.md, "What is stable").
write_basic_package_version_file(${PROJECT_BINARY_DIR}/headerdConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/headerdConfig.cmake ${PROJECT_BINARY_DIR}/headerdConfigVersion.cmake
        DESTINATION ${HEADERD_CMAKE_DIR} COMPONENT dev)
# The licence (Apache-2.0) goes with the headers and libraries it covers, as its section 4(a) asks.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)
