# Checks the layering of src/ and include/gltensor (run by ctest as `layers`), as
# docs/ARCHITECTURE.md describes:
# - every file belongs to a layer: src/<layer>/..., and each public header include/gltensor/<name>.hpp
#   to the layer named for it in `public_headers` below (a header missing there is a problem);
# - a file includes only its own and lower layers' headers, the public ones (`gltensor/...`)
#   included;
# - only src/runtime and src/interop (and the interop header) touch GL: no `gl[A-Z]` call, no `GL_`
#   name and no `#extension` line anywhere else (comments and GLSL text in strings included: the
#   runtime hands out what kernels need, e.g. codegen's subgroup_glsl);
# - the Queue owns every barrier: no glMemoryBarrier call outside src/runtime/queue.* (interop and
#   the runtime's probe call the Queue's barrier_external / barrier_unlaunched).
#   cmake -DSRC=<repo>/src [-DINCLUDE=<repo>/include] -P check_layers.cmake
set(ranks runtime 0 tensor 1 autograd 2 ops 3 nn 4 io 4 interop 4 model 5 umbrella 6)
set(gl_layers runtime interop)
# Public header (without .hpp) -> layer.
set(public_headers
    errors runtime device runtime dtype runtime recording runtime
    tensor tensor
    autograd autograd
    ops ops reduce ops indexing ops linalg ops random ops autocast ops quant ops
    nn nn nn_functional nn transformer nn kv_cache nn sampling nn lora nn image nn
    interop interop
    model model
    gltensor umbrella)
if(NOT INCLUDE)
  get_filename_component(INCLUDE ${SRC}/../include ABSOLUTE)
endif()

# The value after `key` in the list of (key value) pairs named `pairs`, or `missing`.
function(lookup pairs key missing out)
  list(FIND ${pairs} ${key} i)
  math(EXPR odd "${i} % 2")
  if(i EQUAL -1 OR odd EQUAL 1)
    set(${out} ${missing} PARENT_SCOPE)
  else()
    math(EXPR j "${i} + 1")
    list(GET ${pairs} ${j} v)
    set(${out} ${v} PARENT_SCOPE)
  endif()
endfunction()
# A layer's rank (-1: no layer), and the layer of public header `name` ("" if it has none).
function(rank_of layer out)
  lookup(ranks ${layer} -1 r)
  set(${out} ${r} PARENT_SCOPE)
endfunction()
function(public_layer name out)
  lookup(public_headers ${name} "" l)
  set(${out} "${l}" PARENT_SCOPE)
endfunction()

set(problems "")
# (path as printed, absolute path, layer)
set(entries "")
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/*.cpp ${SRC}/*.hpp)
foreach(rel ${files})
  string(REGEX MATCH "^[a-z_]+" layer "${rel}")
  list(APPEND entries "src/${rel}|${SRC}/${rel}|${layer}")
endforeach()
file(GLOB headers RELATIVE ${INCLUDE}/gltensor ${INCLUDE}/gltensor/*.hpp)
foreach(h ${headers})
  string(REGEX REPLACE "\\.hpp$" "" name "${h}")
  public_layer(${name} layer)
  if(layer STREQUAL "")
    string(APPEND problems "\n  include/gltensor/${h}: belongs to no layer (add it to public_headers in cmake/check_layers.cmake)")
    continue()
  endif()
  list(APPEND entries "include/gltensor/${h}|${INCLUDE}/gltensor/${h}|${layer}")
endforeach()

foreach(entry ${entries})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 shown)
  list(GET parts 1 path)
  list(GET parts 2 layer)
  rank_of(${layer} rank)
  if(rank EQUAL -1)
    string(APPEND problems "\n  ${shown}: src/${layer} is not a known layer (add it to cmake/check_layers.cmake)")
    continue()
  endif()
  file(STRINGS ${path} includes REGEX "^#include \"[a-z_]+/")
  foreach(line ${includes})
    string(REGEX MATCH "\"([a-z_]+)/([a-z_0-9]+)" m "${line}")
    set(target ${CMAKE_MATCH_1})
    if(target STREQUAL "gltensor")
      public_layer(${CMAKE_MATCH_2} target)
      if(target STREQUAL "")
        string(APPEND problems "\n  ${shown}: includes ${line}, a public header of no layer")
        continue()
      endif()
    endif()
    rank_of(${target} trank)
    if(trank GREATER rank)
      string(APPEND problems "\n  ${shown}: includes ${line} from the higher layer ${target}")
    endif()
  endforeach()
  if(NOT shown MATCHES "^src/runtime/queue\\.")
    file(STRINGS ${path} barrier_lines REGEX "glMemoryBarrier(ByRegion)? *\\(")
    foreach(line ${barrier_lines})
      if(NOT line MATCHES "^ *//" AND NOT line MATCHES "//.*glMemoryBarrier")
        string(APPEND problems "\n  ${shown}: glMemoryBarrier outside the Queue (src/runtime/queue.*): ${line}")
      endif()
    endforeach()
  endif()
  list(FIND gl_layers ${layer} gl_ok)
  if(gl_ok EQUAL -1)
    file(STRINGS ${path} gl_lines REGEX "gl[A-Z]|GL_|#extension")
    foreach(line ${gl_lines})
      string(APPEND problems "\n  ${shown}: GL name or #extension outside src/runtime and src/interop: ${line}")
    endforeach()
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "layering problems:${problems}")
endif()
list(LENGTH entries n)
message("layers: ${n} files checked, no include points up a layer (public headers included), no GL name or "
        "#extension outside src/runtime and src/interop, no glMemoryBarrier outside the Queue")
