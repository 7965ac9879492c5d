# DcpiPackage.cmake - `make package` (cpack -G DEB): two Debian packages from the install() rules.
#   dcpi      component "runtime": programs, shipped plugins (lib/dcpi), the step agent,
#             libdcpi.so.0, man pages, docs, dcpid.service (lib/systemd/system, not enabled);
#             postinst creates the group dcpi (readers of /var/lib/dcpi), prerm stops the
#             service, postrm purge removes the group; dependencies from dpkg-shlibdeps
#   dcpi-dev  component "dev": headers, dcpi.pc, the CMake package, the libdcpi.so link, the
#             sample plugins' sources (share/doc/dcpi/samples); depends on dcpi of the same version
# Installed under /usr: the programs find libdcpi.so.0 and their plugins relative to themselves.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dcpi)
set(CPACK_PACKAGE_VENDOR "dcpi")
set(CPACK_PACKAGE_CONTACT "dcpi maintainers <dcpi@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# stripped, as Debian's packages are (dh_strip; the debug info belongs in a -dbgsym package): the
# RelWithDebInfo programs made dcpi a 24 MB package, which gzip took 3 of cpack's 5.9 s to make
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME dcpi)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "continuous sampling profiler with value profiling (DCPI for Linux x86-64)\ndcpid samples program counters with perf_event_open and keeps per-image profiles\nin a database; dcpiprof, dcpilist, dcpicat, dcpiexport and the other tools\nanalyse them. Value-profiler plugins choose which values to capture.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
  "${PROJECT_SOURCE_DIR}/packaging/postinst;${PROJECT_SOURCE_DIR}/packaging/prerm;${PROJECT_SOURCE_DIR}/packaging/postrm")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
find_program(DCPI_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DCPI_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "dpkg-shlibdeps not found: the dcpi package lists no library dependencies")
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME dcpi-dev)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "dcpi profiler: headers and SDK for value-profiler plugins\nHeaders, pkg-config file (dcpi.pc), CMake package (find_package(dcpi)), the\nlibdcpi.so link and the sources of the sample plugins.")
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "dcpi (= ${PROJECT_VERSION}), pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
include(CPack)
