# SPDX-License-Identifier: Apache-2.0
# Install rules and the Debian package of the headerd program (docs/packaging.md).
#
#   cmake --install build [--prefix /usr] [--strip]     the program in its FHS places
#   cpack -G DEB --config build/CPackConfig.cmake       headerd_<version>_<arch>.deb (prefix /usr)
#
# Every rule is in the component "headerd", the only one the .deb holds, so install rules of other
# components (the libraries and headers of cmake/export.cmake) stay out of the package.
include(GNUInstallDirs)

# headerd(1), made at build time from the binary's own --help texts (scripts/gen_manpage.sh), and
# compressed as Debian's policy asks (gzip -9n: no name or time stamp, the same bytes every build).
set(HEADERD_MAN_PAGE ${PROJECT_BINARY_DIR}/man/headerd.1)
add_custom_command(OUTPUT ${HEADERD_MAN_PAGE}.gz
                   COMMAND ${PROJECT_SOURCE_DIR}/scripts/gen_manpage.sh $<TARGET_FILE:headerd> ${PROJECT_VERSION}
                           ${HEADERD_MAN_PAGE}
                   COMMAND gzip -9nf ${HEADERD_MAN_PAGE}
                   DEPENDS headerd ${PROJECT_SOURCE_DIR}/scripts/gen_manpage.sh
                   COMMENT "Generating the man page headerd(1) from headerd --help"
                   VERBATIM)
add_custom_target(headerd_man_page ALL DEPENDS ${HEADERD_MAN_PAGE}.gz)

# The Debian changelog (deploy/debian/changelog), as /usr/share/doc/headerd/changelog.gz: the name
# policy gives a native package's. Its newest entry must name this project() version, so a version
# bump without an entry fails here instead of shipping a package whose changelog disagrees.
file(STRINGS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog HEADERD_CHANGELOG_TOP LIMIT_COUNT 1)
if(NOT HEADERD_CHANGELOG_TOP MATCHES "^headerd \\(${PROJECT_VERSION}\\) ")
    message(FATAL_ERROR "deploy/debian/changelog: the newest entry is '${HEADERD_CHANGELOG_TOP}', "
                        "not version ${PROJECT_VERSION} of project(); add an entry for it")
endif()
set(HEADERD_CHANGELOG ${PROJECT_BINARY_DIR}/deb/changelog.gz)
add_custom_command(OUTPUT ${HEADERD_CHANGELOG}
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/deb
                   COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/deploy/debian/changelog > ${HEADERD_CHANGELOG}
                   DEPENDS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog
                   COMMENT "Compressing deploy/debian/changelog"
                   VERBATIM)
add_custom_target(headerd_changelog ALL DEPENDS ${HEADERD_CHANGELOG})

install(TARGETS headerd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT headerd)
install(FILES ${HEADERD_MAN_PAGE}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT headerd)
install(FILES README.md ${HEADERD_CHANGELOG} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT headerd)
# The machine-readable copyright file (DEP-5) of deploy/debian/copyright, where Debian's policy
# wants it: /usr/share/doc/headerd/copyright, mode 0644. It names the licence, Apache-2.0, and
# points at /usr/share/common-licenses/Apache-2.0 for its text (every Debian system has it, from
# base-files), so the package does not carry a second copy of LICENSE.
install(FILES deploy/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT headerd
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# Beside README.md in docs/, so the README's links (docs/operations.md, ...) hold.
file(GLOB HEADERD_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${HEADERD_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT headerd)

# The example config and the systemd unit name absolute paths (/etc/headerd/headerd.toml,
# /usr/bin/headerd), so both depend on the prefix the install really uses. That prefix is known
# only at install time: `cmake --install --prefix P` and cpack (prefix /usr) override the one of
# the configure step (/usr/local by default). So these two rules run GNUInstallDirs again at install
# time, for that prefix: CMAKE_INSTALL_FULL_SYSCONFDIR is /etc for /usr (and /), /etc/opt/X for
# /opt/X and PREFIX/etc otherwise. The unit is installed as written for prefix /usr, and with the
# binary's and the config's paths replaced for any other, so it always starts the installed binary
# with the installed config.
install(CODE "set(HEADERD_SOURCE_DIR [[${PROJECT_SOURCE_DIR}]])
set(HEADERD_BINDIR [[${CMAKE_INSTALL_BINDIR}]])
set(HEADERD_SYSCONFDIR [[${CMAKE_INSTALL_SYSCONFDIR}]])
set(HEADERD_LIBDIR [[${CMAKE_INSTALL_LIBDIR}]])
set(HEADERD_DOCDIR [[${CMAKE_INSTALL_DOCDIR}]])"
        COMPONENT headerd)
install(CODE [[
function(headerd_install_config_and_unit)
    # GNUInstallDirs reads these relative directories (and needs LIBDIR, which it would otherwise
    # guess from the compiler, unknown in an install script).
    set(CMAKE_INSTALL_BINDIR ${HEADERD_BINDIR})
    set(CMAKE_INSTALL_SYSCONFDIR ${HEADERD_SYSCONFDIR})
    set(CMAKE_INSTALL_LIBDIR ${HEADERD_LIBDIR})
    set(CMAKE_INSTALL_DOCDIR ${HEADERD_DOCDIR})
    include(GNUInstallDirs)
    file(INSTALL DESTINATION "${CMAKE_INSTALL_FULL_SYSCONFDIR}/headerd" TYPE FILE
         FILES "${HEADERD_SOURCE_DIR}/deploy/headerd.toml")
    set(source "${HEADERD_SOURCE_DIR}/deploy/systemd/headerd.service")
    set(unit_dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
    file(READ "${source}" written)
    string(REPLACE "/usr/bin/headerd " "${CMAKE_INSTALL_PREFIX}/${HEADERD_BINDIR}/headerd " unit "${written}")
    string(REPLACE "/etc/headerd/" "${CMAKE_INSTALL_FULL_SYSCONFDIR}/headerd/" unit "${unit}")
    string(REPLACE "file:///usr/share/doc/headerd/" "file://${CMAKE_INSTALL_FULL_DOCDIR}/" unit "${unit}")
    if(unit STREQUAL written)
        file(INSTALL DESTINATION "${unit_dir}" TYPE FILE FILES "${source}")
    else()
        # Written in place (no copy in the build tree, which a root install would leave root's), with
        # DESTDIR and the manifest as file(INSTALL) would.
        message(STATUS "Installing: $ENV{DESTDIR}${unit_dir}/headerd.service")
        file(WRITE "$ENV{DESTDIR}${unit_dir}/headerd.service" "${unit}")
        list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${unit_dir}/headerd.service")
    endif()
    # file(INSTALL) listed its files in this function's scope; install_manifest.txt is written from
    # the script's.
    set(CMAKE_INSTALL_MANIFEST_FILES "${CMAKE_INSTALL_MANIFEST_FILES}" PARENT_SCOPE)
endfunction()
headerd_install_config_and_unit()
]]
        COMPONENT headerd)

# --- The Debian package (cpack -G DEB) -----------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME headerd)
set(CPACK_PACKAGE_VENDOR "headerd")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Ethereum peer that serves block headers")
# The licence's text, for the generators that show one (the .deb has no field for it: its licence
# is in /usr/share/doc/headerd/copyright, above).
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# The long description (CPack puts the summary above it and indents every line).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "headerd keeps Ethereum block headers (LevelDB for recent ones, an append-only\nfreezer for old ones), imports them from era1 archives or syncs them from\npeers, and serves them to devp2p peers (RLPx, eth/68 to eth/72). The package\ninstalls the headerd program, its man page and documentation, an example\nconfiguration in /etc/headerd and a hardened systemd unit, which stays\ndisabled until the operator enables it.")
# No one's mailbox: a packager building for others sets -DHEADERD_PACKAGE_MAINTAINER="Name <mail>".
set(HEADERD_PACKAGE_MAINTAINER "headerd maintainers <maintainers@headerd.invalid>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${HEADERD_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # headerd_<version>_<arch>.deb
# Depends: the packages of the shared libraries the binary links, found by dpkg-shlibdeps (with
# their minimum versions), never listed by hand; and passwd, whose useradd and groupadd the
# maintainer scripts run (it is required priority but not essential, so it must be named).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS passwd)
# Stripped binary: the build's debug info stays in the build tree.
set(CPACK_STRIP_FILES ON)
# Install with DESTDIR into the staging directory, so the install rules see the package's prefix
# (/usr) itself and put the config in /etc, not /usr/etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Only this component; one package, named headerd (no component suffix).
set(CPACK_COMPONENTS_ALL headerd)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
# Maintainer scripts (user, datadir, systemd) and the conffile list: dpkg keeps an edited
# /etc/headerd/headerd.toml across upgrades and removes it only on purge.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
