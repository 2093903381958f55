# Installs the library as a CMake package and a pkg-config module (docs/install.md):
#
#   find_package(daydream 0.1 REQUIRED)              pkg-config --cflags --libs daydream
#   target_link_libraries(app daydream::daydream)
#
# The stages are static libraries; their private dependencies (fmt, simdjson, libdeflate, SQLite)
# travel with them: daydreamConfig.cmake finds them again, daydream.pc requires them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DAYDREAM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/daydream)
get_property(_daydream_stages GLOBAL PROPERTY DAYDREAM_STAGES)  # daydream_add_stage, earliest first

install(TARGETS ${_daydream_stages} daydream EXPORT daydreamTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/daydream DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT daydreamTargets NAMESPACE daydream:: DESTINATION ${DAYDREAM_CMAKE_DIR})
if(TARGET daydream_cli)
  install(TARGETS daydream_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/daydreamConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/daydreamConfig.cmake INSTALL_DESTINATION ${DAYDREAM_CMAKE_DIR})
# 0.x: a minor version may change the API (semantic versioning), so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/daydreamConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/daydreamConfig.cmake ${PROJECT_BINARY_DIR}/daydreamConfigVersion.cmake
        DESTINATION ${DAYDREAM_CMAKE_DIR})

# pkg-config: the stages in link order (later stages first), then what they need.
set(DAYDREAM_PC_REQUIRES "fmt simdjson libdeflate re2 zlib")
if(DAYDREAM_WITH_NSYS)
  string(APPEND DAYDREAM_PC_REQUIRES " sqlite3")
endif()
if(ISAL_FOUND)
  string(APPEND DAYDREAM_PC_REQUIRES " libisal")
endif()
set(DAYDREAM_PC_LIBS "")
list(REVERSE _daydream_stages)
foreach(stage IN LISTS _daydream_stages)
  string(APPEND DAYDREAM_PC_LIBS " -l${stage}")
endforeach()
set(DAYDREAM_PC_DL "")
foreach(lib IN LISTS CMAKE_DL_LIBS)  # dlopen in the collector's core
  string(APPEND DAYDREAM_PC_DL "-l${lib}")
endforeach()
file(RELATIVE_PATH DAYDREAM_PC_UP /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)  # "../.."
configure_file(${PROJECT_SOURCE_DIR}/cmake/daydream.pc.in ${PROJECT_BINARY_DIR}/daydream.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/daydream.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
