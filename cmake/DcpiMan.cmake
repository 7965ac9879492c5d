# DcpiMan.cmake - man pages generated at build time from docs/*.md (cmake/md2man.sh, pandoc).
# Section 1: docs/<tool>.md for every tools/<tool>.c (by glob: a new tool's page comes with it).
# Sections 5 and 7: every other docs/*.md whose first heading is "# name(5) - ..." (formats) or
# "# name(7) - ..." (dcpi(7), the flag grammar). The page's name and section come from that heading. Sets DCPI_MAN_TARGETS (the pages built) and installs them under
# share/man/manN in the component given as DCPI_MAN_COMPONENT. Without pandoc: no man pages (said).
option(DCPI_MAN "Build the man pages (pandoc; make test's sanitizer tree leaves them out)" ON)
find_program(DCPI_PANDOC pandoc)
set(DCPI_MAN_OUTPUTS)
set(DCPI_MAN_LIST "")
if(NOT DCPI_MAN)
  message(STATUS "DCPI_MAN is off: no man pages")
  return()
endif()
if(NOT DCPI_PANDOC)
  message(STATUS "pandoc not found: no man pages (apt-get install pandoc)")
  return()
endif()

file(GLOB dcpi_man_tools CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tools/*.c)
file(GLOB dcpi_man_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
set(dcpi_man_sources)
foreach(src ${dcpi_man_tools})
  get_filename_component(tool ${src} NAME_WE)
  if(EXISTS ${PROJECT_SOURCE_DIR}/docs/${tool}.md)
    list(APPEND dcpi_man_sources ${PROJECT_SOURCE_DIR}/docs/${tool}.md)
  endif()
endforeach()
foreach(md ${dcpi_man_docs})
  file(STRINGS ${md} head REGEX "^# [A-Za-z0-9_.-]+\\([57]\\)" LIMIT_COUNT 1)
  if(head)
    list(APPEND dcpi_man_sources ${md})
  endif()
endforeach()

foreach(md ${dcpi_man_sources})
  file(STRINGS ${md} head REGEX "^# [A-Za-z0-9_.-]+\\([1-9]\\)" LIMIT_COUNT 1)
  if(NOT head)
    message(FATAL_ERROR "${md}: no '# name(N) - description' title for its man page")
  endif()
  string(REGEX REPLACE "^# ([A-Za-z0-9_.-]+)\\(([1-9])\\).*" "\\1" page "${head}")
  string(REGEX REPLACE "^# ([A-Za-z0-9_.-]+)\\(([1-9])\\).*" "\\2" sect "${head}")
  set(out ${CMAKE_BINARY_DIR}/man/man${sect}/${page}.${sect})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man/man${sect}
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/md2man.sh ${md} ${out} ${PROJECT_VERSION}
    DEPENDS ${md} ${PROJECT_SOURCE_DIR}/cmake/md2man.sh
    COMMENT "man page ${page}(${sect})" VERBATIM)
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${sect} COMPONENT ${DCPI_MAN_COMPONENT})
  list(APPEND DCPI_MAN_OUTPUTS ${out})
  get_filename_component(mdname ${md} NAME)
  string(APPEND DCPI_MAN_LIST "${mdname} ${page} ${sect}\n")
endforeach()
add_custom_target(man ALL DEPENDS ${DCPI_MAN_OUTPUTS})
# what the test (tests/e2e/man_pages.sh) checks the build against: one "FILE.md NAME SECTION" a line
file(WRITE ${CMAKE_BINARY_DIR}/man/pages.txt "${DCPI_MAN_LIST}")
