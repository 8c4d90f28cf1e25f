# The dense symmetric kernels of src/core/linalg.cc on LAPACKE + OpenBLAS (Debian: liblapacke-dev,
# libopenblas-dev), called explicitly from that one file; the rest of occam is Eigen either way.
# OFF builds pure Eigen, whose results do not depend on the CPU occam runs on (OpenBLAS picks
# its kernels by CPU at run time); docs/BENCHMARKS.md measures both.
option(OCCAM_LAPACK "Dense Cholesky, eigendecomposition and rank-k updates through LAPACKE + OpenBLAS" ON)

if(OCCAM_LAPACK)
  find_path(OCCAM_LAPACKE_INCLUDE_DIR lapacke.h)
  find_path(OCCAM_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES x86_64-linux-gnu aarch64-linux-gnu openblas)
  find_library(OCCAM_LAPACKE_LIBRARY lapacke)
  find_library(OCCAM_OPENBLAS_LIBRARY openblas)
  if(NOT OCCAM_LAPACKE_INCLUDE_DIR OR NOT OCCAM_CBLAS_INCLUDE_DIR OR NOT OCCAM_LAPACKE_LIBRARY OR NOT OCCAM_OPENBLAS_LIBRARY)
    message(FATAL_ERROR "OCCAM_LAPACK=ON needs LAPACKE and OpenBLAS (Debian: liblapacke-dev libopenblas-dev, "
                        "installed by scripts/setup.sh); or configure with -DOCCAM_LAPACK=OFF for pure Eigen")
  endif()
  # OpenBLAS first: its optimised dpotrf/dsyevd then take precedence over the reference LAPACK
  # that liblapacke also depends on.
  # Both libraries made from the objects: the shared one records them as its own dependencies,
  # the static one passes them on to its users (the exported target; Libs.private in occam.pc).
  foreach(target occam_lib occam_shared)
    target_link_libraries(${target} PRIVATE ${OCCAM_OPENBLAS_LIBRARY} ${OCCAM_LAPACKE_LIBRARY})
  endforeach()
  set(OCCAM_PC_LIBS_PRIVATE "-lopenblas -llapacke")
  # Only src/core/linalg.cc sees LAPACKE and cblas: no public header depends on the option, and
  # switching it recompiles one file.
  # The compiler's own directories (/usr/include) stay out of -I: they would break #include_next.
  set(occam_lapack_includes ${OCCAM_LAPACKE_INCLUDE_DIR} ${OCCAM_CBLAS_INCLUDE_DIR})
  list(REMOVE_DUPLICATES occam_lapack_includes)
  list(REMOVE_ITEM occam_lapack_includes ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES})
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/core/linalg.cc PROPERTIES
    COMPILE_DEFINITIONS OCCAM_HAVE_LAPACK
    INCLUDE_DIRECTORIES "${occam_lapack_includes}")
  message(STATUS "occam: dense symmetric kernels on OpenBLAS (${OCCAM_OPENBLAS_LIBRARY}) and LAPACKE")
else()
  message(STATUS "occam: dense symmetric kernels on Eigen (OCCAM_LAPACK=OFF)")
endif()
